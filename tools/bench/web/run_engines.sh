#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_engines.sh WORK [ALTERNATIONS] [ROUNDS]: the web benchmark in Node 22 (npm's, build-wasm-tools)
# and in headless Chromium, each with the module its loader chooses (relaxed SIMD) and with SIMD128,
# in alternating processes, the load average before each (docs/web.md). Needs run_web.sh's WORK
# files and scripts/test-wasm.sh's builds (build-wasm/js/linfer with both modules).
set -euo pipefail
cd "$(dirname "$0")/../../.."
work=$1 alternations=${2:-2} rounds=${3:-11}
node22=build-wasm-tools/node_modules/.bin/node
for i in $(seq "$alternations"); do
  echo "## alternation $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$node22" tools/bench/web/web_bench.mjs "$work" --rounds "$rounds"
  echo "## load $(cut -d' ' -f1-3 /proc/loadavg)"
  LINFER_WASM_MODULE=simd128 "$node22" tools/bench/web/web_bench.mjs "$work" --rounds "$rounds"
  echo "## load $(cut -d' ' -f1-3 /proc/loadavg)"
  node tools/bench/web/chromium_bench.mjs "$work" --rounds "$rounds"
  echo "## load $(cut -d' ' -f1-3 /proc/loadavg)"
  node tools/bench/web/chromium_bench.mjs "$work" --rounds "$rounds" --module simd128
done
echo "## end: load $(cut -d' ' -f1-3 /proc/loadavg)"
