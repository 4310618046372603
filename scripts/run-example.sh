#!/usr/bin/env bash
# The main job on the shipped example: installs what is missing, builds, and runs the example
# model on the sample text.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
./build/bin/linfer-run examples/models/byte-lm.lfm --text examples/data/sample.txt --threads 2
