#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# upstream-venv.sh: makes build-upstream/venv, the Python the golden references are made with. A
# venv over Debian's /usr/bin/python3 with --system-site-packages (so Debian's python3-torch 1.13
# and numpy 1.24), plus the upstream libraries pinned in tools/python/reference/upstream/requirements.txt:
# linformer, linformer-pytorch, performer-pytorch, reformer-pytorch, transformers, and every
# dependency of theirs, pinned too and installed with --no-deps, so that pip never replaces
# Debian's torch or numpy. Rebuilt only when requirements.txt changes; about 230 MB, a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/need-packages.sh python3 python3-venv python3-pip python3-torch python3-numpy
venv=build-upstream/venv
req=tools/python/reference/upstream/requirements.txt
if ! cmp -s "$req" "$venv/requirements.installed" 2> /dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req"
  cp "$req" "$venv/requirements.installed"
fi
# torch and numpy must still be Debian's, and every pinned package importable at its version
"$venv/bin/python" - "$req" << 'PY'
import importlib.metadata as md
import sys
import warnings

import numpy
import torch

assert torch.__file__.startswith("/usr/lib/python3/dist-packages/"), torch.__file__
assert numpy.__file__.startswith("/usr/lib/python3/dist-packages/"), numpy.__file__
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, want = line.split("==")
        have = md.version(name)
        assert have == want, "%s is %s, requirements.txt pins %s" % (name, have, want)
warnings.filterwarnings("ignore", message="Unable to import Axes3D")
import linformer, linformer_pytorch, performer_pytorch, reformer_pytorch, transformers  # noqa: E401,F401
print("upstream-venv: torch %s and numpy %s (Debian), %s" % (torch.__version__, numpy.__version__, ", ".join(
    "%s %s" % (n, md.version(n)) for n in ("linformer", "linformer-pytorch", "performer-pytorch",
                                           "reformer-pytorch", "transformers"))))
PY
