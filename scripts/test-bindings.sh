#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bindings.sh [BUILD_DIR]: the Java (JNI) and Rust bindings against a Release build's
# liblinfer (default: build, made by step 1 of scripts/test.sh):
#   1. installs the library (components library + dev) into build-bindings/prefix;
#   2. converts tests/golden's checkpoints with the build's linfer-convert, and makes small
#      sentence-embedding models and linfer-embed's embeddings (tests/embed/make_embedder.sh);
#   3. Java: builds the JNI library with CMake, fetches the Maven plugins and JUnit into
#      build-bindings/m2 (online, once), then `mvn -o test` (offline);
#   4. Rust: `cargo test` of bindings/rust, linfer-sys finding the library through pkg-config.
# Installs a JDK, Maven and PyTorch (for the embedding models) from Debian where missing; needs
# cargo 1.78 or later (rustup's).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
out=$root/build-bindings
prefix=$out/prefix
mkdir -p "$out"
start=$SECONDS

command -v mvn > /dev/null && command -v javac > /dev/null || bash scripts/need-packages.sh default-jdk-headless maven
/usr/bin/python3 -c 'import torch, numpy' 2> /dev/null || bash scripts/need-packages.sh python3-torch python3-numpy
# cargo: rustup's (the lockfile needs cargo 1.78 or later, newer than Debian bookworm's)
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo > /dev/null || { echo "test-bindings.sh: cargo (1.78 or later) is needed" >&2; exit 1; }

rm -rf "$prefix"  # a fresh copy: the build's install layout may have changed (scripts/package.sh)
cmake --install "$build" --prefix "$prefix" --component library > /dev/null
cmake --install "$build" --prefix "$prefix" --component dev > /dev/null
libdir=$(dirname "$(find "$prefix" -name 'liblinfer.so' | head -1)")

golden=$out/golden
mkdir -p "$golden"
while read -r name checkpoint; do
  [ -n "$name" ] || continue
  config=()
  # A bare state_dict carries no configuration (as tests/common/golden_cases.h converts it).
  [[ $name == *bare* ]] && config=(--config "tests/golden/$name/config.json")
  "$build/bin/linfer-convert" "tests/golden/$name/$checkpoint" -o "$golden/$name.lfm" "${config[@]}" > /dev/null
done < tests/golden/cases.txt
embed=$out/embed
bash tests/embed/make_embedder.sh "$build/bin" "$embed"

echo "--- Java: JNI library and JUnit tests"
cmake -S bindings/java -B "$out/jni" -DCMAKE_BUILD_TYPE=Release -DLINFER_PREFIX="$prefix" > /dev/null
cmake --build "$out/jni" -j2
jni=$out/jni/liblinfer_jni.so
m2=$out/m2
mvn_args=(-B -f bindings/java/pom.xml -Dmaven.repo.local="$m2" -Dlinfer.jni="$jni"
          -Dlinfer.source="$root" -Dlinfer.run="$build/bin/linfer-run" -Dlinfer.golden="$golden"
          -Dlinfer.embed="$embed" -Dlinfer.tmp="$out/java-tmp")
if [ ! -f "$m2/.resolved" ]; then
  # Online once: the plugins and JUnit (surefire resolves its JUnit Platform provider only when it
  # runs tests, so resolve by running a test class that does not load the native library).
  mvn -q "${mvn_args[@]}" test -Dtest=OutputTest -Dsurefire.failIfNoSpecifiedTests=false > "$out/mvn-resolve.log" 2>&1 \
    || { cat "$out/mvn-resolve.log"; exit 1; }
  touch "$m2/.resolved"
fi
java_start=$SECONDS
mvn "${mvn_args[@]}" -o test
echo "Java tests: $((SECONDS - java_start)) s"

echo "--- Rust: cargo test"
rust_start=$SECONDS
# The library is outside cargo's target folder: the test programs find it through LD_LIBRARY_PATH.
(cd bindings/rust && PKG_CONFIG_PATH="$libdir/pkgconfig" LD_LIBRARY_PATH="$libdir" LINFER_SOURCE_DIR="$root" \
   LINFER_RUN="$build/bin/linfer-run" LINFER_GOLDEN_DIR="$golden" LINFER_EMBED_DIR="$embed" LINFER_TEST_TMP="$out/rust-tmp" \
   CARGO_TARGET_DIR="$out/cargo-target" cargo test --locked 2>&1)
echo "Rust tests: $((SECONDS - rust_start)) s"
echo "test-bindings.sh: passed in $((SECONDS - start)) s"
