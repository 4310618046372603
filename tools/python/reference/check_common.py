# SPDX-License-Identifier: Apache-2.0
"""The plain numpy helpers of the independent checks (check_ref.py, check_kinds.py and the numpy
forwards of the kinds' files, kinds/<kind>.py): activations, layer norm, linears, a softmax row
(tracking the mean attention entropy), a head's projection with rotary positions, the embedding
and the head. No torch and nothing of linfer_ref.py: the checks are a second implementation."""

import math

import numpy as np

_erf = np.vectorize(math.erf)


def act(name, x):
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "tanh":
        return np.tanh(x)
    raise ValueError(name)


def layer_norm(x, w, b, eps):
    out = np.empty_like(x)
    for t in range(x.shape[0]):
        mu = x[t].sum() / x.shape[1]
        var = ((x[t] - mu) ** 2).sum() / x.shape[1]
        out[t] = (x[t] - mu) / math.sqrt(var + eps) * w + b
    return out


def linear(W, sd, prefix, x):
    y = x @ W[prefix + ".weight"].T
    if prefix + ".bias" in sd:
        y = y + sd[prefix + ".bias"]
    return y


class Stats:
    entropy_sum = 0.0
    rows = 0


def softmax_row(s, track=True):
    e = np.exp(s - s.max())
    w = e / e.sum()
    if track and len(w) > 1:
        Stats.entropy_sum += float(-(w * np.log(np.maximum(w, 1e-300))).sum()) / math.log(len(w))
        Stats.rows += 1
    return w


def head_proj(cfg, sd, a, which, X, h, first=0):
    """Rows of X (positions first, first + 1, ...) through linear `which` (q, k, v or their *_global twins), columns of
    head h (kv head 0 when kv_heads = 1); queries and keys rotated when the model has rotary
    positions (pair (2i, 2i+1) by the angle whose sine and cosine are rotary_table[t, i] and
    rotary_table[t, hd/2 + i])."""
    hd = cfg["head_dim"]
    g = h if (which[0] == "q" or cfg["kv_heads"] == cfg["num_heads"]) else 0
    W = sd[a + which + ".weight"][g * hd : (g + 1) * hd]
    b = sd[a + which + ".bias"][g * hd : (g + 1) * hd] if a + which + ".bias" in sd else np.zeros(hd)
    Y = X @ W.T + b
    if which[0] == "v" or cfg.get("rotary", "none") == "none":
        return Y
    R = np.empty_like(Y)
    for t in range(Y.shape[0]):
        row = sd["rotary_table"][first + t]
        for i in range(hd // 2):
            sn, cs = row[i], row[hd // 2 + i]
            R[t, 2 * i] = Y[t, 2 * i] * cs - Y[t, 2 * i + 1] * sn
            R[t, 2 * i + 1] = Y[t, 2 * i + 1] * cs + Y[t, 2 * i] * sn
    return R


def feed_forward(cfg, sd, p, X):
    """The feed-forward sublayer of the layer whose tensors start with p."""
    return linear(sd, sd, p + "feed_forward.fc2", act(cfg["activation"], linear(sd, sd, p + "feed_forward.fc1", X)))


def embed(cfg, sd, ids):
    T, dim, off = len(ids), cfg["dim"], cfg["position_offset"]
    x = np.stack([cfg["embedding_scale"] * sd["token_embedding.weight"][i] for i in ids])
    if cfg["positions"] == "learned":
        x = x + sd["position_embedding.weight"][off : off + T]
    elif cfg["positions"] == "sinusoidal":
        base = float(cfg["sinusoidal_base"])
        for t in range(T):
            for i in range(dim):
                if i < dim // 2:
                    x[t, i] += math.sin((t + off) * base ** (-2.0 * i / dim))
                else:
                    x[t, i] += math.cos((t + off) * base ** (-2.0 * (i - dim // 2) / dim))
    if cfg["embedding_norm"]:
        x = layer_norm(x, sd["embedding_norm.weight"], sd["embedding_norm.bias"], float(cfg["norm_eps"]))
    return x


def head(cfg, sd, x):
    eps = float(cfg["norm_eps"])
    if cfg["final_norm"]:
        x = layer_norm(x, sd["final_norm.weight"], sd["final_norm.bias"], eps)
    if cfg["head"] == "lm":
        if "head.dense.weight" in sd:
            x = act(cfg["head_activation"], linear(sd, sd, "head.dense", x))
        if "head.norm.weight" in sd:
            x = layer_norm(x, sd["head.norm.weight"], sd["head.norm.bias"], eps)
        x = linear(sd, sd, "head.out", x)
    elif cfg["head"] == "classifier":
        x = x[:1] if cfg["pooling"] == "first" else x.mean(axis=0, keepdims=True)
        if "head.dense.weight" in sd:
            x = act(cfg.get("classifier_activation", "tanh"), linear(sd, sd, "head.dense", x))
        x = linear(sd, sd, "head.out", x)
    return x
