#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The runtime alone, as an edge device would take it (docs/footprint.md): configured without
# XNNPACK, threads, tools or tests, once shared and once static. Each must build with nothing but
# the C++ standard library and the Highway and FlatBuffers headers, name no optional library
# (readelf -d; no pthread symbols without threads), install with its CMake package and pkg-config
# file, run the shipped int8 model from an outside project, and refuse a 2-thread session and the
# XNNPACK path with the build option that brings them. Then a Linformer-only build (tools and tests)
# and its golden and runtime tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
model=$PWD/examples/models/langid.int8.lfm
original_ld_path=${LD_LIBRARY_PATH:-}
for kind in shared static; do
  dir=build-min-$kind prefix=$PWD/build-min-$kind/install
  shared=$([ $kind = shared ] && echo ON || echo OFF)
  # The static library's sources are the shared one's, compiled file by file there (a source that
  # forgot an include fails there): here in unity batches.
  unity=$([ $kind = static ] && echo "$unity_build" || echo -DCMAKE_UNITY_BUILD=OFF)
  rm -rf "$prefix" "$dir/consumer" "$dir/consumer-pc"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLINFER_WITH_XNNPACK=OFF -DLINFER_THREADS=OFF \
    -DLINFER_BUILD_TOOLS=OFF -DLINFER_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=$shared -DLINFER_WARNINGS_AS_ERRORS=ON "$unity" > /dev/null
  cmake --build "$dir" -j"$(nproc)" > /dev/null
  cmake --install "$dir" --prefix "$prefix" > /dev/null
  if [ $kind = shared ]; then
    lib=$(ls "$prefix"/lib/liblinfer.so.*.*.*)
    needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    echo "$kind: $lib needs: $needed"
    if echo "$needed" | grep -qiE "xnnpack|pthreadpool|cpuinfo|hwy|pthread"; then
      echo "test-minimal-builds: $lib needs an optional library: $needed"; exit 1
    fi
    if nm -D --undefined-only "$lib" | grep -q "pthread_create"; then
      echo "test-minimal-builds: $lib starts threads although LINFER_THREADS=OFF"; exit 1
    fi
  fi
  # An outside project, with CMake's package and with pkg-config (--static for the archive).
  export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cmake -S tests/install/consumer -B "$dir/consumer" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
  cmake --build "$dir/consumer" > /dev/null
  "$dir/consumer/consumer" "$model"
  "$dir/consumer/consumer" "$model" --refused threads
  "$dir/consumer/consumer" "$model" --refused xnnpack
  pc_static=$([ $kind = static ] && echo --static || true)
  mkdir -p "$dir/consumer-pc"
  g++ -std=c++17 tests/install/consumer/main.cc -o "$dir/consumer-pc/consumer" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config $pc_static --cflags --libs linfer)
  "$dir/consumer-pc/consumer" "$model"
done
# Linformer only (-DLINFER_ATTENTION_KINDS=linformer, docs/architecture.md): the goldens of the
# kinds left out are skipped by name, and test_runtime checks that a model of each is refused at
# load naming the kind and the option. An unknown kind name fails at configure time.
dir=build-min-linformer
# Its tools must load its own library, not the installed minimal one the loop above put first in
# LD_LIBRARY_PATH (a single-threaded build: linfer-run --threads 2 was refused).
export LD_LIBRARY_PATH=$original_ld_path
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLINFER_ATTENTION_KINDS=linformer -DLINFER_WARNINGS_AS_ERRORS=ON "$unity_build" > /dev/null
cmake --build "$dir" -j"$(nproc)" --target test_golden test_runtime > /dev/null
(cd "$dir" && ctest -j"$(nproc)" --output-on-failure -R '^(test_golden|test_runtime)$')
if out=$(cmake -S . -B "$dir/unknown-kind" "-DLINFER_ATTENTION_KINDS=linformer;favor" 2>&1) ||
   ! grep -q "unknown attention kind 'favor'; valid names:" <<< "$out"; then
  echo "test-minimal-builds: an unknown attention kind was not refused at configure time: $out"; exit 1
fi
rm -rf "$dir/unknown-kind"
echo "test-minimal-builds: passed"
