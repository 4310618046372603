#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what linfer needs from Debian's packages (bookworm). Safe to run again: it only calls
# apt-get when something is missing. Needs root (or sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libxnnpack-dev libpthreadpool-dev libflatbuffers-dev flatbuffers-compiler libhwy-dev
  nlohmann-json3-dev doctest-dev
  python3-torch python3-numpy libopenblas0-pthread
  clang libclang-rt-14-dev
)
bash "$(dirname "$0")/need-packages.sh" "${packages[@]}"
