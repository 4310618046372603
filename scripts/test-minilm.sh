#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-minilm.sh [BIN_DIR]: all-MiniLM-L6-v2 from its PyPI package, converted to f32, f16 and int8
# (scripts/minilm.sh), embeds tests/hf/sentences.txt and queries.txt with linfer-embed and compares
# them with sentence-transformers' embeddings committed beside them (tests/hf/check_minilm.py;
# regenerate with tools/python/make_minilm_reference.py). BIN_DIR defaults to build/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
start=$SECONDS
bash scripts/need-packages.sh python3-numpy
bash scripts/minilm.sh build-hf "$bin"
out=build-hf/embed
mkdir -p "$out"
for dtype in f32 f16 int8; do
  for set in sentences queries; do
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
echo "test-minilm.sh: passed in $((SECONDS - start)) s"
