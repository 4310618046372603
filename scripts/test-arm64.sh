#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds linfer for aarch64 (Raspberry Pi 4/5, 64-bit) and runs the test suite under
# qemu-aarch64, three times: the whole suite but test_kernels on a Cortex-A72 (Raspberry Pi 4:
# ARMv8.0, no dot product, no fp16 arithmetic), then on a Cortex-A76 (the Raspberry Pi 5's core:
# dot product, fp16 arithmetic; no SVE or i8mm, which qemu's "max" would add) the model tests
# whose code paths depend on those features (int8 and f16 models), then test_kernels on qemu's
# "max" without SVE and SME: dot product, fp16 and the int8 matrix multiply (i8mm, SMMLA) of phone
# cores, so every Arm kernel (dense_int8_neondot and dense_int8_i8mm too) against its reference.
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
# test_kernels runs once, on "max" below: it tests every kernel the CPU has, the Pi 4's
# (dense_*_neon) among them; here the models show the Pi 4 selects them.
(cd build-arm64 && QEMU_CPU=cortex-a72 ctest "${QEMU_CTEST[@]}" -E '^test_kernels')
# The Pi 5's core runs the models (its dot-product kernel is the one selected there); the kernel
# tests run on "max" without SVE and SME, which has the dot product, fp16 arithmetic and i8mm:
# test_kernels runs every kernel the CPU has against the references, so dense_int8_neondot and
# dense_int8_i8mm both (one test_kernels run under qemu instead of one per CPU model; as three
# tests, test_kernels and its dense f32 and f16 cases, on both cores: about 45 s, not 86).
(cd build-arm64 && QEMU_CPU=cortex-a76 ctest "${QEMU_CTEST[@]}" -R '^(test_quantization|test_golden)$')
(cd build-arm64 && QEMU_CPU='max,sve=off,sme=off' ctest "${QEMU_CTEST[@]}" -R '^test_kernels')
