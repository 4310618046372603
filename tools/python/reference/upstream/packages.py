# SPDX-License-Identifier: Apache-2.0
"""The upstream libraries themselves, as PyPI ships them (tools/python/reference/upstream/requirements.txt,
installed by scripts/upstream-venv.sh into build-upstream/venv): their constructors by case, the
config.json each case writes, and the eval-mode float64 forwards the goldens record.

What is not plain upstream use here, each a way of calling upstream's code:
- reformer-pytorch draws new LSH rotations (torch.randn) at every forward pass. `fixed_rotations`
  makes those draws return the rotations linfer-convert fixes at conversion (`rotations`, the
  generator of tools/convert/layouts/reformer.cc reformer_rotations), layer by layer.
- linformer-pytorch (tatp22) asserts T == input_size. Shorter inputs are linfer's extension:
  `tatp22_for_length` runs upstream's forward on a copy whose E/F Linears keep their first T input
  columns (bias unchanged). Only T = n is upstream behaviour.
- Hugging Face models get an explicit global_attention_mask (Longformer), so that the
  classifier's automatic global CLS token is the case's choice.
- Longformer's attention asks for its softmax in float32 (dtype=torch.float32, "for numerical
  stability") even in a float64 model; `model_dtype_softmax` computes it in the model's float64,
  as every other reference here is (that float32 rounding moves the logits by up to 2e-6 of their
  scale, beyond the 1e-6 the checks allow).
- BigBirdModel switches itself to attention_type "original_full" for good (set_attention_type)
  the first time it sees an input of at most (5 + 2 R) b tokens, so a model that ran a short input
  runs every later one with full attention. `forward` restores the attention type after each call:
  every reference is the forward of a model as loaded."""

import contextlib
import copy
import inspect
import math
import warnings

import numpy as np
import torch
from torch import nn

# linformer-pytorch imports matplotlib, which warns about Debian's mpl_toolkits beside the venv's
warnings.filterwarnings("ignore", message="Unable to import Axes3D")

import linformer as lucidrains  # lucidrains/linformer
import linformer_pytorch as tatp22  # tatp22/linformer-pytorch
import performer_pytorch
import reformer_pytorch
import transformers

transformers.logging.set_verbosity_error()  # no notes on padding or BigBird's switch to full attention
from linformer_pytorch.linformer_pytorch import LinearAttentionHead

VERSIONS = {
    "linformer": "0.2.3",
    "linformer-pytorch": "0.19.3",
    "performer-pytorch": "1.1.4",
    "reformer-pytorch": "1.4.4",
    "transformers": "4.40.2",
}


def check_versions():
    """Refuses to make references from other versions than the pinned ones."""
    from importlib.metadata import version

    for name, want in VERSIONS.items():
        have = version(name)
        if have != want:
            raise SystemExit("upstream package %s is %s, the references need %s "
                             "(bash scripts/upstream-venv.sh)" % (name, have, want))


