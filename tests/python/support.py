# SPDX-License-Identifier: Apache-2.0
"""What the Python tests share: paths and commands from the environment that tests/CMakeLists.txt
sets (so that a cross build can put the emulator in front of every program), and small helpers."""

import os
import shlex
import subprocess
import sys

import numpy as np


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError("%s is not set: run the Python tests through ctest (tests/CMakeLists.txt)" % name)
    return value


SOURCE = _env("LINFER_SOURCE_DIR")
TMP = _env("LINFER_TEST_TMP")
MODELS = os.path.join(SOURCE, "examples", "models")
DATA = os.path.join(SOURCE, "examples", "data")
# A cross build's run under an emulator (qemu-user, 10-50x slower): the tests that repeat what the
# native run checks beyond the target's ABI and kernels do less there.
EMULATED = os.environ.get("LINFER_TEST_EMULATED") == "1"


def command(name):
    """A program of the build as an argv prefix (the emulator first in a cross build)."""
    return shlex.split(_env(name))


def python():
    """The interpreter that runs these tests, as an argv prefix for child processes."""
    value = os.environ.get("LINFER_TEST_PYTHON")
    return shlex.split(value) if value else [sys.executable]


def run(argv, **kw):
    """Runs a program; returns (exit code, stdout, stderr) as text."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=kw.pop("timeout", 600),
                       **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def tmp_path(name):
    """A file in the tests' scratch folder, named for this process so parallel tests never share it."""
    d = os.path.join(TMP, "python")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "%d-%s" % (os.getpid(), name))


def text_ids(path, limit=None):
    """The bytes of a file as token ids, int32 (what linfer-run --text reads)."""
    with open(path, "rb") as f:
        data = f.read()
    ids = np.frombuffer(data, dtype=np.uint8).astype(np.int32)
    return ids if limit is None else ids[:limit]


def read_ids(path):
    with open(path) as f:
        return np.array([int(t) for t in f.read().split()], dtype=np.int32)


_converted = {}


def convert(source, name):
    """Converts a checkpoint with linfer-convert into the scratch folder (once per process)."""
    if name not in _converted:
        out = tmp_path(name)
        code, stdout, stderr = run(command("LINFER_CONVERT") + [source, "-o", out])
        if code != 0:
            raise RuntimeError("linfer-convert %s failed: %s%s" % (source, stdout, stderr))
        _converted[name] = out
    return _converted[name]


def causal_model():
    """tests/golden_kinds/k05_linear_causal_lm as .lfm: causal linear attention with an LM head."""
    return convert(os.path.join(SOURCE, "tests", "golden_kinds", "k05_linear_causal_lm",
                                "checkpoint.safetensors"), "k05_causal.lfm")
