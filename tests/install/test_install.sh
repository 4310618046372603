#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a prefix, then builds an outside project against it twice: with CMake's
# find_package(linfer) and with pkg-config. Both must run a converted model.
set -euo pipefail
build=$1 prefix=$2 source=$3
rm -rf "$prefix" "$prefix-consumer" "$prefix-pc"
cmake --install "$build" --prefix "$prefix" > /dev/null
for f in bin/linfer-convert bin/linfer-run bin/linfer-bench include/linfer/linfer.h include/linfer/linfer_status.h include/linfer/linfer_version.h include/linfer/linfer.hpp \
         lib/cmake/linfer/linferConfig.cmake lib/pkgconfig/linfer.pc; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
model="$prefix/model.lfm"
"$prefix/bin/linfer-convert" "$source/tests/golden/c01_pre_headwise_after/checkpoint.safetensors" -o "$model" > /dev/null
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake -S "$source/tests/install/consumer" -B "$prefix-consumer" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$prefix-consumer" > /dev/null
"$prefix-consumer/consumer" "$model"
mkdir -p "$prefix-pc"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" g++ -std=c++17 "$source/tests/install/consumer/main.cc" -o "$prefix-pc/consumer" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs linfer)
"$prefix-pc/consumer" "$model"
"$prefix/bin/linfer-run" "$model" --ids "$source/tests/golden/c01_pre_headwise_after/ids_7.txt" > /dev/null
echo "install test passed"
