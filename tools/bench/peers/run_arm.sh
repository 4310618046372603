#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_arm.sh [--cpus cortex-a72,cortex-a76] [--lengths 128,512] [--runtimes a,b] [--jobs N]
#            [--bench PATH] [--work DIR] [--no-install]
#
# The Arm proxy of the peer comparison: instructions per inference under qemu-aarch64 (the
# insn_count plugin of tools/bench/arm), as cortex-a72 (Raspberry Pi 4) and cortex-a76 (Pi 5),
# for linfer and the peers that publish aarch64 wheels (ONNX Runtime, LiteRT, ExecuTorch, MNN,
# ncnn), model S, one thread, f32 and int8. A PROXY, not a timing: no Pi is measured.
# Everything it installs goes under build-peers-arm/:
#   - qemu-user and the cross compiler (Debian), the insn_count plugin (tools/bench/arm/build_plugin.sh);
#   - Debian's arm64 python3 unpacked into build-peers-arm/python-sysroot (scripts/cross-sysroot.sh);
#   - the peers' aarch64 wheels, pinned as in requirements*.txt, one folder each
#     (pip install --platform manylinux_2_X_aarch64 --only-binary=:all: --target build-peers-arm/site-PKG);
#   - an arm64 linfer-bench (build-peers-arm/linfer-arm64, CMake with the aarch64 toolchain file).
# The peers' models are the x86 conversions of tools/bench/peers/run.sh (build-peers/work, or
# --work DIR): run that first. Results go to tools/bench/peers/results/peers_arm_results.json (merged:
# measurements already there are kept; delete the file to measure again), then docs/peers.md is
# written again by report.py with its "Arm proxy" section.
#   --runtimes  among linfer, ort, litert, executorch, mnn, ncnn, linfer_int8, ort_int8,
#               litert_int8_dyn, litert_int8_full, executorch_int8, mnn_int8 (default: all)
#   --jobs      guest processes at a time (default 2)
# Exits non-zero only when linfer fails (or the setup does); a failing peer is recorded in one line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
arm=$root/build-peers-arm
args_line="$*"
work=$root/build-peers/work
bench=""
install=1
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus|--lengths|--runtimes|--jobs) pass+=("$1" "$2"); shift 2 ;;
    --bench) bench=$(realpath -m "$2"); shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
    *) echo "run_arm.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "run_arm.sh: the peers run in a private mount namespace (unshare -m): run as root" >&2; exit 1; }
mkdir -p "$arm"
t0=$(date +%s)

