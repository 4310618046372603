# SPDX-License-Identifier: Apache-2.0
"""attention_kind "performer": FAVOR+ random features (Choromanski et al. 2021), optionally causal
("causal" [false]); rotary positions apply. Keys (in the resolved config of this kind only):
"num_features" (m, required), "feature_map" ["softmax"] ("softmax" or "relu"), "feature_eps"
[1e-4 softmax, 1e-3 relu], "key_stabiliser" ["prefix"] (causal performer with softmax features:
"sequence" stabilises every row's keys by the maximum over the whole input, as performer-pytorch
does; in the resolved config only when given)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import check_common as cc
import linfer_ref as lr

USES = ("causal", "rotary")
FEATURE_EPS = {"softmax": 1e-4, "relu": 1e-3}  # the default feature_eps of each feature map


def resolve(config, cfg):
    if "num_features" not in config:
        raise ValueError("config: performer attention needs num_features")
    cfg["num_features"] = config["num_features"]
    cfg["feature_map"] = config.get("feature_map", "softmax")
    if cfg["feature_map"] not in FEATURE_EPS:
        raise ValueError("config: feature_map must be one of %s" % (tuple(FEATURE_EPS),))
    cfg["feature_eps"] = float(config.get("feature_eps", FEATURE_EPS[cfg["feature_map"]]))
    m = cfg["num_features"]
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise ValueError("config: num_features must be a positive integer")
    if not 0.0 < cfg["feature_eps"] <= 1.0:
        raise ValueError("config: feature_eps must be in (0, 1]")
    if "key_stabiliser" in config:
        cfg["key_stabiliser"] = config["key_stabiliser"]
        if cfg["key_stabiliser"] not in ("prefix", "sequence"):
            raise ValueError("config: key_stabiliser must be 'prefix' or 'sequence'")
        if cfg["key_stabiliser"] == "sequence" and not (config.get("causal") and cfg["feature_map"] == "softmax"):
            raise ValueError("config: key_stabiliser 'sequence' applies to causal softmax features only")
    lr.check_bool(cfg, "causal")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)

# Causal: added to each feature of the key sum in the denominator (lucidrains'
# causal_linear_attention; the runtime's kFavorCausalDenEps).
FAVOR_CAUSAL_DEN_EPS = 1e-6


def init_value(name, noise, embed_std, proj_std):
    """The random projection: standard normal, as drawn."""
    return noise if name.endswith(".features") else None


class PerformerAttention(lr._DenseAttention):
    """FAVOR+ as lucidrains' performer-pytorch computes it, with the projection W [m, hd] stored
    transposed ("features", [hd, m]) and fixed.
    a = (c x) W^T, c = hd^-1/4. Softmax features: phi(x) = r (exp(a - c^2 |x|^2 / 2 - s) + eps),
    r = m^-1/2, s = max_f a_f for a query; for keys the max of a over every key (bidirectional) or
    over keys 0..i for query i (causal, key_stabiliser "prefix": truly causal) or over all keys
    (causal, "sequence": lucidrains' module, whose rows then depend on later tokens). Relu
    features: phi(x) = relu(a) + eps. out_i = sum_j A_ij v_j / (sum_j A_ij [+ den_eps sum_f
    phi(q_i)_f if causal]), A_ij = phi(q_i).phi(k_j) over j (j <= i if causal)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.causal = bool(cfg.get("causal", False))
        self.m = int(cfg["num_features"])
        self.map = cfg["feature_map"]
        self.eps = float(cfg["feature_eps"])
        self.sequence_stabiliser = cfg.get("key_stabiliser", "prefix") == "sequence"
        self.features = nn.Parameter(torch.zeros(self.hd, self.m))

    def _project(self, x):
        """a [H, R, m] and c^2 |x|^2 / 2 [H, R, 1]."""
        c = self.hd ** -0.25
        return torch.matmul(c * x, self.features.to(x.dtype)), (x * x).sum(-1, keepdim=True) * (c * c / 2)

    def forward(self, x, model_tensors=None, rot=None):
        q = lr.rotate_pairs(self._heads(self.q(x), self.H), rot)  # [H, T, hd]
        k = lr.rotate_pairs(self._heads(self.k(x), self.kvh), rot)
        v = self._heads(self.v(x), self.kvh)
        aq, hq = self._project(q)
        ak, hk = self._project(k)
        if self.map == "relu":
            pq, r = F.relu(aq) + self.eps, 1.0
        else:
            r = self.m ** -0.5
            pq = r * (torch.exp(aq - hq - aq.amax(-1, keepdim=True)) + self.eps)
        if not self.causal:
            if self.map == "relu":
                pk = F.relu(ak) + self.eps
            else:
                pk = r * (torch.exp(ak - hk - ak.amax(dim=(-1, -2), keepdim=True)) + self.eps)
            a = torch.matmul(pq, pk.transpose(1, 2))  # [H, T, T]
            return self._merge(torch.matmul(a, v) / a.sum(-1, keepdim=True))
        if self.map == "relu":
            a = torch.matmul(pq, (F.relu(ak) + self.eps).transpose(1, 2))
        else:
            # key j as query i sees it: r (exp(ak_j - hk_j - s_i) + eps), s_i the max over keys <= i
            s = torch.cummax(ak.amax(-1), dim=-1).values.unsqueeze(-1)  # [H, T, 1]
            if self.sequence_stabiliser:  # every row: the maximum over all keys of the input
                s = ak.amax(dim=(-1, -2), keepdim=True).expand_as(s)
            e = torch.exp(ak - hk)  # [H, T, m] (float64 in the reference outputs)
            a = r * torch.exp(-s) * torch.matmul(pq, e.transpose(1, 2)) + r * self.eps * pq.sum(-1, keepdim=True)
        a = torch.tril(a)
        den = a.sum(-1, keepdim=True) + FAVOR_CAUSAL_DEN_EPS * pq.sum(-1, keepdim=True)
        return self._merge(torch.matmul(a, v) / den)


def make_attention(cfg, layer_index=0):
    return PerformerAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def numpy_shapes(cfg, qkv_bias):
    return {}, {"features": (cfg["head_dim"], cfg["num_features"])}


def numpy_attention(cfg, sd, a, X):
    """Query by query, straight from the doc's formula: the keys' features as query i sees them
    (stabiliser over all keys, or keys 0..i if causal), no state and no rescaling."""
    T, hd, m = X.shape[0], cfg["head_dim"], cfg["num_features"]
    W = sd[a + "features"].T  # [m, hd]
    c, eps, relu = hd ** -0.25, cfg.get("feature_eps", 1e-3 if cfg.get("feature_map") == "relu" else 1e-4), cfg.get("feature_map") == "relu"
    heads = []
    for h in range(cfg["num_heads"]):
        Q, K, V = (cc.head_proj(cfg, sd, a, w, X, h) for w in "qkv")
        AQ, AK = (c * Q) @ W.T, (c * K) @ W.T  # [T, m]
        O = np.zeros((T, hd))
        for i in range(T):
            keys = range(i + 1) if cfg["causal"] else range(T)
            if relu:
                pq = np.maximum(AQ[i], 0) + eps
                pk = [np.maximum(AK[j], 0) + eps for j in keys]
            else:
                r = m ** -0.5
                pq = r * (np.exp(AQ[i] - c * c * (Q[i] @ Q[i]) / 2 - AQ[i].max()) + eps)
                s = max(AK[j].max() for j in keys)
                pk = [r * (np.exp(AK[j] - c * c * (K[j] @ K[j]) / 2 - s) + eps) for j in keys]
            num = sum((pq @ pk[n]) * V[j] for n, j in enumerate(keys))
            den = sum(pq @ pk[n] for n in range(len(pk))) + (1e-6 * pq.sum() if cfg["causal"] else 0.0)
            O[i] = num / den
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))