def constructor_config(cls, given, keys=None):
    """Every constructor argument of cls (or only `keys`) under its own name, defaults filled in."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    full = {p.name: given[p.name] if p.name in given else p.default for p in params
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    if keys is None:
        return full
    return {k: full[k] for k in keys}


# performer-pytorch: the constructor arguments linfer converts (the others, such as
# local_attn_heads or kernel_fn, keep their defaults and are refused by the converter when set).
PERFORMER_KEYS = ["num_tokens", "max_seq_len", "dim", "depth", "heads", "dim_head", "causal", "ff_mult",
                  "nb_features", "reversible", "generalized_attention", "tie_embed", "rotary_position_emb",
                  "qkv_bias", "attn_out_bias"]
PERFORMER_BARE_KEYS = ["dim", "depth", "heads", "dim_head", "causal", "ff_mult", "nb_features", "reversible",
                       "generalized_attention", "qkv_bias", "attn_out_bias"]

# Hugging Face config.json keys that are not configuration arguments
HF_NOT_ARGS = ("model_type", "global_positions")


def build(case):
    """Returns (model, config dict, max_len n, vocab size or None, output kind) for every layout
    but fairseq's (fairseq is not installable: see tools/python/README.md)."""
    a, layout = case["args"], case["layout"]
    if layout == "lucidrains":
        cls = getattr(lucidrains, case["cls"])
        vocab = a.get("num_tokens")
        return cls(**a), constructor_config(cls, a), a["seq_len"], vocab, "lm logits" if vocab else "hidden"
    if layout == "tatp22":
        cls = tatp22.LinformerLM
        return cls(**a), constructor_config(cls, a), a["input_size"], a["num_tokens"], "lm logits"
    if layout == "performer":
        cls = getattr(performer_pytorch, case["cls"])
        if case["cls"] == "PerformerLM":
            config = constructor_config(cls, a, PERFORMER_KEYS)
        else:  # Performer takes embeddings of any length: config.json says the longest
            config = dict(constructor_config(cls, a, PERFORMER_BARE_KEYS), max_seq_len=case["n"])
        vocab = a.get("num_tokens")
        return cls(**a), config, config["max_seq_len"], vocab, "lm logits" if vocab else "hidden"
    if layout == "reformer":
        cls = getattr(reformer_pytorch, case["cls"])
        real = {k: v for k, v in a.items() if k not in ("rotation_seed", "max_seq_len") or
                (k == "max_seq_len" and case["cls"] == "ReformerLM")}
        config = constructor_config(cls, real)
        config["pkm_layers"] = list(config["pkm_layers"])
        if case["cls"] == "Reformer":  # not upstream's: the fixed rotations' extent
            config["max_seq_len"] = a.get("max_seq_len")
        config["rotation_seed"] = a.get("rotation_seed", 0)  # not upstream's: the fixed rotations' seed
        if real.get("ff_activation") is not None:  # upstream takes the module class; config.json its name
            real["ff_activation"] = {"relu": nn.ReLU, "gelu": nn.GELU}[real["ff_activation"]]
        vocab = a.get("num_tokens")
        return cls(**real), config, a.get("max_seq_len"), vocab, "lm logits" if vocab else "hidden"
    if layout in ("longformer", "bigbird"):
        hf_args = {k: v for k, v in a.items() if k not in HF_NOT_ARGS}
        if "num_labels" in case:
            hf_args["num_labels"] = case["num_labels"]
        config_cls = transformers.LongformerConfig if layout == "longformer" else transformers.BigBirdConfig
        model = getattr(transformers, case["cls"])(config_cls(**hf_args))
        if case.get("position_ids"):  # saved as transformers < 4.31 did (a persistent buffer)
            emb = model.base_model.embeddings
            emb.register_buffer("position_ids", emb.position_ids, persistent=True)
        out = ("class logits" if case["cls"].endswith("SequenceClassification") else
               "lm logits" if case["cls"].endswith("MaskedLM") else "hidden")
        # Longformer's positions start at pad_token_id + 1; BigBird's at 0
        n = a["max_position_embeddings"] - (a.get("pad_token_id", 1) + 1 if layout == "longformer" else 0)
        return model, dict(a), n, a["vocab_size"], out
    raise ValueError("no upstream package for layout " + layout)


# ------------------------------------------------------------------------ reformer rotations

_M64 = (1 << 64) - 1


def rotations(seed, layer, shape):
    """float32 array of `shape` (row-major): splitmix64 from state seed * 2^32 + layer, each value
    sqrt(-2 ln u1) cos(2 pi u2), u1 = (a + 1) 2^-53, u2 = b 2^-53 for the top 53 bits a, b of two
    successive outputs (tools/convert/layouts/reformer.cc reformer_rotations)."""
    state = ((int(seed) << 32) + int(layer)) & _M64

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    out = np.empty(int(np.prod(shape)), dtype=np.float32)
    unit = 1.0 / 9007199254740992.0
    for i in range(out.size):
        u1 = ((nxt() >> 11) + 1) * unit
        u2 = (nxt() >> 11) * unit
        out[i] = math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)
    return out.reshape(shape)


