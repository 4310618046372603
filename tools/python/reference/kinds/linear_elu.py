# SPDX-License-Identifier: Apache-2.0
"""attention_kind "linear_elu": linear attention with phi(x) = elu(x) + 1 (Katharopoulos et al.
2020), optionally causal ("causal" [false]); rotary positions apply. No keys of its own."""

import numpy as np
import torch
import torch.nn.functional as F

import check_common as cc
import linfer_ref as lr

USES = ("causal", "rotary")


def resolve(config, cfg):
    lr.check_bool(cfg, "causal")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


def elu_feature_map(x):
    """phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), > 0 everywhere."""
    return F.elu(x) + 1.0


class LinearEluAttention(lr._DenseAttention):
    """out_i = phi(q_i)^T S / (phi(q_i)^T z) per head, with S = sum_j phi(k_j) v_j^T and
    z = sum_j phi(k_j) over all j (bidirectional) or j <= i (causal). No 1/sqrt(d) scale, no
    epsilon in the denominator."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.causal = bool(cfg.get("causal", False))

    def forward(self, x, model_tensors=None, rot=None):
        q = elu_feature_map(lr.rotate_pairs(self._heads(self.q(x), self.H), rot))  # [H, T, hd]
        k = elu_feature_map(lr.rotate_pairs(self._heads(self.k(x), self.kvh), rot))
        v = self._heads(self.v(x), self.kvh)
        if self.causal:
            # the masked quadratic form; equal to the running S_i, z_i of the recurrent form
            a = torch.matmul(q, k.transpose(1, 2))  # [H, T, T], a[h, i, j] = phi(q_i).phi(k_j)
            a = torch.tril(a)
            num = torch.matmul(a, v)
            den = a.sum(dim=-1, keepdim=True)
        else:
            S = torch.matmul(k.transpose(1, 2), v)  # [H, hd, hd]
            z = k.sum(dim=1)  # [H, hd]
            num = torch.matmul(q, S)
            den = torch.matmul(q, z.unsqueeze(2))  # [H, T, 1]
        return self._merge(num / den)


def make_attention(cfg, layer_index=0):
    return LinearEluAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # elu(x) + 1


def numpy_attention(cfg, sd, a, X):
    """Recurrent form: S_i = sum_{j<=i} phi(k_j) v_j^T, z_i = sum_{j<=i} phi(k_j) (causal), or the
    sums over all j (bidirectional); out_i = phi(q_i)^T S / (phi(q_i)^T z)."""
    T, hd = X.shape[0], cfg["head_dim"]
    heads = []
    for h in range(cfg["num_heads"]):
        Q, K, V = (cc.head_proj(cfg, sd, a, w, X, h) for w in "qkv")
        Q, K = phi(Q), phi(K)
        O = np.zeros((T, hd))
        if cfg["causal"]:
            S, z = np.zeros((hd, hd)), np.zeros(hd)
            for i in range(T):
                S += np.outer(K[i], V[i])
                z += K[i]
                O[i] = (Q[i] @ S) / (Q[i] @ z)
        else:
            S = sum(np.outer(K[j], V[j]) for j in range(T))
            z = K.sum(axis=0)
            for i in range(T):
                O[i] = (Q[i] @ S) / (Q[i] @ z)
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))


def numpy_stream(cfg, sd, ids):
    """Causal run token by token (pre/post norm): between tokens only the per-layer, per-head
    state (S [hd, hd], z [hd]) is kept. Returns the rows stacked."""
    assert cfg["causal"] and cfg["norm_placement"] != "reversible"
    eps, hd, H, L = float(cfg["norm_eps"]), cfg["head_dim"], cfg["num_heads"], cfg["num_layers"]
    state = [[(np.zeros((hd, hd)), np.zeros(hd)) for _ in range(H)] for _ in range(L)]
    x_all = cc.embed(cfg, sd, ids)  # row-wise: row t depends on token t and position t only
    rows = []

    def ln(name, v):
        return cc.layer_norm(v, sd[name + ".weight"], sd[name + ".bias"], eps)

    for t in range(len(ids)):
        x = x_all[t : t + 1]
        for i in range(L):
            p = "layers.%d." % i
            a = p + "attention."
            inp = ln(p + "attention_norm", x) if cfg["norm_placement"] == "pre" else x
            heads = []
            for h in range(H):
                q, k, v = (cc.head_proj(cfg, sd, a, w, inp, h, first=t)[0] for w in "qkv")
                S, z = state[i][h]
                S = S + np.outer(phi(k), v)
                z = z + phi(k)
                state[i][h] = (S, z)
                heads.append((phi(q) @ S) / (phi(q) @ z))
            A = cc.linear(sd, sd, a + "out", np.concatenate(heads)[None, :])
            f = lambda v: cc.linear(sd, sd, p + "feed_forward.fc2", cc.act(cfg["activation"], cc.linear(sd, sd, p + "feed_forward.fc1", v)))  # noqa: E731
            if cfg["norm_placement"] == "pre":
                x = x + A
                x = x + f(ln(p + "feed_forward_norm", x))
            else:
                x = ln(p + "attention_norm", x + A)
                x = ln(p + "feed_forward_norm", x + f(x))
        rows.append(x[0])
    return cc.head(cfg, sd, np.stack(rows))
