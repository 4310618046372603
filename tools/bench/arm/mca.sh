#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# llvm-mca proxy for the inner loops of linfer's NEON dense kernels (kernels/dense/dense_*_neon*.cc),
# among them dense_f16_neonfp16.cc (fp16 arithmetic, FMLA .8H), and of the fp16-arithmetic
# prototype tools/bench/arm/fp16_fmla_loop.cc (not a linfer kernel).
#
#   bash tools/bench/arm/mca.sh [--out FILE]
#
# A PROXY, not a timing: llvm-mca's static estimate of the hot inner loop alone, in steady state
# (1000 iterations back to back, all loads hitting L1, perfect branch prediction). It says how
# close the loop's instruction mix comes to the core's multiply-add peak in LLVM's scheduling
# model; it knows nothing of caches, memory bandwidth, the remainder tiles or the epilogues.
#
# Steps:
# 1. Each kernel file is compiled to assembly (-S) with Debian's aarch64-linux-gnu-g++ at the
#    flags the Release build gives linfer_kernels (top CMakeLists.txt: C++17 without extensions,
#    PIC, hidden visibility, -Wall -Wextra -Wno-unused-parameter; CMake's Release -O3 -DNDEBUG;
#    kernels/CMakeLists.txt: HWY_DISABLED_TARGETS and the include dirs), into
#    build-arm64-proxy/mca/<kernel>.s. No -march: the SDOT kernel gets dotprod from its functions'
#    target attributes, as in the real build.
# 2. The hot loop is found in the assembly by this rule:
#    - a loop is a backward branch (b, b.cond, cbz, cbnz, tbz, tbnz) to a .L label defined earlier
#      in the same function; its body runs from that label to the branch, inclusive;
#    - innermost loops only: no other loop lies inside the body;
#    - of those, the one with the most multiply-add lanes (MACs, counted as in step 3); the first
#      one in the file on a tie (none here: each file has exactly one loop with the maximum).
#    GCC inlines some tile<R> into the run_* function (f32, int8) and keeps others as clones
#    (f16 half_tile<8>, SDOT tile<4>), so the rule looks at the whole file: the full-height tile
#    is the one with the most MACs per iteration by construction (fewer rows issue fewer
#    multiply-adds per iteration: f32 4 rows 64 FMLA, 3 rows 48, 2 rows 32, 1 row 16; the K % 4
#    remainder loops 16 or fewer). The loop table names the function the loop sits in.
#    The loop body (comments, #APP markers and directives stripped) goes to
#    build-arm64-proxy/mca/<kernel>.loop.s, what llvm-mca reads, with its label so the branch
#    resolves. Forward branches inside the body (none in these kernels; counted in the loop
#    table) would be treated by llvm-mca as not taken.
# 3. MACs per instruction: the destination's lanes (FMLA/FMLS/MLA/MLS .4s = 4, .2d = 2, .8h = 8;
#    SMULL/SMULL2/SMLAL/SMLAL2/UMULL/UMLAL(2)/SMLSL(2) .8h = 8, .4s = 4), times 4 for the dot
#    products (SDOT/UDOT/USDOT/SUDOT .4s = 16, .2s = 8), times 8 for the matrix multiplies
#    (SMMLA/UMMLA/USMMLA .4s = 32: a 2x2 block of 8-input dot products). SMULL starts a product
#    pair that SMLAL completes and SADALP folds in, so SMULL counts as a multiply-add like SMLAL does.
#    A loop written in inline asm (dense_int8_i8mm.cc) has a numeric local label ("1:", "b.ne 1b"):
#    it counts like a .L label and is renamed .Lasm<N>_<line> in the body llvm-mca reads.
# 4. llvm-mca runs per model (-iterations=1000); cycles per iteration = Total Cycles / 1000:
#    - cortex-a72 (Raspberry Pi 4): llvm-mca-14 and llvm-mca-19 -mcpu=cortex-a72, both LLVM's
#      Cortex-A57 scheduling model. SDOT skipped (ARMv8.0, no dot product);
#    - neoverse-n2 (phones' i8mm cores: LLVM 19 schedules cortex-a710 and cortex-x2 with the same
#      model and gives the same cycles): llvm-mca-19 -mcpu=neoverse-n2, SDOT and SMMLA only;
#    - cortex-a76 (Raspberry Pi 5): llvm-mca-19 -mcpu=neoverse-n1 (the same core as the A76, with
#      its own scheduling model in LLVM 19; in LLVM 14 neoverse-n1 is still the A57 model), and
#      llvm-mca-14 -mcpu=cortex-a76 for reference only: LLVM 14 and 19 both schedule "cortex-a76"
#      with the Cortex-A57 model (the script checks that its cycles equal cortex-a72's, says so).
#    Cycles per iteration include llvm-mca's pipeline fill and drain spread over the 1000
#    iterations (64019 total cycles -> 64.02 for a loop whose steady state is 64).
#    Peaks (MACs per cycle) the % column divides by:
#      A72 f32/f16: 4 = one FMLA.4S per cycle as LLVM's A57 model has it (a Q-form FMLA holds one
#        of the two 64-bit FP pipes for 2 cycles; 50% of a nominal 2 x FMLA.4S per cycle);
#      A72 and A76 int8 SMULL/SMLAL: 8 = one 8-lane multiply per cycle (one pipe takes them);
#      A76 f32/f16: 8 = 2 x FMLA.4S per cycle; A76 SDOT: 32 = 2 x SDOT.4S per cycle;
#      A76 fp16 arithmetic (dense_f16_neonfp16 and the prototype fp16_fmla_loop, FMLA .8H): 16 =
#      2 x FMLA.8H per cycle
#      (run on the A76 rows only: the A72 has no fp16 arithmetic);
#      N2 SDOT: 32 = 2 x SDOT.4S; N2 SMMLA: 32 = 1 SMMLA per cycle, as LLVM 19's model has it
#      (reciprocal throughput 1.00; SDOT 0.50).
#    The A76 rows use the A76's peaks whatever the model, so the A57-model row shows how far the
#    wrong model is off, not a figure for the A76.
#
# Results: the Markdown tables on stdout (and in FILE with --out); the .s files, the loop bodies
# and every llvm-mca report (<kernel>.<mcpu>.llvm<N>.txt) stay in build-arm64-proxy/mca/.
# Needs g++-aarch64-linux-gnu, llvm-14 and llvm-19 (Debian packages; nothing is installed here).
# Overrides: CXX_AARCH64, LLVM_MCA_14, LLVM_MCA_19.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)

