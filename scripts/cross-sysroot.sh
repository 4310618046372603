#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cross-sysroot.sh [--python] ARCH DIR: unpacks Debian's ARCH builds (arm64, armhf) into DIR for a
# cross build. Without --python: XNNPACK with pthreadpool and cpuinfo (the optional dense path), a
# sysroot for the cross compiler, whose own C library and libstdc++ come with it
# (g++-aarch64-linux-gnu, g++-arm-linux-gnueabihf). With --python: the target's python3 and
# python3-numpy with what they load (libffi for ctypes, BLAS and LAPACK for numpy, zlib and expat),
# for the Python package's tests under qemu-user; a folder of its own, so that the cross build's
# library search never sees them. Foreign -dev packages are not co-installable with the amd64 ones
# (apt would remove libxnnpack-dev and python3-torch), so everything is downloaded and unpacked
# with dpkg -x instead of installed.
set -euo pipefail
python=0
if [ "${1:-}" = --python ]; then python=1; shift; fi
arch=${1:?usage: cross-sysroot.sh [--python] ARCH DIR}
dir=$(realpath -m "${2:?usage: cross-sysroot.sh [--python] ARCH DIR}")
if [ $python = 1 ]; then
  names=(python3-minimal python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3-numpy libffi8
         libblas3 liblapack3 libgfortran5 zlib1g libexpat1)
else
  names=(libxnnpack-dev libxnnpack0 libpthreadpool-dev libpthreadpool0 libcpuinfo0)
fi
packages=()
for p in "${names[@]}"; do packages+=("$p:$arch"); done
if [ -f "$dir/.complete" ]; then echo "cross-sysroot: $dir is ready"; exit 0; fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# apt-get update may fail on one index while its mirror syncs ("Mirror sync in progress"); the
# others are then still fresh enough to download from, so its failure is not fatal here.
if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  $SUDO dpkg --add-architecture "$arch"
  $SUDO apt-get update -qq || true
fi
mkdir -p "$dir/debs"
(cd "$dir/debs" && apt-get download "${packages[@]}" > /dev/null 2>&1) || {
  $SUDO apt-get update -qq || true
  (cd "$dir/debs" && apt-get download "${packages[@]}" > /dev/null)
}
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir"; done
touch "$dir/.complete"
echo "cross-sysroot: unpacked ${#packages[@]} $arch packages into $dir"
