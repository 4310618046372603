# SPDX-License-Identifier: Apache-2.0
"""Benchmark model definitions shared by the suite's Python scripts (no torch import here).

S: a small Linformer encoder; M: the Linformer paper's RoBERTa-base setting. Both use a byte-level
vocabulary of 256 so that the embedding and LM head stay small: the benchmark is about the encoder.
"""

import json

VOCAB = 256


def config(name, n):
    """The linfer config (docs/converter.md keys) of model `name` with max_seq_len n."""
    if name == "S":
        return {
            "vocab_size": VOCAB, "dim": 256, "num_layers": 4, "num_heads": 4, "head_dim": 64,
            "ff_dim": 1024, "max_seq_len": n, "proj_len": 128, "positions": "learned",
            "projection_sharing": "headwise", "projection_placement": "after",
            "norm_placement": "pre", "activation": "gelu", "head": "lm",
        }
    if name == "M":
        # RoBERTa-base body (post-norm, GELU, 768/12/12/3072) with Linformer k = 256, headwise
        # sharing as in the paper's main results.
        return {
            "vocab_size": VOCAB, "dim": 768, "num_layers": 12, "num_heads": 12, "head_dim": 64,
            "ff_dim": 3072, "max_seq_len": n, "proj_len": 256, "positions": "learned",
            "projection_sharing": "headwise", "projection_placement": "after",
            "norm_placement": "post", "activation": "gelu", "head": "lm",
        }
    raise ValueError("unknown model %r" % name)


def flops(cfg, T):
    """FLOPs of one forward pass over T tokens as linfer computes it (runtime/format/src/encoder.cc
    forward_flops): 2 x multiply-adds of the matrix products, compression applied to X first."""
    D = cfg["dim"]
    H = cfg["num_heads"]
    HD = H * cfg["head_dim"]
    k = cfg["proj_len"]
    F = cfg["ff_dim"]
    sharing = cfg.get("projection_sharing", "headwise")
    G = H if sharing == "none" else 1
    separate = sharing in ("none", "headwise")
    kv_heads = cfg.get("kv_heads", H)
    kv_width = kv_heads * cfg["head_dim"] if G == 1 else HD
    layer = 2 * T * D * HD                          # Q
    layer += 2 * G * k * T * D * (2 if separate else 1)  # E X (and F X)
    layer += 2 * 2 * k * D * kv_width               # K', V'
    layer += 2 * 2 * T * k * HD                     # scores, P V'
    layer += 2 * T * HD * D                         # out
    layer += 2 * 2 * T * D * F                      # feed-forward
    total = layer * cfg["num_layers"]
    if cfg.get("head") == "lm":
        total += 2 * T * D * cfg["vocab_size"]
    return total


def dumps(obj):
    return json.dumps(obj, sort_keys=True)
