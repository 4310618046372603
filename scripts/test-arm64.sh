#!/usr/bin/env bash
# Cross-builds linfer for aarch64 (Raspberry Pi 4/5, 64-bit) and runs the test suite under
# qemu-aarch64. Installs the cross compiler and qemu-user from Debian, and the arm64 libraries
# into a sysroot folder (scripts/arm64-sysroot.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
need=()
for p in g++-aarch64-linux-gnu qemu-user; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi
bash scripts/arm64-sysroot.sh build-arm64/sysroot
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DLINFER_ARM64_SYSROOT=build-arm64/sysroot -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-arm64 -j"$(nproc)"
(cd build-arm64 && ctest --output-on-failure -j2)
