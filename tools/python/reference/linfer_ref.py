# SPDX-License-Identifier: Apache-2.0
"""PyTorch reference of the canonical linfer encoder, every attention kind of the format: the
kinds of schema/attention_kinds.txt, each in its file kinds/<kind>.py (its attention module, its
configuration keys; kinds/__init__.py says what such a file defines).

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
presence from the key names): "qkv_bias" [true] (q/k/v/out biases), "head_transform" [false] (lm:
head.dense + head.norm; classifier: head.dense), "ff_bias" [true] (fc1/fc2 biases).

Keys more than one kind may have (COMMON_KEYS; docs/converter.md): "proj_len" (required by the
kinds that use it, 0 in the others), "proj_bias" [false], "causal" [false], "num_global_tokens"
[0], "conv_kernel" [0] and "rotary" ["none"]. A kind names those it uses (USES in its file); in
every other kind they must keep the value in brackets. The resolved config of every kind holds
them, but rotary only when given, and a kind with COMMON_KEYS_WHEN_GIVEN holds causal,
num_global_tokens and conv_kernel only when given (so that fixtures written with resolve_config
stay byte-identical).

"rotary" ["none"] ("none" or "adjacent_pairs"): rotary positions on the queries and keys of every
head before the attention math, angles from the buffer "rotary_table" [max_seq_len, head_dim]
(each row: head_dim/2 sines, then the cosines; computed as lucidrains' performer-pytorch does, in
float32).

"classifier_activation" ["tanh"] ("tanh", "gelu", "gelu_tanh" or "relu"; classifier heads only;
in the resolved config only when given): the activation after head.dense of a classifier head
(Hugging Face's BigBird classification head applies hidden_act there).

"reversible_merge" ["sum"] ("sum" or "mean"; reversible norm placement only; in the resolved config
only when given): the two halves after the last reversible layer become y1 + y2 (lucidrains'
linformer and performer-pytorch) or (y1 + y2) / 2 (reformer-pytorch), before the final norm.
"""

import copy
import json
import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import kinds
from safetensors_file import read_safetensors, write_safetensors

