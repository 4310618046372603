#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds linfer for WebAssembly with Debian's emscripten, four modules of one package: two
# single-threaded, build-wasm-relaxed/ (relaxed SIMD: clang-16 and npm's binaryen, cmake/toolchains/
# wasm32-emscripten-relaxed.cmake) and build-wasm/ (SIMD128, cmake/toolchains/wasm32-emscripten.cmake,
# which stages the package with all four), and each with wasm threads, build-wasm-threads/
# (wasm32-emscripten-threads.cmake) and build-wasm-relaxed-threads/
# (wasm32-emscripten-relaxed-threads.cmake), and tests them under Node 20 (Debian's), Node 22
# (npm's) and Chromium:
#   1. the kernel tests (every wasm kernel against its reference; the relaxed build's under Node 22)
#      and the version test
#   2. the JavaScript package (runtime/js, staged in build-wasm/js/linfer): parity with the native
#      build on the golden models in f32, f16 and int8 and on the shipped language-ID models,
#      model.embed against linfer-embed (tests/embed/make_embedder.sh's models), bad input, memory
#      (runtime/js/test/test.mjs); then `npm pack` of the package, offline
#      (and installs it into a project of its own, loads it both ways, type-checks a use of it)
#   3. which module each engine loads (runtime/js/scripts/module_choice.mjs): Node 20 SIMD128; Node 20
#      with --experimental-wasm-relaxed-simd SIMD128 too (its relaxed dot product is wrong: the probe
#      rejects it); Node 22 the relaxed module, with the int8 kernel the timing of the two favours:
#      the decision on injected timings (LINFER_WASM_TIMING) both ways, then on its own timing
#      (either kernel); the JavaScript tests again on the relaxed module (asked for); an engine
#      without SIMD one LinferError, malformed settings too; the two modules' outputs on every test
#      model: int8 identical, f32 and f16 within 1e-4 (the relaxed module's fused multiply-add);
#      core.js's timing probe is runtime/js/src/int8_timing_probe.c's build
#      the threads modules (load({ threads: 2 })), SIMD128's under Node 20 and relaxed SIMD's under
#      Node 22: outputs at 2 threads the same bits as at 1 thread and as the single-threaded module
#      of the same SIMD; bad thread counts, a worker that fails
#   4. tokenize and runText against the native tokenizer on the tokenizer corpus, both modules
#   5. the language-ID page (examples/web) in headless Chromium: the relaxed module (on injected
#      timings), sentences typed, answers read; then the page on Chromium's own timing; then asking
#      for 2 threads: cross-origin isolated, the relaxed threads module; not isolated, a single-threaded
#      module and the reason; its worker script missing (404), load()'s one error
#   6. sizes: what a page downloads is at most 500 KB: index.mjs, one module and its loader, and for
#      a threads module also its worker script
# The native tools that convert the golden checkpoints and give the outputs to compare with come
# from LINFER_NATIVE_BIN (a folder with linfer-convert and linfer-run: test.sh passes build/bin),
# else they are built here, without tests, in build-wasm/host.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "test-wasm.sh: FAILED at line $LINENO" >&2' ERR
source scripts/generator.sh
# (npm comes with Debian's npm package, or with a Node.js of nodesource's, which conflicts with it.)
npm=()
command -v npm > /dev/null || npm=(npm)
bash scripts/need-packages.sh emscripten nodejs "${npm[@]}" node-typescript chromium cmake ninja-build g++ \
  flatbuffers-compiler libflatbuffers-dev libhwy-dev doctest-dev nlohmann-json3-dev clang-16 lld-16 \
  python3-torch python3-numpy
# Debian's emcc finds its acorn (node-acorn) only through NODE_PATH.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
# and runs on the first python3 on PATH, which may be a pyenv shim: 0.3 s of shell scripts in
# each of emcc's 0.7 s, for each of the three modules' ~75 compiles. Debian's own python3 (what the
# emscripten package depends on) takes the WebAssembly builds 15% less time.
export EMSDK_PYTHON=${EMSDK_PYTHON:-/usr/bin/python3}
start=$SECONDS