def half_buckets(n, bucket_size):
    return -(-n // (2 * bucket_size))


def reformer_dims(config):
    """(depth, n_hashes, dim_head, half) of a reformer case's fixed rotations."""
    dh = config["dim_head"] or config["dim"] // config["heads"]
    return config["depth"], config["n_hashes"], dh, half_buckets(config["max_seq_len"], config["bucket_size"])


@contextlib.contextmanager
def fixed_rotations(config):
    """Within the block, upstream's LSH hashing (LSHAttention.hash_vectors, which calls
    torch.randn((1, dim_head, n_hashes, n_buckets // 2))) gets layer i's fixed rotations, layer i
    being the i-th draw of a forward pass. Yields the draw counter (a list of one int)."""
    depth, R, dh, half = reformer_dims(config)
    rot = [torch.from_numpy(rotations(config.get("rotation_seed", 0), i, (R, dh, half))) for i in range(depth)]
    calls = [0]
    real_randn = torch.randn

    def randn(*shape, dtype=None, device=None, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        layer = calls[0] % depth
        calls[0] += 1
        if len(shape) != 4 or shape[:3] != (1, dh, R) or shape[3] > half or kwargs:
            raise AssertionError("unexpected torch.randn%s during a reformer forward" % (shape,))
        r = rot[layer][:, :, : shape[3]].permute(1, 0, 2)[None]  # [1, f, n_hashes, i]
        return r.to(dtype or torch.get_default_dtype()).contiguous()

    torch.randn = randn
    try:
        yield calls
    finally:
        torch.randn = real_randn


# ------------------------------------------------------------------------ tatp22 short inputs


def tatp22_for_length(model, T):
    """A copy of a linformer-pytorch LinformerLM that runs inputs of T <= input_size tokens: every
    E/F Linear keeps its first T input columns (shared ones stay shared), input_size becomes T."""
    m = copy.deepcopy(model)
    if T == m.input_size:
        return m
    cut = {}

    def short(lin):
        if id(lin) not in cut:
            new = nn.Linear(T, lin.out_features, bias=lin.bias is not None).to(lin.weight.dtype)
            with torch.no_grad():
                new.weight.copy_(lin.weight[:, :T])
                if lin.bias is not None:
                    new.bias.copy_(lin.bias)
            cut[id(lin)] = new
        return cut[id(lin)]

    for mod in m.modules():
        if isinstance(mod, LinearAttentionHead):
            mod.E, mod.F = short(mod.E), short(mod.F)
        if hasattr(mod, "input_size"):
            mod.input_size = T
    return m


# ------------------------------------------------------------------------ forwards


@contextlib.contextmanager
def model_dtype_softmax():
    """Within the block, softmax(x, dim, dtype=torch.float32) of a float64 x stays float64."""
    functional = torch.nn.functional
    real_softmax = functional.softmax

    def softmax(x, dim=None, _stacklevel=3, dtype=None):
        if dtype == torch.float32 and x.dtype == torch.float64:
            dtype = None
        return real_softmax(x, dim=dim, dtype=dtype)

    functional.softmax = softmax
    try:
        yield
    finally:
        functional.softmax = real_softmax


def forward(model, case, config, inp):
    """Eval-mode forward of `model` (already in the wanted dtype) on one input without batch axis
    (token ids, or [T, dim] embeddings as a tensor); returns the output with its batch axis."""
    layout = case["layout"]
    with torch.no_grad():
        if layout == "tatp22":
            return tatp22_for_length(model, len(inp))(torch.as_tensor(inp)[None])
        if layout == "reformer":
            x = inp[None] if torch.is_tensor(inp) else torch.as_tensor(inp)[None]
            with fixed_rotations(config) as calls:
                out = model(x)
            assert calls[0] == config["depth"], calls  # one draw per layer
            return out
        if layout in ("longformer", "bigbird"):
            ids = torch.as_tensor(inp)[None]
            kw = dict(attention_mask=torch.ones_like(ids))
            if layout == "longformer":
                g = torch.zeros_like(ids)
                g[:, : case.get("global_positions", 0)] = 1
                kw["global_attention_mask"] = g
            base = model.base_model
            kind = getattr(base, "attention_type", None)  # BigBird's, which its forward may change
            try:
                with model_dtype_softmax():
                    out = model(input_ids=ids, **kw)
            finally:
                if kind is not None:
                    base.set_attention_type(kind)
            return out.logits if hasattr(out, "logits") else out.last_hidden_state
        x = inp[None] if torch.is_tensor(inp) else torch.as_tensor(inp)[None]
        return model(x)
