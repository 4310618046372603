#!/usr/bin/env bash
# Cross-builds linfer for aarch64 (Raspberry Pi 4/5, 64-bit) and runs the test suite under
# qemu-aarch64, twice: the whole suite on a Cortex-A72 (Raspberry Pi 4: ARMv8.0, no dot product,
# no fp16 arithmetic), then on a Cortex-A76 (the Raspberry Pi 5's core: dot product, fp16
# arithmetic; no SVE or i8mm, which qemu's "max" would add) the tests whose code paths depend on
# those features (the kernels, int8 and f16 models).
# Installs the cross compiler and qemu-user from Debian, and the arm64 libraries into a sysroot
# folder (scripts/arm64-sysroot.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/need-packages.sh g++-aarch64-linux-gnu qemu-user
bash scripts/arm64-sysroot.sh build-arm64/sysroot
# The Python package's tests (tests/python) run on Debian's arm64 python3 and python3-numpy,
# unpacked like the libraries (not installable next to the amd64 ones): the interpreter, its
# standard library, numpy, and what they load (libffi for ctypes, BLAS and LAPACK for numpy, zlib
# and expat). A folder of its own, so that the cross build's library search never sees them.
pyroot=build-arm64/python-sysroot
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
python_packages=(python3-minimal:arm64 python3.11-minimal:arm64 libpython3.11-minimal:arm64
                 libpython3.11-stdlib:arm64 python3-numpy:arm64 libffi8:arm64 libblas3:arm64
                 liblapack3:arm64 libgfortran5:arm64 zlib1g:arm64 libexpat1:arm64)
if [ ! -f "$pyroot/.complete" ]; then
  mkdir -p "$pyroot/debs"
  (cd "$pyroot/debs" && apt-get download "${python_packages[@]}" > /dev/null 2>&1) || {
    $SUDO apt-get update -qq || true
    (cd "$pyroot/debs" && apt-get download "${python_packages[@]}" > /dev/null)
  }
  for deb in "$pyroot"/debs/*.deb; do dpkg -x "$deb" "$pyroot"; done
  touch "$pyroot/.complete"
fi
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DLINFER_ARM64_SYSROOT=build-arm64/sysroot -DLINFER_PYTHON_SYSROOT=build-arm64/python-sysroot \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-arm64 -j"$(nproc)"
# qemu-user takes the CPU model from QEMU_CPU. qemu-user 7.2 can deadlock a forked child before it
# execs (seen once in a test's popen of linfer-convert: the child asleep on a futex, the test
# waiting on it forever), an emulator fault that native runs never show: a test that hangs is
# stopped after 600 s (the slowest, test_determinism, takes about 250 s) and run once more.
QEMU_CTEST=(--output-on-failure -j2 --timeout 600 --repeat until-pass:2)
(cd build-arm64 && QEMU_CPU=cortex-a72 ctest "${QEMU_CTEST[@]}")
(cd build-arm64 && QEMU_CPU=cortex-a76 ctest "${QEMU_CTEST[@]}" \
  -R '^(test_kernels|test_quantization|test_golden)$')
