#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench-tokenizers.sh [BIN_DIR]: tokens per second on one thread, linfer (linfer-tokenize --time:
# linfer_tokenize alone, the best of 3) beside Hugging Face tokenizers (npm `tokenizers`,
# encodeBatch with RAYON_NUM_THREADS=1, the best of 3), on the corpus of scripts/test-tokenizers.sh,
# for GPT-2 byte-level BPE, BERT WordPiece and the XLM-RoBERTa-style Unigram tokenizer.json of
# tests/tokenizers; SentencePiece unigram and BPE (trained on the corpus)
# beside python3-sentencepiece (one batch, num_threads=1, the best of 3). docs/tokenizers.md has the
# figures.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/bin}")
npm=()
command -v npm > /dev/null || npm=(npm)
bash scripts/need-packages.sh nodejs "${npm[@]}" python3 python3-torch python3-numpy python3-sentencepiece
(cd tests/tokenizers && npm ci --no-audit --no-fund --prefer-offline > /dev/null)
work=$(mktemp -d /tmp/linfer-tokenizers-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
node tests/tokenizers/make_tokenizer_json.js "$work"
/usr/bin/python3 tests/tokenizers/make_corpus.py "$work/corpus.txt" 12000
/usr/bin/python3 tests/tokenizers/train_sentencepiece.py "$work/corpus.txt" "$work"
/usr/bin/python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  tests/tokenizers/xlmr_unigram_tokenizer.json.gz "$work/xlmr.json"
best_of_3() {  # linfer-tokenize --time three times, the fastest
  for run in 1 2 3; do "$bin/linfer-tokenize" "$1" "$work/corpus.txt" --time 2>&1; done | sort -k11,11 -n -r | head -1
}
for name in gpt2:50257:json bert:30522:json xlmr:4002:json spm_unigram:4000:model spm_bpe:4000:model; do
  IFS=: read -r t vocab ext <<< "$name"
  /usr/bin/python3 tests/tokenizers/make_model.py "$vocab" "$work/$t.pt" "$work/$t.cfg.json"
  "$bin/linfer-convert" "$work/$t.pt" --config "$work/$t.cfg.json" -o "$work/$t.lfm" --tokenizer "$work/$t.$ext" > /dev/null
  echo "== $t"
  best_of_3 "$work/$t.lfm"
  if [ "$ext" = json ]; then
    RAYON_NUM_THREADS=1 node tests/tokenizers/bench.js "$work/$t.json" "$work/corpus.txt"
  else
    /usr/bin/python3 tests/tokenizers/bench_sentencepiece.py "$work/$t.model" "$work/corpus.txt"
  fi
done
