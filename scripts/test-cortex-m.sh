#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bare-metal Cortex-M (docs/microcontrollers.md): builds the runtime with Debian's gcc-arm-none-eabi
# and newlib-nano (no operating system, no files, no threads, no exceptions or RTTI;
# cmake/toolchains/cortex-m.cmake) and runs the test firmware (tests/cortex_m) under
# qemu-system-arm on a Cortex-M4 (mps2-an386) and a Cortex-M55 (mps3-an547): the shipped
# microcontroller model (examples/models/langid-mcu.int8.lfm) linked into flash and read in place,
# a static arena, the shipped inputs (10 sentences per language of the short test set, cut to 128
# bytes) against the host build's outputs, and bad input (a too-small arena, ids out of range, a
# too-long input, truncated and damaged models). Each board's run ends with "N passed, 0 failed".
# Then the code-size budget: the smallest application's code on each board (size_probe).
#
#   bash scripts/test-cortex-m.sh [--figures]
#
# The host's outputs come from the Python package of a native build: LINFER_HOST_BUILD (test.sh
# passes build/, step 1's), else one is built here without tests or tools (build-cortex-m/host).
# --figures: also the numbers of docs/microcontrollers.md (code size per part, memory, and
# instructions per inference counted by tools/bench/arm's QEMU plugin).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
trap 'echo "test-cortex-m.sh: FAILED at line $LINENO" >&2' ERR
source scripts/generator.sh
start=$SECONDS
figures=0
[ "${1:-}" = "--figures" ] && figures=1
bash scripts/need-packages.sh gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib \
  qemu-system-arm python3-numpy cmake ninja-build g++ flatbuffers-compiler libflatbuffers-dev libhwy-dev

model=examples/models/langid-mcu.int8.lfm
out=build-cortex-m
mkdir -p $out
host=${LINFER_HOST_BUILD:-}
if [ -z "$host" ]; then
  host=$out/host
  cmake -S . -B $host -DCMAKE_BUILD_TYPE=Release -DLINFER_BUILD_TESTS=OFF -DLINFER_BUILD_TOOLS=OFF \
    -DLINFER_WITH_XNNPACK=OFF -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
  cmake --build $host -j"$(nproc)"
fi
/usr/bin/python3 tests/cortex_m/make_cases.py $model 10 $out/cases.bin --package "$host/runtime"

# One build per CPU; the firmware's exit code and its last line both count.
run_board() {  # run_board BUILD MACHINE [QEMU ARGS...]
  local build=$1 machine=$2
  shift 2
  timeout 900 qemu-system-arm -M "$machine" "$@" -nographic -monitor none -serial none \
    -semihosting-config enable=on,target=native -kernel $build/bin/firmware_test.elf 2>&1 | tee $build/firmware_test.log
  tail -n 1 $build/firmware_test.log | grep -Eq '^[0-9]+ passed, 0 failed$'
}
for cpu in cortex-m4 cortex-m55; do
  build=$out/$cpu
  rm -f $build/CMakeCache.txt  # the toolchain's flags, not an earlier run's cached ones
  cmake -S . -B $build -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/cortex-m.cmake -DLINFER_CORTEX_M_CPU=$cpu \
    -DCMAKE_BUILD_TYPE=Release -DLINFER_CM_MODEL="$PWD/$model" -DLINFER_CM_CASES="$PWD/$out/cases.bin" -DLINFER_WARNINGS_AS_ERRORS=ON > /dev/null
  cmake --build $build -j"$(nproc)"
done
echo "--- Cortex-M4 (mps2-an386)"
run_board $out/cortex-m4 mps2-an386 -cpu cortex-m4
echo "--- Cortex-M55 (mps3-an547)"
run_board $out/cortex-m55 mps3-an547

# The code-size budget (docs/microcontrollers.md, "Figures"): size_probe's code (linfer and the
# libraries) as measured with GCC 12.2.1 and newlib-nano, plus 2%. Sizes are the same for the same
# toolchain: a build past its budget grew; cut, or measure again (--figures) and say why in the docs.
declare -A code_measured=([cortex-m4]=57294 [cortex-m55]=58494)
gcc_version=$(arm-none-eabi-gcc -dumpversion)
for cpu in cortex-m4 cortex-m55; do
  code=$(python3 tests/cortex_m/code_size.py $out/$cpu/tests/cortex_m/size_probe.map | sed -n 's/^ *\([0-9]*\)  total code.*/\1/p')
  budget=$(( code_measured[$cpu] * 102 / 100 ))
  echo "$cpu: size_probe's code $code bytes (budget $budget: the measured ${code_measured[$cpu]} + 2%)"
  if [ "$code" -gt "$budget" ]; then
    if [ "$gcc_version" != 12.2.1 ]; then
      echo "test-cortex-m.sh: over the budget, but measured with GCC 12.2.1, not $gcc_version: not counted"
      continue
    fi
    echo "test-cortex-m.sh: size_probe's code on the $cpu is $code bytes, over its budget of $budget bytes" \
      "(the measured ${code_measured[$cpu]} + 2%, docs/microcontrollers.md)" >&2
    exit 1
  fi
done

if [ $figures = 1 ]; then
  bash tools/bench/arm/build_plugin.sh > /dev/null
  plugin=$PWD/build-arm64-proxy/plugin/libinsn_count.so
  for cpu in cortex-m4 cortex-m55; do
    build=$out/$cpu
    machine=$([ $cpu = cortex-m4 ] && echo mps2-an386 || echo mps3-an547)
    echo "--- $cpu: flash by part (size_probe: load, one run, the class printed)"
    python3 tests/cortex_m/code_size.py $build/tests/cortex_m/size_probe.map | tail -n 11
    for runs in 1 11; do
      qemu-system-arm -M $machine -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native,arg="bench $runs" \
        -plugin "$plugin,outfile=$build/insn_$runs" -kernel $build/bin/firmware_test.elf > /dev/null 2>&1
    done
    kernel=$([ $cpu = cortex-m55 ] && echo mve || echo dsp)  # the int8 kernel of each core's build
    echo "$cpu $kernel: $(( ($(cat $build/insn_11) - $(cat $build/insn_1)) / 10 )) instructions per inference" \
      "of the first input (qemu plugin count)"
  done
fi
echo "test-cortex-m.sh: all tests passed in $((SECONDS - start)) s"
