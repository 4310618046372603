# SPDX-License-Identifier: Apache-2.0
"""PyTorch reference of the canonical linfer encoder, every attention kind of the format:
"linformer", "full" (softmax over all rows), "linear_elu" (Katharopoulos et al. 2020, optionally
causal), "givetake" (GT-SA: learned global tokens, Take and Give attention, optional depthwise
convolution), "performer" (FAVOR+ random features, optionally causal), "sliding_window"
(Longformer: a window around each row plus global positions), "block_sparse" (BigBird: window,
global and random blocks) and "lsh" (Reformer: LSH attention with shared queries and keys).

Implements the semantics of docs/converter.md and saves state_dicts under the "linfer" layout
names listed there. Run with Debian's interpreter: /usr/bin/python3 (torch 1.13, numpy).

    model = LinferEncoder(config)          # config: dict with the docs/converter.md keys
    init_random(model, seed=1)             # non-trivial values for parity tests
    out = model(torch.tensor(ids))         # [T, C] or [1, num_classes]
    ref = reference_outputs(model, [ids])  # computed in float64, returned as float32 numpy
    save_safetensors(model, config, "m.safetensors")
    save_torch(model, config, "m.pt")               # {"linfer_config": json, "state_dict": ...}
    save_torch(model, config, "m.pt", bare=True)    # state_dict only (needs --config)

Extra config keys understood here (they only decide which tensors exist; the converter detects
presence from the key names): "qkv_bias" [true] (q/k/v/out biases), "proj_bias" [false]
(projection biases), "head_transform" [false] (lm: head.dense + head.norm; classifier:
head.dense), "ff_bias" [true] (fc1/fc2 biases), "conv_kernel" [0] (givetake: odd kernel size of
the depthwise convolution, 0 = none).

Keys of the other attention kinds (docs/converter.md): "causal" [false] (linear_elu, performer),
"num_features" (performer m), "feature_map" ["softmax"] ("softmax" or "relu"), "feature_eps"
[1e-4 softmax, 1e-3 relu] (performer only; kept out of the other kinds' resolved config),
"key_stabiliser" ["prefix"] (causal performer with softmax features: "sequence" stabilises every
row's keys by the maximum over the whole input, as performer-pytorch does; in the resolved config
only when given),
"num_global_tokens" (givetake p, >= 1; 0 otherwise). proj_len is required for "linformer" only and
must be absent or 0 for the other kinds, whose attention ignores the projection_* keys. For the
linformer kind these keys are kept out of the resolved config unless given, so existing fixtures
written with resolve_config stay byte-identical.

"rotary" ["none"] ("none" or "adjacent_pairs"; full, linear_elu and performer only; in the resolved
config only when given): rotary positions on the queries and keys of every head before the
attention math, angles from the buffer "rotary_table" [max_seq_len, head_dim] (each row: head_dim/2
sines, then the cosines; computed as lucidrains' performer-pytorch does, in float32).

"classifier_activation" ["tanh"] ("tanh", "gelu", "gelu_tanh" or "relu"; classifier heads only;
in the resolved config only when given): the activation after head.dense of a classifier head
(Hugging Face's BigBird classification head applies hidden_act there).

"reversible_merge" ["sum"] ("sum" or "mean"; reversible norm placement only; in the resolved config
only when given): the two halves after the last reversible layer become y1 + y2 (lucidrains'
linformer and performer-pytorch) or (y1 + y2) / 2 (reformer-pytorch), before the final norm.

"sliding_window" keys (that kind only): "window_radius" (required: row i sees the keys j with
|i - j| <= window_radius, Longformer's attention_window / 2), "global_positions" [0] (rows
[0, g) of each input are global: they see every key, every row sees them), "global_projections"
[false] (tensor presence only: the layers have q_global, k_global, v_global for the global rows).

"block_sparse" keys (that kind only; semantics in docs/format.md): "block_size" (required),
"global_blocks" [1] (global blocks at each end), "num_random_blocks" [0]; and, deciding only the
values of each layer's buffer "random_blocks" [num_heads, ceil(max_seq_len / block_size),
num_random_blocks] (block indices, stored as float32): "random_pattern" ["uniform"] ("uniform":
drawn uniformly from all blocks with torch's generator seeded by "random_seed" [0] + the layer
index; "zeros": every random block is block 0, Hugging Face BigBird's pattern in eval mode).

"lsh" keys (that kind only; semantics in docs/format.md, as lucidrains' reformer-pytorch
LSHAttention computes them): "bucket_size" (required: rows per chunk), "num_hashes" [4] (hashing
rounds), "causal" [false]; and, deciding only the values of each layer's buffer "rotations"
[num_hashes, head_dim, ceil(max_seq_len / (2 bucket_size))], "rotation_seed" [0] (standard normal,
torch's generator seeded by rotation_seed + the layer index). The layers have no k linear: the
queries are the keys.
"""

import copy
import json
import math
import os
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_file import read_safetensors, write_safetensors

