#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TensorFlow Lite Micro and its third-party code, laid out as its Makefile expects them, from git
# snapshots of their public GitHub repositories (nothing is downloaded here; run.sh's header says
# where the snapshots come from):
#
#   bash tools/bench/cortex-m-peers/sources.sh MIRRORS OUT
#
# MIRRORS holds one bare git directory per repository, MIRRORS/OWNER+NAME/repo (a `git clone
# --mirror` works as well as the snapshots used here). OUT/tflite-micro gets tflite-micro at
# TFLM_COMMIT (default: the snapshot's HEAD), and its tools/make/downloads/ the commits that
# TFLM's own download scripts pin (read from those scripts, so a newer TFLM brings its own pins):
# CMSIS_6, Cortex_DFP, CMSIS-NN, flatbuffers (with TFLM's patch), gemmlowp, ruy, kissfft.
set -Eeuo pipefail
mirrors=$1
out=$2
git_dir() { echo "$mirrors/$1/repo"; }
export_tree() {  # export_tree OWNER+NAME COMMIT DEST
  local gd
  gd=$(git_dir "$1")
  [ -d "$gd" ] || { echo "sources.sh: no git snapshot of $1 at $gd" >&2; exit 1; }
  git --git-dir="$gd" rev-parse --verify -q "$2^{commit}" > /dev/null ||
    { echo "sources.sh: $1 has no commit $2 (the snapshot is older than TFLM's pin?)" >&2; exit 1; }
  rm -rf "$3.tmp" && mkdir -p "$3.tmp"
  git --git-dir="$gd" archive "$2" | tar -x -C "$3.tmp"
  rm -rf "$3" && mv "$3.tmp" "$3"
  echo "$1 $(git --git-dir="$gd" rev-parse "$2^{commit}")" >> "$out/commits.txt"
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
: > "$out/commits.txt"
tflm=$out/tflite-micro
export_tree tensorflow+tflite-micro "${TFLM_COMMIT:-HEAD}" "$tflm"
make_dir=$tflm/tensorflow/lite/micro/tools/make
pin() {  # pin FILE VARIABLE: the quoted value of VARIABLE="..." in one of TFLM's download scripts
  sed -n "s/^ *$2 *:\{0,1\}= *\"\{0,1\}\([^\"]*\)\"\{0,1\}.*/\1/p" "$make_dir/$1" | head -n 1
}
downloads=$make_dir/downloads
mkdir -p "$downloads"
cmsis=$(sed -n 's/^ *ZIP_PREFIX="\([0-9a-f]*\)"/\1/p' "$make_dir/ext_libs/cmsis_download.sh")
cmsis_core=$(echo "$cmsis" | sed -n 1p)
cortex_dfp=$(echo "$cmsis" | sed -n 2p)
export_tree ARM-software+CMSIS_6 "$cmsis_core" "$downloads/cmsis"
export_tree ARM-software+Cortex_DFP "$cortex_dfp" "$downloads/cmsis/Cortex_DFP"
export_tree ARM-software+CMSIS-NN "$(pin ext_libs/cmsis_nn_download.sh ZIP_PREFIX_NN)" "$downloads/cmsis_nn"
url_commit() { pin third_party_downloads.inc "$1" | sed 's#.*/archive/\(refs/tags/\)\{0,1\}\(.*\)\.zip#\2#'; }
export_tree google+flatbuffers "$(url_commit FLATBUFFERS_URL)" "$downloads/flatbuffers"
(cd "$downloads/flatbuffers" && patch -s -p1 < ../../flatbuffers.patch)
export_tree google+gemmlowp "$(url_commit GEMMLOWP_URL)" "$downloads/gemmlowp"
export_tree google+ruy "$(url_commit RUY_URL)" "$downloads/ruy"
export_tree mborgerding+kissfft "$(url_commit KISSFFT_URL)" "$downloads/kissfft"
(cd "$downloads/kissfft" && patch -s -p1 < "$tflm/third_party/kissfft/kissfft.patch")
# Pigweed serves TFLM's presubmit checks only (Python formatters), not the library: an empty
# folder stops the Makefile from cloning it.
mkdir -p "$downloads/pigweed"
find "$downloads" \( -name BUILD -o -name BUILD.bazel \) -delete
cat "$out/commits.txt"
