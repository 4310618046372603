#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds linfer for 64-bit RISC-V Linux (RV64GC, no vector extension) and runs the test suite
# under qemu-riscv64: the portable kernels (Highway's scalar target, the generic dense kernels), no
# XNNPACK (Debian has no riscv64 package of it), nothing from the target beyond its C and C++
# libraries, which Debian's cross compiler brings. The Python tests need a riscv64 Python, which
# Debian bookworm does not ship: they are off here (they run natively, on arm64 and on armhf).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
bash scripts/need-packages.sh g++-riscv64-linux-gnu qemu-user ninja-build
cmake -S . -B build-riscv64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build" > /dev/null
cmake --build build-riscv64 -j"$(nproc)"
# As on arm64 (scripts/test-arm64.sh): a test that hangs in the emulator is stopped and run again.
# Two tests are left to the native run, where the same portable kernels run in seconds
# (test_golden_generic, test_quantization_generic: the session's max_isa caps every kernel to the
# portable code riscv64 runs): examples_langid (50 processes of the classifier, 7 minutes under
# qemu-riscv64) and test_determinism (every thread count and path, 10 minutes); they run under
# qemu for the NEON kernels they are there for, the first on aarch64 and armv7, the second on
# aarch64.
(cd build-riscv64 && ctest --output-on-failure -j2 --timeout 900 --repeat until-pass:2 \
  -E '^(examples_langid|test_determinism.*)$')