DEFAULTS = OrderedDict(
    [
        ("attention_kind", "linformer"),
        ("norm_placement", "pre"),
        ("embedding_norm", False),
        ("final_norm", False),
        ("norm_eps", 1e-5),
        ("positions", "learned"),
        ("position_offset", 0),
        ("sinusoidal_base", 10000.0),
        ("embedding_scale", 1.0),
        ("projection_placement", "after"),
        ("projection_sharing", "headwise"),
        ("activation", "gelu"),
        ("head", "none"),
        ("head_activation", "gelu"),
        ("pooling", "first"),
        ("num_classes", 0),
        # keys of this reference (tensor presence only)
        ("qkv_bias", True),
        ("proj_bias", False),
        ("ff_bias", True),
        ("head_transform", False),
    ]
)

REQUIRED = ("vocab_size", "dim", "num_layers", "num_heads", "head_dim", "ff_dim", "max_seq_len", "proj_len")

# Keys of the non-linformer kinds, appended to the resolved config (for "linformer" only when the
# caller gave them).
KIND_DEFAULTS = OrderedDict([("causal", False), ("num_global_tokens", 0), ("conv_kernel", 0)])


def _attention_kinds():
    """The kinds' names, in the schema's order: the one table of kinds, schema/attention_kinds.txt."""
    table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "schema", "attention_kinds.txt")
    with open(table, encoding="utf-8") as f:
        return tuple(line.split()[0] for line in f if line[:1].isalpha())


ATTENTION_KINDS = _attention_kinds()
# The performer's keys (in the resolved config of that kind only).
PERFORMER_EPS = {"softmax": 1e-4, "relu": 1e-3}
ROTARY_KINDS = ("none", "adjacent_pairs")
ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "tanh")

_CHOICES = {
    "attention_kind": ATTENTION_KINDS,
    "norm_placement": ("pre", "post", "reversible"),
    "positions": ("none", "learned", "sinusoidal"),
    "projection_placement": ("after", "before"),
    "projection_sharing": ("none", "headwise", "kv", "layerwise"),
    "activation": ("gelu", "gelu_tanh", "relu", "tanh"),
    "head_activation": ("gelu", "gelu_tanh", "relu", "tanh"),
    "head": ("none", "lm", "classifier"),
    "pooling": ("first", "mean"),
}


def _check_non_negative_ints(cfg, keys):
    for key in keys:
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError("config: %s must be a non-negative integer" % key)


