#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make_files.sh [BUILD_DIR]: writes the format-version files of this folder (version_cases.h)
# that do not exist yet, with BUILD_DIR's linfer_write_format_versions (default build/). They
# record what one release wrote, and test_format_versions checks that every later runtime loads
# them and gives the same outputs: a file once written is kept (versions 1 to 3 were written by
# the release before format version 4); run this when a case is added, never to make a failing
# test pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
cmake --build "$build" --target linfer_write_format_versions
"$build/bin/linfer_write_format_versions" tests/format_versions