usage() { sed -n '4p' "${BASH_SOURCE[0]}" | sed 's/^#  *//'; }
out=""
while (($#)); do
  case $1 in
    --out) [[ $# -ge 2 ]] || { echo "mca.sh: --out needs a file" >&2; exit 2; }; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) echo "usage: $(usage)"; exit 0 ;;
    *) echo "mca.sh: unknown argument '$1'; usage: $(usage)" >&2; exit 2 ;;
  esac
done
[[ -z $out || $out == /* ]] || out=$PWD/$out

cxx=${CXX_AARCH64:-aarch64-linux-gnu-g++}
mca14=${LLVM_MCA_14:-llvm-mca-14}
mca19=${LLVM_MCA_19:-llvm-mca-19}
for t in "$cxx" "$mca14" "$mca19"; do
  command -v "$t" > /dev/null || {
    echo "mca.sh: $t not found (Debian: apt-get install g++-aarch64-linux-gnu llvm-14 llvm-19)" >&2
    exit 1
  }
done
demangle="cat"
command -v c++filt > /dev/null && demangle=c++filt

work=$root/build-arm64-proxy/mca
mkdir -p "$work"
start=$SECONDS

# The Release flags of linfer_kernels (see build-*/kernels/CMakeFiles/linfer_kernels.dir/flags.make).
flags=(-O3 -DNDEBUG -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -Wall -Wextra
       -Wno-unused-parameter -std=c++17 '-DHWY_DISABLED_TARGETS=(HWY_SVE|HWY_SVE2|HWY_SVE_256|HWY_SVE2_128)'
       -Ikernels -Ikernels/include -Iruntime/format/include)
iterations=1000

# kernel name | source | peak class
kernels=(
  "dense_f32_neon|kernels/dense/dense_f32_neon.cc|fmla"
  "dense_f16_neon|kernels/dense/dense_f16_neon.cc|fmla"
  "dense_int8_neon|kernels/dense/dense_int8_neon.cc|smlal"
  "dense_int8_neondot|kernels/dense/dense_int8_neondot.cc|sdot"
  "dense_int8_i8mm|kernels/dense/dense_int8_i8mm.cc|smmla"
  "dense_f16_neonfp16|kernels/dense/dense_f16_neonfp16.cc|fmla8h"
  "fp16_fmla_loop|tools/bench/arm/fp16_fmla_loop.cc|fmla8h"
)
# label | llvm-mca | -mcpu | model | core (peaks) | kernel classes left out (the core lacks them)
models=(
  "cortex-a72|$mca14|cortex-a72|LLVM 14, Cortex-A57 model|a72|sdot smmla fmla8h"
  "cortex-a72|$mca19|cortex-a72|LLVM 19, Cortex-A57 model|a72|sdot smmla fmla8h"
  "cortex-a76|$mca19|neoverse-n1|LLVM 19 neoverse-n1 model|a76|smmla"
  "cortex-a76|$mca14|cortex-a76|LLVM 14 \"cortex-a76\" = Cortex-A57 model, not the A76|a76|smmla"
  "neoverse-n2|$mca19|neoverse-n2|LLVM 19 neoverse-n2 model = its cortex-a710, cortex-x2|n2|fmla smlal fmla8h"
)
peak() {  # core, class -> MACs per cycle
  case $1/$2 in
    a72/fmla) echo 4 ;; a72/smlal) echo 8 ;; a72/sdot) echo 0 ;;
    a76/fmla) echo 8 ;; a76/smlal) echo 8 ;; a76/sdot) echo 32 ;; a76/fmla8h) echo 16 ;;
    n2/sdot) echo 32 ;; n2/smmla) echo 32 ;;
  esac
}

