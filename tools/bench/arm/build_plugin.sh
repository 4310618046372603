#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build_plugin.sh [--out DIR] [--debian-header]
# Builds the instruction-counting QEMU plugin (insn_count.c -> DIR/libinsn_count.so, default DIR:
# build-arm64-proxy/plugin at the top of the tree) on a Debian bookworm machine, and checks it:
#   1. plugin_selftest: the plugin installs on plugin API version 1 only (QEMU 7.2) and refuses
#      other versions and unknown arguments, with QEMU's side played by the test program;
#   2. calib under qemu-aarch64: counts of a 2-instruction loop run 2M and M times differ by 2M.
# Installs what it needs with apt-get (gcc, qemu-user, g++-aarch64-linux-gnu) when missing.
#
# The plugin API header: by default the plugin builds against qemu_plugin_v1.h, this folder's own
# declarations of the few API functions it uses (no Debian binary package ships QEMU's
# qemu-plugin.h). --debian-header instead downloads Debian's qemu source package matching the
# installed qemu-user (apt-get source --download-only, with a private deb-src list under DIR: the
# machine's apt configuration is not touched) and builds against its include/qemu/qemu-plugin.h,
# as a cross-check of those declarations. Nothing downloaded is kept in the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out="$root/build-arm64-proxy/plugin"
debian_header=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --debian-header) debian_header=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build_plugin.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
need=()
pkgs=(gcc libc6-dev qemu-user g++-aarch64-linux-gnu)
[ "$debian_header" -eq 1 ] && pkgs+=(xz-utils debian-archive-keyring)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "build_plugin.sh: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi
mkdir -p "$out"

cflags=(-std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -fvisibility=hidden)
if [ "$debian_header" -eq 1 ]; then
  # Debian's source of the installed qemu-user; the header lies in the upstream tarball.
  ver=$(dpkg-query -W -f='${source:Version}' qemu-user)
  apt_dir="$out/debian-src"
  mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/dl" "$apt_dir/include"
  cat > "$apt_dir/parts/deb-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/parts"
            -o "Dir::State::Lists=$apt_dir/lists")
  if ! ls "$apt_dir"/dl/qemu_*.orig.tar.* > /dev/null 2>&1; then
    echo "build_plugin.sh: downloading Debian's qemu $ver source package for its qemu-plugin.h"
    apt-get "${apt_opts[@]}" update -qq
    (cd "$apt_dir/dl" && apt-get "${apt_opts[@]}" source --download-only -qq "qemu=$ver" > /dev/null)
  fi
  tarball=$(ls "$apt_dir"/dl/qemu_*.orig.tar.* | head -n1)
  tar -xf "$tarball" -C "$apt_dir" --wildcards '*/include/qemu/qemu-plugin.h'
  cp "$apt_dir"/qemu-*/include/qemu/qemu-plugin.h "$apt_dir/include/"
  # Debian's patches (the .debian.tar.xz) must leave the header alone for it to be the one built.
  if tar -xOf "$apt_dir"/dl/qemu_*.debian.tar.* 2>/dev/null | grep -q '^+++ .*include/qemu/qemu-plugin.h'; then
    echo "build_plugin.sh: note: Debian's patches change qemu-plugin.h; the upstream one is used" >&2
  fi
  cflags+=(-DINSN_COUNT_QEMU_HEADER -I"$apt_dir/include")
  echo "build_plugin.sh: header: $apt_dir/include/qemu-plugin.h (Debian qemu $ver source)"
else
  echo "build_plugin.sh: header: $here/qemu_plugin_v1.h (own declarations of plugin API version 1)"
fi

gcc "${cflags[@]}" -shared -o "$out/libinsn_count.so" "$here/insn_count.c"
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -rdynamic -o "$out/plugin_selftest" "$here/plugin_selftest.c" -ldl
"$out/plugin_selftest" "$out/libinsn_count.so"

# The count under real QEMU: exact on a loop of known length.
aarch64-linux-gnu-gcc -O1 -static -o "$out/calib" "$here/calib.c"
count() {
  rm -f "$out/calib.count"
  qemu-aarch64 -cpu cortex-a72 -plugin "$out/libinsn_count.so,outfile=$out/calib.count" \
    "$out/calib" "$1" 2> /dev/null
  cat "$out/calib.count"
}
m=1000000
c1=$(count $m)
c2=$(count $((2 * m)))
echo "build_plugin.sh: calib: $c1 instructions at N=$m, $c2 at N=$((2 * m)): difference $((c2 - c1)) (expected $((2 * m)))"
if [ $((c2 - c1)) -ne $((2 * m)) ]; then
  echo "build_plugin.sh: the plugin's count is off" >&2
  exit 1
fi
echo "build_plugin.sh: built $out/libinsn_count.so ($(qemu-aarch64 --version | head -n1))"
