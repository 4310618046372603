#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-packages.sh [ARCH...]: tests the .deb packages that scripts/package.sh left in
# build-packages/ (default: amd64, arm64 and armhf). As root (it installs packages and mounts).
#  Every architecture: unpacked (dpkg -x), each package must hold its files (the library under
#    its multiarch folder with SONAME liblinfer.so.0, liblinfer.a, headers, CMake and pkg-config
#    files, tools with manual pages, the Python package), name no folder of this build (the CMake
#    package of a cross build once named the sysroot's XNNPACK), depend on the exact version of
#    liblinfer0, and lint clean but for the tags docs/packages.md accepts.
#  amd64: installed with apt-get into a throwaway root: an overlay over this machine's / in a
#    mount namespace of its own, so that apt resolves the dependencies from the real package
#    database and runs the maintainer scripts and triggers, and nothing is left on the machine.
#    There, with a clean environment: examples/c-api built against liblinfer-dev with pkg-config,
#    with CMake and statically with CMake; the language-ID model converted and run by the
#    installed tools and by the C programs, and by linfer imported from the system Python; then
#    the packages purged, leaving none of their files. scripts/deb-depends.sh (the cross builds'
#    Depends) must give what dpkg-shlibdeps gave the amd64 packages.
#  arm64, armhf: the unpacked tools convert and run the language-ID model under qemu-user, and the
#    C example, cross-compiled against the unpacked -dev package with pkg-config, runs there too.
set -euo pipefail
cd "$(dirname "$0")/.."
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64 armhf)
start=$SECONDS
src=$PWD
debs=$PWD/build-packages
fail() { echo "test-packages.sh: $*" >&2; exit 1; }
for arch in "${archs[@]}"; do
  case $arch in amd64 | arm64 | armhf) ;; *) fail "unknown architecture '$arch' (amd64, arm64 or armhf)" ;; esac