# Finds the hot loop of one .s file (rule in the header): writes the body to $2 and prints
# "function<TAB>first line<TAB>last line<TAB>label<TAB>instructions<TAB>MACs<TAB>branches inside<TAB>mix".
find_loop() {
  awk -v body="$2" '
    function is_branch(op) {
      return op ~ /^(b|b\.?(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|cbz|cbnz|tbz|tbnz)$/
    }
    # Multiply-add lanes of one instruction (0 if none), from its mnemonic and destination.
    function macs(op, rest,   d, lanes) {
      if (op !~ /^(fmla|fmls|mla|mls|[su]mlal2?|[su]mlsl2?|[su]mull2?|sdot|udot|usdot|sudot|smmla|ummla|usmmla)$/) return 0
      d = rest; sub(/,.*/, "", d)
      if (d !~ /\.[0-9]+[bhsd]$/) return 0          # scalar forms (fmla s0, ... by element) count 0
      lanes = d; sub(/^.*\./, "", lanes); sub(/[bhsd]$/, "", lanes)
      return (op ~ /dot$/) ? 4 * lanes : (op ~ /mmla$/) ? 8 * lanes : lanes + 0
    }
    {
      src = NR; line = $0
      sub(/\/\/.*/, "", line); gsub(/^[ \t]+|[ \t]+$/, "", line)
      if (line == "" || line ~ /^#/) next                       # #APP / #NO_APP
      # Inline asm conditions as GCC leaves them (".if 4 > 1"): the lines of a false one are no code.
      if (line ~ /^\.if[ \t]/) {
        c = line; sub(/^\.if[ \t]+/, "", c); split(c, e, /[ \t]*>[ \t]*/)
        depth++; off[depth] = (c ~ /^[0-9]+[ \t]*>[ \t]*[0-9]+$/) ? !(e[1] + 0 > e[2] + 0) : 0
        next
      }
      if (line ~ /^\.endif/) { depth--; next }
      skipping = 0
      for (d = 1; d <= depth; d++) if (off[d]) skipping = 1
      if (skipping) next
      if (line ~ /^\.type[ \t].*%function/) { f = line; sub(/^\.type[ \t]+/, "", f); sub(/,.*/, "", f); pending = f; next }
      if (line ~ /^\.size[ \t]/) { fn = ""; next }
      if (line ~ /^[A-Za-z0-9_.$]+:$/) {
        name = substr(line, 1, length(line) - 1)
        if (name ~ /^[0-9]+$/) { numlab[name] = ".Lasm" name "_" src; name = numlab[name]; line = name ":" }
        if (name == pending) { fn = name; pending = "" }
        n++; kind[n] = "L"; text[n] = line; lineno[n] = src
        at[name] = n; labfn[name] = fn
        next
      }
      if (line ~ /^\./) next                                    # other directives
      n++; kind[n] = "I"; lineno[n] = src
      op = line; sub(/[ \t].*/, "", op); op = tolower(op)
      rest = line; sub(/^[^ \t]+[ \t]*/, "", rest); gsub(/[ \t]+/, " ", rest)
      text[n] = op (rest == "" ? "" : " " rest)
      mac[n] = macs(op, rest); mop[n] = (mac[n] ? op " ." substr(rest, index(rest, ".") + 1, index(rest ",", ",") - index(rest, ".") - 1) : "")
      isbr[n] = is_branch(op)
      if (isbr[n]) {
        t = rest; sub(/^.*[ ,]/, "", t)
        if (t ~ /^[0-9]+b$/ && (substr(t, 1, length(t) - 1) in numlab)) {   # backward to a numeric label
          l = numlab[substr(t, 1, length(t) - 1)]; sub(/[0-9]+b$/, l, rest); t = l
          text[n] = op " " rest
        }
        if (t ~ /^\.L/ && (t in at) && labfn[t] == fn && fn != "") { nl++; ls[nl] = at[t]; le[nl] = n; lf[nl] = fn; ll[nl] = t }
      }
    }
    END {
      best = 0
      for (i = 1; i <= nl; i++) {
        inner = 1
        for (j = 1; j <= nl; j++) if (j != i && ls[j] >= ls[i] && le[j] < le[i]) inner = 0
        if (!inner) continue
        m = 0; ni = 0; nb = 0
        for (k = ls[i]; k <= le[i]; k++) if (kind[k] == "I") { ni++; m += mac[k]; if (isbr[k] && k != le[i]) nb++ }
        if (m > bestm || best == 0) { best = i; bestm = m; bestn = ni; bestb = nb }
      }
      if (best == 0 || bestm == 0) { print "no loop with multiply-adds found" > "/dev/stderr"; exit 1 }
      delete cnt; mix = ""
      for (k = ls[best]; k <= le[best]; k++) {
        print (kind[k] == "L" ? text[k] : "\t" text[k]) > body
        if (mop[k] != "") { if (!(mop[k] in cnt)) order[++no] = mop[k]; cnt[mop[k]]++ }
      }
      for (k = 1; k <= no; k++) mix = mix (k > 1 ? ", " : "") cnt[order[k]] " " order[k]
      printf "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", lf[best], lineno[ls[best]], lineno[le[best]], ll[best], bestn, bestm, bestb, mix
    }' "$1"
}

cd "$root"
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $rev != unknown && -n $(git status --porcelain -- kernels/dense runtime/format/include 2>/dev/null) ]]; then
  rev="$rev (with uncommitted changes in kernels/dense or runtime/format/include)"
