#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hf-venv.sh [DIR]: the Hugging Face reference venv (default build-hf/venv): Debian's torch and numpy
# (--system-site-packages from /usr/bin/python3) and the pinned packages of
# tools/python/reference/requirements-hf.txt. Prints the venv's python. Only the reference scripts need it;
# the tests read committed references.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-hf/venv}
bash scripts/need-packages.sh python3-torch python3-numpy python3-venv > /dev/null
if [ ! -x "$dir/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$dir"
fi
if ! cmp -s tools/python/reference/requirements-hf.txt "$dir/requirements-hf.txt"; then
  # --no-deps for the whole list: the resolver would replace Debian's numpy 1.24 with numpy 2,
  # which Debian's torch cannot use; the list is complete for what the scripts import.
  # (requests, pyyaml, typing-extensions and sympy are Debian's, from the system site.)
  "$dir/bin/pip" install -q --no-deps -r tools/python/reference/requirements-hf.txt \
    filelock==4.3.1 fsspec==2026.9.0 packaging==26.4 regex==2026.11.19 tqdm==4.70.1 joblib==1.6.0 \
    threadpoolctl==3.8.0 pillow==13.0.0 >&2
  cp tools/python/reference/requirements-hf.txt "$dir/requirements-hf.txt"
fi
echo "$dir/bin/python"
