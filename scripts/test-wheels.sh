#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-wheels.sh: installs each wheel of build-wheels/ (scripts/wheels.sh) with pip into a fresh
# venv and uses it there: x86_64 with Debian's python3 natively, aarch64 and armv7l with Debian's
# arm64 and armhf python3 and python3-numpy (unpacked into build-arm64/python-sysroot and
# build-armhf/python-sysroot, scripts/cross-sysroot.sh) under qemu-user. In each venv
# (--system-site-packages for the target's NumPy; pip 25.1.1 run from its wheel, --no-index, so
# nothing is fetched): tests/python/wheel_check.py (the language-ID model's answers, NumPy in and
# out, the tokenizer), `python -m linfer` and the `linfer` console script on a German text. Then
# the native pip must refuse the two foreign wheels by their tags, and the sdist must stop with
# one line when CMake or a compiler is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
out=build-wheels
bash scripts/need-packages.sh qemu-user python3-venv
bash scripts/cross-sysroot.sh --python arm64 build-arm64/python-sysroot > /dev/null
bash scripts/cross-sysroot.sh --python armhf build-armhf/python-sysroot > /dev/null
version=$(sed -n 's/^project(linfer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
pip_wheel=$out/pip/pip-25.1.1-py3-none-any.whl
[ -f "$pip_wheel" ] || "$out/venv/bin/pip" download -q --no-deps -d "$out/pip" pip==25.1.1
pip_wheel=$PWD/$pip_wheel
work=$(mktemp -d "$PWD/$out/test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "test-wheels.sh: $*" >&2; exit 1; }

wheel_of() {
  local w=("$out"/linfer-"$version"-py3-none-*_"$1".whl)
  [ -f "${w[0]}" ] || fail "no $1 wheel in $out (bash scripts/wheels.sh)"
  echo "${w[0]}"
}
de_label=$(sed -n '/^de$/=' examples/models/langid.labels.txt)
de_label=$((de_label - 1))

for arch in x86_64 aarch64 armv7l; do
  wheel=$(wheel_of $arch)
  case $arch in
    x86_64) run=() python=/usr/bin/python3 ;;
    aarch64|armv7l)
      [ $arch = aarch64 ] && q=(qemu-aarch64 -cpu cortex-a72) root=build-arm64/python-sysroot triplet=aarch64-linux-gnu
      [ $arch = armv7l ] && q=(qemu-arm -cpu cortex-a7) root=build-armhf/python-sysroot triplet=arm-linux-gnueabihf
      root=$PWD/$root
      libs=$root/usr/lib/$triplet:$root/lib/$triplet:$root/usr/lib/$triplet/blas:$root/usr/lib/$triplet/lapack
      # The C library of Debian's cross toolchain (libc6-*-cross), the same glibc as the target's.
      run=("${q[@]}" -L "/usr/$triplet" -E "LD_LIBRARY_PATH=$libs") python=$root/usr/bin/python3 ;;
  esac
  venv=$work/venv-$arch
  "${run[@]}" "$python" -m venv --without-pip --system-site-packages "$venv"
  "${run[@]}" "$venv/bin/python" "$pip_wheel/pip" install -q --no-index --no-cache-dir \
    --disable-pip-version-check "$wheel" || fail "$arch: pip could not install $(basename "$wheel")"
  (cd "$work" && "${run[@]}" "$venv/bin/python" "$OLDPWD/tests/python/wheel_check.py" "$OLDPWD" "$version") ||
    fail "$arch: wheel_check.py failed"
  # The package's command line two ways: python -m linfer and the console script pip wrote (a
  # script for the venv's python, which runs it here under the emulator).
  for how in "-m linfer" "$venv/bin/linfer"; do
    # shellcheck disable=SC2086  # $how is two words for -m
    said=$(cd "$work" && "${run[@]}" "$venv/bin/python" $how "$OLDPWD/examples/models/langid.int8.lfm" \
      --text "$OLDPWD/examples/data/langid-de.txt") || fail "$arch: $how failed: $said"
    grep -q "predicted class: $de_label " <<< "$said" || fail "$arch: $how: not German: $said"
  done
  echo "test-wheels.sh: $arch: $(basename "$wheel") ($(stat -c %s "$wheel") bytes) installed and used"
done

# The wrong architecture: refused by the tags, before anything is unpacked.
native=$work/venv-x86_64
for arch in aarch64 armv7l; do
  wheel=$(wheel_of $arch)
  if said=$("$native/bin/python" "$pip_wheel/pip" install --no-index --no-cache-dir \
        --disable-pip-version-check "$wheel" 2>&1); then
    fail "pip installed the $arch wheel on x86_64"
  fi
  grep -q "is not a supported wheel on this platform" <<< "$said" || fail "$arch wheel on x86_64: $said"
done
echo "test-wheels.sh: the aarch64 and armv7l wheels refused on x86_64 by their tags"
# The sdist on a machine without CMake, then without a C++ compiler: one line naming what is
# missing (pip frames it with its own lines).
sdist=$out/linfer-$version.tar.gz
[ -f "$sdist" ] || fail "no sdist $sdist (bash scripts/wheels.sh)"
mkdir -p "$work/cmake-only"
ln -s "$(command -v cmake)" "$work/cmake-only/cmake"
for missing in "CMake 3.25" "a C++17 compiler"; do
  path=$PWD/$out/venv/bin
  [ "$missing" = "a C++17 compiler" ] && path+=:$work/cmake-only
  if said=$(env -u CXX PATH="$path" "$out/venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps \
        --no-cache-dir --disable-pip-version-check -w "$work/sdist" "$sdist" 2>&1); then
    fail "the sdist built without $missing"
  fi
  grep -qF "linfer: building from source needs $missing" <<< "$said" || fail "sdist without $missing: $said"
done
echo "test-wheels.sh: the sdist without CMake, then without a compiler, names what is missing"
echo "test-wheels.sh: all passed in $((SECONDS - start)) s"
