#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# abi-check.sh [--update] [BUILD]: checks the C ABI of liblinfer.so (x86-64) against the recorded
# baseline abi/<SONAME>.abi with abidiff (Debian's abigail-tools). The library is BUILD's, a build
# configured with -DLINFER_C_API_DEBUG_INFO=ON (debug information for c_api.cc, which defines
# every exported function; the suite's Release build), or else one built here in build-abi/
# (Debug, the library alone). abidw records what its exported functions take and return: the
# functions of linfer.h, its structs, enums and typedefs, and the status codes of linfer_status.h,
# which it includes from the lowest layer's headers (--exported-interfaces-only; the runtime's
# internal types stay out).
#
# Fails when a function of the baseline is gone or changed, or a public struct, enum or typedef
# changed incompatibly (a field moved, resized or removed; an enumerator's value changed).
# Added functions and enumerators added at the end are compatible: reported, not failed.
#
# --update records the current ABI as the baseline. Do it when the ABI grew (new functions), and
# for an intended break, only together with a new SONAME (the major version in CMakeLists.txt's
# project VERSION: liblinfer.so.N follows it) and a CHANGELOG.md entry saying what broke
# (docs/format.md's compatibility section has the rule). A new SONAME gets a new baseline file;
# the old one is deleted in the same commit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
update=0
[ "${1:-}" = --update ] && update=1 && shift
dir=${1:-}
if [ $# -gt 1 ] || [[ $dir == -* ]]; then
  echo "usage: bash scripts/abi-check.sh [--update] [BUILD]" >&2
  exit 2
fi
bash scripts/need-packages.sh abigail-tools binutils
if [ -n "$dir" ]; then
  grep -q "^LINFER_C_API_DEBUG_INFO:BOOL=ON$" "$dir/CMakeCache.txt" 2> /dev/null ||
    { echo "abi-check: $dir is not a build configured with -DLINFER_C_API_DEBUG_INFO=ON" >&2; exit 2; }
else
  dir=build-abi
  # The ABI does not depend on which instruction sets the kernels are compiled for: Highway
  # compiles only the baseline one here (HWY_COMPILE_ONLY_STATIC, as on a microcontroller): a
  # fifth less compile time.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DLINFER_BUILD_TESTS=OFF -DLINFER_BUILD_TOOLS=OFF \
    -DLINFER_WITH_XNNPACK=OFF -DLINFER_WARNINGS_AS_ERRORS=ON -DCMAKE_CXX_FLAGS=-DHWY_COMPILE_ONLY_STATIC=1 > /dev/null
  cmake --build "$dir" -j"$(nproc)" --target linfer > /dev/null
fi
lib=$(readlink -f "$dir/runtime/liblinfer.so")
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] || { echo "abi-check: $lib has no SONAME" >&2; exit 1; }
baseline=abi/$soname.abi
current=$dir/$soname.abi
abidw --exported-interfaces-only --drop-private-types --no-corpus-path --no-comp-dir-path \
  --no-show-locs --headers-dir runtime/include/linfer --headers-dir "$dir/version_include/linfer" \
  --headers-dir kernels/include/linfer \
  --out-file "$current" "$lib"

if [ $update = 1 ]; then
  mkdir -p abi
  cp "$current" "$baseline"
  echo "abi-check: recorded $baseline ($(grep -c '<function-decl' "$baseline") functions)"
  exit 0
fi
if [ ! -f "$baseline" ]; then
  echo "abi-check: no baseline $baseline for this SONAME: a new SONAME is recorded with" \
       "bash scripts/abi-check.sh --update and a CHANGELOG.md entry" >&2
  exit 1
fi
rc=0
report=$(abidiff --no-show-locs "$baseline" "$current") || rc=$?
# abidiff's status is a bit field: 1 error, 2 usage, 4 the ABIs differ, 8 incompatibly.
if [ $((rc & 3)) != 0 ]; then
  echo "abi-check: abidiff could not compare: $report" >&2
  exit 1
fi
# Only additions (functions, variables; harmless changes such as an enumerator added at the end
# are filtered out by abidiff itself) keep the ABI of this SONAME; anything removed or changed
# breaks it.
additions_only() {
  [ $((rc & 8)) = 0 ] &&
    [ "$(grep -cE '^(Functions|Variables) changes summary: 0 Removed, 0 Changed' <<< "$report")" = 2 ]
}
if [ $((rc & 12)) = 0 ]; then
  echo "abi-check: $soname matches $baseline ($(grep -c '<function-decl' "$baseline") functions)"
elif additions_only; then
  echo "abi-check: $soname: compatible additions since $baseline (record them with --update):"
  echo "$report"
else
  echo "$report" >&2
  echo "abi-check: the C ABI of $soname changed incompatibly against $baseline. If that is" \
       "intended: a new SONAME, a CHANGELOG.md entry, then bash scripts/abi-check.sh --update" >&2
  exit 1
fi