fi
cxx_version=$("$cxx" --version | head -1)
mca14_version=$("$mca14" --version | grep -m1 -i 'llvm version' | sed 's/^ *//')
mca19_version=$("$mca19" --version | grep -m1 -i 'llvm version' | sed 's/^ *//')

rows=()
loops=()
notes=()
for k in "${kernels[@]}"; do
  IFS='|' read -r name src class <<< "$k"
  asm=$work/$name.s
  "$cxx" "${flags[@]}" -S "$src" -o "$asm"
  IFS=$'\t' read -r fn first last label ninsn nmac nbr mix < <(find_loop "$asm" "$work/$name.loop.s")
  loops+=("| $name | \`$(echo "$fn" | $demangle)\` | $name.s:$first-$last (\`$label\`) | $ninsn | $mix | $nbr |")
  a72_14=""
  for m in "${models[@]}"; do
    IFS='|' read -r core tool mcpu model pcore skip <<< "$m"
    [[ " $skip " == *" $class "* ]] && continue
    ver=$("$tool" --version | grep -m1 -io 'llvm version [0-9]*' | grep -o '[0-9]*$')
    report=$work/$name.$mcpu.llvm$ver.txt
    "$tool" -mtriple=aarch64 -mcpu="$mcpu" -iterations=$iterations "$work/$name.loop.s" > "$report" 2> "$report.stderr" || {
      echo "mca.sh: $tool failed on $work/$name.loop.s:" >&2; cat "$report.stderr" >&2; exit 1
    }
    [[ -s $report.stderr ]] || rm -f "$report.stderr"
    total=$(awk '/^Total Cycles:/ { print $3 }' "$report")
    insns=$(awk '/^Instructions:/ { print $2 }' "$report")
    its=$(awk '/^Iterations:/ { print $2 }' "$report")
    [[ -n $total && -n $insns && $its == "$iterations" ]] || { echo "mca.sh: no figures in $report" >&2; exit 1; }
    (( insns == ninsn * its )) || { echo "mca.sh: llvm-mca read $insns / $its instructions, the loop has $ninsn" >&2; exit 1; }
    p=$(peak "$pcore" "$class")
    rows+=("$(awk -v n="$name" -v c="$core ($model)" -v mcpu="$mcpu" -v ni="$ninsn" -v m="$nmac" -v t="$total" -v it="$its" -v p="$p" 'BEGIN {
      cyc = t / it; mpc = m / cyc
      printf "| %s | %s | %d | %d | %.2f | %.2f | %.0f%% of %d |", n, c, ni, m, cyc, mpc, 100 * mpc / p, p }')")
    if [[ $mcpu == cortex-a72 && $ver == 14 ]]; then a72_14=$total; fi
    if [[ $mcpu == cortex-a76 && -n $a72_14 ]]; then
      if [[ $total == "$a72_14" ]]; then
        notes+=("$name: llvm-mca-14 -mcpu=cortex-a76 gives exactly the cortex-a72 (A57 model) cycles ($total per $its iterations).")
      else
        notes+=("$name: llvm-mca-14 -mcpu=cortex-a76 differs from cortex-a72 ($total vs $a72_14 cycles per $its iterations).")
      fi
    fi
  done
