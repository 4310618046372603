#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds linfer for 32-bit ARM (Raspberry Pi OS 32-bit, Debian armhf: ARMv7, VFPv3-D16, no
# NEON in the baseline) and runs the test suite under qemu-arm, twice: the suite (but
# test_determinism) on a Cortex-A7 (Raspberry Pi 2: ARMv7 with NEON and VFPv4, what the
# dense_*_neonv7 kernels and Highway's NEON target need, and what a 32-bit OS sees on every Pi: an
# ARMv8 core in 32-bit mode selects the same kernels), then the golden models on a Cortex-A9
# (NEON without VFPv4: the portable kernels). This is the build
# without XNNPACK (-DLINFER_WITH_XNNPACK=OFF, the aarch64 one has it): it needs nothing of the
# target but the C and C++ libraries of the cross compiler. Installs the cross compiler and
# qemu-user from Debian, and the armhf python3 + numpy into a folder of their own
# (scripts/cross-sysroot.sh) for the Python package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
start=$SECONDS
bash scripts/need-packages.sh g++-arm-linux-gnueabihf qemu-user ninja-build
bash scripts/cross-sysroot.sh --python armhf build-armhf/python-sysroot
cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake \
  -DLINFER_WITH_XNNPACK=OFF -DLINFER_PYTHON_SYSROOT=build-armhf/python-sysroot \
  -DCMAKE_BUILD_TYPE=Release -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build" > /dev/null
cmake --build build-armhf -j"$(nproc)"
echo "test-armhf.sh: built in $((SECONDS - start)) s"
# qemu-user takes the CPU model from QEMU_CPU; a test that hangs in the emulator is stopped and
# run once more (scripts/test-arm64.sh explains both).
QEMU_CTEST=(--output-on-failure -j2 --timeout 600 --repeat until-pass:2)
# test_determinism (thread counts and repeats) runs natively, under TSan and on aarch64: here it
# would take ten minutes of the emulator for code that is the same on every architecture.
(cd build-armhf && QEMU_CPU=cortex-a7 ctest "${QEMU_CTEST[@]}" -E '^test_determinism')
# A Cortex-A9 has NEON but VFPv3 only: the kernels' detection must fall back to the portable
# dense kernels and Highway's scalar target, and the models must still give their goldens.
(cd build-armhf && QEMU_CPU=cortex-a9 ctest "${QEMU_CTEST[@]}" -R '^(test_quantization|test_golden)$')
# The Linformer-only build (-DLINFER_ATTENTION_KINDS=linformer) on the 32-bit OS: its library must
# stay within its 250 KB budget (tests/footprint/sizes.txt), and its models give their goldens.
# Without the tokenizers (their Unicode tables alone are a large part: docs/footprint.md).
cmake -S . -B build-armhf-linformer -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake \
  -DLINFER_WITH_XNNPACK=OFF -DLINFER_ATTENTION_KINDS=linformer -DLINFER_TOKENIZERS=OFF -DCMAKE_BUILD_TYPE=Release -DLINFER_WARNINGS_AS_ERRORS=ON \
  "-DLINFER_TEST_CONVERTER=$PWD/build-armhf/bin/linfer-convert" > /dev/null  # the converter built above
cmake --build build-armhf-linformer -j"$(nproc)" --target linfer linfer_minimal test_golden
(cd build-armhf-linformer && QEMU_CPU=cortex-a7 ctest "${QEMU_CTEST[@]}" -R '^(footprint_budget|test_golden)$')
echo "test-armhf.sh: all tests passed in $((SECONDS - start)) s"
