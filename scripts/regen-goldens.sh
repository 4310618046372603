#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# regen-goldens.sh [--write] [BIN_DIR]: regenerates the golden references of tests/golden,
# tests/golden_kinds and tests/golden_layouts, and checks them:
#   1. the committed tests/golden_layouts, recomputed from their checkpoints by the upstream
#      packages themselves (PyPI, pinned: scripts/upstream-venv.sh), within 1e-6;
#   2. all three folders regenerated into build-upstream/goldens (golden_layouts from the upstream
#      packages, the other two from tools/python/reference/linfer_ref.py);
#   3. the independent numpy checks (check_ref.py, check_kinds.py, upstream/check_upstream.py)
#      on the regenerated folders;
#   4. the regenerated folders against the committed ones: same files, inputs and tensor names,
#      outputs within 1e-6 (tools/python/reference/upstream/compare_goldens.py);
#   5. linfer on the regenerated folders: BIN_DIR/test_golden (default build/bin; build it with
#      scripts/build.sh) with LINFER_GOLDEN_ROOT=build-upstream/goldens.
# With --write, the regenerated folders then replace the committed ones. Exits non-zero at the
# first failing step. The default test run does not need this: the goldens are committed.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "regen-goldens.sh: FAILED at line $LINENO" >&2' ERR
write=0
if [ "${1:-}" = --write ]; then write=1; shift; fi
bin=$(realpath "${1:-build/bin}")
start=$SECONDS
bash scripts/upstream-venv.sh
py=build-upstream/venv/bin/python
out=build-upstream/goldens
rm -rf "$out"
mkdir -p "$out"

echo "== 1. committed golden_layouts against the upstream packages"
"$py" tools/python/reference/make_layout_golden.py --check tests/golden_layouts

echo "== 2. regenerating into $out"
/usr/bin/python3 tools/python/reference/make_golden.py "$out/golden" > /dev/null
/usr/bin/python3 tools/python/reference/make_kinds_golden.py "$out/golden_kinds" > /dev/null
"$py" tools/python/reference/make_layout_golden.py "$out/golden_layouts" > /dev/null

echo "== 3. independent checks of the regenerated references"
/usr/bin/python3 tools/python/reference/check_ref.py "$out/golden" > /dev/null
/usr/bin/python3 tools/python/reference/check_kinds.py "$out/golden_kinds" > /dev/null
"$py" tools/python/reference/upstream/check_upstream.py "$out/golden_layouts" | tail -1

echo "== 4. regenerated against committed"
for d in golden golden_kinds golden_layouts; do
  "$py" tools/python/reference/upstream/compare_goldens.py "$out/$d" "tests/$d" > "$out/compare_$d.txt" || { cat "$out/compare_$d.txt"; exit 1; }
  tail -1 "$out/compare_$d.txt"
done

echo "== 5. linfer on the regenerated references"
[ -x "$bin/test_golden" ] || { echo "regen-goldens.sh: no $bin/test_golden (bash scripts/build.sh build)" >&2; exit 1; }
(cd "$out" && LINFER_GOLDEN_ROOT="$PWD" "$bin/test_golden" > test_golden.txt 2>&1) || { tail -30 "$out/test_golden.txt"; exit 1; }
tail -2 "$out/test_golden.txt"

if [ $write = 1 ]; then
  for d in golden_kinds golden_layouts; do rm -rf "tests/$d" && cp -r "$out/$d" "tests/$d"; done
  find "$out/golden" -mindepth 1 -maxdepth 1 -exec cp -r {} tests/golden/ \;  # keeps test_golden.cc
  echo "regen-goldens.sh: wrote tests/golden, tests/golden_kinds, tests/golden_layouts"
fi
echo "regen-goldens.sh: ok ($((SECONDS - start)) s)"