done

report() {
  echo "# llvm-mca proxy: NEON dense kernels, inner loop"
  echo
  echo "**PROXY: llvm-mca static estimate of the inner loop only, not a timing.** Steady state of"
  echo "the hot loop of the full-height tile, $iterations iterations, L1 hits, no remainder tiles or epilogues."
  echo
  echo "- compiler: $cxx_version, \`${flags[*]} -S\`"
  echo "- llvm-mca: $mca14_version; $mca19_version; \`-mtriple=aarch64 -mcpu=MCPU -iterations=$iterations\`"
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); git revision: $rev"
  echo "- command: \`bash tools/bench/arm/mca.sh\`; files in build-arm64-proxy/mca/"
  echo
  echo "| kernel | mcpu (model) | instructions in loop | MACs per iteration | cycles per iteration | MACs per cycle | % of peak (MACs/cycle) |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Peaks: cortex-a72 f32/f16 4 = 1 FMLA.4S per cycle in LLVM's A57 model (50% of a nominal"
  echo "2 x FMLA.4S); int8 SMULL/SMLAL 8 = one 8-lane multiply per cycle on both cores (one pipe);"
  echo "cortex-a76 f32/f16 8 = 2 x FMLA.4S; SDOT 32 = 2 x SDOT.4S; dense_f16_neonfp16 and fp16_fmla_loop"
  echo "(a prototype, not a linfer kernel) (FMLA .8H, fp16 arithmetic) 16 = 2 x FMLA.8H. SDOT is not run on cortex-a72 (no"
  echo "dot product), nor FMLA .8H (no fp16 arithmetic). The llvm-mca-14 -mcpu=cortex-a76 rows use"
  echo "LLVM's Cortex-A57 model and are not an A76 estimate; the A76 figures are the neoverse-n1 rows."
  for n in "${notes[@]}"; do echo "- $n"; done
  echo
  echo "Loops measured (innermost backward branch with the most multiply-add lanes in the file):"
  echo
  echo "| kernel | function | lines of the .s | instructions | multiply-adds | other branches in body |"
  echo "|---|---|---|---:|---|---:|"
  printf '%s\n' "${loops[@]}"
}

if [[ -n $out ]]; then
  report | tee "$out"
else
  report
fi
echo "mca.sh: $((SECONDS - start)) s; assembly, loop bodies and llvm-mca reports in $work" >&2
