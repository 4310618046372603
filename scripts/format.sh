#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# format.sh [--check]: applies the project's C and C++ style (.clang-format) to every C and C++
# source git tracks, with Debian's clang-format-16 (installed if missing: the style's output is
# that version's). --check changes nothing and lists the files that differ (exit 1 if any).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: bash scripts/format.sh [--check]" >&2; exit 2 ;;
esac
bash scripts/need-packages.sh clang-format-16 > /dev/null
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
if [ "$check" -eq 0 ]; then
  clang-format-16 -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format-16 --dry-run -Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'format.sh: not in the project style (bash scripts/format.sh applies it): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files in the project style"