DEFAULTS = OrderedDict(
    [
        ("attention_kind", kinds.NAMES[0]),  # the table's first, as the schema's enum default
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

# The keys more than one kind may have, with the value they keep in a kind that does not use them.
# proj_len is among REQUIRED and proj_bias among DEFAULTS; these three follow DEFAULTS in the
# resolved config; rotary comes only when given.
COMMON_KEYS = OrderedDict([("proj_len", 0), ("proj_bias", False), ("causal", False), ("num_global_tokens", 0),
                           ("conv_kernel", 0), ("rotary", "none")])
KIND_DEFAULTS = OrderedDict((key, COMMON_KEYS[key]) for key in ("causal", "num_global_tokens", "conv_kernel"))
# The refusal of a common key in a kind that does not use it (%(kinds)s: those that do).
_NOT_USED = {
    "proj_len": "config: proj_len applies to %(kinds)s attention only, not %(kind)r",
    "proj_bias": "config: proj_bias applies to %(kinds)s attention only",
    "causal": "config: causal is only defined for %(kinds)s attention, not %(kind)r",
    "num_global_tokens": "config: num_global_tokens applies to %(kinds)s attention only",
    "conv_kernel": "config: conv_kernel applies to %(kinds)s attention only",
    "rotary": "config: rotary positions apply to %(kinds)s attention",
}


ATTENTION_KINDS = kinds.NAMES  # the table of kinds' names, in the schema's order
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


def check_non_negative_ints(cfg, keys):
    for key in keys:
        v = cfg[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError("config: %s must be a non-negative integer" % key)


def check_bool(cfg, key):
    if not isinstance(cfg[key], bool):
        raise ValueError("config: %s must be true or false" % key)


def attention_kind(cfg):
    """The module kinds/<kind>.py of a config's attention kind (ValueError if it has none)."""
    name = cfg.get("attention_kind", DEFAULTS["attention_kind"])
    if name not in ATTENTION_KINDS:
        raise ValueError("config: attention_kind must be one of %s, not %r" % (ATTENTION_KINDS, name))
    return kinds.load(name)


def resolve_config(config):
    """Returns a new dict with every default filled in; raises ValueError on a bad config."""
    cfg = OrderedDict()
    kind = attention_kind(config)
    name = config.get("attention_kind", DEFAULTS["attention_kind"])
    for key in REQUIRED:
        if key not in config:
            if key in COMMON_KEYS and key not in kind.USES:
                cfg[key] = COMMON_KEYS[key]
                continue
            raise ValueError("config: missing key %r" % key)
        cfg[key] = int(config[key])
    cfg["kv_heads"] = int(config.get("kv_heads", cfg["num_heads"]))
    for key, value in DEFAULTS.items():
        cfg[key] = config.get(key, value)
    for key, value in KIND_DEFAULTS.items():
        if key in config or not getattr(kind, "COMMON_KEYS_WHEN_GIVEN", False):
            cfg[key] = config.get(key, value)
    for key, unused in COMMON_KEYS.items():
        value = cfg[key] if key in cfg else config.get(key, unused)
        if key not in kind.USES and (type(value) is not type(unused) or value != unused):
            raise ValueError(_NOT_USED[key] % {"kinds": kinds.names_using(key), "kind": name})
    kind.resolve(config, cfg)
    if "rotary" in config:
        cfg["rotary"] = config["rotary"]
        if cfg["rotary"] not in ROTARY_KINDS:
            raise ValueError("config: rotary must be one of %s" % (ROTARY_KINDS,))
        if cfg["rotary"] != "none" and cfg["head_dim"] % 2:
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
        if key in COMMON_KEYS and key not in kind.USES:
            continue  # 0, checked above
        if cfg[key] <= 0:
            raise ValueError("config: %s must be positive" % key)
    if cfg["kv_heads"] not in (cfg["num_heads"], 1):
        raise ValueError("config: kv_heads must be num_heads or 1")
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


class _DenseAttention(nn.Module):
    """Q/K/V/out linears of an attention module (the kinds' files derive theirs from it)."""

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


def make_attention(cfg, layer_index=0):
    """The attention module of layer layer_index: its kind's (kinds/<kind>.py)."""
    return attention_kind(cfg).make_attention(cfg, layer_index)


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
        dim, n = cfg["dim"], cfg["max_seq_len"]
        eps = float(cfg["norm_eps"])
        self.token_embedding = nn.Embedding(cfg["vocab_size"], dim)
        if cfg["positions"] == "learned":
            self.position_embedding = nn.Embedding(n + int(cfg["position_offset"]), dim)
        if cfg["embedding_norm"]:
            self.embedding_norm = nn.LayerNorm(dim, eps=eps)
        # the kind's tensors of the whole model (not of a layer), in its order
        self.kind_tensor_names = []
        for name, tensor in getattr(self.kind, "model_tensors", lambda cfg: {})(cfg).items():
            setattr(self, name, tensor)
            self.kind_tensor_names.append(name)
        if cfg.get("rotary", "none") != "none":
            self.register_buffer("rotary_table", rotary_table(n, cfg["head_dim"]))
        self.layers = nn.ModuleList([Layer(cfg, i) for i in range(cfg["num_layers"])])
        if cfg["final_norm"]:
            self.final_norm = nn.LayerNorm(dim, eps=eps)
        if cfg["head"] != "none":
            self.head = Head(cfg)

    @property
    def kind(self):
        """The module of this model's attention kind, kinds/<kind>.py."""
        return attention_kind(self.cfg)

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

        A kind with added rows (ADDED_ROWS in its file): the rows of that model tensor are
        appended below the T sequence rows (no scale, position or embedding norm) and
        go through every layer with the sequence, norms and feed-forward included (both are
        row-wise); only the attention mixes the two streams. They are dropped after the last
        layer."""
        cfg = self.cfg
        if ids.dim() != 1:
            raise ValueError("ids must be a 1-D LongTensor [T]")
        T = ids.shape[0]
        if not 1 <= T <= cfg["max_seq_len"]:
            raise ValueError("sequence length %d outside [1, %d]" % (T, cfg["max_seq_len"]))
        if int(ids.min()) < 0 or int(ids.max()) >= cfg["vocab_size"]:
            raise ValueError("token id out of range")
        x = self.embed(ids)
        added = getattr(self.kind, "ADDED_ROWS", None)
        if added is not None:
            x = torch.cat([x, getattr(self, added).to(x.dtype)], dim=0)
        shared = {name: getattr(self, name) for name in self.kind_tensor_names}
        rot = self.rotary_table[:T] if hasattr(self, "rotary_table") else None
        placement = cfg["norm_placement"]
        if placement == "reversible":
            x1 = x2 = x
            for layer in self.layers:
                y1 = x1 + layer.attention(layer.attention_norm(x2), shared, rot)
                y2 = x2 + layer.feed_forward(layer.feed_forward_norm(y1))
                x1, x2 = y1, y2
            x = x1 + x2
            if cfg.get("reversible_merge", "sum") == "mean":
                x = x * 0.5
        else:
            for layer in self.layers:
                if placement == "pre":
                    x = x + layer.attention(layer.attention_norm(x), shared, rot)
                    x = x + layer.feed_forward(layer.feed_forward_norm(x))
                else:
                    x = layer.attention_norm(x + layer.attention(x, shared, rot))
                    x = layer.feed_forward_norm(x + layer.feed_forward(x))
        if added is not None:
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

    Linear weights: normal, std = clamp(1/sqrt(fan_in), *weight_std); embeddings: normal, std
    embed_std (positions half of it); norm weights 1 + 0.1 N; the kind's own tensors: as its
    init_value says (kinds/<kind>.py; projections: normal, std proj_std); every other bias
    (norm, linear, projection, convolution) 0.1 N.
    """
    kind = getattr(model, "kind", None)
    kind_value = getattr(kind, "init_value", None) or (lambda name, noise, embed_std, proj_std: None)
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
            elif (own := kind_value(name, noise, embed_std, proj_std)) is not None:
                val = own
            elif leaf.endswith("_bias"):
                val = 0.1 * noise
            else:
                raise ValueError("init_random: the attention kind gives no value to %s" % name)
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