# pip_arm DIR SPEC...: aarch64 CPython 3.11 wheels into DIR. pip evaluates environment markers
# for the host (x86_64), so packages whose dependencies carry x86-only markers (torch's CUDA
# wheels, executorch's coremltools) are installed with --no-deps and their runtime deps listed.
plats=(--platform manylinux2014_aarch64)
for v in $(seq 17 36); do plats+=(--platform "manylinux_2_${v}_aarch64"); done  # bookworm: glibc 2.36
pip_arm() {
  local dir=$1; shift
  "$arm/venv-pip/bin/pip" install --disable-pip-version-check -q "${plats[@]}" --python-version 3.11 \
    --implementation cp --abi cp311 --only-binary=:all: --target "$dir" "$@"
}
if [ "$install" -eq 1 ]; then
  bash "$root/scripts/need-packages.sh" qemu-user g++-aarch64-linux-gnu python3-venv python3-numpy \
    python3-matplotlib cmake ninja-build
  bash "$root/tools/bench/arm/build_plugin.sh" --out "$arm/plugin" > "$arm/plugin.log" 2>&1 ||
    { cat "$arm/plugin.log" >&2; exit 1; }
  bash "$root/scripts/cross-sysroot.sh" --python arm64 "$arm/python-sysroot" > /dev/null
  # More of what the Python standard library loads (torch imports bz2 and lzma, for instance).
  if [ ! -f "$arm/python-sysroot/.complete-extra" ]; then
    mkdir -p "$arm/python-sysroot/debs-extra"
    (cd "$arm/python-sysroot/debs-extra" && apt-get download libbz2-1.0:arm64 liblzma5:arm64 \
       libssl3:arm64 libsqlite3-0:arm64 libuuid1:arm64 > /dev/null)
    for deb in "$arm"/python-sysroot/debs-extra/*.deb; do dpkg -x "$deb" "$arm/python-sysroot"; done
    touch "$arm/python-sysroot/.complete-extra"
  fi
  [ -x "$arm/venv-pip/bin/pip" ] || /usr/bin/python3 -m venv "$arm/venv-pip"
  req() { sed -n "s/^$1==\(.*\)/\1/p" "$here"/requirements*.txt | head -n1; }
  : > "$arm/pip.log"
  for spec in "onnxruntime==$(req onnxruntime)" "ai-edge-litert==$(req ai-edge-litert)" \
              "MNN==$(req MNN)" "ncnn==$(req ncnn)"; do
    name=${spec%%==*}
    d=$arm/site-$name
    [ -d "$d" ] && ls "$d" | grep -qi "^${name//-/_}-.*dist-info$" && continue
    pip_arm "$d" "$spec" >> "$arm/pip.log" 2>&1 || echo "run_arm.sh: $spec failed to install: $(grep ERROR "$arm/pip.log" | tail -n1)"
  done
  d=$arm/site-executorch
  if ! ls "$d" 2>/dev/null | grep -q "^executorch-.*dist-info$"; then
    # executorch.runtime's imports, at build-peers/venv-torch2's versions
    pip_arm "$d" --no-deps "executorch==$(req executorch)" "torch==$(req torch)" "numpy==$(req numpy)" \
      typing-extensions==4.12.2 filelock==4.3.1 sympy==1.14.0 mpmath==1.3.0 networkx==3.6.1 jinja2==3.1.6 \
      markupsafe==3.0.4 fsspec==2026.9.0 packaging==26.4 pyyaml==6.0.4 flatbuffers==25.12.19 \
      ruamel.yaml==0.19.1 tabulate==0.10.0 >> "$arm/pip.log" 2>&1 ||
      echo "run_arm.sh: executorch failed to install: $(grep ERROR "$arm/pip.log" | tail -n1)"
  fi
  # PyPI's aarch64 torch is a CUDA build: libtorch.so needs the CUDA runtime's libraries to load
  # (about 3.3 GB; torch 2.14.1's pins). Its own folder, on ExecuTorch's PYTHONPATH.
  d=$arm/site-torch-cuda
  if ! ls "$d" 2>/dev/null | grep -q "^nvidia_cudnn_cu13-.*dist-info$"; then
    pip_arm "$d" "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3" \
      nvidia-cudnn-cu13==9.24.0.43 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 \
      nvidia-nvshmem-cu13==3.4.5 >> "$arm/pip.log" 2>&1 ||
      echo "run_arm.sh: torch's CUDA libraries failed to install: $(grep ERROR "$arm/pip.log" | tail -n1)"
  fi
fi

# Byte-compile the guest's Python files once, with the host's python3 (Debian's 3.11, the guest's
# version): otherwise the first guest run compiles and writes them and the second reads them, and
# the difference of the two counts is not one inference. The guests run with PYTHONDONTWRITEBYTECODE.
/usr/bin/python3 -m compileall -q -j2 "$arm/python-sysroot/usr/lib/python3.11" "$arm"/site-* > "$arm/compileall.log" 2>&1 || true

# linfer's arm64 linfer-bench, as scripts/test-arm64.sh builds it (target linfer-bench only)
linfer_libs=$arm/sysroot/usr/lib/aarch64-linux-gnu
if [ -z "$bench" ]; then
  bench=$arm/linfer-arm64/bin/linfer-bench
  bash "$root/scripts/cross-sysroot.sh" arm64 "$arm/sysroot" > /dev/null
  if [ ! -f "$arm/linfer-arm64/CMakeCache.txt" ]; then
    (cd "$root" && source scripts/generator.sh &&
     cmake -S . -B "$arm/linfer-arm64" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
       -DLINFER_ARM64_SYSROOT="$arm/sysroot" -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=OFF > /dev/null)
  fi
  cmake --build "$arm/linfer-arm64" -j2 --target linfer-bench > "$arm/linfer-build.log" 2>&1 ||
    { tail -n 20 "$arm/linfer-build.log" >&2; echo "run_arm.sh: linfer-bench did not build" >&2; exit 1; }
fi
[ -x "$bench" ] || { echo "run_arm.sh: no arm64 linfer-bench at $bench" >&2; exit 1; }

for f in S_f32.lfm S_int8.lfm; do
  [ -f "$work/$f" ] || { echo "run_arm.sh: $work/$f is missing: run tools/bench/peers/run.sh first (it converts the models on x86)" >&2; exit 1; }
done
results=$here/results/peers_arm_results.json
status=0
/usr/bin/python3 "$here/arm_peers.py" --arm "$arm" --work "$work" --bench "$bench" --linfer-libs "$linfer_libs" \
  --plugin "$arm/plugin/libinsn_count.so" --python "$arm/python-sysroot/usr/bin/python3" \
  --results "$results" --command "bash tools/bench/peers/run_arm.sh${args_line:+ $args_line}" "${pass[@]}" || status=$?
/usr/bin/python3 "$here/report.py" "$here/results/peers_results.json" "$root/docs/peers.md"
echo "run_arm.sh: $(( $(date +%s) - t0 )) s in all; results in $results, docs/peers.md written"
exit $status
