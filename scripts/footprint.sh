#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# footprint.sh [ARCH ...]: builds liblinfer and the minimal program (tests/footprint/minimal.c,
# linked with the library statically) for each architecture (default: x86_64 aarch64 armv7
# riscv64) with and without XNNPACK (where Debian has XNNPACK for it), and Linformer only
# (-DLINFER_ATTENTION_KINDS=linformer) without XNNPACK and the tokenizers, Release, and prints their
# stripped sizes: one line per build in the form of tests/footprint/sizes.txt, then the table of
# docs/footprint.md. Build folders: build-footprint/<key>. Installs the cross compilers it needs
# (scripts/need-packages.sh) and, for the builds with XNNPACK, unpacks Debian's arm64 or armhf
# XNNPACK into build-arm64/sysroot or build-armhf/sysroot (scripts/cross-sysroot.sh), the folders
# scripts/test-arm64.sh and the toolchain files use.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(x86_64 aarch64 armv7 riscv64)
rows=()
for arch in "${archs[@]}"; do
  # sysroot: Debian's architecture and the folder its XNNPACK goes to (none: no XNNPACK build).
  case $arch in
    x86_64) toolchain=(); strip=strip; compiler=(); sysroot=(); configs=(ON OFF OFF:linformer) ;;
    aarch64) toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
                        -DLINFER_ARM64_SYSROOT=build-arm64/sysroot)
             strip=aarch64-linux-gnu-strip; compiler=(g++-aarch64-linux-gnu)
             sysroot=(arm64 build-arm64/sysroot); configs=(ON OFF OFF:linformer) ;;
    armv7) toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-linux-gnueabihf.cmake
                      -DLINFER_ARMHF_SYSROOT=build-armhf/sysroot)
           strip=arm-linux-gnueabihf-strip; compiler=(g++-arm-linux-gnueabihf)
           sysroot=(armhf build-armhf/sysroot); configs=(ON OFF OFF:linformer) ;;
    riscv64) toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-linux-gnu.cmake)
             strip=riscv64-linux-gnu-strip; compiler=(g++-riscv64-linux-gnu); sysroot=()
             configs=(OFF OFF:linformer) ;;
    *) echo "footprint.sh: unknown architecture $arch" >&2; exit 2 ;;
  esac
  [ ${#compiler[@]} -eq 0 ] || bash scripts/need-packages.sh "${compiler[@]}" ninja-build >&2
  # Each configuration: XNNPACK ON or OFF, then :kinds for a selection of attention kinds (the
  # key's last part, as tests/CMakeLists.txt's footprint_key writes it). FOOTPRINT_CONFIGS="OFF:linformer"
  # measures only those.
  [ -z "${FOOTPRINT_CONFIGS:-}" ] || read -r -a configs <<< "$FOOTPRINT_CONFIGS"
  for config in "${configs[@]}"; do
    xnnpack=${config%%:*} kinds=""
    [[ $config == *:* ]] && kinds=${config#*:}
    key=$arch-$([ "$xnnpack" = ON ] && echo xnnpack || echo noxnnpack)-threads${kinds:+-${kinds//;/,}}
    dir=build-footprint/$key
    if [ "$xnnpack" = ON ] && [ "$arch" = riscv64 ]; then
      echo "footprint.sh: $key skipped: Debian has no XNNPACK for riscv64" >&2
      continue
    fi
    if [ "$xnnpack" = ON ] && [ ${#sysroot[@]} -gt 0 ]; then
      bash scripts/cross-sysroot.sh "${sysroot[@]}" >&2
    fi
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${toolchain[@]}" -DLINFER_WITH_XNNPACK=$xnnpack \
      ${kinds:+"-DLINFER_ATTENTION_KINDS=$kinds" -DLINFER_TOKENIZERS=OFF} > /dev/null
    cmake --build "$dir" -j"$(nproc)" --target linfer linfer_minimal > /dev/null
    lib=$(find "$dir/runtime" -maxdepth 1 -name 'liblinfer.so.*.*.*' | head -1)
    $strip -o "$dir/lib.stripped" "$lib"
    $strip -o "$dir/minimal.stripped" "$dir/bin/linfer_minimal"
    rows+=("$key $(stat -c %s "$dir/lib.stripped") $(stat -c %s "$dir/minimal.stripped")")
  done
done
echo "# sizes.txt lines (key liblinfer minimal):"
printf '%s\n' "${rows[@]}"
echo
echo "| build | liblinfer.so (stripped) | minimal program (stripped, linfer linked statically) |"
echo "|---|---:|---:|"
for r in "${rows[@]}"; do
  read -r key lib minimal <<< "$r"
  echo "| $key | $(((lib + 512) / 1024)) KiB ($lib bytes) | $(((minimal + 512) / 1024)) KiB ($minimal bytes) |"
done
