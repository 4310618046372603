# SPDX-License-Identifier: Apache-2.0
"""Writes the shipped example model: examples/models/byte-lm.lfm.

A byte-level Linformer LM (vocabulary 256, so any text file is valid input via linfer-run --text)
with random weights: it exercises the whole path (checkpoint -> linfer-convert -> runtime) but
predicts nothing useful. The trained example model comes with the examples issue.

    /usr/bin/python3 tools/python/make_example.py [--convert build/bin/linfer-convert]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linfer_ref import LinferEncoder, init_random, save_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = {
    "vocab_size": 256, "dim": 64, "num_layers": 2, "num_heads": 4, "head_dim": 16, "ff_dim": 256,
    "max_seq_len": 1024, "proj_len": 64, "norm_placement": "pre", "final_norm": True,
    "projection_sharing": "kv", "head": "lm",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--convert", default=os.path.join(ROOT, "build", "bin", "linfer-convert"))
    args = ap.parse_args()
    model = LinferEncoder(CONFIG)
    init_random(model, seed=2026)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "byte-lm.safetensors")
        save_safetensors(model, CONFIG, ckpt)
        out = os.path.join(ROOT, "examples", "models", "byte-lm.lfm")
        subprocess.run([args.convert, ckpt, "-o", out], check=True)


if __name__ == "__main__":
    main()