# From npm, pinned: binaryen's wasm-opt for the relaxed module (Debian's 108 predates relaxed SIMD's
# final opcodes) and Node 22 (relaxed SIMD by default; Debian's Node 20 has it only behind a flag).
tools=build-wasm-tools
if [ ! -x $tools/node_modules/binaryen/bin/wasm-opt ] || [ ! -x $tools/node_modules/.bin/node ]; then
  mkdir -p $tools
  (cd $tools && npm install --no-save --no-audit --no-fund --loglevel=warn binaryen@116.0.0 node@22.23.3 > /dev/null)
fi
node22=$PWD/$tools/node_modules/.bin/node

# The relaxed module first: the SIMD128 build stages the package with it. Not through ccache
# (emcc's environment picks the compiler, which ccache's hash does not see).
cmake -S . -B build-wasm-relaxed -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-emscripten-relaxed.cmake \
  -DLINFER_BINARYEN_BIN="$PWD/$tools/node_modules/binaryen/bin" -DCMAKE_CROSSCOMPILING_EMULATOR="$node22" \
  -DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER= \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=ON -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
cmake --build build-wasm-relaxed -j"$(nproc)" --target linfer_wasm test_kernels
(cd build-wasm-relaxed && ctest --output-on-failure -R '^test_kernels$')

# The threads modules (their kernels are the SIMD128 and relaxed modules', which build-wasm and
# build-wasm-relaxed test).
cmake -S . -B build-wasm-threads -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-emscripten-threads.cmake \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=OFF -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
cmake --build build-wasm-threads -j"$(nproc)" --target linfer_wasm
cmake -S . -B build-wasm-relaxed-threads -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-emscripten-relaxed-threads.cmake \
  -DLINFER_BINARYEN_BIN="$PWD/$tools/node_modules/binaryen/bin" -DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER= \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=OFF -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
cmake --build build-wasm-relaxed-threads -j"$(nproc)" --target linfer_wasm

cmake -S . -B build-wasm -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-emscripten.cmake \
  -DLINFER_JS_RELAXED_DIR="$PWD/build-wasm-relaxed/js/relaxed" -DLINFER_JS_THREADS_DIR="$PWD/build-wasm-threads/js/threads" \
  -DLINFER_JS_RELAXED_THREADS_DIR="$PWD/build-wasm-relaxed-threads/js/relaxed-threads" \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=ON -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
cmake --build build-wasm -j"$(nproc)"
(cd build-wasm && ctest --output-on-failure)

native=${LINFER_NATIVE_BIN:-}
if [ -z "$native" ]; then
  cmake -S . -B build-wasm/host -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=OFF -DLINFER_WITH_XNNPACK=OFF -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
  cmake --build build-wasm/host -j"$(nproc)" --target linfer-convert linfer-run linfer-tokenize linfer-embed
  native=build-wasm/host/bin
fi

