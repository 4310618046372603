#!/usr/bin/env bash
# bench-tokenizers.sh [BIN_DIR]: tokens per second on one thread, linfer (linfer-tokenize --time:
# linfer_tokenize alone, the best of 3) beside Hugging Face tokenizers (npm `tokenizers`,
# encodeBatch with RAYON_NUM_THREADS=1, the best of 3), on the corpus of scripts/test-tokenizers.sh,
# for GPT-2 byte-level BPE and BERT WordPiece. docs/tokenizers.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/bin}")
npm=()
command -v npm > /dev/null || npm=(npm)
bash scripts/need-packages.sh nodejs "${npm[@]}" python3 python3-torch python3-numpy
(cd tests/tokenizers && npm ci --no-audit --no-fund --prefer-offline > /dev/null)
work=$(mktemp -d /tmp/linfer-tokenizers-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
node tests/tokenizers/make_tokenizer_json.js "$work"
/usr/bin/python3 tests/tokenizers/make_corpus.py "$work/corpus.txt" 12000
for name in gpt2:50257 bert:30522; do
  t=${name%%:*}
  /usr/bin/python3 tests/tokenizers/make_model.py "${name#*:}" "$work/$t.pt" "$work/$t.cfg.json"
  "$bin/linfer-convert" "$work/$t.pt" --config "$work/$t.cfg.json" -o "$work/$t.lfm" --tokenizer "$work/$t.json" > /dev/null
  echo "== $t"
  for run in 1 2 3; do "$bin/linfer-tokenize" "$work/$t.lfm" "$work/corpus.txt" --time 2>&1; done | sort -k11,11 -n -r | head -1
  RAYON_NUM_THREADS=1 node tests/tokenizers/bench.js "$work/$t.json" "$work/corpus.txt"
done
