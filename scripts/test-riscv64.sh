#!/usr/bin/env bash
# Cross-builds linfer for 64-bit RISC-V Linux (RV64GC, no vector extension) and runs the test suite
# under qemu-riscv64: the portable kernels (Highway's scalar target, the generic dense kernels), no
# XNNPACK (Debian has no riscv64 package of it), nothing from the target beyond its C and C++
# libraries, which Debian's cross compiler brings. The Python tests need a riscv64 Python, which
# Debian bookworm does not ship: they are off here (they run natively, on arm64 and on armhf).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
need=()
for p in g++-riscv64-linux-gnu qemu-user; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq || true  # a mirror in sync may fail one index; the install says if it matters
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi
cmake -S . -B build-riscv64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-riscv64 -j"$(nproc)"
# As on arm64 (scripts/test-arm64.sh): a test that hangs in the emulator is stopped and run again.
(cd build-riscv64 && ctest --output-on-failure -j2 --timeout 900 --repeat until-pass:2)
