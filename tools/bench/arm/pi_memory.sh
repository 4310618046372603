#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pi_memory.sh: peak resident memory of the README's main job (linfer_classify --lines on the int8
# language-ID model, the samples file) as a Raspberry Pi would run it, measured under qemu-user
# (a proxy: no board here). qemu-user's own memory (its translator, the code cache) counts in the
# process's peak RSS, so the same program is also run on an input that fails before anything is
# loaded (a missing model), and the table gives both and their difference: what linfer's job adds.
# Needs the cross builds of scripts/test-arm64.sh and scripts/test-armhf.sh.
#   bash tools/bench/arm/pi_memory.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
model=examples/models/langid.int8.lfm labels=examples/models/langid.labels.txt
samples=examples/data/langid_samples.txt
peak_kib() {  # peak RSS in KiB of the command, which may fail
  /usr/bin/time -f "%M" -o /tmp/pi_memory.$$ "$@" > /dev/null 2>&1 || true
  tail -1 /tmp/pi_memory.$$; rm -f /tmp/pi_memory.$$
}
echo "| target (qemu-user) | main job: peak RSS | qemu + program alone | the job's own | arena |"
echo "|---|---:|---:|---:|---:|"
for target in arm64 armhf; do
  case $target in
    arm64) qemu=(qemu-aarch64 -cpu cortex-a72 -L /usr/aarch64-linux-gnu
                 -E LD_LIBRARY_PATH=$PWD/build-arm64/sysroot/usr/lib/aarch64-linux-gnu) name="aarch64 (cortex-a72)" ;;
    armhf) qemu=(qemu-arm -cpu cortex-a7 -L /usr/arm-linux-gnueabihf
                 -E LD_LIBRARY_PATH=$PWD/build-armhf/sysroot/usr/lib/arm-linux-gnueabihf) name="armv7 (cortex-a7)" ;;
  esac
  bin=build-$target/bin
  [ -x "$bin/linfer_classify" ] || { echo "pi_memory.sh: $bin/linfer_classify is missing (run scripts/test-$target.sh)" >&2; exit 1; }
  job=$(peak_kib "${qemu[@]}" "$bin/linfer_classify" --lines "$model" "$labels" "$samples")
  alone=$(peak_kib "${qemu[@]}" "$bin/linfer_classify" --lines /nonexistent.lfm "$labels" "$samples")
  arena=$("${qemu[@]}" "$bin/linfer-bench" "$model" --seq-len 1024 --threads 1 --runs 1 | sed -n 's/^arena_bytes: \([0-9]*\).*/\1/p')
  echo "| $name | $((job / 1024)) MiB ($job KiB) | $((alone / 1024)) MiB | $(((job - alone) / 1024)) MiB ($((job - alone)) KiB) | $((arena / 1024)) KiB |"
done