# The models and the native outputs the JavaScript tests compare with: every golden case in
# f32, f16 and int8 at each of its lengths, and the language-ID models on their sample lines.
data=build-wasm/js-test-data
rm -rf "$data" && mkdir -p "$data"
while read -r name file; do
  dir=tests/golden/$name
  config=()
  [[ $name == *bare* ]] && config=(--config "$dir/config.json")  # a bare state_dict (as test_quantization)
  for dtype in f32 f16 int8; do
    "$native/linfer-convert" "$dir/$file" -o "$data/$name.$dtype.lfm" --dtype $dtype "${config[@]}" > /dev/null
    for ids in "$dir"/ids_*.txt; do
      T=$(basename "$ids" .txt); T=${T#ids_}
      "$native/linfer-run" "$data/$name.$dtype.lfm" --ids "$ids" --dump "$data/$name.$dtype.out_$T.npy" > /dev/null
    done
  done
done < tests/golden/cases.txt
i=0
while IFS= read -r line; do
  printf '%s' "$line" > "$data/langid_$i.txt"
  for dtype in f32 f16 int8; do
    "$native/linfer-run" examples/models/langid.$dtype.lfm --text "$data/langid_$i.txt" \
      --dump "$data/langid_$i.$dtype.npy" > /dev/null
  done
  i=$((i + 1))
done < examples/data/langid_samples.txt
# model.embed: small pooled models with a WordPiece vocabulary and linfer-embed's embeddings.
bash tests/embed/make_embedder.sh "$native" "$data/embed"

# The JavaScript tests on each module: Node 20 loads SIMD128, Node 22 (asked) relaxed SIMD.
LINFER_JS_PACKAGE=build-wasm/js/linfer LINFER_JS_TEST_DATA=$data \
  node --expose-gc --test runtime/js/test/
LINFER_WASM_MODULE=relaxed-simd LINFER_JS_PACKAGE=build-wasm/js/linfer LINFER_JS_TEST_DATA=$data \
  "$node22" --expose-gc --test runtime/js/test/test.mjs
# Which module each engine loads, and the two modules' outputs (int8: the same bits; f32 and f16:
# within 1e-4, as the relaxed module multiply-adds in one rounding). Where relaxed SIMD runs, the
# relaxed module's int8 kernel is a timing: tested on injected timings both ways (the same bits),
# then on the engine's own (either).
choice=runtime/js/scripts/module_choice.mjs
node $choice build-wasm/js/linfer $data simd128 'relaxed probe failed' build-wasm/js/outputs-simd128.json
node --experimental-wasm-relaxed-simd $choice build-wasm/js/linfer $data simd128 'relaxed probe failed'
LINFER_WASM_TIMING=relaxed=50,simd128=80 "$node22" $choice build-wasm/js/linfer $data relaxed-simd \
  'relaxed probe passed' build-wasm/js/outputs-relaxed.json
LINFER_WASM_TIMING=relaxed=80,simd128=50 "$node22" $choice build-wasm/js/linfer $data relaxed-simd \
  'relaxed probe passed' build-wasm/js/outputs-relaxed-simd128-dot.json
LINFER_WASM_MODULE=relaxed-simd LINFER_WASM_TIMING=relaxed=80,simd128=50 "$node22" $choice build-wasm/js/linfer $data \
  relaxed-simd asked
LINFER_WASM_MODULE=simd128 "$node22" $choice build-wasm/js/linfer $data simd128 asked
"$node22" $choice build-wasm/js/linfer $data timed
LINFER_WASM_TIMING=relaxed=fast "$node22" $choice build-wasm/js/linfer $data refused
node --no-enable-sse4-1 $choice build-wasm/js/linfer $data none   # V8 without SIMD
node $choice --compare build-wasm/js/outputs-relaxed.json build-wasm/js/outputs-relaxed-simd128-dot.json
node $choice --compare build-wasm/js/outputs-simd128.json build-wasm/js/outputs-relaxed.json --fused
# The threads modules at 2 threads (Node 20 SIMD128, Node 22 relaxed SIMD): the same bits as at 1
# thread and as the single-threaded module of the same SIMD.
node $choice build-wasm/js/linfer $data threads simd128 build-wasm/js/outputs-threads.json
"$node22" $choice build-wasm/js/linfer $data threads relaxed-simd build-wasm/js/outputs-relaxed-threads.json
node $choice --compare build-wasm/js/outputs-simd128.json build-wasm/js/outputs-threads.json
node $choice --compare build-wasm/js/outputs-relaxed.json build-wasm/js/outputs-relaxed-threads.json
probe=$(bash runtime/js/scripts/make_timing_probe.sh build-wasm/js/timing-probe)
grep -qF "const PROBE_INT8_TIMING = '$probe';" runtime/js/lib/core.js ||
  { echo "core.js's PROBE_INT8_TIMING is not runtime/js/src/int8_timing_probe.c's build: run runtime/js/scripts/make_timing_probe.sh" >&2; exit 1; }
# The package as npm publishes it, made without the network, installed into a project of its own
# (offline), loaded by require and by import, and its types checked with a program using them.
(cd build-wasm/js/linfer && npm pack --offline --loglevel=warn --pack-destination .. > /dev/null)
consumer=build-wasm/js/consumer
rm -rf "$consumer" && mkdir -p "$consumer"
echo '{"name": "linfer-consumer", "version": "0.0.0", "private": true}' > "$consumer/package.json"
cp runtime/js/test/types_check.ts "$consumer/"
(cd "$consumer" && npm install --offline --loglevel=warn --no-audit --no-fund ../linfer-*.tgz > /dev/null &&
  node -e "require('linfer').version().then(v => import('linfer').then(e => e.version()).then(w => {
    if (v !== w) throw new Error('require and import differ: ' + v + ' ' + w); }))" &&
  tsc --noEmit --strict --target es2020 --module es2020 --moduleResolution node types_check.ts)
