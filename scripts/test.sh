#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test twice: a Release build,
# then a build with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
start=$SECONDS
bash scripts/build.sh build
(cd build && ctest --output-on-failure -j2)
bash scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLINFER_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j2)
echo "test.sh: all tests passed in $((SECONDS - start)) s"
