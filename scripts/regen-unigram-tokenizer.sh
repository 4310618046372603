#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regen-unigram-tokenizer.sh [--write]: makes the XLM-RoBERTa-style Unigram tokenizer.json of the
# tokenizer parity test again, as Hugging Face makes them (tools/python/reference/make_unigram_tokenizer_json.py:
# a SentencePiece model trained on the test corpus, converted by transformers' XLMRobertaConverter),
# in the Hugging Face venv (scripts/hf-venv.sh: transformers 4.40.2, tokenizers 0.19.1; Debian's
# python3-sentencepiece and python3-protobuf), and checks it against the committed
# tests/tokenizers/xlmr_unigram_tokenizer.json.gz: the same JSON, and the same ids from the
# tokenizers Python package as from the npm one on the corpus. With --write it replaces the
# committed file. The default test run does not need this: the file is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "regen-unigram-tokenizer.sh: FAILED at line $LINENO" >&2' ERR
write=0
if [ "${1:-}" = --write ]; then write=1; fi
bash scripts/need-packages.sh python3-sentencepiece python3-protobuf nodejs > /dev/null
py=$(bash scripts/hf-venv.sh)
(cd tests/tokenizers && npm ci --no-audit --no-fund --prefer-offline > /dev/null)
work=$(mktemp -d /tmp/linfer-unigram.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 tests/tokenizers/make_corpus.py "$work/corpus.txt" 12000
"$py" tools/python/reference/make_unigram_tokenizer_json.py "$work/corpus.txt" "$work/tokenizer.json"
committed=tests/tokenizers/xlmr_unigram_tokenizer.json.gz
"$py" - "$work" "$committed" <<'PY'
import gzip, json, sys
from tokenizers import Tokenizer
work, committed = sys.argv[1], sys.argv[2]
new = json.load(open(work + "/tokenizer.json"))
old = json.load(gzip.open(committed))
print("tokenizer.json:", "the same as the committed one" if new == old else "DIFFERS from the committed one")
lines = open(work + "/corpus.txt", "rb").read().decode("utf-8", "replace").split("\n")[:-1]
t = Tokenizer.from_file(work + "/tokenizer.json")
with open(work + "/python.ids", "w") as f:
    f.writelines(" ".join(map(str, e.ids)) + "\n" for e in t.encode_batch(lines))
if new != old and "--write" not in sys.argv:
    sys.exit(1)
PY
node tests/tokenizers/reference.js "$work/tokenizer.json" "$work/corpus.txt" > "$work/node.ids"
cmp "$work/python.ids" "$work/node.ids"
echo "ids: tokenizers (Python) and tokenizers (npm) agree on $(wc -l < "$work/node.ids") lines"
if [ $write = 1 ]; then
  gzip -9 -n -c "$work/tokenizer.json" > "$committed"
  echo "wrote $committed"
fi
