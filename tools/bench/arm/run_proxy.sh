#!/usr/bin/env bash
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
# Builds what it needs first (build_plugin.sh; the arm64 libraries with scripts/arm64-sysroot.sh;
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
    --model-dtypes) model_dtypes=$2; shift 2 ;;
    --convert) convert=$(realpath -m "$2"); shift 2 ;;
    --format-version) format_version=$2; shift 2 ;;
    --plugin-mode) plugin_mode=$2; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_proxy.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$mode" in dense|forward|table) ;; *) echo "run_proxy.sh: mode is dense, forward or table" >&2; exit 2 ;; esac
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
  bash "$root/scripts/arm64-sysroot.sh" "$sysroot" >&2
}

# count CPU TAG PROGRAM ARGS...: runs PROGRAM under qemu-aarch64 -cpu CPU with the plugin in a
# clean environment (the guest's environment is part of what it executes) and prints the count.
# The program's stdout goes to $results/TAG.out, stderr (with the plugin's line) to TAG.err.
count() {
  local cpu=$1 tag=${2//[,=]/_}  # file names without the CPU's properties' ',' and '=' (the plugin's separators)
  shift 2
  local cnt="$results/$tag.count"
  rm -f "$cnt"
  local cmd=(env -i PATH=/usr/bin:/bin qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu
             -E "LD_LIBRARY_PATH=$libdir" -plugin "$plugin,outfile=$cnt,mode=$plugin_mode" "$@")
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
    env -i PATH=/usr/bin:/bin qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu -E "LD_LIBRARY_PATH=$libdir" \
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
  [ -f "$results/forward.tsv" ] && [ -f "$results/forward-built.txt" ] && { render_forward; any=1; }
  [ $any -eq 1 ] || { log "no results yet"; exit 1; }
  if [ -n "$out" ]; then
    { [ -f "$results/dense.md" ] && cat "$results/dense.md" && echo; [ -f "$results/forward.md" ] && cat "$results/forward.md"; } > "$out"
  fi
  return 0
}

# One line, so that bash has read all of it (and exits) before anything edits this file.
{ case "$mode" in dense) run_dense ;; forward) run_forward ;; table) render_all ;; esac; exit; }
