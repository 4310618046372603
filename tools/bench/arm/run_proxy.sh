#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_proxy.sh: linfer's ARM performance proxy (README.md beside this file). Counts the guest
# instructions aarch64 programs execute under qemu-aarch64 (the insn_count plugin) and prints
# Markdown tables. PROXY: a dynamic instruction count under qemu-aarch64 is not a timing.
#
#   run_proxy.sh [dense] [--shapes S,M] [--cpus cortex-a72,cortex-a76] [--kernels REGEX] [--with-ref]
#                        [--out FILE]
#     Per dense layer shape of the benchmark models S and M, per qemu -cpu, per dense kernel of
#     this build that the CPU runs (kernels picked by name from `dense_proxy --list`, so the NEON
#     kernels join as soon as their sources exist) and XNNPACK's f32 fully connected operator:
#     instructions per call = count(--reps 2) - count(--reps 1), per multiply-add, and the ratio to
#     XNNPACK f32 on the same shape and CPU. --with-ref adds the scalar references (slow).
#     --cpus: comma-separated qemu CPU models, a model's properties after it
#     (--cpus cortex-a76,max,sve=off,sme=off: the A76 and "max" without SVE/SME, which has i8mm);
#
#   run_proxy.sh peer [--cases S128,S512,S2048,M128,MiniLM128] [--model-dtypes f32,int8]
#                     [--cpus cortex-a72,cortex-a76,i8mm] [--bench PATH] [--convert PATH]
#     linfer against ONNX Runtime's own linux-arm64 library (onnxruntime-node's
#     libonnxruntime.so.1, driven through its C API by ort_proxy.c) on the x86 suite's models:
#     case S512 = model S (max_seq_len 2048) at n = 512, M128 = model M (max_seq_len 512) at
#     n = 128; int8 = linfer's int8 .lfm against ORT's int8 graph (tools/bench/suite/ort_quantize.js).
#     MiniLM128 = all-MiniLM-L6-v2 (scripts/minilm.sh) at n = 128, its sentence embedding checked
#     against transformers' (minilm_models.py; needs PyPI for the package and the venv).
#     One forward each = count(2 runs) - count(1 run), both after 1 warm-up run, one thread; every
#     output checked against PyTorch's (peer_check.py, the suite's tolerances). CPU model i8mm is
#     qemu's max,sve=off,sme=off (dot product and i8mm, as phones since about 2022 have). ORT runs
#     in a private mount namespace (unshare -m, root) with an arm64 /proc/cpuinfo of the CPU model
#     bind-mounted over the host's: its bundled cpuinfo crashes on an x86 one.
#
#   run_proxy.sh table
#     Prints the tables again from build-arm64-proxy/results/*.tsv (no build, no run).
#
#   run_proxy.sh forward [--bench PATH] [--models A.lfm,B.lfm] [--seq-len N] [--threads N]
#                        [--warmup N] [--cpus cortex-a72,cortex-a76] [--plugin-mode inline|atomic]
#                        [--out FILE]
#     Whole forward passes: an arm64 linfer-bench (default build-arm64/bin/linfer-bench, built by
#     scripts/test-arm64.sh) run with --runs 2 minus --runs 1 (both --warmup N, default 1:
#     linfer-bench refuses --warmup 0), per model (default: the .lfm files of examples/models),
#     with the default dense path and with --dense xnnpack (the f32 XNNPACK peer).
#     --make-models S[,M] [--model-dtypes f32,int8] [--convert PATH] [--format-version 1|2]: first
#     builds the benchmark models (tools/bench/suite/make_models.py with Debian's python3-torch,
#     max_seq_len = --seq-len, default 512) and converts them with a host linfer-convert (default
#     build/bin/linfer-convert) into build-arm64-proxy/models/, and measures those.
#
# Builds what it needs first (build_plugin.sh; the arm64 libraries with scripts/cross-sysroot.sh arm64;
# the harness with CMake, -j1) under build-arm64-proxy/ at the top of the tree. Raw counts go to
# build-arm64-proxy/results/, every command run under qemu to build-arm64-proxy/results/commands-MODE.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work="$root/build-arm64-proxy"
sysroot="$work/sysroot"
libdir="$sysroot/usr/lib/aarch64-linux-gnu"
plugin="$work/plugin/libinsn_count.so"
results="$work/results"

