#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_web.sh [--rounds R] [--no-install]
#
# linfer's WebAssembly build against onnxruntime-web (wasm backend, SIMD, 1 thread) in Node on the
# benchmark suite's S model at n = 128, 512 and 2048, f32 and int8 (issue 34 item 4; docs/web.md
# quotes it). Steps:
#   1. npm packages at their locked versions, without install scripts: onnxruntime-web here,
#      onnx-proto (and onnxruntime-node) in tools/bench/suite for ort_quantize.js;
#   2. the wasm build (build-wasm, as scripts/test-wasm.sh configures it) and the native
#      linfer-convert (LINFER_NATIVE_BIN, else build/bin: scripts/build.sh);
#   3. the suite's S model with n = 2048 (make_models.py: PyTorch -> safetensors, ONNX per length,
#      PyTorch's outputs), .lfm f32 and int8, ONNX Runtime's int8 graphs (ort_quantize.js), in
#      LINFER_WEB_BENCH_WORK (default tools/bench/web/work; kept between runs);
#   4. web_bench.mjs: parity against PyTorch, then alternating timed runs; prints a table.
# Timing wants a quiet machine: nothing else running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rounds=20
install=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --no-install) install=0 ;;
    *) echo "run_web.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
work=${LINFER_WEB_BENCH_WORK:-$here/work}
native=${LINFER_NATIVE_BIN:-$root/build/bin}
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

if [ "$install" -eq 1 ]; then
  (cd "$here" && npm ci --ignore-scripts --loglevel=warn)
  (cd "$root/tools/bench/suite" && npm ci --ignore-scripts --loglevel=warn)
fi
cd "$root"
source scripts/generator.sh
cmake -S . -B build-wasm -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-emscripten.cmake \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=ON > /dev/null
cmake --build build-wasm -j"$(nproc)" --target linfer_wasm
[ -x "$native/linfer-convert" ] || bash scripts/build.sh build
mkdir -p "$work"
/usr/bin/python3 tools/bench/suite/make_models.py --model S --n 2048 --lengths 128,512,2048 --work "$work"
for dtype in f32 int8; do
  "$native/linfer-convert" "$work/S.safetensors" -o "$work/S_$dtype.lfm" --dtype $dtype > /dev/null
done
for T in 128 512 2048; do
  node tools/bench/suite/ort_quantize.js "$work/S_n$T.onnx" "$work/S_n${T}_int8.onnx" > /dev/null
done
node "$here/web_bench.mjs" "$work" --rounds "$rounds"