# tokenize and runText: the native tokenizer's ids on the tokenizer corpus (tests/tokenizers, its
# first 3,000 lines) with GPT-2's byte-level BPE and BERT's WordPiece, under both modules.
tok=build-wasm/js-test-tokenizers
rm -rf "$tok" && mkdir -p "$tok"
(cd tests/tokenizers && npm ci --no-audit --no-fund --prefer-offline --loglevel=warn > /dev/null)
node tests/tokenizers/make_tokenizer_json.js "$tok"
/usr/bin/python3 tests/tokenizers/make_corpus.py "$tok/corpus.txt" 3000
/usr/bin/python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  tests/tokenizers/xlmr_unigram_tokenizer.json.gz "$tok/xlmr.json"  # Unigram (XLM-R's pipeline)
for m in gpt2:50257 bert:30522 xlmr:4002; do
  name=${m%:*}
  /usr/bin/python3 tests/tokenizers/make_model.py "${m#*:}" "$tok/$name.pt" "$tok/$name.cfg.json"
  "$native/linfer-convert" "$tok/$name.pt" --config "$tok/$name.cfg.json" -o "$tok/$name.lfm" \
    --tokenizer "$tok/$name.json" > /dev/null
  "$native/linfer-tokenize" "$tok/$name.lfm" "$tok/corpus.txt" > "$tok/$name.ids"
  node runtime/js/scripts/tokenize_check.mjs build-wasm/js/linfer "$tok/$name.lfm" "$tok/corpus.txt" "$tok/$name.ids"
  LINFER_WASM_MODULE=relaxed-simd "$node22" runtime/js/scripts/tokenize_check.mjs build-wasm/js/linfer "$tok/$name.lfm" \
    "$tok/corpus.txt" "$tok/$name.ids"
done
LINFER_WASM_TIMING=relaxed=50,simd128=80 node examples/web/test_page.mjs /usr/bin/chromium linfer-relaxed.wasm
node examples/web/test_page.mjs /usr/bin/chromium   # Chromium's own timing: one module fetched
LINFER_WASM_MODULE=simd128 node examples/web/test_page.mjs /usr/bin/chromium linfer.wasm   # SIMD128's loader in a page
# Asking for 2 threads: a cross-origin-isolated page loads the threads module (and its worker);
# without the isolation headers, a single-threaded module, saying why.
node examples/web/test_page.mjs /usr/bin/chromium linfer-relaxed-threads.wasm --threads 2 --isolated
LINFER_WASM_TIMING=relaxed=50,simd128=80 node examples/web/test_page.mjs /usr/bin/chromium linfer-relaxed.wasm --threads 2
# A worker script the server does not have: load() rejects with one error, the page says it.
node examples/web/test_page.mjs /usr/bin/chromium linfer-relaxed-threads.wasm --threads 2 --isolated --worker-missing
# What a page downloads: index.mjs, one module and its loader (a threads module's page also its
# worker script): at most 500 KB each.
pkg=build-wasm/js/linfer
pages=""
for base in linfer linfer-relaxed linfer-threads linfer-relaxed-threads; do
  files=("$pkg/index.mjs" "$pkg/$base.wasm" "$pkg/$base.js")
  [[ $base == *threads ]] && files+=("$pkg/$base.worker.js")
  page=$(( $(stat -c %s "${files[@]}" | paste -sd+) ))
  [ "$page" -le 500000 ] || { echo "test-wasm.sh: a page with $base.wasm downloads $page bytes, above 500000" >&2; exit 1; }
  pages+="${pages:+, }$base.wasm $page"
done
echo "test-wasm.sh: all WebAssembly tests passed in $((SECONDS - start)) s (bytes a page downloads: $pages)"
