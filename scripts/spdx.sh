#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh [--check]: puts `SPDX-License-Identifier: Apache-2.0` at the top of every source file of
# the project that lacks an SPDX line, in the file's own comment syntax; --check changes nothing,
# lists the files without one and exits 1 if there are any.
#
# A source file is a file git tracks (so nothing fetched or built) that people write or a tool of
# the project generates, by its name:
#   //    .c .cc .cpp .h .hpp .inc .fbs .js .mjs .cjs .ts, linfer_version.h.in
#   #     .py .sh .cmake CMakeLists.txt .cmake.in .pc.in, .ci/run, cmake/debian/python/*,
#         cmake/debian/triggers
#   /* */ .ld, the linker version script .map, assembly .S (// is no comment in Arm assembly)
#   <!-- --> .html    .\"  manual pages (docs/man/*.1)
# Not source: data and what tests compare against (.json, .txt but CMakeLists.txt, .tsv, .npy, .pt,
# .safetensors, .lfm, .dict, .seed, .png; everything under tests/fuzz/corpus/),
# documents (.md), license texts (LICENSE, NOTICE, cmake/debian/copyright) and .gitignore.
#
# The line is the file's first, or its second after a shebang, a `<!doctype ...>` or a Python
# coding line; any SPDX-License-Identifier there counts (the Unicode tables say
# "Apache-2.0 AND Unicode-DFS-2016": THIRD-PARTY-NOTICES.md).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: bash scripts/spdx.sh [--check]" >&2; exit 2 ;;
esac
git rev-parse --is-inside-work-tree > /dev/null 2>&1 ||
  { echo "spdx.sh: $PWD is not a git work tree (the file list is git's)" >&2; exit 2; }

# comment_for FILE: sets `line` to the line to add, empty when FILE is not a source file.
comment_for() {
  local id="SPDX-License-Identifier: Apache-2.0"
  line=
  case "$1" in
    tests/fuzz/corpus/*) ;;
    *.c|*.cc|*.cpp|*.h|*.hpp|*.inc|*.fbs|*.js|*.mjs|*.cjs|*.ts|*/linfer_version.h.in) line="// $id" ;;
    *.py|*.sh|*.cmake|*CMakeLists.txt|*.cmake.in|*.pc.in|.ci/run|cmake/debian/python/*|cmake/debian/triggers)
      line="# $id" ;;
    *.ld|*.map|*.S) line="/* $id */" ;;
    *.html) line="<!-- $id -->" ;;
    docs/man/*.1) line=".\\\" $id" ;;
  esac
}

missing=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # deleted in the work tree
  comment_for "$f"
  [ -n "$line" ] || continue
  # The first three lines, read without a process per file (the check runs in the suite).
  l1= l2= l3=
  { IFS= read -r l1; IFS= read -r l2; IFS= read -r l3; } < "$f" || true
  top=("$l1" "$l2" "$l3")
  skip=0
  case "$l1" in '#!'*|'<!doctype'*|'<!DOCTYPE'*) skip=1 ;; esac
  [[ "${top[$skip]}" =~ ^#.*coding[:=] ]] && skip=$((skip + 1))
  [[ "${top[$skip]}" == *SPDX-License-Identifier:* ]] && continue
  missing+=("$f")
  [ $check = 1 ] && continue
  if head -n 20 "$f" | grep -q 'SPDX-License-Identifier:'; then
    echo "spdx.sh: $f has an SPDX line below line $((skip + 1)); move it up by hand" >&2
    exit 1
  fi
  tmp=$(mktemp "$f.spdx.XXXXXX")
  { head -n "$skip" "$f"; printf '%s\n' "$line"; tail -n "+$((skip + 1))" "$f"; } > "$tmp"
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
done < <(git ls-files -z --cached --others --exclude-standard)

if [ $check = 1 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    printf '%s\n' "${missing[@]}"
    echo "spdx.sh: ${#missing[@]} source files lack an SPDX-License-Identifier line (bash scripts/spdx.sh adds it)" >&2
    exit 1
  fi
  echo "spdx.sh: every source file has its SPDX-License-Identifier line"
else
  echo "spdx.sh: added the SPDX line to ${#missing[@]} files"
fi
