#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package.sh [ARCH...]: Debian packages of linfer made with CPack, for amd64, arm64 and armhf
# (default: all three), into build-packages/: liblinfer0, liblinfer-dev and linfer-tools per
# architecture, and python3-linfer (Architecture: all). docs/packages.md says what each holds;
# scripts/test-packages.sh installs and runs them.
# Each architecture is built in the suite's folder for it (build/, build-arm64/, build-armhf/,
# configured as scripts/build.sh, test-arm64.sh and test-armhf.sh do), so that after the suite
# only liblinfer.a is new (and c_api.cc compiled again without debug information). The folder is
# configured with -DLINFER_DEBIAN_PACKAGES=ON (Debian's layout, cmake/debian-packages.cmake) for
# CPack and given back with it off: its own install layout (lib/) and nothing rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64 armhf)
for arch in "${archs[@]}"; do
  case $arch in
    amd64 | arm64 | armhf) ;;
    *) echo "package.sh: unknown architecture '$arch' (amd64, arm64 or armhf)" >&2; exit 2 ;;
  esac
done
start=$SECONDS
bash scripts/install-deps.sh
bash scripts/need-packages.sh dpkg-dev file xz-utils  # dpkg-architecture, dpkg-shlibdeps; CPack's checks
out=$PWD/build-packages
mkdir -p "$out"
# The changelog's date (cmake/debian-packages.cmake): the commit's, so that a rebuild is the same.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2> /dev/null || date +%s)}
version=$(sed -n 's/^project(linfer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

for arch in "${archs[@]}"; do
  arch_start=$SECONDS
  # The suite's configuration of the folder (the same options as the scripts named above).
  case $arch in
    amd64) dir=build args=() ;;
    arm64)
      dir=build-arm64
      args=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DLINFER_ARM64_SYSROOT=build-arm64/sysroot)
      bash scripts/need-packages.sh g++-aarch64-linux-gnu
      bash scripts/cross-sysroot.sh arm64 build-arm64/sysroot ;;
    armhf)
      dir=build-armhf
      args=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake -DLINFER_WITH_XNNPACK=OFF)
      bash scripts/need-packages.sh g++-arm-linux-gnueabihf ;;
  esac
  # (2>&1: a folder that exists already warns that the toolchain file given again goes unused.)
  mkdir -p "$dir"
  # No debug information in a package: the suite's Release build has c_api.cc's for the ABI check
  # (LINFER_C_API_DEBUG_INFO), which liblinfer.a would carry with this folder's paths.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${args[@]}" -DLINFER_DEBIAN_PACKAGES=ON \
    -DLINFER_C_API_DEBUG_INFO=OFF > "$dir/package-configure.log" 2>&1 ||
    { cat "$dir/package-configure.log"; exit 1; }
  trap 'cmake -S . -B "$dir" -DLINFER_DEBIAN_PACKAGES=OFF > /dev/null' EXIT
  cmake --build "$dir" -j"$(nproc)" --target linfer linfer_static linfer-run linfer-bench linfer-convert > /dev/null
  cpack_args=()
  if [ $arch != amd64 ]; then
    # dpkg-shlibdeps serves the native build only (cmake/debian-packages.cmake).
    lib_depends=$(bash scripts/deb-depends.sh --arch $arch "$dir/runtime/liblinfer.so.$version")
    tools_depends=$(bash scripts/deb-depends.sh --arch $arch --skip liblinfer.so.0 "$dir"/bin/linfer-{run,bench,convert})
    cpack_args=(-D "CPACK_DEBIAN_LIBRARY_PACKAGE_DEPENDS=$lib_depends"
                -D "CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS=$tools_depends")
  fi
  rm -rf "$dir/debian-packages" "$out"/*_"$arch".deb
  (cd "$dir" && cpack --config CPackConfig.cmake "${cpack_args[@]}" > cpack.log 2>&1) ||
    { cat "$dir/cpack.log"; exit 1; }
  mv "$dir"/debian-packages/*.deb "$out"/
  cmake -S . -B "$dir" -DLINFER_DEBIAN_PACKAGES=OFF > /dev/null
  trap - EXIT
  echo "package.sh: $arch packages made in $((SECONDS - arch_start)) s"
done
(cd "$out" && ls -l --block-size=K ./*.deb | awk '{print "  " $5 "\t" $9}')
echo "package.sh: $(ls "$out"/*.deb | wc -l) packages in $out in $((SECONDS - start)) s"
