# SPDX-License-Identifier: Apache-2.0
"""attention_kind "linformer" (the default): softmax attention over the keys and values projected
along the sequence to proj_len rows by E and F. Keys: "proj_len" (k, required, at most
max_seq_len), "projection_placement" ["after"] (E applied after the k and v linears, or before
them), "projection_sharing" ["headwise"] ("none": E, F per head; "headwise": one E, F for all
heads; "kv": one projection for both; "layerwise": one for every layer, the model's shared_proj),
"proj_bias" [false] (projection biases: tensor presence only). Its resolved config holds causal,
num_global_tokens and conv_kernel only when given (its fixtures were written before those keys
existed)."""

import math

import numpy as np
import torch
import torch.nn as nn

import check_common as cc

USES = ("proj_len", "proj_bias")
COMMON_KEYS_WHEN_GIVEN = True


def resolve(config, cfg):
    if cfg["proj_len"] > cfg["max_seq_len"]:
        raise ValueError("config: proj_len must not exceed max_seq_len")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


def model_tensors(cfg):
    """projection_sharing "layerwise": the projection every layer uses (and its bias)."""
    tensors = {}
    if cfg["projection_sharing"] == "layerwise":
        tensors["shared_proj"] = nn.Parameter(torch.zeros(cfg["proj_len"], cfg["max_seq_len"]))
        if cfg["proj_bias"]:
            tensors["shared_proj_bias"] = nn.Parameter(torch.zeros(cfg["proj_len"]))
    return tensors


def init_value(name, noise, embed_std, proj_std):
    """Projections E/F: normal, std proj_std (their biases: the generic rule)."""
    return proj_std * noise if name.rsplit(".", 1)[-1] in ("proj_k", "proj_v", "shared_proj") else None


class LinformerAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim, H, hd, kvh = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"]
        n, k = cfg["max_seq_len"], cfg["proj_len"]
        bias = bool(cfg["qkv_bias"])
        self.H, self.hd, self.kvh = H, hd, kvh
        self.sharing = cfg["projection_sharing"]
        self.placement = cfg["projection_placement"]
        self.q = nn.Linear(dim, H * hd, bias=bias)
        self.k = nn.Linear(dim, kvh * hd, bias=bias)
        self.v = nn.Linear(dim, kvh * hd, bias=bias)
        self.out = nn.Linear(H * hd, dim, bias=bias)
        pb = bool(cfg["proj_bias"])
        if self.sharing == "none":
            self.proj_k = nn.Parameter(torch.zeros(H, k, n))
            self.proj_v = nn.Parameter(torch.zeros(H, k, n))
            if pb:
                self.proj_k_bias = nn.Parameter(torch.zeros(H, k))
                self.proj_v_bias = nn.Parameter(torch.zeros(H, k))
        elif self.sharing == "headwise":
            self.proj_k = nn.Parameter(torch.zeros(k, n))
            self.proj_v = nn.Parameter(torch.zeros(k, n))
            if pb:
                self.proj_k_bias = nn.Parameter(torch.zeros(k))
                self.proj_v_bias = nn.Parameter(torch.zeros(k))
        elif self.sharing == "kv":
            # one projection (and one bias) serves both K and V
            self.proj_k = nn.Parameter(torch.zeros(k, n))
            if pb:
                self.proj_k_bias = nn.Parameter(torch.zeros(k))
        # layerwise: the encoder's shared_proj / shared_proj_bias come in model_tensors

    def _per_head(self, p, T):
        """Projection [k, n] or [H, k, n] -> [H, k, T] (first T columns)."""
        p = p[..., :T]
        if p.dim() == 2:
            p = p.unsqueeze(0).expand(self.H, -1, -1)
        return p

    def _per_head_bias(self, b):
        if b is None:
            return None
        if b.dim() == 1:
            b = b.unsqueeze(0).expand(self.H, -1)
        return b  # [H, k]

    def _project(self, x, linear, E, eb):
        """K' (or V') per head: [H, k, hd]."""
        T = x.shape[0]
        H, hd, kvh = self.H, self.hd, self.kvh
        if self.placement == "after":
            kx = linear(x).view(T, kvh, hd).transpose(0, 1)  # [kvh, T, hd]
            kx = kx.expand(H, T, hd) if kvh == 1 else kx
            out = torch.matmul(E, kx)  # [H, k, hd]
        else:
            ex = torch.matmul(E, x)  # [H, k, dim]
            w = linear.weight.view(kvh, hd, -1)
            w = w.expand(H, hd, w.shape[2]) if kvh == 1 else w
            out = torch.matmul(ex, w.transpose(1, 2))  # [H, k, hd]
            if linear.bias is not None:
                b = linear.bias.view(kvh, 1, hd)
                out = out + (b.expand(H, 1, hd) if kvh == 1 else b)
        if eb is not None:
            out = out + eb.unsqueeze(2)  # bias per projected row
        return out

    def forward(self, x, model_tensors=None, rot=None):
        T = x.shape[0]
        H, hd = self.H, self.hd
        if self.sharing == "layerwise":
            E = Fp = model_tensors["shared_proj"]
            eb = fb = model_tensors.get("shared_proj_bias")
        elif self.sharing == "kv":
            E = Fp = self.proj_k
            eb = fb = getattr(self, "proj_k_bias", None)
        else:
            E, Fp = self.proj_k, self.proj_v
            eb, fb = getattr(self, "proj_k_bias", None), getattr(self, "proj_v_bias", None)
        E, Fp = self._per_head(E, T), self._per_head(Fp, T)
        eb, fb = self._per_head_bias(eb), self._per_head_bias(fb)
        q = self.q(x).view(T, H, hd).transpose(0, 1)  # [H, T, hd]
        kp = self._project(x, self.k, E, eb)
        vp = self._project(x, self.v, Fp, fb)
        scores = torch.matmul(q, kp.transpose(1, 2)) / math.sqrt(hd)  # [H, T, k]
        attn = torch.softmax(scores, dim=-1)
        o = torch.matmul(attn, vp)  # [H, T, hd]
        return self.out(o.transpose(0, 1).reshape(T, H * hd))


