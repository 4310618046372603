#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb-depends.sh [--arch ARCH] [--skip SONAME]... FILE...: the Depends field for ELF files of any
# architecture (ARCH's, default this machine's),
# worked out the way dpkg-shlibdeps does it for a native build: for each library the files need
# (DT_NEEDED, but the --skip ones), the package that holds that library on this machine, at the
# newest version that its symbols file gives for the symbols the files use (or at its shlibs
# file's version where it has no symbols file). dpkg-shlibdeps cannot do this for a cross build,
# whose target libraries are not installed here (scripts/cross-sysroot.sh only unpacks them); the
# version that introduced a symbol is the same on every architecture, and the symbols an
# architecture has alone (ARM's unwinder in libgcc_s) are in the symbols file of the cross
# compiler's package (libgcc-s1-armhf-cross) where it has one. scripts/test-packages.sh checks on
# amd64 that this script and dpkg-shlibdeps agree.
set -euo pipefail
skip=() arch=""
while [ "${1:-}" = --skip ] || [ "${1:-}" = --arch ]; do
  if [ "$1" = --arch ]; then arch=$2; else skip+=("$2"); fi
  shift 2
done
[ $# -gt 0 ] || { echo "usage: deb-depends.sh [--arch ARCH] [--skip SONAME]... FILE..." >&2; exit 2; }
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

needed=$(for f; do readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u)
# The symbols the files take from libraries, as the symbols files name them: name@NODE, or
# name@Base where the library has no symbol versions.
wanted=$(for f; do readelf --dyn-syms -W "$f"; done |
  awk '$7 == "UND" && $8 != "" { s = $8; if (s !~ /@/) s = s "@Base"; print s }' | sort -u)

declare -A depends  # package -> its dependency, versioned or not
for so in $needed; do
  for s in "${skip[@]}"; do [ "$so" = "$s" ] && continue 2; done
  # The target's dynamic loader (ld-linux-armhf.so.3, ...) comes with its C library, libc6.
  [[ $so == ld-linux* ]] && so=libc.so.6
  owner=""
  for dir in /lib/$multiarch /usr/lib/$multiarch; do
    owner=$(dpkg-query -S "$dir/$so" 2>/dev/null | sed -n 1p | cut -d: -f1-2 || true)
    [ -n "$owner" ] && break
  done
  [ -n "$owner" ] || { echo "deb-depends: no installed package holds $so" >&2; exit 1; }
  owner=${owner%: *}
  package=${owner%%:*}
  info=/var/lib/dpkg/info/$owner
  [ -e "$info.list" ] || info=/var/lib/dpkg/info/$package
  dep=""
  cross_symbols=/var/lib/dpkg/info/$package-$arch-cross.symbols
  [ -n "$arch" ] && [ -f "$cross_symbols" ] || cross_symbols=""
  if [ -f "$info.symbols" ]; then
    # In the library's section of the symbols file: the versions of the wanted symbols and of
    # the version nodes they come from (NODE@NODE lines), and the section's dependency template.
    versions=$(awk -v so="$so" -v wanted="$wanted" '
      BEGIN { n = split(wanted, w, "\n"); for (i = 1; i <= n; i++) {
                want[w[i]] = 1; split(w[i], p, "@"); want[p[2] "@" p[2]] = 1 } }
      /^[^ *|]/ { in_lib = ($1 == so); if (in_lib) { $1 = ""; print "template" $0 } ; next }
      in_lib && /^ / && ($1 in want) { print $2 }' "$info.symbols" $cross_symbols)
    template=$(sed -n '/^template */{s///p;q}' <<< "$versions")  # the host's file's, listed first
    newest=""
    for v in $(grep -v '^template' <<< "$versions" | sort -u); do
      if [ -z "$newest" ] || dpkg --compare-versions "$v" gt "$newest"; then newest=$v; fi
    done
    if [ -n "$template" ]; then
      dep=${template/ \#MINVER\#/${newest:+ (>= $newest)}}
    fi
  fi
  if [ -z "$dep" ]; then
    # No symbols for this library: the shlibs file's "NAME MAJOR DEPENDENCY" line.
    name=${so%%.so*} major=${so##*.so.}
    dep=$(awk -v n="$name" -v m="$major" '$1 == n && $2 == m { $1 = $2 = ""; sub(/^ +/, ""); print; exit }' \
      "$info.shlibs" 2>/dev/null || true)
  fi
  [ -n "$dep" ] || { echo "deb-depends: no symbols or shlibs information for $so ($package)" >&2; exit 1; }
  # Two libraries of one package (libc.so.6, libm.so.6): the newer requirement.
  dep_package=${dep%% *}
  if [ -n "${depends[$dep_package]:-}" ]; then
    old=$(sed -n 's/.*(>= \(.*\))/\1/p' <<< "${depends[$dep_package]}")
    new=$(sed -n 's/.*(>= \(.*\))/\1/p' <<< "$dep")
    if [ -z "$new" ] || { [ -n "$old" ] && dpkg --compare-versions "$old" ge "$new"; }; then continue; fi
  fi
  depends[$dep_package]=$dep
done
for p in $(printf '%s\n' "${!depends[@]}" | sort); do echo "${depends[$p]}"; done | paste -sd, | sed 's/,/, /g'