def resolve_config(config):
    """Returns a new dict with every default filled in; raises ValueError on a bad config."""
    cfg = OrderedDict()
    kind = config.get("attention_kind", DEFAULTS["attention_kind"])
    linformer = kind == "linformer"
    for key in REQUIRED:
        if key not in config:
            if key == "proj_len" and not linformer:  # k applies to linformer only
                cfg[key] = 0
                continue
            raise ValueError("config: missing key %r" % key)
        cfg[key] = int(config[key])
    cfg["kv_heads"] = int(config.get("kv_heads", cfg["num_heads"]))
    for key, value in DEFAULTS.items():
        cfg[key] = config.get(key, value)
    for key, value in KIND_DEFAULTS.items():
        if not linformer or key in config:
            cfg[key] = config.get(key, value)
    if kind == "performer":
        if "num_features" not in config:
            raise ValueError("config: performer attention needs num_features")
        cfg["num_features"] = config["num_features"]
        cfg["feature_map"] = config.get("feature_map", "softmax")
        if cfg["feature_map"] not in PERFORMER_EPS:
            raise ValueError("config: feature_map must be one of %s" % (tuple(PERFORMER_EPS),))
        cfg["feature_eps"] = float(config.get("feature_eps", PERFORMER_EPS[cfg["feature_map"]]))
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
    if kind == "sliding_window":
        if "window_radius" not in config:
            raise ValueError("config: sliding_window attention needs window_radius")
        cfg["window_radius"] = config["window_radius"]
        cfg["global_positions"] = config.get("global_positions", 0)
        cfg["global_projections"] = config.get("global_projections", False)
        _check_non_negative_ints(cfg, ("window_radius", "global_positions"))
        if not 1 <= cfg["window_radius"] <= int(config.get("max_seq_len", 0)):
            raise ValueError("config: window_radius must be in [1, max_seq_len]")
        if cfg["global_positions"] > int(config.get("max_seq_len", 0)):
            raise ValueError("config: global_positions must not exceed max_seq_len")
        if not isinstance(cfg["global_projections"], bool):
            raise ValueError("config: global_projections must be true or false")
    if kind == "block_sparse":
        if "block_size" not in config:
            raise ValueError("config: block_sparse attention needs block_size")
        cfg["block_size"] = config["block_size"]
        cfg["global_blocks"] = config.get("global_blocks", 1)
        cfg["num_random_blocks"] = config.get("num_random_blocks", 0)
        cfg["random_pattern"] = config.get("random_pattern", "uniform")
        cfg["random_seed"] = config.get("random_seed", 0)
        _check_non_negative_ints(cfg, ("block_size", "global_blocks", "num_random_blocks", "random_seed"))
        if not 1 <= cfg["block_size"] <= int(config.get("max_seq_len", 0)):
            raise ValueError("config: block_size must be in [1, max_seq_len]")
        if cfg["num_random_blocks"] > 64:
            raise ValueError("config: num_random_blocks must be at most 64")
        if cfg["random_pattern"] not in ("uniform", "zeros"):
            raise ValueError("config: random_pattern must be 'uniform' or 'zeros'")
    if kind == "lsh":
        if "bucket_size" not in config:
            raise ValueError("config: lsh attention needs bucket_size")
        cfg["bucket_size"] = config["bucket_size"]
        cfg["num_hashes"] = config.get("num_hashes", 4)
        cfg["rotation_seed"] = config.get("rotation_seed", 0)
        _check_non_negative_ints(cfg, ("bucket_size", "num_hashes", "rotation_seed"))
        if not 1 <= cfg["bucket_size"] <= 256:
            raise ValueError("config: bucket_size must be in [1, 256]")
        if not 1 <= cfg["num_hashes"] <= 16:
            raise ValueError("config: num_hashes must be in [1, 16]")
    if "rotary" in config:
        cfg["rotary"] = config["rotary"]
        if cfg["rotary"] not in ROTARY_KINDS:
            raise ValueError("config: rotary must be one of %s" % (ROTARY_KINDS,))
        if cfg["rotary"] != "none":
            if kind not in ("full", "linear_elu", "performer", "lsh"):
                raise ValueError("config: rotary positions apply to full, linear_elu, performer and lsh attention")
            if cfg["head_dim"] % 2:
                raise ValueError("config: rotary positions need an even head_dim")
    if "classifier_activation" in config:
        cfg["classifier_activation"] = config["classifier_activation"]
        if cfg["classifier_activation"] not in ACTIVATIONS:
            raise ValueError("config: classifier_activation must be one of %s" % (ACTIVATIONS,))
        if cfg["classifier_activation"] != "tanh" and cfg["head"] != "classifier":
            raise ValueError("config: classifier_activation applies to classifier heads only")
    if "reversible_merge" in config:
        cfg["reversible_merge"] = config["reversible_merge"]
        if cfg["reversible_merge"] not in ("sum", "mean"):
            raise ValueError("config: reversible_merge must be 'sum' or 'mean'")
        if cfg["reversible_merge"] != "sum" and cfg["norm_placement"] != "reversible":
            raise ValueError("config: reversible_merge applies to reversible layers only")
    for key in config:
        if key not in cfg:
            raise ValueError("config: unknown key %r" % key)
    for key, choices in _CHOICES.items():
        if cfg[key] not in choices:
            raise ValueError("config: %s must be one of %s, not %r" % (key, choices, cfg[key]))
    for key in REQUIRED:
        if key == "proj_len" and not linformer:
            if cfg[key] != 0:
                raise ValueError("config: proj_len applies to linformer attention only, not %r" % kind)
        elif cfg[key] <= 0:
            raise ValueError("config: %s must be positive" % key)
    if cfg["kv_heads"] not in (cfg["num_heads"], 1):
        raise ValueError("config: kv_heads must be num_heads or 1")
    if cfg["proj_len"] > cfg["max_seq_len"]:
        raise ValueError("config: proj_len must not exceed max_seq_len")
    if not linformer and cfg["proj_bias"]:
        raise ValueError("config: proj_bias applies to linformer attention only")
    causal = cfg.get("causal", False)
    if not isinstance(causal, bool):
        raise ValueError("config: causal must be true or false")
    if causal and kind not in ("linear_elu", "performer", "lsh"):
        raise ValueError("config: causal is only defined for linear_elu, performer and lsh attention, not %r" % kind)
    p = cfg.get("num_global_tokens", 0)
    if not isinstance(p, int) or isinstance(p, bool) or p < 0:
        raise ValueError("config: num_global_tokens must be a non-negative integer")
    if kind == "givetake" and p < 1:
        raise ValueError("config: givetake attention needs num_global_tokens >= 1")
    if kind != "givetake" and p != 0:
        raise ValueError("config: num_global_tokens applies to givetake attention only")
    ck = cfg.get("conv_kernel", 0)
    if not isinstance(ck, int) or isinstance(ck, bool) or ck < 0 or (ck and ck % 2 == 0):
        raise ValueError("config: conv_kernel must be 0 or an odd positive integer")
    if ck and kind != "givetake":
        raise ValueError("config: conv_kernel applies to givetake attention only")
    if cfg["head"] == "classifier" and int(cfg["num_classes"]) <= 0:
        raise ValueError("config: classifier head needs num_classes > 0")
    if int(cfg["position_offset"]) < 0:
        raise ValueError("config: position_offset must be >= 0")
    return cfg


def _activation(name):
    if name == "gelu":
        return lambda x: F.gelu(x)
    if name == "gelu_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "relu":
        return F.relu
    if name == "tanh":
        return torch.tanh
    raise ValueError(name)