mode=dense
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then mode=$1; shift; fi
shapes_sel="S,M"
cpus="cortex-a72,cortex-a76"
kernels_re="."
with_ref=0
out=""
bench="$root/build-arm64/bin/linfer-bench"
models=""
seq_len=""
threads=1
warmup=1
plugin_mode=inline
make_models=""
cases="S128,S512,S2048,M128"
model_dtypes="f32,int8"
convert="$root/build/bin/linfer-convert"
format_version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shapes) shapes_sel=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --kernels) kernels_re=$2; shift 2 ;;
    --with-ref) with_ref=1; shift ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --bench) bench=$(realpath -m "$2"); shift 2 ;;
    --models) models=$2; shift 2 ;;
    --seq-len) seq_len=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --make-models) make_models=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --model-dtypes) model_dtypes=$2; shift 2 ;;
    --convert) convert=$(realpath -m "$2"); shift 2 ;;
    --format-version) format_version=$2; shift 2 ;;
    --plugin-mode) plugin_mode=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_proxy.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$mode" in dense|forward|peer|table) ;; *) echo "run_proxy.sh: mode is dense, forward, peer or table" >&2; exit 2 ;; esac
case "$plugin_mode" in inline|atomic) ;; *) echo "run_proxy.sh: --plugin-mode takes inline or atomic" >&2; exit 2 ;; esac
# CPU models are comma-separated; an item with '=' is a property of the model before it
# (max,sve=off,sme=off is one model: qemu's "max" without SVE and SME, i8mm kept).
IFS=, read -r -a cpu_items <<< "$cpus"
cpu_list=()
for item in "${cpu_items[@]}"; do
  if [[ $item == *=* && ${#cpu_list[@]} -gt 0 ]]; then cpu_list[-1]+=",$item"; else cpu_list+=("$item"); fi
done

log() { echo "run_proxy.sh: $*" >&2; }
mkdir -p "$results"
cmdlog="$results/commands-$mode.log"
[ "$mode" = table ] || : > "$cmdlog"

# --- setup: plugin, arm64 libraries --------------------------------------------------------------
setup() {
  # build_plugin.sh installs gcc, qemu-user and the cross compiler; the harness also needs CMake
  # and the host's FlatBuffers compiler and headers (linfer_format's schema).
  local need=() p sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  for p in cmake make flatbuffers-compiler libflatbuffers-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
  fi
  bash "$here/build_plugin.sh" --out "$work/plugin" >&2
  bash "$root/scripts/cross-sysroot.sh" arm64 "$sysroot" >&2
}

# count CPU TAG PROGRAM ARGS...: runs PROGRAM under qemu-aarch64 -cpu CPU with the plugin in a
# clean environment (the guest's environment is part of what it executes) and prints the count.
# The program's stdout goes to $results/TAG.out, stderr (with the plugin's line) to TAG.err.
# guest_prefix (an array, normally empty) goes in front of the command: the peer mode's namespace;
# guest_env holds more VAR=VALUE for the guest's environment.
guest_prefix=()
guest_env=()
qemu_cpu() { if [ "$1" = i8mm ]; then echo "max,sve=off,sme=off"; else echo "$1"; fi; }
count() {
  local cpu=$1 tag=${2//[,=]/_}  # file names without the CPU's properties' ',' and '=' (the plugin's separators)
  shift 2
  local cnt="$results/$tag.count" e envs=()
  rm -f "$cnt"
  for e in "${guest_env[@]}"; do envs+=(-E "$e"); done
  local cmd=("${guest_prefix[@]}" env -i PATH=/usr/bin:/bin qemu-aarch64 -cpu "$(qemu_cpu "$cpu")" -L /usr/aarch64-linux-gnu
             -E "LD_LIBRARY_PATH=$libdir" "${envs[@]}" -plugin "$plugin,outfile=$cnt,mode=$plugin_mode" "$@")
  echo "${cmd[*]}" >> "$cmdlog"
  if ! "${cmd[@]}" > "$results/$tag.out" 2> "$results/$tag.err"; then
    log "failed: ${cmd[*]}"
    sed 's/^/  /' "$results/$tag.err" >&2
    return 1
  fi
  if grep -q "insn_count: warning" "$results/$tag.err"; then
    log "warning ($tag): $(grep 'insn_count: warning' "$results/$tag.err")"
  fi
  cat "$cnt"
}

# The plugin and the difference method on a loop of known length, under each CPU model.
calibrate() {
  local c1 c2 cpu
  for cpu in "${cpu_list[@]}"; do
    c1=$(count "$cpu" "calib-$cpu-1" "$work/plugin/calib" 1000000)
    c2=$(count "$cpu" "calib-$cpu-2" "$work/plugin/calib" 2000000)
    if [ $((c2 - c1)) -ne 2000000 ]; then
      log "calibration failed under -cpu $cpu: $c2 - $c1 != 2000000"
      exit 1
    fi
    echo "- calibration, -cpu $cpu: a 2-instruction loop run 2,000,000 and 1,000,000 times: $c2 - $c1 = $((c2 - c1)) instructions (exact)"
  done
}

header() {
  local qemu_line
  qemu_line=$(qemu-aarch64 --version | head -n1)
  echo "## $1"
  echo
  echo "**proxy: dynamic instruction count under qemu-aarch64, not a timing.** It counts guest"
  echo "instructions (QEMU TCG plugin insn_count) and ignores latency, issue width, caches and memory"
  echo "bandwidth; a NEON instruction counts 1 like a scalar one. Host: $(uname -m); $qemu_line;"
  echo "$2."
  echo
}
tree_line() {
  local rev dirty=""
  rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')
  [ -n "$(git -C "$root" status --porcelain 2>/dev/null | head -n1)" ] && dirty=" + uncommitted changes"
  echo "built from this tree (git $rev$dirty) with $(aarch64-linux-gnu-g++ --version | head -n1)"
}

# --- dense mode ------------------------------------------------------------------------------------
run_dense() {
  setup
  local build="$work/harness"
  log "building the harness in $build (-j1)"
  cmake -S "$here" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DLINFER_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release > "$results/cmake-configure.log" 2>&1 || {
    cat "$results/cmake-configure.log" >&2; exit 1; }
  if ! cmake --build "$build" -j1 > "$results/cmake-build.log" 2>&1; then
    grep -E "error|Error" "$results/cmake-build.log" | head -n 20 >&2
    log "the harness did not build (log: $results/cmake-build.log)"
    exit 1
  fi
  local prog="$build/bin/dense_proxy"
  echo "dense_proxy $(tree_line), measured $(date -u +%Y-%m-%dT%H:%MZ)" > "$results/dense-built.txt"

  # name|rows|in|out for each selected shape
  local shapes=()
  [[ ",$shapes_sel," == *,S,* ]] && shapes+=("S q/out|512|256|256" "S ff1|512|256|1024" "S ff2|512|1024|256")
  [[ ",$shapes_sel," == *,M,* ]] && shapes+=("M q/out|512|768|768" "M ff1|512|768|3072" "M ff2|512|3072|768")
  [ ${#shapes[@]} -gt 0 ] || { log "--shapes takes S, M or S,M"; exit 2; }

  local tsv="$results/dense.tsv" notes="$results/dense-notes.txt"
  printf "cpu\tlayer\tshape\tdtype\tkernel\tcount_reps1\tcount_reps2\tinsns_per_call\tmacs\tcheck\n" > "$tsv"
  : > "$notes"
  calibrate > "$results/calibration-$mode.txt"
  local cpu
  for cpu in "${cpu_list[@]}"; do
    env -i PATH=/usr/bin:/bin qemu-aarch64 -cpu "$(qemu_cpu "$cpu")" -L /usr/aarch64-linux-gnu -E "LD_LIBRARY_PATH=$libdir" \
      "$prog" --list > "$results/list-$cpu.txt"
    # kernels: built, runnable here, matching; references only with --with-ref
    local kernels=() name dtype isa runs left
    while read -r name dtype isa runs; do
      [[ "$name" == \#* ]] && continue
      if [ "$runs" != yes ]; then
        echo "- -cpu $cpu: $name not measured: needs $isa, which this CPU model lacks" >> "$notes"; continue
      fi
      [[ "$name" == *_ref && $with_ref -eq 0 ]] && continue
      [[ "$name" =~ $kernels_re ]] || continue
      kernels+=("$name")
    done < "$results/list-$cpu.txt"
    [[ "xnnpack" =~ $kernels_re ]] && kernels+=(xnnpack)
    left=$(grep '^# left out' "$results/list-$cpu.txt" || true)
    local s layer rows in outc k tag c1 c2 line chk macs kname kdtype
    for s in "${shapes[@]}"; do
      IFS='|' read -r layer rows in outc <<< "$s"
      for k in "${kernels[@]}"; do
        tag="dense-$cpu-${layer// /_}-$k"
        tag=${tag//\//_}
        tag=${tag//[,=]/_}
        log "-cpu $cpu  $layer ${rows}x${in}x${outc}  $k"
        c1=$(count "$cpu" "$tag-1" "$prog" --kernel "$k" --shape "${rows}x${in}x${outc}" --reps 1) || exit 1
        c2=$(count "$cpu" "$tag-2" "$prog" --kernel "$k" --shape "${rows}x${in}x${outc}" --reps 2) || exit 1
        line=$(cat "$results/$tag-2.out")
        chk=$(sed -n 's/.* check=\([^ ]*\).*/\1/p' <<< "$line")
        macs=$(sed -n 's/.* macs_per_rep=\([0-9]*\).*/\1/p' <<< "$line")
        kname=$(sed -n 's/^kernel=\([^ ]*\).*/\1/p' <<< "$line")
        kdtype=$(sed -n 's/.* dtype=\([^ ]*\).*/\1/p' <<< "$line")
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$cpu" "$layer" "${rows}x${in}x${outc}" \
          "$kdtype" "$kname" "$c1" "$c2" "$((c2 - c1))" "$macs" "$chk" >> "$tsv"
      done
    done
    [ -n "$left" ] && echo "- -cpu $cpu: ${left#\# }" >> "$notes"
  done
  render_dense
}

# The Markdown table of results/dense.tsv (also: run_proxy.sh table).
render_dense() {
  local tsv="$results/dense.tsv" notes="$results/dense-notes.txt"
  [ -f "$tsv" ] || { log "no $tsv yet: run run_proxy.sh dense first"; exit 1; }
  {
    header "ARM proxy: dense layers" "$(cat "$results/dense-built.txt" 2>/dev/null || echo 'dense_proxy: ?')"
    echo "One call = one dense layer over all 512 rows, no activation, single thread: for int8 the"
    echo "kernel's activation quantizer plus the kernel; for XNNPACK setup + run of its f32 fully connected"
    echo "operator. Instructions per call = count(--reps 2) - count(--reps 1) of dense_proxy (weights,"
    echo "packing and the result check cancel). MAC = multiply-add (rows x in x out). Ratio: instructions"
    echo "of the kernel over those of XNNPACK f32 on the same shape and CPU model (below 1: fewer)."
    echo
    echo "| qemu -cpu | layer | shape (rows x in x out) | dtype | kernel | instructions per layer call | instructions / MAC | ratio to XNNPACK f32 |"
    echo "|---|---|---|---|---|---:|---:|---:|"
    awk -F'\t' 'NR > 1 { key = $1 "|" $3; if ($5 == "xnnpack_f32") x[key] = $8; row[NR] = $0 }
      END {
        for (i = 2; i <= NR; ++i) {
          split(row[i], f, "\t"); key = f[1] "|" f[3]
          ratio = (key in x && x[key] > 0) ? sprintf("%.2f", f[8] / x[key]) : "n/a"
          flag = f[10] == "ok" ? "" : " (check " f[10] ")"
          printf "| %s | %s | %s | %s | %s%s | %s | %.3f | %s |\n", f[1], f[2], f[3], f[4], f[5], flag, f[8], f[8] / f[9], ratio
        }
      }' "$tsv"
    echo
    cat "$results/calibration-dense.txt"
    sort -u "$notes"
    echo "- raw counts: $tsv; every qemu command: $results/commands-dense.log, e.g."
    echo "  \`$(grep -m1 'dense_proxy --kernel' "$results/commands-dense.log")\`"
  } > "$results/dense.md"
  cat "$results/dense.md"
  [ -n "$out" ] && [ "$mode" != table ] && cp "$results/dense.md" "$out"
  if awk -F'\t' 'NR > 1 && $10 != "ok" { bad = 1 } END { exit !bad }' "$tsv"; then
    log "some results differ from the reference (see the check column)"; exit 1
  fi
}

# --- peer mode: ONNX Runtime's arm64 library beside linfer -----------------------------------------
# An arm64 /proc/cpuinfo for CPU model $1 (two processors, like the host's sysfs: cpuinfo reads both):
# the MIDR fields qemu gives the model (cortex-a72 0x410fd083, cortex-a76 0x414fd0b1, max 0x000f0510).
fake_cpuinfo() {
  local impl var part rev feat p
  case "$1" in
    cortex-a72) impl=0x41 var=0x0 part=0xd08 rev=3 feat="fp asimd evtstrm crc32 cpuid" ;;
    cortex-a76) impl=0x41 var=0x4 part=0xd0b rev=1
                feat="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
    i8mm) impl=0x00 var=0x0 part=0x051 rev=0
          feat="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp i8mm bf16" ;;
    *) log "peer: no /proc/cpuinfo known for -cpu $1 (cortex-a72, cortex-a76, i8mm)"; exit 2 ;;
  esac
  for p in $(seq 0 $(($(nproc --all) - 1))); do
    printf 'processor\t: %d\nBogoMIPS\t: 100.00\nFeatures\t: %s\nCPU implementer\t: %s\n' "$p" "$feat" "$impl"
    printf 'CPU architecture: 8\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %s\n\n' "$var" "$part" "$rev"
  done
}

run_peer() {
  [ "$(id -u)" -eq 0 ] || { log "peer: ONNX Runtime runs in a private mount namespace: run as root"; exit 1; }
  setup
  [ -x "$bench" ] || { log "no arm64 linfer-bench at $bench: build it with scripts/test-arm64.sh (or pass --bench PATH)"; exit 1; }
  [ -x "$convert" ] || { log "no host linfer-convert at $convert: build it with scripts/build.sh build (or pass --convert PATH)"; exit 1; }
  local suite="$root/tools/bench/suite" pw="$work/peer"
  local ortlib="$suite/node_modules/onnxruntime-node/bin/napi-v6/linux/arm64/libonnxruntime.so.1"
  [ -f "$ortlib" ] || (cd "$suite" && npm ci --ignore-scripts --loglevel=warn) >&2
  mkdir -p "$pw/models" "$pw/out"
  aarch64-linux-gnu-gcc -O2 -Wall -Wextra -Werror -std=c11 -D_DEFAULT_SOURCE "$here/ort_proxy.c" -o "$pw/ort_proxy" -ldl
  local ort_version
  ort_version=$(node -p "require('$suite/node_modules/onnxruntime-node/package.json').version")

  # the cases' models: S with max_seq_len 2048, M with 512; ONNX per length; .lfm f32 and int8
  local case_list=() c name T s_len="" m_len="" minilm_len=""
  IFS=, read -r -a case_list <<< "$cases"
  for c in "${case_list[@]}"; do
    [[ "$c" =~ ^(S|M|MiniLM)([0-9]+)$ ]] ||
      { log "peer: a case is S, M or MiniLM and a length, e.g. S512 (got '$c')"; exit 2; }
    case "${BASH_REMATCH[1]}" in
      S) s_len+=${s_len:+,}${BASH_REMATCH[2]} ;;
      M) m_len+=${m_len:+,}${BASH_REMATCH[2]} ;;
      MiniLM) minilm_len+=${minilm_len:+,}${BASH_REMATCH[2]} ;;
    esac
  done
  local dts=() dt
  IFS=, read -r -a dts <<< "$model_dtypes"
  for name in S M MiniLM; do
    local lens=$s_len nmax=2048
    [ $name = M ] && lens=$m_len nmax=512
    [ $name = MiniLM ] && lens=$minilm_len
    [ -n "$lens" ] || continue
    if [ $name = MiniLM ]; then
      # all-MiniLM-L6-v2 from its PyPI package: linfer's files as scripts/minilm.sh converts them
      # (the int8 one calibrated), the ONNX export and the reference from transformers.
      for dt in "${dts[@]}"; do
        [ -f "$root/build-hf/minilm-$dt.lfm" ] || (cd "$root" && bash scripts/minilm.sh build-hf "$(dirname "$convert")") >&2
        cp "$root/build-hf/minilm-$dt.lfm" "$pw/models/MiniLM_$dt.lfm"
      done
      "$root/$(cd "$root" && bash scripts/hf-venv.sh)" "$here/minilm_models.py" --lengths "$lens" --work "$pw/models" >&2
    else
      /usr/bin/python3 "$suite/make_models.py" --model $name --n $nmax --lengths "$lens" --work "$pw/models" >&2
      for dt in "${dts[@]}"; do
        [ -f "$pw/models/${name}_$dt.lfm" ] && [ "$pw/models/${name}_$dt.lfm" -nt "$pw/models/$name.safetensors" ] ||
          "$convert" "$pw/models/$name.safetensors" -o "$pw/models/${name}_$dt.lfm" --dtype "$dt" > /dev/null
      done
    fi
    IFS=, read -r -a lens <<< "$lens"
    for T in "${lens[@]}"; do
      local q="$pw/models/${name}_n${T}_int8.onnx"
      [ -f "$q" ] && [ "$q" -nt "$pw/models/${name}_n$T.onnx" ] ||
        node "$suite/ort_quantize.js" "$pw/models/${name}_n$T.onnx" "$q" > /dev/null
    done
  done

  local tsv="$results/peer.tsv"
  printf "cpu\tcase\tdtype\truntime\tcount_runs1\tcount_runs2\tinsns_per_forward\tcheck\tkernels\n" > "$tsv"
  calibrate > "$results/calibration-peer.txt"
  local cpu rt tag cs=() ids ref onnx lfm outp chk kern r
  for cpu in "${cpu_list[@]}"; do
    fake_cpuinfo "$cpu" > "$pw/cpuinfo-$cpu"
    for c in "${case_list[@]}"; do
      name=${c%%[0-9]*} T=${c##*[!0-9]}
      ids="$pw/models/${name}_check_ids_n$T.txt" ref="$pw/models/${name}_check_ref_n$T.npy"
      for dt in "${dts[@]}"; do
        for rt in linfer ort; do
          tag="peer-$cpu-$c-$dt-$rt"
          log "-cpu $cpu  $c  $dt  $rt"
          for r in 1 2; do
            if [ $rt = linfer ]; then
              guest_prefix=()
              outp="$pw/out/$tag.npy"
              lfm="$pw/models/${name}_$dt.lfm"
              cs[r]=$(count "$cpu" "$tag-$r" "$bench" "$lfm" --seq-len "$T" --threads 1 --warmup 1 --runs $r \
                        --ids "$ids" --dump "$outp") || exit 1
            else
              # ORT_DISABLE_TELEMETRY: ORT 1.30 otherwise starts telemetry threads
              guest_prefix=(unshare -m sh -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' "$pw/cpuinfo-$cpu")
              guest_env=(ORT_DISABLE_TELEMETRY=1)
              outp="$pw/out/$tag.f32"
              onnx="$pw/models/${name}_n$T.onnx"
              [ "$dt" = int8 ] && onnx="$pw/models/${name}_n${T}_int8.onnx"
              cs[r]=$(count "$cpu" "$tag-$r" "$pw/ort_proxy" "$ortlib" "$onnx" "$ids" --warmup 1 --runs $r \
                        --out "$outp") || exit 1
              guest_prefix=() guest_env=()
            fi
          done
          if grep -q "insn_count: warning" "$results/$tag-1.err" "$results/$tag-2.err"; then
            log "peer: $tag ran more than one guest thread: its count is not exact"; exit 1
          fi
          chk=$(/usr/bin/python3 "$here/peer_check.py" "$outp" "$ref" "$dt") || { log "peer: $tag: $chk"; exit 1; }
          kern="-"
          [ $rt = linfer ] && kern=$(sed -n 's/^session: dense: \([^;]*\);.*/\1/p' "$results/$tag-2.out" "$results/$tag-2.err" | head -n1)
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$cpu" "$c" "$dt" "$rt" "${cs[1]}" "${cs[2]}" "$((cs[2] - cs[1]))" \
            "$chk" "$kern" >> "$tsv"
        done
      done
    done
  done
  {
    echo "linfer-bench: $bench; ONNX Runtime $ort_version (onnxruntime-node's linux-arm64 libonnxruntime.so.1) through ort_proxy; measured $(date -u +%Y-%m-%dT%H:%MZ)"
  } > "$results/peer-built.txt"
  render_peer
}

# The Markdown table of results/peer.tsv (also: run_proxy.sh table).
render_peer() {
  local tsv="$results/peer.tsv" meta="$results/peer-built.txt"
  [ -f "$tsv" ] && [ -f "$meta" ] || { log "no $tsv yet: run run_proxy.sh peer first"; exit 1; }
  {
    header "ARM proxy: linfer and ONNX Runtime, whole forward passes" "$(cat "$meta")"
    echo "One forward pass, one thread: count(2 runs) - count(1 run), each after 1 warm-up run (model"
    echo "load, session creation and the first runs cancel). linfer: linfer-bench --seq-len n --ids;"
    echo "ONNX Runtime: ort_proxy (CPU execution provider, 1 intra-op and 1 inter-op thread, sequential,"
    echo "all graph optimizations), f32 graph or its int8 graph (DynamicQuantizeMatMul). Both on the same"
    echo "ids; both outputs checked against PyTorch's (f32: max error <= 1e-3 of the largest |output|;"
    echo "int8: mean cosine >= 0.99). Ratio = ORT instructions / linfer instructions (above 1: linfer"
    echo "executes fewer). i8mm = qemu -cpu max,sve=off,sme=off. Model S: dim 256, 4 layers, 4 heads,"
    echo "ff 1024, k 128, vocab 256, max_seq_len 2048; M: dim 768, 12 layers, 12 heads, ff 3072, k 256,"
    echo "max_seq_len 512. MiniLM: all-MiniLM-L6-v2 (dim 384, 6 layers, 12 heads, ff 1536), its"
    echo "sentence embedding (mean, L2-normalized); linfer's int8 file is scripts/minilm.sh's (calibrated)."
    echo
    echo "| qemu -cpu | model | n | dtype | linfer (instructions) | ONNX Runtime | ORT / linfer | linfer's dense kernels |"
    echo "|---|---|---:|---|---:|---:|---:|---|"
    awk -F'\t' 'NR > 1 { key = $1 "|" $2 "|" $3; v[key "|" $4] = $7; if ($4 == "linfer") k[key] = $9
                          if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
      END {
        for (i = 1; i <= n; ++i) {
          split(order[i], f, "|"); l = v[order[i] "|linfer"]; o = v[order[i] "|ort"]
          model = f[2]; sub(/[0-9]+$/, "", model); len = substr(f[2], length(model) + 1)
          printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], model, len, f[3],
                 l, o, (l > 0 && o > 0) ? sprintf("%.2f", o / l) : "n/a", k[order[i]]
        }
      }' "$tsv"
    echo
    cat "$results/calibration-peer.txt"
    echo "- parity (each output against PyTorch):"
    awk -F'\t' 'NR > 1 { printf "  %s %s %s %s: %s\n", $1, $2, $3, $4, $8 }' "$tsv"
    echo "- raw counts: $tsv; every qemu command: $results/commands-peer.log"
  } > "$results/peer.md"
  cat "$results/peer.md"
  [ -n "$out" ] && [ "$mode" != table ] && cp "$results/peer.md" "$out"
  return 0
}

# --- forward mode ----------------------------------------------------------------------------------
run_forward() {
  setup
  if [ ! -x "$bench" ]; then
    log "no arm64 linfer-bench at $bench: build it with scripts/test-arm64.sh (or pass --bench PATH)"
    exit 1
  fi
  if command -v file > /dev/null && ! file -L "$bench" | grep -q aarch64; then
    log "$bench is not an aarch64 program"; exit 1
  fi
  local model_list=()
  [ -n "$models" ] && IFS=, read -r -a model_list <<< "$models"
  if [ -n "$make_models" ]; then
    local mdir="$work/models" name dt n=${seq_len:-512} dts
    mkdir -p "$mdir"
    [ -x "$convert" ] || { log "no host linfer-convert at $convert (build the host tree, or pass --convert PATH)"; exit 1; }
    IFS=, read -r -a dts <<< "$model_dtypes"
    IFS=, read -r -a names <<< "$make_models"
    for name in "${names[@]}"; do
      log "building model $name (n=$n) with make_models.py"
      /usr/bin/python3 "$root/tools/bench/suite/make_models.py" --model "$name" --n "$n" --lengths "$n" \
        --work "$mdir/$name-n$n" >&2
      for dt in "${dts[@]}"; do
        "$convert" "$mdir/$name-n$n/$name.safetensors" -o "$mdir/${name}_n${n}_$dt.lfm" --dtype "$dt" \
          ${format_version:+--format-version "$format_version"} >&2
        model_list+=("$mdir/${name}_n${n}_$dt.lfm")
      done
    done
  fi
  [ ${#model_list[@]} -gt 0 ] || model_list=("$root"/examples/models/*.lfm)
  local tsv="$results/forward.tsv"
  printf "cpu\tmodel\tdense\tcount_runs1\tcount_runs2\tinsns_per_forward\tvcpus\tsession_dense\n" > "$tsv"
  calibrate > "$results/calibration-$mode.txt"
  local cpu m path c1 c2 tag args vc sd status=0
  for cpu in "${cpu_list[@]}"; do
    for m in "${model_list[@]}"; do
      m=$(realpath -m "$m")
      for path in auto xnnpack; do
        tag="forward-$cpu-$(basename "$m" .lfm)-$path"
        tag=${tag//[,=]/_}
        args=("$m" --warmup "$warmup" --threads "$threads" --dense "$path")
        [ -n "$seq_len" ] && args+=(--seq-len "$seq_len")
        log "-cpu $cpu  $(basename "$m")  --dense $path"
        if ! c1=$(count "$cpu" "$tag-1" "$bench" "${args[@]}" --runs 1) ||
           ! c2=$(count "$cpu" "$tag-2" "$bench" "${args[@]}" --runs 2); then
          printf "%s\t%s\t%s\t-\t-\tfailed\t-\t-\n" "$cpu" "$(basename "$m")" "$path" >> "$tsv"
          status=1
          continue
        fi
        vc=$(sed -n 's/.*(\(inline\|atomic\), \([0-9]*\) vCPU.*/\2/p' "$results/$tag-2.err")
        # what the session ran its dense layers with (linfer-bench's "session: dense: ..." line)
        sd=$(sed -n 's/^session: dense: \([^;]*\).*/\1/p' "$results/$tag-2.out")
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$cpu" "$(basename "$m")" "$path" "$c1" "$c2" \
          "$((c2 - c1))" "$vc" "${sd:-?}" >> "$tsv"
      done
    done
  done
  {
    echo "linfer-bench: $bench, measured $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "linfer-bench MODEL --warmup $warmup --threads $threads${seq_len:+ --seq-len $seq_len} --runs 2 minus the"
    echo "same with --runs 1: the instructions of one forward pass (model load, session creation and the"
    echo "first $((warmup + 1)) passes cancel)."
    echo "plugin mode: $plugin_mode"
  } > "$results/forward-built.txt"
  render_forward
  return $status
}

# The Markdown table of results/forward.tsv (also: run_proxy.sh table).
render_forward() {
  local tsv="$results/forward.tsv" meta="$results/forward-built.txt"
  [ -f "$tsv" ] && [ -f "$meta" ] || { log "no $tsv yet: run run_proxy.sh forward first"; exit 1; }
  {
    header "ARM proxy: whole forward passes" "$(sed -n 1p "$meta")"
    sed -n '2,4p' "$meta"
    echo "Default dense path (auto) against the peer, the same model with --dense xnnpack (f32 through"
    echo "XNNPACK operators); where that session kept linfer's kernels (int8 weights), the peer is the f32"
    echo "model of the same name under --dense xnnpack, if measured. The kernels column is linfer-bench's"
    echo "own \"session: dense:\" line."
    echo
    echo "| qemu -cpu | model | --dense | session's dense kernels | instructions per forward | ratio to --dense xnnpack | guest threads |"
    echo "|---|---|---|---|---:|---:|---:|"
    # The ratio needs a peer that really ran XNNPACK: a session that kept linfer's kernels under
    # --dense xnnpack (the runtime does so for int8 weights) is no peer.
    awk -F'\t' 'NR > 1 { key = $1 "|" $2; row[NR] = $0
        if ($3 == "xnnpack" && $6 != "failed") { x[key] = $6; xk[key] = $8 } }
      END {
        for (i = 2; i <= NR; ++i) {
          split(row[i], f, "\t"); key = f[1] "|" f[2]
          # no XNNPACK peer: the f32 sibling of the model (same name, f32 for int8/f16), if measured
          sib = f[2]; gsub(/int8|f16/, "f32", sib); skey = f[1] "|" sib
          if (f[6] == "failed" || !(key in x)) ratio = "n/a"
          else if (xk[key] ~ /xnnpack/) ratio = sprintf("%.2f", f[6] / x[key])
          else if (sib != f[2] && (skey in x) && xk[skey] ~ /xnnpack/)
            ratio = sprintf("%.2f (vs %s --dense xnnpack)", f[6] / x[skey], sib)
          else ratio = "n/a (--dense xnnpack ran " xk[key] ")"
          printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[8], f[6], ratio, f[7]
        }
      }' "$tsv"
    echo
    cat "$results/calibration-forward.txt"
    if grep -q "plugin mode: inline" "$meta" && awk -F'\t' 'NR > 1 && $7 > 1 { m = 1 } END { exit !m }' "$tsv"; then
      echo "- more than one guest thread ran: the inline counter may have lost increments; rerun with --plugin-mode atomic"
    fi
    echo "- raw counts: $tsv; every qemu command: $results/commands-forward.log"
  } > "$results/forward.md"
  cat "$results/forward.md"
  [ -n "$out" ] && [ "$mode" != table ] && cp "$results/forward.md" "$out"
  return 0
}

# Both tables again from the last results.
render_all() {
  local any=0
  [ -f "$results/dense.tsv" ] && { render_dense; any=1; echo; }
  [ -f "$results/forward.tsv" ] && [ -f "$results/forward-built.txt" ] && { render_forward; any=1; echo; }
  [ -f "$results/peer.tsv" ] && [ -f "$results/peer-built.txt" ] && { render_peer; any=1; }
  [ $any -eq 1 ] || { log "no results yet"; exit 1; }
  if [ -n "$out" ]; then
    local f
    for f in dense forward peer; do [ -f "$results/$f.md" ] && { cat "$results/$f.md"; echo; }; done > "$out"
  fi
  return 0
}

# One line, so that bash has read all of it (and exits) before anything edits this file.
{ case "$mode" in dense) run_dense ;; forward) run_forward ;; peer) run_peer ;; table) render_all ;; esac; exit; }
