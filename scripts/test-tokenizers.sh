#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-tokenizers.sh [BIN_DIR]: the tokenizers a model file carries give the reference's ids on
# every line of a 12,851-line multilingual corpus (tests/tokenizers/make_corpus.py; its first 400
# lines random stress text), through
# BIN_DIR/linfer-tokenize (default build/bin) on tiny models converted with --tokenizer:
#   GPT-2 byte-level BPE and BERT WordPiece against Hugging Face tokenizers (npm `tokenizers`),
#   each converted from tokenizer.json and from the upstream files (encoder.json + vocab.bpe,
#   vocab.txt); GPT-2's BPE through a fairseq dict.txt; an XLM-RoBERTa-style Unigram
#   tokenizer.json (tests/tokenizers/xlmr_unigram_tokenizer.json.gz, made by transformers'
#   XLMRobertaConverter: scripts/regen-unigram-tokenizer.sh) against Hugging Face tokenizers;
#   SentencePiece unigram and BPE models trained here, against python3-sentencepiece.
# One differing line fails. Then the refusals: a vocabulary larger than the model's embedding, an
# unsupported pre-tokenizer, an unknown normalizer and a malformed character map in a Unigram
# tokenizer.json, a model without a tokenizer. Installs its own dependencies (Debian's
# nodejs, npm, python3-torch, python3-sentencepiece; the npm packages of tests/tokenizers with
# npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "test-tokenizers.sh: FAILED at line $LINENO" >&2' ERR
bin=$(realpath "${1:-build/bin}")
npm=()
command -v npm > /dev/null || npm=(npm)
bash scripts/need-packages.sh nodejs "${npm[@]}" python3 python3-torch python3-numpy python3-sentencepiece
(cd tests/tokenizers && npm ci --no-audit --no-fund --prefer-offline > /dev/null)
work=$(mktemp -d /tmp/linfer-tokenizers.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS

node tests/tokenizers/make_tokenizer_json.js "$work"
/usr/bin/python3 tests/tokenizers/make_corpus.py "$work/corpus.txt" 12000
/usr/bin/python3 tests/tokenizers/make_model.py 50257 "$work/gpt2.pt" "$work/gpt2.cfg.json"
/usr/bin/python3 tests/tokenizers/make_model.py 30522 "$work/bert.pt" "$work/bert.cfg.json"
convert() {  # convert NAME MODEL TOKENIZER_FILE...
  local name=$1 model=$2
  shift 2
  local args=()
  for f in "$@"; do args+=(--tokenizer "$work/$f"); done
  "$bin/linfer-convert" "$work/$model.pt" --config "$work/$model.cfg.json" -o "$work/$name.lfm" "${args[@]}" > /dev/null
}
convert gpt2 gpt2 gpt2.json
convert gpt2_files gpt2 encoder.json vocab.bpe
convert bert bert bert.json
convert bert_vocab bert bert_vocab.txt

# compare NAME REFERENCE: linfer-tokenize's ids against the reference's, line by line.
compare() {
  "$bin/linfer-tokenize" "$work/$1.lfm" "$work/corpus.txt" > "$work/$1.ids"
  /usr/bin/python3 - "$work/$1.ids" "$work/$2" "$work/corpus.txt" "$1" <<'PY'
import sys
ours, ref = open(sys.argv[1]).read().split("\n"), open(sys.argv[2]).read().split("\n")
corpus = open(sys.argv[3], "rb").read().split(b"\n")
bad = [i for i in range(max(len(ours), len(ref))) if i >= len(ours) or i >= len(ref) or ours[i] != ref[i]]
lines = len(corpus) - 1
if bad:
    i = bad[0]
    print(f"{sys.argv[4]}: {len(bad)} of {lines} lines differ; first, line {i + 1}: {corpus[i][:200]!r}")
    print(f"  linfer:    {ours[i] if i < len(ours) else '(none)'}")
    print(f"  reference: {ref[i] if i < len(ref) else '(none)'}")
    sys.exit(1)
tokens = sum(len(l.split()) for l in ours)
print(f"{sys.argv[4]}: {lines} of {lines} lines identical ({tokens} ids)")
PY
}
node tests/tokenizers/reference.js "$work/gpt2.json" "$work/corpus.txt" > "$work/gpt2.ref"
node tests/tokenizers/reference.js "$work/bert.json" "$work/corpus.txt" > "$work/bert.ref"
compare gpt2 gpt2.ref
compare gpt2_files gpt2.ref
compare bert bert.ref
compare bert_vocab bert.ref

# fairseq (RoBERTa): GPT-2's BPE ids through a dict.txt made as fairseq-preprocess makes one (ids by
# falling count; here those seen at least twice in the corpus, so that the rest are <unk>), the
# reference being Hugging Face's GPT-2 ids (without special tokens) mapped as fairseq's
# Dictionary.encode_line does, in <s> ... </s>.
node tests/tokenizers/reference.js "$work/gpt2_plain.json" "$work/corpus.txt" > "$work/gpt2_plain.ref"
/usr/bin/python3 - "$work" <<'PY'
import collections, sys
work = sys.argv[1]
lines = open(work + "/gpt2_plain.ref").read().split("\n")[:-1]
counts = collections.Counter(t for l in lines for t in l.split())
kept = [t for t, c in sorted(counts.items(), key=lambda x: (-x[1], int(x[0]))) if c >= 2]
with open(work + "/dict.txt", "w") as f:
    f.writelines("%s %d\n" % (t, counts[t]) for t in kept)
    f.write("madeupword0000 0\n")
index = {t: 4 + i for i, t in enumerate(kept)}
with open(work + "/fairseq.ref", "w") as f:
    f.writelines(" ".join(["0"] + [str(index.get(t, 3)) for t in l.split()] + ["2"]) + "\n" for l in lines)
PY
/usr/bin/python3 tests/tokenizers/make_model.py 50265 "$work/fairseq.pt" "$work/fairseq.cfg.json"
"$bin/linfer-convert" "$work/fairseq.pt" --config "$work/fairseq.cfg.json" -o "$work/fairseq.lfm" \
  --tokenizer "$work/encoder.json" --tokenizer "$work/vocab.bpe" --tokenizer "$work/dict.txt" > /dev/null
compare fairseq fairseq.ref

# Hugging Face's Unigram (XLM-RoBERTa's pipeline): the committed tokenizer.json, made by
# transformers from a SentencePiece model trained on this corpus.
/usr/bin/python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  tests/tokenizers/xlmr_unigram_tokenizer.json.gz "$work/xlmr.json"
/usr/bin/python3 tests/tokenizers/make_model.py 4002 "$work/xlmr.pt" "$work/xlmr.cfg.json"
convert xlmr xlmr xlmr.json
node tests/tokenizers/reference.js "$work/xlmr.json" "$work/corpus.txt" > "$work/xlmr.ref"
compare xlmr xlmr.ref
# The same pieces in the pipeline older converters wrote (Replace by " ", Metaspace's
# add_prefix_space), in a bare one (Precompiled alone, prepend_scheme "first"), and with <mask>
# matched in the raw text with lstrip and rstrip.
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
j = json.load(open(work + "/xlmr.json"))
charsmap = j["normalizer"]["normalizers"][0]
j["normalizer"]["normalizers"] = [charsmap, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
json.dump(j, open(work + "/xlmr_legacy.json", "w"))
j["normalizer"] = charsmap
j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
json.dump(j, open(work + "/xlmr_first.json", "w"))
j = json.load(open(work + "/xlmr.json"))  # <mask> matched in the raw text, taking spaces both sides
for token in j["added_tokens"]:
    if token["content"] == "<mask>":
        token.update(normalized=False, rstrip=True)
json.dump(j, open(work + "/xlmr_raw_mask.json", "w"))
PY
for variant in xlmr_legacy xlmr_first xlmr_raw_mask; do
  convert "$variant" xlmr "$variant.json"
  node tests/tokenizers/reference.js "$work/$variant.json" "$work/corpus.txt" > "$work/$variant.ref"
  compare "$variant" "$variant.ref"
done
# and from the command line: one line through linfer-run --text
printf 'Ｘ  <mask> café\n' > "$work/one.txt"
"$bin/linfer-run" "$work/xlmr.lfm" --text "$work/one.txt" > "$work/one.out"
[ "$("$bin/linfer-tokenize" "$work/xlmr.lfm" "$work/one.txt")" = "$(node tests/tokenizers/reference.js "$work/xlmr.json" "$work/one.txt")" ]

# SentencePiece: unigram (with byte fallback) and BPE models trained here on the corpus, against
# python3-sentencepiece.
/usr/bin/python3 tests/tokenizers/train_sentencepiece.py "$work/corpus.txt" "$work"
/usr/bin/python3 tests/tokenizers/make_model.py 4000 "$work/spm.pt" "$work/spm.cfg.json"
for kind in unigram bpe; do
  "$bin/linfer-convert" "$work/spm.pt" --config "$work/spm.cfg.json" -o "$work/spm_$kind.lfm" \
    --tokenizer "$work/spm_$kind.model" > /dev/null
  /usr/bin/python3 tests/tokenizers/reference_sentencepiece.py "$work/spm_$kind.model" "$work/corpus.txt" > "$work/spm_$kind.ref"
  compare "spm_$kind" "spm_$kind.ref"
done

# Refusals: one line naming the problem, a non-zero exit.
refused() {  # refused PATTERN COMMAND...: the command fails and its message matches PATTERN
  local pattern=$1
  shift
  if "$@" > "$work/out" 2>&1; then echo "accepted: $*" >&2; exit 1; fi
  grep -q -- "$pattern" "$work/out" || { echo "unexpected message for $*:" >&2; cat "$work/out" >&2; exit 1; }
}
refused "50257 pieces do not fit the model's vocabulary of 30522" \
  "$bin/linfer-convert" "$work/bert.pt" --config "$work/bert.cfg.json" -o "$work/x.lfm" --tokenizer "$work/gpt2.json"
sed 's/"BertPreTokenizer"/"Whitespace"/' "$work/bert.json" > "$work/whitespace.json"
refused "pre-tokenizer Whitespace is not supported" \
  "$bin/linfer-convert" "$work/bert.pt" --config "$work/bert.cfg.json" -o "$work/x.lfm" --tokenizer "$work/whitespace.json"
# A Unigram tokenizer.json linfer cannot reproduce: refused by the key, nothing written.
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
j = json.load(open(work + "/xlmr.json"))
j["normalizer"]["normalizers"].insert(1, {"type": "NFKC"})
json.dump(j, open(work + "/xlmr_nfkc.json", "w"))
j = json.load(open(work + "/xlmr.json"))
j["normalizer"]["normalizers"][0]["precompiled_charsmap"] = "AAEAAA" + "A" * 20  # a trie of 65536 bytes in 15
json.dump(j, open(work + "/xlmr_badmap.json", "w"))
PY
refused "normalizer NFKC is not supported with Unigram" \
  "$bin/linfer-convert" "$work/xlmr.pt" --config "$work/xlmr.cfg.json" -o "$work/x.lfm" --tokenizer "$work/xlmr_nfkc.json"
refused "precompiled_charsmap is malformed" \
  "$bin/linfer-convert" "$work/xlmr.pt" --config "$work/xlmr.cfg.json" -o "$work/x.lfm" --tokenizer "$work/xlmr_badmap.json"
[ ! -e "$work/x.lfm" ] || { echo "a refused conversion wrote $work/x.lfm" >&2; exit 1; }
"$bin/linfer-convert" "$work/bert.pt" --config "$work/bert.cfg.json" -o "$work/plain.lfm" > /dev/null
refused "carries no tokenizer" "$bin/linfer-tokenize" "$work/plain.lfm" "$work/corpus.txt"
refused "cannot open" "$bin/linfer-tokenize" "$work/bert.lfm" "$work/missing.txt"
echo "test-tokenizers.sh: passed ($((SECONDS - start)) s)"
