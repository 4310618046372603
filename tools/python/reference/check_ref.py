# SPDX-License-Identifier: Apache-2.0
"""Independent check of linfer_ref.py and of the golden fixtures.

    /usr/bin/python3 tools/python/reference/check_ref.py [GOLDEN_DIR]     (default: tests/golden)

For every case in cases.txt it
  1. reads the checkpoint back from disk with its own parser (safetensors: header, alignment,
     contiguous offsets; torch.save: torch.load(weights_only=True), i.e. a restricted unpickler),
     and checks the embedded config equals config.json (bare state_dicts carry none);
  2. checks the tensor names and shapes against the docs/converter.md table, derived here from the
     config without using linfer_ref;
  3. recomputes every out_<T>.npy with a plain-numpy float64 forward written from
     docs/converter.md (per-head / per-row loops, no torch; the attention: numpy_attention of
     kinds/linformer.py) and requires agreement within 1e-6
     (relative to max(1, |ref|));
  4. loads the same tensors into linfer_ref.LinferEncoder (strict key match), runs it in float64
     and requires agreement with the numpy forward within 1e-9.
It also prints the mean attention entropy so degenerate (saturated or uniform) fixtures stand out.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_file  # noqa: E402
from check_common import Stats, embed, feed_forward, head, layer_norm  # noqa: E402
from kinds import linformer  # noqa: E402  (its numpy forward)

DEFAULTS = {
    "attention_kind": "linformer", "norm_placement": "pre", "embedding_norm": False,
    "final_norm": False, "norm_eps": 1e-5, "positions": "learned", "position_offset": 0,
    "sinusoidal_base": 10000.0, "embedding_scale": 1.0, "projection_placement": "after",
    "projection_sharing": "headwise", "activation": "gelu", "head": "none",
    "head_activation": "gelu", "pooling": "first", "num_classes": 0,
}


def full_config(c):
    cfg = dict(DEFAULTS)
    cfg.update(c)
    cfg.setdefault("kv_heads", cfg["num_heads"])
    return cfg


# ------------------------------------------------------------------------------ reading files


def read_safetensors(path):
    """An F32 checkpoint as float64 arrays, and its embedded config (None without one)."""
    arrays, meta = safetensors_file.read_safetensors(path, dtypes=("F32",), aligned=True)
    tensors = {name: a.astype(np.float64) for name, a in arrays.items()}
    config = json.loads(meta["linfer_config"]) if "linfer_config" in meta else None
    return tensors, config


def read_torch(path):
    import torch

    obj = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(obj, dict) and "state_dict" in obj and "linfer_config" in obj:
        config = json.loads(obj["linfer_config"])
        sd = obj["state_dict"]
    else:
        config, sd = None, obj
    return {k: v.numpy().astype(np.float64) for k, v in sd.items()}, config


# ------------------------------------------------------------------------------ expected names


def expected_shapes(cfg, extra):
    """Names and shapes from the docs/converter.md table. `extra` holds presence flags read
    from the checkpoint (qkv/proj/head-transform biases are optional in the layout)."""
    d, H, hd, kvh = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"]
    n, k, V = cfg["max_seq_len"], cfg["proj_len"], cfg["vocab_size"]
    s = {"token_embedding.weight": (V, d)}
    if cfg["positions"] == "learned":
        s["position_embedding.weight"] = (n + cfg["position_offset"], d)
    if cfg["embedding_norm"]:
        s["embedding_norm.weight"] = s["embedding_norm.bias"] = (d,)
    sharing = cfg["projection_sharing"]
    if sharing == "layerwise":
        s["shared_proj"] = (k, n)
        if extra["proj_bias"]:
            s["shared_proj_bias"] = (k,)
    for i in range(cfg["num_layers"]):
        p = "layers.%d." % i
        for name, shape in (("q", (H * hd, d)), ("k", (kvh * hd, d)), ("v", (kvh * hd, d)), ("out", (d, H * hd))):
            s[p + "attention.%s.weight" % name] = shape
            if extra["qkv_bias"]:
                s[p + "attention.%s.bias" % name] = (shape[0],)
        pshape = (H, k, n) if sharing == "none" else (k, n)
        bshape = (H, k) if sharing == "none" else (k,)
        if sharing != "layerwise":
            s[p + "attention.proj_k"] = pshape
            if extra["proj_bias"]:
                s[p + "attention.proj_k_bias"] = bshape
        if sharing in ("none", "headwise"):
            s[p + "attention.proj_v"] = pshape
            if extra["proj_bias"]:
                s[p + "attention.proj_v_bias"] = bshape
        s[p + "attention_norm.weight"] = s[p + "attention_norm.bias"] = (d,)
        s[p + "feed_forward.fc1.weight"] = (cfg["ff_dim"], d)
        s[p + "feed_forward.fc1.bias"] = (cfg["ff_dim"],)
        s[p + "feed_forward.fc2.weight"] = (d, cfg["ff_dim"])
        s[p + "feed_forward.fc2.bias"] = (d,)
        s[p + "feed_forward_norm.weight"] = s[p + "feed_forward_norm.bias"] = (d,)
    if cfg["final_norm"]:
        s["final_norm.weight"] = s["final_norm.bias"] = (d,)
    if cfg["head"] != "none":
        if extra["head_transform"]:
            s["head.dense.weight"] = (d, d)
            s["head.dense.bias"] = (d,)
            if cfg["head"] == "lm":
                s["head.norm.weight"] = s["head.norm.bias"] = (d,)
        c = V if cfg["head"] == "lm" else cfg["num_classes"]
        s["head.out.weight"] = (c, d)
        s["head.out.bias"] = (c,)
    return s


# ------------------------------------------------------------------------------ numpy forward

def numpy_forward(cfg, sd, ids):
    eps = float(cfg["norm_eps"])
    x = embed(cfg, sd, ids)

    def ln(name, v):
        return layer_norm(v, sd[name + ".weight"], sd[name + ".bias"], eps)

    L = cfg["num_layers"]
    if cfg["norm_placement"] == "reversible":
        x1, x2 = x, x
        for i in range(L):
            p = "layers.%d." % i
            y1 = x1 + linformer.numpy_attention(cfg, sd, p + "attention.", ln(p + "attention_norm", x2))
            y2 = x2 + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", y1))
            x1, x2 = y1, y2
        x = x1 + x2
        if cfg.get("reversible_merge", "sum") == "mean":
            x = x * 0.5
    else:
        for i in range(L):
            p = "layers.%d." % i
            if cfg["norm_placement"] == "pre":
                x = x + linformer.numpy_attention(cfg, sd, p + "attention.", ln(p + "attention_norm", x))
                x = x + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", x))
            else:
                x = ln(p + "attention_norm", x + linformer.numpy_attention(cfg, sd, p + "attention.", x))
                x = ln(p + "feed_forward_norm", x + feed_forward(cfg, sd, p, x))
    return head(cfg, sd, x)  # the final norm and the head


# ------------------------------------------------------------------------------ driver


def check_case(root, name, ckpt):
    d = os.path.join(root, name)
    file_config = json.load(open(os.path.join(d, "config.json")))
    path = os.path.join(d, ckpt)
    if ckpt.endswith(".safetensors"):
        sd, emb_config = read_safetensors(path)
    else:
        sd, emb_config = read_torch(path)
    kind = "bare" if emb_config is None else "embedded"
    if emb_config is not None:
        assert emb_config == file_config, "embedded config differs from config.json"
    cfg = full_config(file_config)
    extra = {
        "qkv_bias": "layers.0.attention.q.bias" in sd,
        "proj_bias": any(k.endswith("proj_bias") or k.endswith("proj_k_bias") for k in sd),
        "head_transform": "head.dense.weight" in sd,
    }
    assert extra["qkv_bias"] == file_config.get("qkv_bias", True)
    assert extra["proj_bias"] == file_config.get("proj_bias", False)
    assert extra["head_transform"] == file_config.get("head_transform", False)
    want = expected_shapes(cfg, extra)
    got = {k: tuple(v.shape) for k, v in sd.items()}
    assert got == want, "names/shapes differ from the doc table:\n  got  %s\n  want %s" % (
        sorted(set(got.items()) - set(want.items())), sorted(set(want.items()) - set(got.items())))

    import torch
    import linfer_ref as lr

    model = lr.LinferEncoder(file_config).double().eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=True)

    worst_file = worst_mod = 0.0
    Stats.entropy_sum, Stats.rows = 0.0, 0
    ts = sorted(int(f[4:-4]) for f in os.listdir(d) if f.startswith("out_"))
    n = cfg["max_seq_len"]
    assert ts == sorted({1, 7, n // 2 + 1, n}), ts
    for t in ts:
        ids = [int(v) for v in open(os.path.join(d, "ids_%d.txt" % t)).read().split()]
        assert len(ids) == t
        ref = np.load(os.path.join(d, "out_%d.npy" % t))
        assert ref.dtype == np.float32
        mine = numpy_forward(cfg, sd, ids)
        rows = 1 if cfg["head"] == "classifier" else t
        cols = {"lm": cfg["vocab_size"], "classifier": cfg["num_classes"]}.get(cfg["head"], cfg["dim"])
        assert ref.shape == (rows, cols) == mine.shape, (ref.shape, mine.shape)
        err = np.abs(mine - ref) / np.maximum(1.0, np.abs(mine))
        worst_file = max(worst_file, float(err.max()))
        with torch.no_grad():
            mod = model(torch.tensor(ids, dtype=torch.long)).numpy()
        worst_mod = max(worst_mod, float((np.abs(mod - mine) / np.maximum(1.0, np.abs(mine))).max()))
    entropy = Stats.entropy_sum / max(1, Stats.rows)
    ok = worst_file <= 1e-6 and worst_mod <= 1e-9
    print("%-45s %-8s %-12s npy-vs-numpy %.1e  module-vs-numpy %.1e  attn-entropy %.2f  %s" % (
        name, kind, ckpt.split(".")[-1], worst_file, worst_mod, entropy, "ok" if ok else "FAIL"))
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "tests", "golden")
    root = os.path.abspath(root)
    cases = [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "cases.txt")) if line.strip()]
    results = [check_case(root, name, ckpt) for name, ckpt in cases]
    if not all(results):
        print("check_ref: FAILED")
        sys.exit(1)
    print("check_ref: all %d cases ok" % len(results))


if __name__ == "__main__":
    main()