def make_attention(cfg, layer_index=0):
    return LinformerAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_ref.py, check_kinds.py)


def numpy_shapes(cfg, qkv_bias):
    H, n, k, sharing = cfg["num_heads"], cfg["max_seq_len"], cfg["proj_len"], cfg["projection_sharing"]
    bias = cfg.get("proj_bias", False)
    model, layer = {}, {}
    if sharing == "layerwise":
        model["shared_proj"] = (k, n)
        if bias:
            model["shared_proj_bias"] = (k,)
    pshape = (H, k, n) if sharing == "none" else (k, n)
    bshape = (H, k) if sharing == "none" else (k,)
    if sharing != "layerwise":
        layer["proj_k"] = pshape
        if bias:
            layer["proj_k_bias"] = bshape
    if sharing in ("none", "headwise"):
        layer["proj_v"] = pshape
        if bias:
            layer["proj_v_bias"] = bshape
    return model, layer


def numpy_attention(cfg, sd, a, X):
    """Linformer attention of docs/converter.md, written head by head."""
    T, dim = X.shape
    H, hd, kvh, k = cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"], cfg["proj_len"]
    sharing = cfg["projection_sharing"]

    def proj(h, which):  # (E or F) for head h, and its bias, first T columns
        if sharing == "layerwise":
            M, b = sd["shared_proj"], sd.get("shared_proj_bias")
        elif sharing == "kv":
            M, b = sd[a + "proj_k"], sd.get(a + "proj_k_bias")
        else:
            M, b = sd[a + "proj_" + which], sd.get(a + "proj_%s_bias" % which)
        if sharing == "none":
            M = M[h]
            b = None if b is None else b[h]
        return M[:, :T], (np.zeros(k) if b is None else b)

    Wq = sd[a + "q.weight"]
    bq = sd.get(a + "q.bias", np.zeros(Wq.shape[0]))
    heads = []
    for h in range(H):
        g = h if kvh == H else 0  # kv head read by head h
        rows = slice(h * hd, (h + 1) * hd)
        krows = slice(g * hd, (g + 1) * hd)
        Qh = X @ Wq[rows].T + bq[rows]  # [T, hd]
        mats = {}
        for which, lin in (("k", "k"), ("v", "v")):
            W = sd[a + lin + ".weight"][krows]  # [hd, dim]
            bvec = sd.get(a + lin + ".bias", np.zeros(kvh * hd))[krows]
            E, pb = proj(h, which)  # [k, T], [k]
            if cfg["projection_placement"] == "after":
                Y = X @ W.T + bvec  # [T, hd]
                P = E @ Y
            else:
                P = (E @ X) @ W.T + np.outer(np.ones(k), bvec)
            P = P + np.outer(pb, np.ones(hd))
            mats[which] = P  # [k, hd]
        out_h = np.zeros((T, hd))
        for t in range(T):
            out_h[t] = cc.softmax_row(np.array([Qh[t] @ mats["k"][j] for j in range(k)]) / math.sqrt(hd)) @ mats["v"]
        heads.append(out_h)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))
