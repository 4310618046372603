#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds TFLite Micro with CMSIS-NN for one core and links the firmware (tflm_firmware.cc) with it:
#
#   bash tools/bench/cortex-m-peers/build_tflm.sh TFLM_DIR ARCH CPU_FLAGS BOARD MODEL.tflite CASES.bin HEADER_DIR OUT_DIR
#
# Every object is made by TFLM's own Makefile (TARGET=cortex_m_generic, OPTIMIZED_KERNEL_DIR=cmsis_nn,
# BUILD_TYPE=release: its -Os for the framework, -O2 for the kernels and CMSIS-NN, its defines),
# but only those the firmware links: the framework, the kernels of the model's operators (the
# header's list) and the CMSIS-NN functions they call, found from the linker's undefined symbols.
# They are linked directly with --gc-sections; the whole library as an archive (about 320 files)
# would be linked by the symbols used as well, and takes far longer to compile.
set -Eeuo pipefail
tflm=$1 arch=$2 cpu_flags=$3 board=$4 model=$5 cases=$6 header_dir=$7 out=$8
root=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out"
mk=(env PATH=/usr/bin:$PATH make -s -C "$tflm" -f tensorflow/lite/micro/tools/make/Makefile TARGET=cortex_m_generic
    TARGET_ARCH=$arch OPTIMIZED_KERNEL_DIR=cmsis_nn TOOLCHAIN=gcc TARGET_TOOLCHAIN_ROOT=/usr/bin/ BUILD_TYPE=release)
print() { "${mk[@]}" "print-$1" 2> /dev/null | sed -n "s/^$1=//p"; }
list() { print "$1" | tr ' ' '\n' | grep .; }
core=$(list MICROLITE_LIB_OBJS)
# The kernels' files: one name per operator of the model (MEAN's is reduce, RSQRT's elementwise),
# with their _common files and the helpers every kernel uses.
ops=$(sed -n 's/^#define TFLM_OPS(X) //p' "$header_dir/tflm_model_io.h" | grep -o 'X(Add[A-Za-z]*)' | sed 's/X(Add\(.*\))/\1/' |
  sed 's/\([a-z]\)\([A-Z]\)/\1_\2/g' | tr A-Z a-z | sed 's/^mean$/reduce/; s/^rsqrt$/elementwise/; s/^batch_mat_mul$/batch_matmul/')
pattern="/kernels/(cmsis_nn/)?($(echo $ops kernel_util micro_tensor_utils | tr ' ' '|'))(_common)?\.o$"
kernels=$(list MICROLITE_KERNEL_OBJS | grep -E "$pattern")
cmsis_all=$(list MICROLITE_THIRD_PARTY_KERNEL_OBJS)
objs="$core $kernels"
flags=$(print CXXFLAGS)
includes=$(print INCLUDES)
opt=$(print CORE_OPTIMIZATION_LEVEL)
for prog in tflm_check tflm_probe; do
  def=$([ $prog = tflm_probe ] && echo -DTFLM_PROBE || echo -DTFLM_CHECK)
  (cd "$tflm" && eval "arm-none-eabi-g++ $flags $opt $includes" --specs=nano.specs -I"$header_dir" \
    -DTFLM_ARENA_BYTES=262144 $def -c "$root/tools/bench/cortex-m-peers/tflm_firmware.cc" -o "$out/$prog.o")
done
for c in startup platform; do
  arm-none-eabi-gcc $cpu_flags --specs=nano.specs -O2 -c "$root/tests/cortex_m/$c.c" -o "$out/$c.o"
done
arm-none-eabi-gcc $cpu_flags -DLINFER_CM_MODEL_FILE="\"$model\"" -DLINFER_CM_CASES_FILE="\"$cases\"" \
  -c "$root/tests/cortex_m/blobs.S" -o "$out/blobs.o"
for round in 1 2 3 4 5 6; do
  "${mk[@]}" -j2 $objs
  missing=""
  for prog in tflm_check tflm_probe; do
    if ! (cd "$tflm" && arm-none-eabi-g++ $cpu_flags --specs=nano.specs -nostartfiles --specs=nosys.specs -Wl,--gc-sections \
          -T"$root/tests/cortex_m/$board.ld" -L"$root/tests/cortex_m" -Wl,-Map="$out/$prog.map" \
          "$out/$prog.o" "$out/startup.o" "$out/platform.o" "$out/blobs.o" $objs -lm -o "$out/$prog.elf") 2> "$out/link.log"; then
      # CMSIS-NN's functions live in files of their names, or else in the file that defines them.
      for sym in $(grep -o "undefined reference to \`arm_[a-z0-9_]*'" "$out/link.log" | sed "s/.*\`\(.*\)'/\1/" | sort -u); do
        obj=$(echo "$cmsis_all" | grep "/$sym\.o$" || true)
        if [ -z "$obj" ]; then
          file=$(cd "$tflm" && grep -rlE "^[a-zA-Z_].*[ *]$sym\(" tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source | head -n 1)
          [ -z "$file" ] || obj=$(echo "$cmsis_all" | grep "/${file%.c}\.o$" || true)
        fi
        [ -n "$obj" ] || { cat "$out/link.log" >&2; echo "build_tflm.sh: no CMSIS-NN file for $sym" >&2; exit 1; }
        missing="$missing $obj"
      done
      [ -n "$missing" ] || { cat "$out/link.log" >&2; exit 1; }
    fi
  done
  [ -z "$missing" ] && exit 0
  objs="$objs $(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')"
done
echo "build_tflm.sh: still unresolved after 6 rounds" >&2
exit 1
