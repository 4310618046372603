#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_suite.sh [--quick] [--no-install] [--no-build]
#
# Benchmarks linfer against ONNX Runtime (onnxruntime-node) and PyTorch on the same models and
# machine, and writes docs/benchmarks.md plus docs/benchmarks_*.png. One command does everything:
#   1. installs what is missing: scripts/install-deps.sh (Debian packages, incl. torch), the
#      python3-matplotlib package (plots), the npm packages of package-lock.json: onnxruntime-node
#      and onnx-proto (npm ci --ignore-scripts: onnxruntime-node's install script would try a
#      download; the npm package already carries libonnxruntime for linux x64);
#   2. builds linfer (scripts/build.sh when the build directory is missing, else an incremental
#      build of linfer-bench, linfer-convert and linfer-run);
#   3. runs suite.py: FMA peak, models (PyTorch -> safetensors, ONNX f32 and int8, .lfm f32 and
#      int8), parity checks, timing of linfer, ONNX Runtime and PyTorch in f32 and int8 (one
#      benchmark process at a time, runtimes alternating run by run), report.
#
#   --quick       smoke test: model S at n = 512 and 2048, 3 rounds
#   --no-install  skip step 1
#   --no-build    skip step 2 (use the binaries in the build directory as they are)
# Environment: LINFER_BENCH_WORK (models and results; default tools/bench/suite/work),
#              LINFER_BENCH_BUILD (build directory; default build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
quick=()
install=1
build=1
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    --no-install) install=0 ;;
    --no-build) build=0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run_suite.sh: unknown argument '$a' (try --help)" >&2; exit 2 ;;
  esac
done
work=${LINFER_BENCH_WORK:-$here/work}
builddir=${LINFER_BENCH_BUILD:-$root/build}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

apt_install() {  # apt_install PKG...: installs the packages that are missing
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "run_suite: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}

if [ "$install" -eq 1 ]; then
  bash "$root/scripts/install-deps.sh"
  apt_install python3-matplotlib
  command -v node > /dev/null && command -v npm > /dev/null || apt_install nodejs npm
  # Every package of the lock file, at its locked version.
  stale=$(node -e "
    const lock = require('$here/package-lock.json').packages;
    for (const [p, v] of Object.entries(lock)) {
      if (!p) continue;
      let have = '';
      try { have = require('$here/' + p + '/package.json').version; } catch (e) {}
      if (have !== v.version) console.log(p.replace(/^node_modules\//, '') + '@' + v.version);
    }")
  if [ -n "$stale" ]; then
    echo "run_suite: installing $(echo $stale) (npm ci --ignore-scripts)"
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
fi
# The npm package must carry the native library for this platform (the skipped install script
# would only download the CUDA/TensorRT variants).
node -e "require('$here/node_modules/onnxruntime-node'); require('$here/node_modules/onnx-proto')" \
  || { echo "run_suite: onnxruntime-node or onnx-proto does not load (run without --no-install?)" >&2; exit 1; }
/usr/bin/python3 -c "import torch, numpy" \
  || { echo "run_suite: /usr/bin/python3 lacks torch or numpy (scripts/install-deps.sh installs them)" >&2; exit 1; }

if [ "$build" -eq 1 ]; then
  if [ ! -f "$builddir/CMakeCache.txt" ]; then
    bash "$root/scripts/build.sh" "$builddir"
  else
    cmake --build "$builddir" -j"$(nproc)" --target linfer-bench linfer-convert linfer-run
  fi
fi
for t in linfer-bench linfer-convert linfer-run; do
  [ -x "$builddir/bin/$t" ] || { echo "run_suite: $builddir/bin/$t is missing" >&2; exit 1; }
done

exec /usr/bin/python3 "$here/suite.py" "${quick[@]}" --work "$work" --bin "$builddir/bin" \
  --out "$root/docs/benchmarks.md"
