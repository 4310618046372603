#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# smoke.sh BUILD_DIR [SECONDS]: CI smoke run of the fuzz targets (docs/security.md).
#
# For each target in BUILD_DIR/bin (a -DLINFER_FUZZ=ON build): first every input of
# tests/fuzz/regressions/<target>/ once, then SECONDS (default 20) of fuzzing from the seed corpus
# tests/fuzz/corpus/<target>/ and the regressions, with the target's dictionary. New inputs go to a
# temporary folder, never into the source tree. Fails on any crash, leak, timeout (> 10 s for one
# input) or out-of-memory (> 2048 MB); the input that failed is kept in BUILD_DIR/fuzz-artifacts/.
set -euo pipefail
build=${1:?usage: smoke.sh BUILD_DIR [SECONDS]}
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A dict=([fuzz_lfm]=lfm.dict [fuzz_safetensors]=safetensors.dict [fuzz_torch]=torch.dict
                 [fuzz_convert]=torch.dict)
common=(-rss_limit_mb=2048 -timeout=10 -artifact_prefix="$artifacts/")
# Each target fuzzes on one core (libFuzzer without -jobs is one process): the targets run side by
# side, as many at a time as there are cores (LINFER_FUZZ_JOBS overrides), each for the full
# SECONDS; their reports are printed in the targets' order.
jobs=${LINFER_FUZZ_JOBS:-$(nproc)}
targets=(fuzz_lfm fuzz_safetensors fuzz_torch fuzz_convert)
for target in "${targets[@]}"; do
  if [[ ! -x "$build/bin/$target" ]]; then
    echo "smoke.sh: $build/bin/$target is missing (configure with -DLINFER_FUZZ=ON and build)" >&2
    exit 1
  fi
done

# One target: its report on standard output, failures' logs on standard error; status 1 on failure.
smoke_one() {
  local target=$1
  local bin="$build/bin/$target"
  local corpus="$here/corpus/$target"
  local regressions="$here/regressions/$target"
  local dirs=("$corpus")
  local start=$SECONDS
  if [[ -d "$regressions" ]] && compgen -G "$regressions/*" > /dev/null; then
    dirs+=("$regressions")
    # Every known bad input once, on its own: a regression fails here even if fuzzing would not
    # reach it in time.
    if ! "$bin" "${common[@]}" "$regressions"/* > "$work/$target.regressions.log" 2>&1; then
      tail -n 40 "$work/$target.regressions.log" >&2
      echo "smoke.sh: $target failed on a regression input" >&2
      return 1
    fi
  fi
  mkdir -p "$work/$target"
  if "$bin" "${common[@]}" -dict="$here/${dict[$target]}" -max_total_time="$seconds" \
       -print_final_stats=1 "$work/$target" "${dirs[@]}" > "$work/$target.log" 2>&1; then
    local stats cov
    stats=$(grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/$target.log" | awk '{print $2}' | paste -sd' ' || true)
    cov=$(grep -oE 'cov: [0-9]+' "$work/$target.log" | tail -n 1 || true)
    echo "smoke.sh: $target ok ($((SECONDS - start)) s; execs, peak MB: $stats; $cov)"
  else
    tail -n 60 "$work/$target.log" >&2
    echo "smoke.sh: $target FAILED; the input is in $artifacts/" >&2
    return 1
  fi
}

status=0
pids=()
for target in "${targets[@]}"; do
  # a free core first: wait for the oldest running target
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  smoke_one "$target" > "$work/$target.report" 2> "$work/$target.errors" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
for target in "${targets[@]}"; do
  cat "$work/$target.report"
  cat "$work/$target.errors" >&2
done
exit $status
