#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on the shipped example: installs what is missing, builds, and asks the trained
# language-identification model (int8) which language each line of a sample text is in.
# Prints one line per sample: the language, its probability and the start of the line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
./build/bin/linfer_classify --lines examples/models/langid.int8.lfm examples/models/langid.labels.txt \
  examples/data/langid_samples.txt
