#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh [BUILD_DIR] [extra cmake args...]: configure and build (Release by default).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/generator.sh
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build "$dir" -j"$(nproc)"
