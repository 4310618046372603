#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds linfer for aarch64 (Raspberry Pi 4/5, 64-bit) and runs the test suite under
# qemu-aarch64 on three CPU models: a Cortex-A72 (Raspberry Pi 4: ARMv8.0, no dot product, no
# fp16 arithmetic) runs the whole suite but the kernel tests; a Cortex-A76 (the Raspberry Pi 5's
# core: dot product, fp16 arithmetic; no SVE or i8mm, which qemu's "max" would add) the test whose
# code paths depend on those features (f16 and int8 models); qemu's "max" without SVE and SME
# (dot product, fp16 and the int8 matrix multiply, i8mm, SMMLA, of phone cores) test_kernels, so
# every Arm kernel (dense_int8_neondot and dense_int8_i8mm too) against its reference.
# Installs the cross compiler and qemu-user from Debian, and the arm64 libraries into a sysroot
# folder (scripts/cross-sysroot.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
bash scripts/need-packages.sh g++-aarch64-linux-gnu qemu-user ninja-build
bash scripts/cross-sysroot.sh arm64 build-arm64/sysroot
# The Python package's tests (tests/python) run on Debian's arm64 python3 and python3-numpy,
# unpacked the same way into a folder of their own.
bash scripts/cross-sysroot.sh --python arm64 build-arm64/python-sysroot
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DLINFER_ARM64_SYSROOT=build-arm64/sysroot -DLINFER_PYTHON_SYSROOT=build-arm64/python-sysroot \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build" > /dev/null
cmake --build build-arm64 -j"$(nproc)"
# qemu-user takes the CPU model from QEMU_CPU. qemu-user 7.2 can deadlock a forked child before it
# execs (seen once in a test's popen of linfer-convert: the child asleep on a futex, the test
# waiting on it forever), an emulator fault that native runs never show: a test that hangs is
# stopped after 600 s (the slowest, test_determinism, takes about 250 s) and run once more.
QEMU_CTEST=(--output-on-failure -j2 --timeout 600 --repeat until-pass:2)
# The Cortex-A72 is the default: the kernel tests and test_quantization_cortex_a76 set their own
# CPU model (tests/CMakeLists.txt), so that one ctest runs all three and keeps both cores busy to
# the end.
(cd build-arm64 && QEMU_CPU=cortex-a72 ctest "${QEMU_CTEST[@]}")
