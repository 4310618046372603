#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles runtime/js/src/int8_timing_probe.c (clang-16 and wasm-ld-16, no emscripten: it needs no
# library) and prints the module in base64: core.js's PROBE_INT8_TIMING (scripts/test-wasm.sh checks
# that core.js holds this output). clang is not asked to optimize at the link: it would
# run the wasm-opt on the PATH, and Debian's binaryen 108 rewrites relaxed SIMD's opcodes wrongly.
#   bash runtime/js/scripts/make_timing_probe.sh [OUT_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)/src/int8_timing_probe.c
out=${1:-$(mktemp -d)}
mkdir -p "$out"
clang-16 --target=wasm32 -O2 -msimd128 -mrelaxed-simd -c "$src" -o "$out/int8_timing_probe.o"
wasm-ld-16 --no-entry --strip-all -z stack-size=1024 --initial-memory=65536 --max-memory=65536 \
  "$out/int8_timing_probe.o" -o "$out/int8_timing_probe.wasm"
base64 -w0 "$out/int8_timing_probe.wasm"
echo
