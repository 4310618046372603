#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# linfer beside TensorFlow Lite Micro with CMSIS-NN on the microcontroller language-ID model, on
# QEMU's Cortex-M4 (mps2-an386) and Cortex-M55 (mps3-an547) boards (docs/microcontrollers.md,
# "Beside TensorFlow Lite Micro"): instructions per inference (tools/bench/arm's QEMU plugin),
# flash, arena, and the class on the 100 shipped inputs. A benchmark, not a test: scripts/test.sh
# does not run it.
#
#   TFLM_MIRRORS=DIR bash tools/bench/cortex-m-peers/run.sh
#
# TFLM_MIRRORS: bare git directories (DIR/OWNER+NAME/repo) of tensorflow/tflite-micro,
# ARM-software/CMSIS-NN, ARM-software/CMSIS_6, ARM-software/Cortex_DFP, google/flatbuffers,
# google/gemmlowp, google/ruy and mborgerding/kissfft, e.g. made by `git clone --mirror
# https://github.com/OWNER/NAME DIR/OWNER+NAME/repo`. TFLite Micro is taken at TFLM_COMMIT (default
# the snapshot's HEAD), the others at the commits its download scripts pin (sources.sh). No
# Debian package or PyPI wheel ships TFLite Micro's sources with CMSIS-NN (Debian has neither;
# PyPI's tflite-micro is a host-side Python interpreter), so they come from GitHub.
#
# Everything goes to build-tflm/ (ignored by git): the sources, a venv with tensorflow-cpu (the
# converter: tf.lite.TFLiteConverter, full int8; convert_tflite.py), the .tflite, TFLM's objects
# per board (its own Makefile: TARGET=cortex_m_generic, OPTIMIZED_KERNEL_DIR=cmsis_nn,
# BUILD_TYPE=release, Debian's arm-none-eabi-gcc; build_tflm.sh), the firmware (tflm_firmware.cc)
# and the figures (build-tflm/figures.txt). linfer's side is scripts/test-cortex-m.sh's
# build (build-cortex-m/), run first.
set -Eeuo pipefail
cd "$(dirname "$0")/../../.."
trap 'echo "cortex-m-peers/run.sh: FAILED at line $LINENO" >&2' ERR
here=tools/bench/cortex-m-peers
out=build-tflm
mkdir -p $out
start=$SECONDS
bash scripts/need-packages.sh gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib \
  qemu-system-arm make patch python3-venv

# 1. linfer: its firmware, the 100 inputs with linfer's outputs (cases.bin), built and tested.
[ -n "${SKIP_LINFER_BUILD:-}" ] || bash scripts/test-cortex-m.sh
cases=$PWD/build-cortex-m/cases.bin

# 2. TFLite Micro's sources (kept with their objects from an earlier run; FRESH_SOURCES=1 takes them again).
if [ ! -f $out/sources/commits.txt ] || [ -n "${FRESH_SOURCES:-}" ]; then
  : "${TFLM_MIRRORS:?set TFLM_MIRRORS to the folder of the git snapshots (see the header of this script)}"
  bash $here/sources.sh "$TFLM_MIRRORS" $out/sources
fi
tflm=$PWD/$out/sources/tflite-micro

# 3. The model: TensorFlow's converter, full int8, checked on x86 (LiteRT's interpreter in TF).
venv=$out/venv-tf
if [ ! -x $venv/bin/python ]; then
  python3 -m venv $venv
  $venv/bin/pip install -q -r $here/requirements.txt
fi
$venv/bin/python $here/convert_tflite.py "$cases" $out/langid-mcu.int8.tflite --check --header $out/tflm_model_io.h