def sinusoidal_positions(positions, dim, base, dtype=torch.float64):
    """pe[t, i] = sin(p_t * base^(-2i/dim)) for i < dim//2, cos(p_t * base^(-2(i-dim//2)/dim)) after."""
    p = torch.as_tensor(positions, dtype=torch.float64)[:, None]
    half = dim // 2
    i_sin = torch.arange(half, dtype=torch.float64)
    i_cos = torch.arange(dim - half, dtype=torch.float64)
    base = float(base)
    sin = torch.sin(p * base ** (-2.0 * i_sin / dim))
    cos = torch.cos(p * base ** (-2.0 * i_cos / dim))
    return torch.cat([sin, cos], dim=1).to(dtype)


def rotary_table(n, hd):
    """[n, hd]: row p = sin(p a_i) for i < hd/2, then cos(p a_i), a_i = 10000^(-2i/hd), in float32
    as performer-pytorch's FixedPositionalEmbedding(hd, n) computes its buffer."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    angles = torch.einsum("i,j->ij", torch.arange(0, n, dtype=torch.float), inv_freq)
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


def rotate_pairs(t, table):
    """Rotary positions, adjacent pairs: t [H, T, hd], table [T, hd] (rows of positions 0..T-1).
    (t_2i, t_2i+1) -> (t_2i cos_i - t_2i+1 sin_i, t_2i+1 cos_i + t_2i sin_i)."""
    if table is None:
        return t
    half = t.shape[-1] // 2
    sin, cos = table[:, :half].to(t.dtype), table[:, half:].to(t.dtype)
    a, b = t[..., 0::2], t[..., 1::2]
    return torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)


class Attention(nn.Module):
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
        # layerwise: the encoder's shared_proj / shared_proj_bias are passed to forward

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

    def forward(self, x, shared_proj=None, shared_proj_bias=None, rot=None):
        T = x.shape[0]
        H, hd = self.H, self.hd
        if self.sharing == "layerwise":
            E, Fp, eb, fb = shared_proj, shared_proj, shared_proj_bias, shared_proj_bias
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


class _DenseAttention(nn.Module):
    """Q/K/V/out linears of the non-linformer kinds (same names and shapes as Attention)."""

    def __init__(self, cfg):
        super().__init__()
        dim, H, hd, kvh = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"]
        bias = bool(cfg["qkv_bias"])
        self.H, self.hd, self.kvh = H, hd, kvh
        self.q = nn.Linear(dim, H * hd, bias=bias)
        self.k = nn.Linear(dim, kvh * hd, bias=bias)
        self.v = nn.Linear(dim, kvh * hd, bias=bias)
        self.out = nn.Linear(H * hd, dim, bias=bias)

    def _heads(self, y, n_heads):
        """[R, n_heads*hd] -> [H, R, hd]; a single kv head is read by every head."""
        R = y.shape[0]
        y = y.view(R, n_heads, self.hd).transpose(0, 1)
        return y.expand(self.H, R, self.hd) if n_heads == 1 and self.H != 1 else y

    def _merge(self, o):
        """[H, R, hd] -> out([R, H*hd])."""
        return self.out(o.transpose(0, 1).reshape(o.shape[1], self.H * self.hd))


def softmax_attention(q, k, v, hd):
    """softmax(q k^T / sqrt(hd)) v per head: [H, Rq, hd] x [H, Rk, hd] x [H, Rk, dv]."""
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(1, 2)) / math.sqrt(hd), dim=-1), v)


class FullAttention(_DenseAttention):
    """attention_kind "full": softmax(Q_h K_h^T / sqrt(head_dim)) V_h over all T rows."""

    def forward(self, x, sp=None, spb=None, rot=None):
        q = rotate_pairs(self._heads(self.q(x), self.H), rot)
        k = rotate_pairs(self._heads(self.k(x), self.kvh), rot)
        v = self._heads(self.v(x), self.kvh)
        return self._merge(softmax_attention(q, k, v, self.hd))


def elu_feature_map(x):
    """phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), > 0 everywhere."""
    return F.elu(x) + 1.0


class LinearEluAttention(_DenseAttention):
    """attention_kind "linear_elu": out_i = phi(q_i)^T S / (phi(q_i)^T z) per head, with
    S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j) over all j (bidirectional) or j <= i (causal).
    No 1/sqrt(d) scale, no epsilon in the denominator."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.causal = bool(cfg.get("causal", False))

    def forward(self, x, sp=None, spb=None, rot=None):
        q = elu_feature_map(rotate_pairs(self._heads(self.q(x), self.H), rot))  # [H, T, hd]
        k = elu_feature_map(rotate_pairs(self._heads(self.k(x), self.kvh), rot))
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


# Performer, causal: added to each feature of the key sum in the denominator (lucidrains'
# causal_linear_attention; the runtime's kFavorCausalDenEps).
FAVOR_CAUSAL_DEN_EPS = 1e-6


