# SPDX-License-Identifier: Apache-2.0
"""attention_kind "givetake" (GT-SA): p learned global tokens, Take and Give attention, an
optional depthwise convolution. Keys: "num_global_tokens" (p, >= 1, required) and
"conv_kernel" [0] (odd kernel size of the depthwise convolution, 0 = none; it decides only which
tensors exist)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import check_common as cc
import linfer_ref as lr

USES = ("num_global_tokens", "conv_kernel")
ADDED_ROWS = "global_tokens"


def resolve(config, cfg):
    p = cfg["num_global_tokens"]
    if not isinstance(p, int) or isinstance(p, bool) or p < 0:
        raise ValueError("config: num_global_tokens must be a non-negative integer")
    if p < 1:
        raise ValueError("config: givetake attention needs num_global_tokens >= 1")
    ck = cfg["conv_kernel"]
    if not isinstance(ck, int) or isinstance(ck, bool) or ck < 0 or (ck and ck % 2 == 0):
        raise ValueError("config: conv_kernel must be 0 or an odd positive integer")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


def model_tensors(cfg):
    """The initial values of the p global token rows (layer 0 input, as is: no scale, position
    or embedding norm)."""
    return {"global_tokens": nn.Parameter(torch.zeros(int(cfg["num_global_tokens"]), cfg["dim"]))}


def init_value(name, noise, embed_std, proj_std):
    """Global tokens: normal, std embed_std; convolution weights: normal, std 0.4/sqrt(kernel)
    (the same scale as the attention branch they are added to)."""
    if name == "global_tokens":
        return embed_std * noise
    if name.endswith(".conv_weight"):
        return 0.4 * noise / math.sqrt(noise.shape[1])
    return None


class GiveTakeAttention(lr._DenseAttention):
    """The input holds T sequence rows followed by the p global token rows; the output has the
    same layout (sequence rows first).

    Take: Y_t = softmax(Q_t K_s^T / sqrt(hd)) V_s; Give: Y_s = softmax(Q_s K_t^T / sqrt(hd)) Y_t
    (per head, K/V of kv head h or 0); both through the out linear. With conv_kernel > 0 the
    sequence output adds a depthwise convolution of the sequence input:
    A_s = out(Y_s) + conv(X_s), conv[t, c] = b[c] + sum_j w[c, j] X_s[t + j - (K-1)/2, c] (zero
    padding); A_t = out(Y_t)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.p = int(cfg["num_global_tokens"])
        kernel = int(cfg.get("conv_kernel", 0))
        self.kernel = kernel
        if kernel:
            self.conv_weight = nn.Parameter(torch.zeros(cfg["dim"], kernel))
            self.conv_bias = nn.Parameter(torch.zeros(cfg["dim"]))

    def depthwise_conv(self, xs):
        """Depthwise 1-D convolution over the T rows of xs [T, dim], zero padded, same length."""
        w = self.conv_weight.unsqueeze(1)  # [dim, 1, K]
        y = F.conv1d(xs.t().unsqueeze(0), w, self.conv_bias, padding=self.kernel // 2, groups=xs.shape[1])
        return y.squeeze(0).t()

    def forward(self, x, *unused):
        T = x.shape[0] - self.p
        xs, xt = x[:T], x[T:]
        q_s = self._heads(self.q(xs), self.H)  # [H, T, hd]
        k_s = self._heads(self.k(xs), self.kvh)
        v_s = self._heads(self.v(xs), self.kvh)
        q_t = self._heads(self.q(xt), self.H)  # [H, p, hd]
        k_t = self._heads(self.k(xt), self.kvh)
        y_t = lr.softmax_attention(q_t, k_s, v_s, self.hd)  # Take  [H, p, hd]
        y_s = lr.softmax_attention(q_s, k_t, y_t, self.hd)  # Give  [H, T, hd]
        a_s = self._merge(y_s)
        if self.kernel:
            a_s = a_s + self.depthwise_conv(xs)
        return torch.cat([a_s, self._merge(y_t)], dim=0)


def make_attention(cfg, layer_index=0):
    return GiveTakeAttention(cfg)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def numpy_shapes(cfg, qkv_bias):
    d = cfg["dim"]
    layer = {}
    if cfg.get("conv_kernel", 0):
        layer["conv_weight"] = (d, cfg["conv_kernel"])
        layer["conv_bias"] = (d,)
    return {"global_tokens": (cfg["num_global_tokens"], d)}, layer


def depthwise_conv(W, b, X):
    T, C = X.shape
    K = W.shape[1]
    r = (K - 1) // 2
    Y = np.zeros((T, C))
    for t in range(T):
        for c in range(C):
            acc = b[c]
            for j in range(K):
                src = t + j - r
                if 0 <= src < T:
                    acc += W[c, j] * X[src, c]
            Y[t, c] = acc
    return Y


def numpy_attention(cfg, sd, a, Xs, Xt):
    """Take: Y_t = softmax(Q_t K_s^T / sqrt(hd)) V_s; Give: Y_s = softmax(Q_s K_t^T / sqrt(hd)) Y_t;
    per head; A_s = out(Y_s) [+ conv(X_s)], A_t = out(Y_t)."""
    T, p, hd = Xs.shape[0], Xt.shape[0], cfg["head_dim"]
    ys, yt = [], []
    for h in range(cfg["num_heads"]):
        Qs, Ks, Vs = (cc.head_proj(cfg, sd, a, w, Xs, h) for w in "qkv")
        Qt, Kt = (cc.head_proj(cfg, sd, a, w, Xt, h) for w in "qk")
        Yt = np.zeros((p, hd))
        for m in range(p):  # Take: token m gathers from the sequence
            Yt[m] = cc.softmax_row(np.array([Qt[m] @ Ks[j] for j in range(T)]) / math.sqrt(hd)) @ Vs
        Ys = np.zeros((T, hd))
        for i in range(T):  # Give: row i reads the tokens' gathered values
            Ys[i] = cc.softmax_row(np.array([Qs[i] @ Kt[m] for m in range(p)]) / math.sqrt(hd)) @ Yt
        ys.append(Ys)
        yt.append(Yt)
    As = cc.linear(sd, sd, a + "out", np.concatenate(ys, axis=1))
    At = cc.linear(sd, sd, a + "out", np.concatenate(yt, axis=1))
    if a + "conv_weight" in sd:
        As = As + depthwise_conv(sd[a + "conv_weight"], sd[a + "conv_bias"], Xs)
    return As, At