# 4. Per board: TFLM's library, the firmware, the runs.
bash tools/bench/arm/build_plugin.sh > $out/plugin.log 2>&1 || { cat $out/plugin.log >&2; exit 1; }
plugin=$PWD/build-arm64-proxy/plugin/libinsn_count.so
flash_of() {  # flash_of ELF: the bytes the ELF loads into flash (code, constants, the model, .data's image)
  arm-none-eabi-readelf -lW "$1" | python3 -c 'import sys
print(sum(int(f[4], 16) for f in (l.split() for l in sys.stdin) if f[:1] == ["LOAD"] and int(f[3], 16) < 0x20000000))'
}
count_insns() {  # count_insns BOARD ELF FILE ARGS: instructions of one run of the firmware with the command line ARGS
  local machine=$1 elf=$2 file=$3
  shift 3
  qemu-system-arm -M "$machine" -nographic -monitor none -serial none \
    -semihosting-config enable=on,target=native,arg="$*" -plugin "$plugin,outfile=$file" -kernel "$elf" > /dev/null 2>&1
  cat "$file"
}
figures=$out/figures.txt
{
  echo "# $(date -u +%F) $(arm-none-eabi-gcc --version | head -n 1); $(qemu-system-arm --version | head -n 1)"
  echo "# sources:"; sed 's/^/#   /' $out/sources/commits.txt
} > $figures
bench_inputs="0 7"  # the first input (44 bytes, docs/microcontrollers.md's figure) and the first of 128 bytes
for cpu in cortex-m4 cortex-m55; do
  if [ $cpu = cortex-m4 ]; then machine=mps2-an386 arch=cortex-m4+fp; else machine=mps3-an547 arch=cortex-m55; fi
  cpu_flags=$(sed -n "/\"$cpu\")/,/^elseif\|^else/s/.*set(linfer_cpu_flags \"\(.*\)\")/\1/p" cmake/toolchains/cortex-m.cmake)
  fw=$PWD/$out/$cpu
  bash $here/build_tflm.sh "$tflm" $arch "$cpu_flags" $machine "$PWD/$out/langid-mcu.int8.tflite" "$cases" "$PWD/$out" "$fw" \
    > $out/build-$cpu.log 2>&1 || { tail -n 30 $out/build-$cpu.log >&2; exit 1; }
  echo "--- $cpu ($machine): TFLite Micro + CMSIS-NN"
  qemu() { timeout 900 qemu-system-arm -M $machine -nographic -monitor none -serial none \
             -semihosting-config enable=on,target=native "$@"; }
  qemu -kernel $fw/tflm_check.elf 2>&1 | tee $fw/check.log || true  # exit code 2: some class differs (counted below)
  arena=$(sed -n 's/^tflm: arena used \([0-9]*\).*/\1/p' $fw/check.log)
  agree=$(sed -n 's/^tflm: \([0-9]*\) of \([0-9]*\) inputs.*/\1\/\2/p' $fw/check.log)
  qemu -kernel $fw/tflm_probe.elf
  linfer_build=build-cortex-m/$cpu
  linfer_arena=$(sed -n 's/^memory: arena \([0-9]*\) bytes.*/\1/p' $linfer_build/firmware_test.log)
  linfer_heap=$(sed -n 's/^memory: .*heap \([0-9]*\) of.*/\1/p' $linfer_build/firmware_test.log)
  linfer_agree=$(sed -n 's/^inputs: \([0-9]*\) of \([0-9]*\) with.*/\1\/\2/p' $linfer_build/firmware_test.log)
  tflite_bytes=$(stat -c %s $out/langid-mcu.int8.tflite)
  lfm_bytes=$(stat -c %s examples/models/langid-mcu.int8.lfm)
  for i in $bench_inputs; do
    for runs in 1 3; do
      count_insns $machine $fw/tflm_check.elf $fw/insn_tflm_${i}_$runs "bench $runs $i" > /dev/null
      count_insns $machine $linfer_build/bin/firmware_test.elf $fw/insn_linfer_${i}_$runs "bench $runs $i" > /dev/null
    done
  done
  per() { echo $(( ($(cat $fw/insn_$1_3) - $(cat $fw/insn_$1_1)) / 2 )); }
  {
    echo "$cpu linfer flash $(flash_of $linfer_build/bin/size_probe.elf) model $lfm_bytes arena $linfer_arena heap $linfer_heap agree $linfer_agree (host)"
    echo "$cpu tflm flash $(flash_of $fw/tflm_probe.elf) model $tflite_bytes arena $arena heap 0 agree $agree (linfer)"
    for i in $bench_inputs; do
      echo "$cpu input $i insns linfer $(per linfer_$i) tflm $(per tflm_$i)"
    done
  } | tee -a $figures
done
echo "cortex-m-peers/run.sh: done in $((SECONDS - start)) s; figures in $figures"
