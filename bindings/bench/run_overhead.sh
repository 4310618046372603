#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_overhead.sh [BUILD_DIR] [T] [RUNS] [ROUNDS]: one run's time through the C API, the Java
# binding and the Rust binding on the benchmark suite's S model (tools/bench/suite/models.py,
# max_seq_len = T), one thread, ROUNDS processes of each in turn. Not part of the test suite.
# Needs scripts/test-bindings.sh to have run (build-bindings/: prefix, JNI library, m2).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
T=${2:-128}
runs=${3:-300}
rounds=${4:-5}
out=$root/build-bindings/bench
prefix=$root/build-bindings/prefix
mkdir -p "$out"
if [ ! -f "$out/S_n$T.lfm" ]; then
  /usr/bin/python3 - "$out/S_n$T.safetensors" "$T" <<'PY'
import sys
sys.path[:0] = ["tools/python/reference", "tools/bench/suite"]
import make_models, models, linfer_ref
cfg = models.config("S", int(sys.argv[2]))
m = linfer_ref.LinferEncoder(cfg)
make_models.init(m, cfg)  # the suite's deterministic weights
linfer_ref.save_safetensors(m, cfg, sys.argv[1])
PY
  "$build/bin/linfer-convert" "$out/S_n$T.safetensors" -o "$out/S_n$T.lfm" > /dev/null
fi
libdir=$(dirname "$(find "$prefix" -name 'liblinfer.so' | head -1)")
cc -O2 -o "$out/run_overhead" bindings/bench/run_overhead.c -I"$prefix/include" -L"$libdir" -llinfer -Wl,-rpath,"$libdir"
(cd bindings/java && mvn -B -q -o -Dmaven.repo.local="$root/build-bindings/m2" test-compile)
javac -d "$out/java" -cp bindings/java/target/classes bindings/bench/RunOverhead.java
(cd bindings/rust && PKG_CONFIG_PATH="$libdir/pkgconfig" CARGO_TARGET_DIR="$root/build-bindings/cargo-target" \
   cargo build -q --release --example run_overhead)
for r in $(seq "$rounds"); do
  "$out/run_overhead" "$out/S_n$T.lfm" "$T" "$runs"
  java -Dlinfer.jni="$root/build-bindings/jni/liblinfer_jni.so" -cp "bindings/java/target/classes:$out/java" \
    RunOverhead "$out/S_n$T.lfm" "$T" "$runs"
  LD_LIBRARY_PATH="$libdir" "$root/build-bindings/cargo-target/release/examples/run_overhead" "$out/S_n$T.lfm" "$T" "$runs"
done
