#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bindings-arm64.sh [ARM64_BUILD_DIR]: the Java binding's JUnit tests on aarch64, under
# qemu-aarch64 (a Cortex-A72, the Raspberry Pi 4's core), with Debian's arm64 OpenJDK unpacked
# into a folder (apt-get download + dpkg -x: foreign packages are never installed) and the JUnit
# Platform console launcher from Maven Central. Needs scripts/test-bindings.sh to have run (the
# compiled classes, build-bindings/m2, the converted goldens, the embedding models) and the
# aarch64 build of scripts/test-arm64.sh (default build-arm64). Every run is emulated, so the
# memory test runs 400 cycles here, not 10,000 (1,000 took 65 s; 400 still fail the test's 16 MB
# bound if they leak: a session per cycle leaves 400 arenas of 2.6 MB, a model from bytes per 10th
# cycle 40 of 0.5 MB; the JNI code is the same C as the native run's 10,000 cycles), and the two
# threads 20 runs each, not 200 (200 took 194 s).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build-arm64}" && pwd)
out=$root/build-bindings
m2=$out/m2
prefix=$out/prefix-arm64
jdk=$out/jdk-arm64
start=$SECONDS
bash scripts/need-packages.sh gcc-aarch64-linux-gnu qemu-user
[ -f "$out/jni/liblinfer_jni.so" ] && [ -d bindings/java/target/test-classes ] \
  || { echo "test-bindings-arm64.sh: run scripts/test-bindings.sh first" >&2; exit 1; }

if [ ! -f "$jdk/.complete" ]; then
  rm -rf "$jdk"
  mkdir -p "$jdk/debs"
  (cd "$jdk/debs" && apt-get download openjdk-17-jre-headless:arm64 zlib1g:arm64 > /dev/null 2>&1) || {
    apt-get update -qq || true
    (cd "$jdk/debs" && apt-get download openjdk-17-jre-headless:arm64 zlib1g:arm64 > /dev/null)
  }
  for deb in "$jdk"/debs/*.deb; do dpkg -x "$deb" "$jdk/root"; done
  touch "$jdk/.complete"
fi
launcher=$m2/org/junit/platform/junit-platform-console-standalone/1.14.4/junit-platform-console-standalone-1.14.4.jar
if [ ! -f "$launcher" ]; then
  mvn -B -q -Dmaven.repo.local="$m2" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get \
    -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.4 -Dtransitive=false
fi

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --component library > /dev/null
cmake --install "$build" --prefix "$prefix" --component dev > /dev/null
libdir=$(dirname "$(find "$prefix" -name 'liblinfer.so' | head -1)")
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
aarch64-linux-gnu-gcc -std=c99 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
  -I"$prefix/include" -I"$java_home/include" -I"$java_home/include/linux" \
  bindings/java/src/main/c/linfer_jni.c -o "$out/liblinfer_jni-arm64.so" -L"$libdir" -llinfer -Wl,-rpath,"$libdir"

# XNNPACK and its libraries (scripts/cross-sysroot.sh), the JDK's zlib
sysroot_libs=$(find "$build/sysroot" -name 'libXNNPACK.so*' -printf '%h\n' 2>/dev/null | head -1 || true)
libs="$libdir:$jdk/root/lib/aarch64-linux-gnu:$jdk/root/usr/lib/aarch64-linux-gnu${sysroot_libs:+:$sysroot_libs}"
emulator="qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=$libs"
export QEMU_CPU=cortex-a72
# The embedding tests compare with this build's linfer-embed (aarch64 kernels round otherwise):
# test-bindings.sh's models, their embeddings made again here.
embed=$out/embed-arm64
rm -rf "$embed" && cp -r "$out/embed" "$embed"
for name in mean.f32 mean.int8 cls.f32; do
  $emulator "$build/bin/linfer-embed" "$embed/$name.lfm" "$embed/texts.txt" > "$embed/$name.embed.txt"
done
# A run takes one to four minutes. One past $limit seconds is hung: it gets SIGQUIT (the JVM prints
# every thread's stack), then SIGKILL, and one more try. A failed test fails at once.
limit=${LINFER_JAVA_ARM64_LIMIT:-480}
# FORK: the JVM's default launch through jspawnhelper, an arm64 program, cannot be exec'd from
# qemu-user without binfmt_misc; forking and exec'ing qemu-aarch64 (linfer-run's emulator) can.
# The serial collector and one JIT tier keep the JVM's own threads few: qemu-user (7.2) can
# deadlock a many-threaded JVM, a fault of the emulator that a JVM on an Arm board does not see.
java_tests() {
  timeout -s QUIT -k 10 "$limit" $emulator "$jdk/root/usr/lib/jvm/java-17-openjdk-arm64/bin/java" -Xmx128m -XX:+UseSerialGC \
    -XX:TieredStopAtLevel=1 -Djdk.lang.Process.launchMechanism=FORK \
    -Dlinfer.jni="$out/liblinfer_jni-arm64.so" -Dlinfer.source="$root" -Dlinfer.run="$emulator $build/bin/linfer-run" \
    -Dlinfer.golden="$out/golden" -Dlinfer.embed="$embed" -Dlinfer.tmp="$out/java-arm64-tmp" -Dlinfer.cycles=400 -Dlinfer.threadRuns=20 \
    -jar "$launcher" execute --disable-banner --details=summary --fail-if-no-tests --reports-dir "$out/java-arm64-reports" \
    --class-path "bindings/java/target/classes:bindings/java/target/test-classes" --select-package org.linfer
}
for attempt in 1 2; do
  rc=0
  java_tests || rc=$?
  [ "$rc" -eq 0 ] && break
  if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
    echo "test-bindings-arm64.sh: the Java tests failed under qemu-aarch64 (exit $rc)" >&2; exit 1
  fi
  echo "test-bindings-arm64.sh: attempt $attempt hung past $limit s under qemu-aarch64 (thread dump above)" >&2
  [ "$attempt" -eq 2 ] && { echo "test-bindings-arm64.sh: hung twice; giving up" >&2; exit 1; }
done
echo "test-bindings-arm64.sh: passed in $((SECONDS - start)) s"