class PerformerAttention(_DenseAttention):
    """attention_kind "performer": FAVOR+ (Choromanski et al. 2021) as lucidrains' performer-pytorch
    computes it, with the projection W [m, hd] stored transposed ("features", [hd, m]) and fixed.
    a = (c x) W^T, c = hd^-1/4. Softmax features: phi(x) = r (exp(a - c^2 |x|^2 / 2 - s) + eps),
    r = m^-1/2, s = max_f a_f for a query; for keys the max of a over every key (bidirectional) or
    over keys 0..i for query i (causal, key_stabiliser "prefix": truly causal) or over all keys
    (causal, "sequence": lucidrains' module, whose rows then depend on later tokens). Relu features: phi(x) = relu(a) + eps. out_i = sum_j A_ij v_j / (sum_j A_ij
    [+ den_eps sum_f phi(q_i)_f if causal]), A_ij = phi(q_i).phi(k_j) over j (j <= i if causal)."""

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

    def forward(self, x, sp=None, spb=None, rot=None):
        q = rotate_pairs(self._heads(self.q(x), self.H), rot)  # [H, T, hd]
        k = rotate_pairs(self._heads(self.k(x), self.kvh), rot)
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


class GiveTakeAttention(_DenseAttention):
    """attention_kind "givetake" (GT-SA). The input holds T sequence rows followed by the p global
    token rows; the output has the same layout (sequence rows first).

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
        y_t = softmax_attention(q_t, k_s, v_s, self.hd)  # Take  [H, p, hd]
        y_s = softmax_attention(q_s, k_t, y_t, self.hd)  # Give  [H, T, hd]
        a_s = self._merge(y_s)
        if self.kernel:
            a_s = a_s + self.depthwise_conv(xs)
        return torch.cat([a_s, self._merge(y_t)], dim=0)


class SlidingWindowAttention(_DenseAttention):
    """attention_kind "sliding_window" (Longformer, as HF LongformerSelfAttention computes it):
    a row i >= g (g = global_positions) attends to the keys j with |i - j| <= window_radius that
    are not global, and to the g global rows' keys (q, k, v); each global row attends to every
    key, with q_global, k_global, v_global when the model has them ("global_projections"), and
    its output replaces the local one. Written as a dense mask: the oracle, not the fast way."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.radius, self.g = cfg["window_radius"], cfg["global_positions"]
        if cfg["global_projections"]:
            dim, bias = cfg["dim"], bool(cfg["qkv_bias"])
            self.q_global = nn.Linear(dim, self.H * self.hd, bias=bias)
            self.k_global = nn.Linear(dim, self.kvh * self.hd, bias=bias)
            self.v_global = nn.Linear(dim, self.kvh * self.hd, bias=bias)

    def forward(self, x, sp=None, spb=None, rot=None):
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
            o = torch.cat([softmax_attention(qg, kg, vg, self.hd), o[:, g:]], dim=1)
        return self._merge(o)