done
[ "$(id -u)" -eq 0 ] || fail "needs root (apt-get, mount namespaces)"
bash scripts/need-packages.sh lintian qemu-user dpkg-dev pkg-config
version=$(sed -n 's/^project(linfer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_version=$version-1
# The language-ID model, a German text and the class the model gives it.
model_src=examples/models/langid.safetensors
text=$src/examples/data/langid-de.txt
expected=de
# label_of OUTPUT: the language of the class a linfer-run or linfer_example_c output names.
label_of() {
  local class
  class=$(sed -n 's/^\(predicted \)\{0,1\}class:\{0,1\} \([0-9]*\).*/\2/p' <<< "$1" | head -1)
  [ -n "$class" ] || fail "no class in: $1"
  sed -n "$((class + 1))p" examples/models/langid.labels.txt
}
work=$(mktemp -d /tmp/linfer-test-packages.XXXXXX)
trap 'rm -rf "$work"' EXIT

# --- every architecture: contents, fields, lint ------------------------------------------------
lint_files=()
for arch in "${archs[@]}"; do
  case $arch in
    amd64) triplet=x86_64-linux-gnu ;;
    arm64) triplet=aarch64-linux-gnu ;;
    armhf) triplet=arm-linux-gnueabihf ;;
  esac
  stage=$work/stage-$arch
  declare -A deb=(
    [liblinfer0]=$debs/liblinfer0_${deb_version}_$arch.deb
    [liblinfer-dev]=$debs/liblinfer-dev_${deb_version}_$arch.deb
    [linfer-tools]=$debs/linfer-tools_${deb_version}_$arch.deb
    [python3-linfer]=$debs/python3-linfer_${deb_version}_all.deb)
  for p in "${!deb[@]}"; do
    [ -f "${deb[$p]}" ] || fail "missing ${deb[$p]} (run scripts/package.sh $arch first)"
    dpkg -x "${deb[$p]}" "$stage"
    want_arch=$([ $p = python3-linfer ] && echo all || echo $arch)
    [ "$(dpkg-deb -f "${deb[$p]}" Architecture)" = "$want_arch" ] || fail "$p: Architecture is not $want_arch"
    # (Output read whole before grep -q: with pipefail, a writer cut off by grep's early exit fails.)
    if [ $p != liblinfer0 ] && ! grep -qF "liblinfer0 (= $deb_version)" <<< "$(dpkg-deb -f "${deb[$p]}" Depends)"; then
      fail "$p ($arch) does not depend on liblinfer0 (= $deb_version)"
    fi
    lint_files+=("${deb[$p]}")
  done
  lib=usr/lib/$triplet
  for f in $lib/liblinfer.so.0 $lib/liblinfer.so.$version $lib/liblinfer.so $lib/liblinfer.a \
           $lib/cmake/linfer/linferConfig.cmake $lib/pkgconfig/linfer.pc usr/include/linfer/linfer.h \
           usr/include/linfer/linfer.hpp usr/include/linfer/linfer_status.h usr/include/linfer/linfer_version.h usr/bin/linfer-convert \
           usr/bin/linfer-run usr/bin/linfer-bench usr/bin/linfer-tokenize usr/share/man/man1/linfer-run.1.gz \
           usr/share/man/man1/linfer-tokenize.1.gz usr/bin/linfer-embed usr/share/man/man1/linfer-embed.1.gz \
           usr/lib/python3/dist-packages/linfer/__init__.py usr/share/doc/liblinfer0/copyright; do
    [ -e "$stage/$f" ] || fail "$arch: no $f in the packages"
  done
  soname=$(readelf -d "$stage/$lib/liblinfer.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = liblinfer.so.0 ] || fail "$arch: SONAME is '$soname', not liblinfer.so.0 (the package is liblinfer0)"
  lib_depends=$(dpkg-deb -f "${deb[liblinfer0]}" Depends)
  grep -qE "libc6 \(>= [0-9.]+\)" <<< "$lib_depends" && grep -qE "libstdc\+\+6 \(>= [0-9]+\)" <<< "$lib_depends" ||
    fail "liblinfer0 ($arch) lacks the versioned C and C++ libraries in Depends: '$lib_depends'"
  if grep -rlF -e "$src" -e /work/ "$stage" > /dev/null; then
    fail "$arch: packaged files name a folder of this build: $(grep -rlF -e "$src" -e /work/ "$stage" | head -3)"
  fi
  echo "$arch: contents, SONAME, Depends ($lib_depends)"
  unset deb
done
# Tags accepted (docs/packages.md says why); any other is a failure.
accepted='initial-upload-closes-no-bugs|maintscript-calls-ldconfig'
# The default Maintainer names the project, which has no mail address (-DLINFER_DEB_MAINTAINER
# sets "Name <address>"): lintian wants one in the field and in changelog.Debian's trailer line.
# Accepted only for a field without an address.
maintainer=$(dpkg-deb -f "${lint_files[0]}" Maintainer)
if [[ $maintainer != *"<"* ]]; then
  accepted+="|malformed-contact Maintainer|syntax-error-in-debian-changelog \"(badly formatted trailer line|found eof where expected more change data or trailer)\""
fi
mapfile -t lint_files < <(printf '%s\n' "${lint_files[@]}" | sort -u)
rc=0
# --fail-on none: tags of any severity leave the status 0 (2 would otherwise also mean an error tag).
lint=$(lintian --info --fail-on none "${lint_files[@]}" 2> "$work/lintian.err") || rc=$?
[ $rc -le 1 ] || fail "lintian could not check the packages: $(cat "$work/lintian.err")"  # 1: tags found
lint=$(grep -E '^[EWIPX]:' <<< "$lint" || true)
if [ -n "$(grep -vE "$accepted" <<< "$lint")" ]; then
  fail "lintian: $(grep -vE "$accepted" <<< "$lint")"
fi
echo "lintian: $(grep -cE "$accepted" <<< "$lint") accepted tags, no other"

# --- amd64: installed into a throwaway root -----------------------------------------------------
# install_test (run as root inside the overlay root): installs, builds, runs, purges.
install_test() {
  set -euo pipefail
  local src=$1 debs=$2 deb_version=$3 text=$4 out=/tmp/linfer-install-test
  mkdir -p $out
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    $debs/{liblinfer0,liblinfer-dev,linfer-tools}_${deb_version}_amd64.deb $debs/python3-linfer_${deb_version}_all.deb > $out/apt.log ||
    { cat $out/apt.log; exit 1; }
  dpkg -L liblinfer0 liblinfer-dev linfer-tools python3-linfer | sort -u > $out/files
  cp $src/examples/c-api/classify.c $src/examples/c-api/CMakeLists.txt $out/
  cd $out
  echo "== linfer-convert, linfer-run (installed)"
  linfer-convert $src/examples/models/langid.safetensors -o langid.lfm --dtype int8 | tail -1
  linfer-run langid.lfm --text $text | tee run.txt
  echo "== examples/c-api with pkg-config"
  gcc -std=c99 classify.c -o c-pkg-config $(pkg-config --cflags --libs linfer)
  local libs
  libs=$(ldd c-pkg-config)
  grep -qE "liblinfer.so.0 => (/usr)?/lib/x86_64-linux-gnu/liblinfer.so.0" <<< "$libs" || { echo "$libs"; exit 1; }
  ./c-pkg-config langid.lfm --text $text | tee c-pkg-config.txt
  echo "== examples/c-api with CMake (find_package(linfer)), shared and static"
  cmake -S . -B cmake-shared > /dev/null && cmake --build cmake-shared > /dev/null
  cmake -S . -B cmake-static -DLINFER_STATIC=ON > /dev/null && cmake --build cmake-static > /dev/null
  libs=$(readelf -d cmake-static/linfer_example_c)
  ! grep -q liblinfer <<< "$libs" || { echo "the static build needs liblinfer.so"; exit 1; }
  cmake-shared/linfer_example_c langid.lfm --text $text | tee c-cmake.txt
  cmake-static/linfer_example_c langid.lfm --text $text | tee c-cmake-static.txt
  echo "== python3 -c 'import linfer' (system Python)"
  python3 - langid.lfm $text > python.txt <<'EOF'
import sys, numpy as np, linfer, linfer._capi
assert linfer.__file__ == "/usr/lib/python3/dist-packages/linfer/__init__.py", linfer.__file__
assert linfer._capi.library_path == "liblinfer.so.0", linfer._capi.library_path  # by soname
y = linfer.Model(sys.argv[1]).session().run(open(sys.argv[2], "rb").read())
print("class", int(np.argmax(y)))
EOF
  cat python.txt
  python3 -m linfer langid.lfm --text $text > /dev/null
  echo "== purge"
  apt-get purge -y -qq liblinfer0 liblinfer-dev linfer-tools python3-linfer > /dev/null
  while read -r f; do
    [ -d "$f" ] || [ ! -e "$f" ] || { echo "left after purge: $f"; exit 1; }
  done < $out/files
  for d in /usr/include/linfer /usr/lib/python3/dist-packages/linfer /usr/lib/x86_64-linux-gnu/cmake/linfer; do
    [ ! -e $d ] || { echo "left after purge: $d: $(ls -A $d)"; exit 1; }
  done
}

if [[ " ${archs[*]} " == *" amd64 "* ]]; then
  # dpkg-shlibdeps made the amd64 Depends; the cross builds' method must give the same.
  for p in liblinfer0 linfer-tools; do
    s=$work/stage-amd64
    files=$([ $p = liblinfer0 ] && echo $s/usr/lib/x86_64-linux-gnu/liblinfer.so.$version || echo $s/usr/bin/linfer-{run,bench,convert})
    ours=$(bash scripts/deb-depends.sh --skip liblinfer.so.0 $files)
    theirs=$(dpkg-deb -f $debs/${p}_${deb_version}_amd64.deb Depends | sed "s/liblinfer0 (= $deb_version), //")
    [ "$ours" = "$theirs" ] || fail "$p: scripts/deb-depends.sh gives '$ours', dpkg-shlibdeps '$theirs'"
  done
  echo "amd64: scripts/deb-depends.sh agrees with dpkg-shlibdeps"
  root=$work/root
  mkdir -p $root/upper $root/work $root/merged
  unshare --mount --propagation private bash -c '
    set -e
    mount -t overlay overlay -o lowerdir=/,upperdir=$1/upper,workdir=$1/work $1/merged
    mount -t proc proc $1/merged/proc
    mount --rbind /dev $1/merged/dev
    chroot $1/merged /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
      /bin/bash -c "$2; install_test $3 $4 $5 $6"' _ "$root" "$(declare -f install_test)" \
    "$src" "$debs" "$deb_version" "$text" > $work/install.log 2>&1 || { cat $work/install.log; fail "amd64 install test failed"; }
  cat $work/install.log
  for f in run c-pkg-config c-cmake c-cmake-static python; do
    got=$(label_of "$(cat $root/upper/tmp/linfer-install-test/$f.txt)")
    [ "$got" = $expected ] || fail "amd64 installed ($f): the language of $text came out '$got', not $expected"
  done
  echo "amd64: installed, built against, ran ($expected, five ways), purged"
fi

# --- arm64, armhf: the unpacked tools and the C example under qemu-user -------------------------
for arch in "${archs[@]}"; do
  case $arch in
    arm64) triplet=aarch64-linux-gnu qemu=(qemu-aarch64 -cpu cortex-a72) ;;
    armhf) triplet=arm-linux-gnueabihf qemu=(qemu-arm -cpu cortex-a7) ;;
    *) continue ;;
  esac
  stage=$work/stage-$arch
  libpath=$stage/usr/lib/$triplet
  if [ $arch = arm64 ]; then
    # liblinfer0:arm64 needs Debian's arm64 XNNPACK (its Depends): the cross build's sysroot.
    bash scripts/cross-sysroot.sh arm64 build-arm64/sysroot > /dev/null
    libpath=$libpath:$PWD/build-arm64/sysroot/usr/lib/$triplet
  fi
  bash scripts/need-packages.sh "g++-$triplet"
  run() { "${qemu[@]}" -L /usr/$triplet -E LD_LIBRARY_PATH=$libpath "$@"; }
  run "$stage/usr/bin/linfer-convert" "$model_src" -o "$work/langid-$arch.lfm" --dtype int8 > /dev/null
  out=$(run "$stage/usr/bin/linfer-run" "$work/langid-$arch.lfm" --text "$text")
  [ "$(label_of "$out")" = $expected ] || fail "$arch: linfer-run: $out"
  "$triplet-gcc" -std=c99 examples/c-api/classify.c -o "$work/c-$arch" -Wl,-rpath-link,"$libpath" \
    $(PKG_CONFIG_LIBDIR=$stage/usr/lib/$triplet/pkgconfig pkg-config --cflags --libs linfer)
  out=$(run "$work/c-$arch" "$work/langid-$arch.lfm" --text "$text")
  [ "$(label_of "$out")" = $expected ] || fail "$arch: the C example: $out"
  echo "$arch: unpacked tools and the C example (pkg-config) under ${qemu[0]}: $expected"
done
echo "test-packages.sh: ${archs[*]} passed in $((SECONDS - start)) s"
