# SPDX-License-Identifier: Apache-2.0
"""attention_kind "sliding_window" (Longformer: a window around each row plus global positions).
Keys: "window_radius" (required: row i sees the keys j with |i - j| <= window_radius,
Longformer's attention_window / 2), "global_positions" [0] (rows [0, g) of each input are global:
they see every key, every row sees them), "global_projections" [false] (tensor presence only: the
layers have q_global, k_global, v_global for the global rows)."""

import math

import numpy as np
import torch
import torch.nn as nn

import check_common as cc
import linfer_ref as lr

USES = ()


def resolve(config, cfg):
    if "window_radius" not in config:
        raise ValueError("config: sliding_window attention needs window_radius")
    cfg["window_radius"] = config["window_radius"]
    cfg["global_positions"] = config.get("global_positions", 0)
    cfg["global_projections"] = config.get("global_projections", False)
    lr.check_non_negative_ints(cfg, ("window_radius", "global_positions"))
    if not 1 <= cfg["window_radius"] <= int(config.get("max_seq_len", 0)):
        raise ValueError("config: window_radius must be in [1, max_seq_len]")
    if cfg["global_positions"] > int(config.get("max_seq_len", 0)):
        raise ValueError("config: global_positions must not exceed max_seq_len")
    lr.check_bool(cfg, "global_projections")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


class SlidingWindowAttention(lr._DenseAttention):
    """Longformer, as HF LongformerSelfAttention computes it: a row i >= g (g = global_positions)
    attends to the keys j with |i - j| <= window_radius that are not global, and to the g global
    rows' keys (q, k, v); each global row attends to every key, with q_global, k_global, v_global
    when the model has them ("global_projections"), and its output replaces the local one.
    Written as a dense mask: the oracle, not the fast way."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.radius, self.g = cfg["window_radius"], cfg["global_positions"]
        if cfg["global_projections"]:
            dim, bias = cfg["dim"], bool(cfg["qkv_bias"])
            self.q_global = nn.Linear(dim, self.H * self.hd, bias=bias)
            self.k_global = nn.Linear(dim, self.kvh * self.hd, bias=bias)
            self.v_global = nn.Linear(dim, self.kvh * self.hd, bias=bias)

    def forward(self, x, model_tensors=None, rot=None):
        T = x.shape[0]
        g = min(self.g, T)
        q = self._heads(self.q(x), self.H)
        k = self._heads(self.k(x), self.kvh)
        v = self._heads(self.v(x), self.kvh)
        i = torch.arange(T)
        local = (i[:, None] - i[None, :]).abs() <= self.radius
        seen = (local & (i[None, :] >= g)) | (i[None, :] < g)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.hd)
        o = torch.matmul(torch.softmax(scores.masked_fill(~seen, float("-inf")), dim=-1), v)
        if g:
            if hasattr(self, "q_global"):
                qg = self._heads(self.q_global(x[:g]), self.H)
                kg = self._heads(self.k_global(x), self.kvh)
                vg = self._heads(self.v_global(x), self.kvh)
            else:
                qg, kg, vg = q[:, :g], k, v
            o = torch.cat([lr.softmax_attention(qg, kg, vg, self.hd), o[:, g:]], dim=1)
        return self._merge(o)


def make_attention(cfg, layer_index=0):
    return SlidingWindowAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def numpy_shapes(cfg, qkv_bias):
    d, H, hd, kvh = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"]
    layer = {}
    if cfg.get("global_projections"):
        for name, shape in (("q_global", (H * hd, d)), ("k_global", (kvh * hd, d)), ("v_global", (kvh * hd, d))):
            layer["%s.weight" % name] = shape
            if qkv_bias:
                layer["%s.bias" % name] = (shape[0],)
    return {}, layer


def numpy_attention(cfg, sd, a, X):
    """Row loop: row i >= g sees the global rows j < g and the rows j >= g with |i - j| <= radius;
    a global row i < g sees every row, through the *_global projections when the model has them."""
    T, hd = X.shape[0], cfg["head_dim"]
    r, g = cfg["window_radius"], min(cfg.get("global_positions", 0), T)
    glob = "global" if a + "q_global.weight" in sd else ""
    heads = []
    for h in range(cfg["num_heads"]):
        Q, K, V = (cc.head_proj(cfg, sd, a, w, X, h) for w in "qkv")
        if glob:
            Qg, Kg, Vg = (cc.head_proj(cfg, sd, a, w + "_global", X, h) for w in "qkv")
        else:
            Qg, Kg, Vg = Q, K, V
        O = np.zeros((T, hd))
        for i in range(T):
            if i < g:
                keys = list(range(T))
                O[i] = cc.softmax_row(np.array([Qg[i] @ Kg[j] for j in keys]) / math.sqrt(hd)) @ Vg[keys]
            else:
                keys = list(range(g)) + [j for j in range(max(g, i - r), min(T, i + r + 1))]
                O[i] = cc.softmax_row(np.array([Q[i] @ K[j] for j in keys]) / math.sqrt(hd)) @ V[keys]
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))
