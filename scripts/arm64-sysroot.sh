#!/usr/bin/env bash
# arm64-sysroot.sh DIR: unpacks Debian's arm64 builds of linfer's libraries into DIR (a sysroot
# for the cross build). The -dev packages for arm64 are not co-installable with the amd64 ones
# (apt would remove libxnnpack-dev and python3-torch), so they are downloaded and unpacked with
# dpkg -x instead of installed. The C library and libstdc++ come from g++-aarch64-linux-gnu.
set -euo pipefail
dir=$(realpath -m "${1:-build-arm64/sysroot}")
packages=(libxnnpack-dev:arm64 libxnnpack0:arm64 libpthreadpool-dev:arm64 libpthreadpool0:arm64
          libcpuinfo0:arm64 libhwy-dev:arm64 libhwy1:arm64)
if [ -f "$dir/.complete" ]; then echo "arm64-sysroot: $dir is ready"; exit 0; fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
mkdir -p "$dir/debs"
(cd "$dir/debs" && apt-get download "${packages[@]}" > /dev/null 2>&1) || {
  $SUDO apt-get update -qq
  (cd "$dir/debs" && apt-get download "${packages[@]}" > /dev/null)
}
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir"; done
touch "$dir/.complete"
echo "arm64-sysroot: unpacked ${#packages[@]} packages into $dir"
