# SPDX-License-Identifier: Apache-2.0
"""attention_kind "full": softmax over all rows (docs/converter.md, "Semantics"). No keys of its
own; rotary positions apply."""

import math
import os

import numpy as np

import check_common as cc
import linfer_ref as lr

USES = ("rotary",)


def resolve(config, cfg):
    pass


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


class FullAttention(lr._DenseAttention):
    """softmax(Q_h K_h^T / sqrt(head_dim)) V_h over all T rows."""

    def forward(self, x, model_tensors=None, rot=None):
        q = lr.rotate_pairs(self._heads(self.q(x), self.H), rot)
        k = lr.rotate_pairs(self._heads(self.k(x), self.kvh), rot)
        v = self._heads(self.v(x), self.kvh)
        return self._merge(lr.softmax_attention(q, k, v, self.hd))


def make_attention(cfg, layer_index=0):
    return FullAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def numpy_attention(cfg, sd, a, X):
    T, hd = X.shape[0], cfg["head_dim"]
    heads = []
    for h in range(cfg["num_heads"]):
        Q, K, V = (cc.head_proj(cfg, sd, a, w, X, h) for w in "qkv")
        O = np.zeros((T, hd))
        for i in range(T):
            O[i] = cc.softmax_row(np.array([Q[i] @ K[j] for j in range(T)]) / math.sqrt(hd)) @ V
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))


def numpy_extra_check(name, d, file_config, sd):
    """full == linformer with E = F = I (k = n, placement after, headwise) at T = n: for the cases
    whose every head has its own k and v (None for the others)."""
    if file_config.get("kv_heads", file_config["num_heads"]) != file_config["num_heads"]:
        return None
    import torch

    n = file_config["max_seq_len"]
    lin_config = dict(file_config, attention_kind="linformer", proj_len=n, projection_sharing="headwise")
    lin = lr.LinferEncoder(lin_config).double().eval()
    tensors = {k: torch.from_numpy(v) for k, v in sd.items()}
    for i in range(file_config["num_layers"]):
        for w in ("proj_k", "proj_v"):
            tensors["layers.%d.attention.%s" % (i, w)] = torch.eye(n, dtype=torch.float64)
    lin.load_state_dict(tensors, strict=True)
    ids = [int(v) for v in open(os.path.join(d, "ids_%d.txt" % n)).read().split()]
    with torch.no_grad():
        a = lin(torch.tensor(ids, dtype=torch.long)).numpy()
    ref = np.load(os.path.join(d, "out_%d.npy" % n))
    err = float((np.abs(a - ref) / np.maximum(1.0, np.abs(ref))).max())
    ok = err <= 1e-6
    print("%-32s full vs linformer(E = F = I, k = n) at T = %d: %.1e  %s" % (name, n, err, "ok" if ok else "FAIL"))
    return ok