def block_sparse_key_counts(cfg, random_blocks, T):
    """attention_kind "block_sparse": how many times each key j is listed for query row i, a
    [H, T, T] float64 tensor (0: not seen). Blocks of b = block_size rows, nb = ceil(T / b), the
    last one possibly shorter. An input of at most 2 g + 3 + 2 R blocks (g = global_blocks, R =
    num_random_blocks) is full attention (Hugging Face's switch). Otherwise the first and last g
    query blocks see every key; query block i sees the keys of the global blocks and of blocks
    i - 1, i, i + 1 once, plus block random_blocks[h, i, r] once more for every r where it is a
    block of this input (< nb), even when already seen."""
    b, g, R = cfg["block_size"], cfg["global_blocks"], cfg["num_random_blocks"]
    H = cfg["num_heads"]
    nb = -(-T // b)
    counts = torch.zeros(H, T, T, dtype=torch.float64)
    if nb <= 2 * g + 3 + 2 * R:
        return counts + 1.0
    for i in range(nb):
        rows = slice(i * b, min(T, (i + 1) * b))
        if i < g or i >= nb - g:
            counts[:, rows, :] = 1.0
            continue
        seen = torch.zeros(T, dtype=torch.float64)
        for k in list(range(g)) + [i - 1, i, i + 1] + list(range(nb - g, nb)):
            if 0 <= k < nb:
                seen[k * b:(k + 1) * b] = 1.0
        counts[:, rows, :] = seen
        for h in range(H):
            for r in range(R):
                k = int(random_blocks[h, i, r])
                if k < nb:
                    counts[h, rows, k * b:(k + 1) * b] += 1.0
    return counts


class BlockSparseAttention(_DenseAttention):
    """attention_kind "block_sparse" (BigBird's ITC pattern as Hugging Face's
    BigBirdBlockSparseAttention computes it): softmax over the keys each row sees, a key listed n
    times (block_sparse_key_counts) weighing n times. Written as a dense count matrix: the oracle,
    not the fast way."""

    def __init__(self, cfg, layer_index=0):
        super().__init__(cfg)
        self.cfg = cfg
        blocks = -(-cfg["max_seq_len"] // cfg["block_size"])
        R = cfg["num_random_blocks"]
        if R:
            shape = (cfg["num_heads"], blocks, R)
            if cfg["random_pattern"] == "zeros":
                table = torch.zeros(shape)
            else:
                gen = torch.Generator().manual_seed(int(cfg["random_seed"]) + layer_index)
                table = torch.randint(0, blocks, shape, generator=gen).to(torch.float32)
            self.register_buffer("random_blocks", table)
        else:
            self.random_blocks = None

    def forward(self, x, sp=None, spb=None, rot=None):
        T = x.shape[0]
        q = self._heads(self.q(x), self.H)
        k = self._heads(self.k(x), self.kvh)
        v = self._heads(self.v(x), self.kvh)
        counts = block_sparse_key_counts(self.cfg, self.random_blocks, T).to(x.dtype)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.hd)
        scores = scores.masked_fill(counts == 0, float("-inf"))
        p = torch.softmax(scores, dim=-1) * counts
        p = p / p.sum(-1, keepdim=True)
        return self._merge(torch.matmul(p, v))


LSH_SELF_SCORE = -5e4  # reformer-pytorch's TOKEN_SELF_ATTN_VALUE


def lsh_buckets(qk, rotations, T, b):
    """[H, num_hashes, T] bucket of each row in each round: argmax over [x R, -x R] with the
    first ceil(T / 2b) columns of the round's rotations (the first of equal maxima)."""
    half = -(-T // (2 * b))
    y = torch.einsum("htf,rfi->hrti", qk, rotations[:, :, :half].to(qk.dtype))
    return torch.argmax(torch.cat([y, -y], dim=-1), dim=-1)


def lsh_chunk_rows(buckets_h, T, b):
    """The chunks of one head, in order (round-major): each a LongTensor of its sorted rows (rows
    sorted by (bucket, position) within a round, cut into pieces of b)."""
    chunks = []
    pos = torch.arange(T)
    for r in range(buckets_h.shape[0]):
        order = torch.argsort(buckets_h[r] * T + pos)
        chunks += [order[c:c + b] for c in range(0, T, b)]
    return chunks


class LshAttention(_DenseAttention):
    """attention_kind "lsh" (Reformer; lucidrains' reformer-pytorch LSHAttention in eval mode, its
    random rotations fixed in the buffer "rotations"): the queries are the keys (no k linear).
    Per round: buckets (lsh_buckets, on the rows before rotary positions), rows sorted by (bucket,
    position) and cut into chunks of bucket_size; a chunk's rows attend to its own and the
    previous chunk's rows (cyclic over all rounds' chunks) with scores q . k / |k| / sqrt(hd),
    -max where causal and the key comes later, LSH_SELF_SCORE for the row itself. The rounds'
    outputs are weighed by softmax over the rounds of their log-sum-exps. Written with loops over
    the chunks: the oracle, not the fast way."""

    def __init__(self, cfg, layer_index=0):
        super().__init__(cfg)
        del self.k
        self.cfg = cfg
        half = -(-cfg["max_seq_len"] // (2 * cfg["bucket_size"]))
        gen = torch.Generator().manual_seed(int(cfg["rotation_seed"]) + layer_index)
        self.register_buffer("rotations", torch.randn(cfg["num_hashes"], self.hd, half, generator=gen))

    def forward(self, x, sp=None, spb=None, rot=None):
        T, b, rounds = x.shape[0], self.cfg["bucket_size"], self.cfg["num_hashes"]
        qk = self._heads(self.q(x), self.H)
        v = self._heads(self.v(x), self.kvh)
        buckets = lsh_buckets(qk, self.rotations, T, b)
        qk = rotate_pairs(qk, rot)
        keys = F.normalize(qk, p=2, dim=-1)
        out = torch.zeros_like(qk)
        for h in range(self.H):
            chunks = lsh_chunk_rows(buckets[h], T, b)
            per_round = -(-T // b)
            o = torch.zeros(rounds, T, self.hd, dtype=x.dtype)
            lse = torch.zeros(rounds, T, dtype=x.dtype)
            for g, rows in enumerate(chunks):
                kv = torch.cat([rows, chunks[g - 1]])  # (chunks[-1] for the first: cyclic)
                dots = torch.matmul(qk[h, rows], keys[h, kv].t()) * self.hd ** -0.5
                if self.cfg.get("causal", False):
                    dots = dots.masked_fill(kv[None, :] > rows[:, None], -torch.finfo(dots.dtype).max)
                dots = dots.masked_fill(kv[None, :] == rows[:, None], LSH_SELF_SCORE)
                s = torch.logsumexp(dots, dim=-1)
                o[g // per_round, rows] = torch.matmul(torch.exp(dots - s[:, None]), v[h, kv])
                lse[g // per_round, rows] = s
            out[h] = (o * torch.softmax(lse, dim=0)[..., None]).sum(0)
        return self._merge(out)


def make_attention(cfg, layer_index=0):
    kind = cfg["attention_kind"]
    if kind == "linformer":
        return Attention(cfg)
    if kind == "full":
        return FullAttention(cfg)
    if kind == "linear_elu":
        return LinearEluAttention(cfg)
    if kind == "givetake":
        return GiveTakeAttention(cfg)
    if kind == "performer":
        return PerformerAttention(cfg)
    if kind == "sliding_window":
        return SlidingWindowAttention(cfg)
    if kind == "block_sparse":
        return BlockSparseAttention(cfg, layer_index)
    if kind == "lsh":
        return LshAttention(cfg, layer_index)
    raise ValueError(kind)


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        bias = bool(cfg["ff_bias"])
        self.fc1 = nn.Linear(cfg["dim"], cfg["ff_dim"], bias=bias)
        self.fc2 = nn.Linear(cfg["ff_dim"], cfg["dim"], bias=bias)
        self.act = _activation(cfg["activation"])

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Layer(nn.Module):
    def __init__(self, cfg, index=0):
        super().__init__()
        eps = float(cfg["norm_eps"])
        self.attention = make_attention(cfg, index)
        self.attention_norm = nn.LayerNorm(cfg["dim"], eps=eps)
        self.feed_forward = FeedForward(cfg)
        self.feed_forward_norm = nn.LayerNorm(cfg["dim"], eps=eps)


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim = cfg["dim"]
        self.kind = cfg["head"]
        transform = bool(cfg["head_transform"])
        if transform:
            self.dense = nn.Linear(dim, dim)
            if self.kind == "lm":
                self.norm = nn.LayerNorm(dim, eps=float(cfg["norm_eps"]))
        out = cfg["vocab_size"] if self.kind == "lm" else int(cfg["num_classes"])
        self.out = nn.Linear(dim, out)
        self.act = _activation(cfg["head_activation"])
        self.classifier_act = _activation(cfg.get("classifier_activation", "tanh"))
        self.pooling = cfg["pooling"]

    def forward(self, x):
        dense = getattr(self, "dense", None)
        norm = getattr(self, "norm", None)
        if self.kind == "lm":
            if dense is not None:
                x = self.act(dense(x))
            if norm is not None:
                x = norm(x)
            return self.out(x)
        # classifier
        x = x[:1] if self.pooling == "first" else x.mean(dim=0, keepdim=True)
        if dense is not None:
            x = self.classifier_act(dense(x))
        return self.out(x)


class LinferEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        cfg = resolve_config(config)
        self.cfg = cfg
        dim, n, k = cfg["dim"], cfg["max_seq_len"], cfg["proj_len"]
        eps = float(cfg["norm_eps"])
        self.token_embedding = nn.Embedding(cfg["vocab_size"], dim)
        if cfg["positions"] == "learned":
            self.position_embedding = nn.Embedding(n + int(cfg["position_offset"]), dim)
        if cfg["embedding_norm"]:
            self.embedding_norm = nn.LayerNorm(dim, eps=eps)
        if cfg["attention_kind"] == "givetake":
            # GiveTake: the initial values of the p global token rows (layer 0 input, as is)
            self.global_tokens = nn.Parameter(torch.zeros(int(cfg["num_global_tokens"]), dim))
        if cfg["attention_kind"] == "linformer" and cfg["projection_sharing"] == "layerwise":
            self.shared_proj = nn.Parameter(torch.zeros(k, n))
            if cfg["proj_bias"]:
                self.shared_proj_bias = nn.Parameter(torch.zeros(k))
        if cfg.get("rotary", "none") != "none":
            self.register_buffer("rotary_table", rotary_table(n, cfg["head_dim"]))
        self.layers = nn.ModuleList([Layer(cfg, i) for i in range(cfg["num_layers"])])
        if cfg["final_norm"]:
            self.final_norm = nn.LayerNorm(dim, eps=eps)
        if cfg["head"] != "none":
            self.head = Head(cfg)

    def embed(self, ids):
        cfg = self.cfg
        T = ids.shape[0]
        x = float(cfg["embedding_scale"]) * self.token_embedding(ids)
        pos = torch.arange(T) + int(cfg["position_offset"])
        if cfg["positions"] == "learned":
            x = x + self.position_embedding(pos)
        elif cfg["positions"] == "sinusoidal":
            x = x + sinusoidal_positions(pos, cfg["dim"], cfg["sinusoidal_base"], dtype=x.dtype)
        if cfg["embedding_norm"]:
            x = self.embedding_norm(x)
        return x

    def encode(self, ids):
        """Hidden states [T, dim] after the layers and the final norm.

        GiveTake: the p global token rows are appended below the T sequence rows (initial values
        global_tokens, no scale, position or embedding norm) and go through every layer with the
        sequence, norms and feed-forward included (both are row-wise); only the attention mixes
        the two streams. They are dropped after the last layer."""
        cfg = self.cfg
        if ids.dim() != 1:
            raise ValueError("ids must be a 1-D LongTensor [T]")
        T = ids.shape[0]
        if not 1 <= T <= cfg["max_seq_len"]:
            raise ValueError("sequence length %d outside [1, %d]" % (T, cfg["max_seq_len"]))
        if int(ids.min()) < 0 or int(ids.max()) >= cfg["vocab_size"]:
            raise ValueError("token id out of range")
        x = self.embed(ids)
        givetake = cfg["attention_kind"] == "givetake"
        if givetake:
            x = torch.cat([x, self.global_tokens.to(x.dtype)], dim=0)
        sp = getattr(self, "shared_proj", None)
        spb = getattr(self, "shared_proj_bias", None)
        rot = self.rotary_table[:T] if hasattr(self, "rotary_table") else None
        placement = cfg["norm_placement"]
        if placement == "reversible":
            x1 = x2 = x
            for layer in self.layers:
                y1 = x1 + layer.attention(layer.attention_norm(x2), sp, spb, rot)
                y2 = x2 + layer.feed_forward(layer.feed_forward_norm(y1))
                x1, x2 = y1, y2
            x = x1 + x2
            if cfg.get("reversible_merge", "sum") == "mean":
                x = x * 0.5
        else:
            for layer in self.layers:
                if placement == "pre":
                    x = x + layer.attention(layer.attention_norm(x), sp, spb, rot)
                    x = x + layer.feed_forward(layer.feed_forward_norm(x))
                else:
                    x = layer.attention_norm(x + layer.attention(x, sp, spb, rot))
                    x = layer.feed_forward_norm(x + layer.feed_forward(x))
        if givetake:
            x = x[:T]
        if cfg["final_norm"]:
            x = self.final_norm(x)
        return x

    def forward(self, ids):
        x = self.encode(ids)
        if self.cfg["head"] != "none":
            x = self.head(x)
        return x


# ---------------------------------------------------------------------------------------------
# initialisation


def init_random(model, seed=0, weight_std=(0.1, 0.3), proj_std=0.3, embed_std=1.0):
    """Fills every parameter with non-trivial values, deterministically from seed.

    Linear weights: normal, std = clamp(1/sqrt(fan_in), *weight_std); projections E/F: normal,
    std proj_std; embeddings: normal, std embed_std (positions half of it); GiveTake global
    tokens: normal, std embed_std; convolution weights: normal, std 0.4/sqrt(kernel) (the same
    scale as the attention branch it is added to); norm weights
    1 + 0.1 N; every bias (norm, linear, projection, convolution) 0.1 N.
    """
    g = torch.Generator().manual_seed(int(seed))
    lo, hi = weight_std
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64)
            leaf = name.rsplit(".", 1)[-1]
            owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            if isinstance(owner, nn.LayerNorm):
                val = 1.0 + 0.1 * noise if leaf == "weight" else 0.1 * noise
            elif isinstance(owner, nn.Embedding):
                std = embed_std * (0.5 if name.startswith("position_embedding") else 1.0)
                val = std * noise
            elif isinstance(owner, nn.Linear):
                if leaf == "weight":
                    std = min(max(1.0 / math.sqrt(p.shape[1]), lo), hi)
                    val = std * noise
                else:
                    val = 0.1 * noise
            elif name == "global_tokens":
                val = embed_std * noise
            elif leaf == "features":  # the Performer's random projection: standard normal, as drawn
                val = noise
            elif leaf == "conv_weight":
                val = 0.4 * noise / math.sqrt(p.shape[1])
            elif leaf.endswith("_bias"):
                val = 0.1 * noise
            else:  # proj_k, proj_v, shared_proj
                val = proj_std * noise
            p.copy_(val.to(p.dtype))
    return model


# ---------------------------------------------------------------------------------------------
# reference outputs


def reference_outputs(model, ids_list):
    """Runs a float64 copy of model on each id sequence; returns float32 numpy arrays."""
    m = copy.deepcopy(model).double().eval()
    outs = []
    with torch.no_grad():
        for ids in ids_list:
            t = torch.as_tensor(np.asarray(ids), dtype=torch.long)
            outs.append(m(t).numpy().astype(np.float32))
    return outs


# ---------------------------------------------------------------------------------------------
# saving


def _config_json(config):
    return json.dumps(config, separators=(", ", ": "))


def _f32_state_dict(model):
    return OrderedDict((k, v.detach().to(torch.float32).contiguous()) for k, v in model.state_dict().items())


def save_safetensors(model, config, path):
    """Writes model's state_dict as a safetensors file, config in __metadata__["linfer_config"]."""
    arrays = OrderedDict((name, t.numpy()) for name, t in _f32_state_dict(model).items())
    write_safetensors(path, arrays, {"linfer_config": _config_json(config)})


def save_torch(model, config, path, bare=False):
    """torch.save (zip format). bare=False: {"linfer_config": json, "state_dict": sd};
    bare=True: the state_dict alone (the converter then needs --config)."""
    sd = model.state_dict()
    obj = sd if bare else {"linfer_config": _config_json(config), "state_dict": sd}
    torch.save(obj, path)


def save_state_dict(model, path):
    """A bare state_dict file (torch.save zip), for tests of the converter's --config."""
    save_torch(model, None, path, bare=True)


def load_safetensors(path):
    """An F32 safetensors file (safetensors_file.read_safetensors) as torch tensors: returns
    (tensors dict, metadata dict)."""
    arrays, meta = read_safetensors(path, dtypes=("F32",))
    return OrderedDict((name, torch.from_numpy(a.copy())) for name, a in arrays.items()), meta
