#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# arm64-sysroot.sh DIR: the arm64 sysroot of the cross build (scripts/cross-sysroot.sh arm64 DIR),
# kept under this name for the scripts and docs that call it.
set -euo pipefail
exec bash "$(dirname "$0")/cross-sysroot.sh" arm64 "${1:-build-arm64/sysroot}"
