#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh [--quick] [--models S,M,MiniLM] [--no-install] [--no-build]
#
# Benchmarks linfer beside the other edge runtimes (ONNX Runtime, tract, MNN, ncnn, LiteRT,
# ExecuTorch, PyTorch) and writes docs/peers.md and docs/peers.png. One command does everything:
#   1. installs what is missing: Debian's packages (scripts/install-deps.sh, python3-venv,
#      python3-matplotlib); the pinned peers of requirements.txt into build-peers/venv (Debian's
#      python3 with its system packages) and of requirements-torch2.txt into build-peers/venv-torch2
#      (PyPI's torch 2, about 7 GB, installed in the background while the rest goes on). A peer whose
#      install fails is reported in one line; the others still run; the Hugging Face venv
#      (scripts/hf-venv.sh: transformers, for all-MiniLM-L6-v2's export and reference);
#   2. builds linfer-bench and linfer-convert (build/; configured when build/ has no CMakeCache.txt);
#   3. runs peers.py: models, each peer's conversion, output checks against PyTorch, timing, report.
#
#   --quick       S at n = 512, 1 and 2 threads, 3 rounds (a few minutes once installed)
#   --models L    only these models (comma-separated); the others' cells are kept from the last
#                 full run on this CPU
#   --no-install  skip step 1
#   --no-build    skip step 2
# Exits non-zero only when linfer fails (build, conversion, output or run) or the driver itself does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
quick=()
models=()
install=1
build=1
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    --models=*) models=(--models "${a#--models=}") ;;
    --models) models=(--models) ;;
    --no-install) install=0 ;;
    --no-build) build=0 ;;
    -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
    *) if [ "${#models[@]}" -eq 1 ]; then models+=("$a"); continue; fi
       echo "run.sh: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done
out=$root/build-peers
builddir=$root/build
mkdir -p "$out"
t0=$(date +%s)

torch2_pid=""
if [ "$install" -eq 1 ]; then
  bash "$root/scripts/install-deps.sh"
  bash "$root/scripts/need-packages.sh" python3-venv python3-matplotlib
  # The big one first, in the background.
  (
    [ -x "$out/venv-torch2/bin/python" ] || /usr/bin/python3 -m venv "$out/venv-torch2"
    "$out/venv-torch2/bin/pip" install --disable-pip-version-check -q -r "$here/requirements-torch2.txt"
  ) > "$out/pip-torch2.log" 2>&1 &
  torch2_pid=$!
  bash "$root/scripts/hf-venv.sh" > "$out/pip-hf.log" 2>&1 \
    || echo "run.sh: the Hugging Face venv failed to install (MiniLM will be skipped): $(grep -E 'ERROR' "$out/pip-hf.log" | tail -1)"
  [ -x "$out/venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$out/venv"
  # Hold numpy at Debian's version: Debian's torch is built against numpy 1.
  /usr/bin/python3 -c 'import numpy; print("numpy==" + numpy.__version__)' > "$out/constraints.txt"
  if ! "$out/venv/bin/pip" install --disable-pip-version-check -q -c "$out/constraints.txt" \
      -r "$here/requirements.txt" > "$out/pip-main.log" 2>&1; then
    # One package at a time, so that one failure does not keep the others out.
    while read -r pkg; do
      case "$pkg" in ''|'#'*) continue ;; esac
      "$out/venv/bin/pip" install --disable-pip-version-check -q -c "$out/constraints.txt" "$pkg" \
        >> "$out/pip-main.log" 2>&1 \
        || echo "run.sh: $pkg failed to install: $(grep -E 'ERROR' "$out/pip-main.log" | tail -1)"
    done < "$here/requirements.txt"
  fi
fi
[ -x "$out/venv/bin/python" ] || { echo "run.sh: $out/venv is missing (run without --no-install)" >&2; exit 1; }

if [ "$build" -eq 1 ]; then
  if [ ! -f "$builddir/CMakeCache.txt" ]; then
    (cd "$root" && source scripts/generator.sh && cmake -S . -B "$builddir" -DCMAKE_BUILD_TYPE=Release > /dev/null)
  fi
  cmake --build "$builddir" -j"$(nproc)" --target linfer-bench linfer-convert
fi
for t in linfer-bench linfer-convert; do
  [ -x "$builddir/bin/$t" ] || { echo "run.sh: $builddir/bin/$t is missing" >&2; exit 1; }
done

if [ -n "$torch2_pid" ]; then
  if ! wait "$torch2_pid"; then
    echo "run.sh: LiteRT and ExecuTorch failed to install: $(grep -E 'ERROR' "$out/pip-torch2.log" | tail -1)"
  fi
fi
status=0
"$out/venv/bin/python" "$here/peers.py" "${quick[@]}" "${models[@]}" --work "$out/work" --bin "$builddir/bin" \
  --out "$root/docs/peers.md" || status=$?
echo "run.sh: $(( $(date +%s) - t0 )) s in all"
exit $status
