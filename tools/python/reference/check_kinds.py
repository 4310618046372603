# SPDX-License-Identifier: Apache-2.0
"""Independent check of linfer_ref.py and of tests/golden_kinds: every attention kind, each by the
numpy forward of its file kinds/<kind>.py (written from docs/converter.md, sharing no code with
the kind's PyTorch module).

    /usr/bin/python3 tools/python/reference/check_kinds.py [GOLDEN_KINDS_DIR]     (default: tests/golden_kinds)

For every case in cases.txt it
  1. reads the checkpoint with check_ref.py's parsers and checks the embedded config equals
     config.json;
  2. checks the tensor names and shapes against the docs/converter.md table, derived here from the
     config: the embeddings, norms, linears and head here, the kind's own tensors from its file
     (numpy_shapes, KEY_LINEAR);
  3. recomputes every out_<T>.npy with a plain-numpy float64 forward written from the "Semantics"
     section of docs/converter.md (row and head loops; the kind's numpy_attention) and requires
     agreement within 1e-6 (relative to max(1, |ref|));
  4. loads the same tensors into linfer_ref.LinferEncoder (strict) and requires agreement with the
     numpy forward within 1e-9;
  5. runs the kind's own check of the case where it has one (numpy_case_verdict).
Then, for causal cases (of a kind with CAUSAL_PREFIX): the module run on every prefix of ids_<n>
gives the first t rows of the full run (1e-12), and where the kind has a token-by-token numpy run
carrying only its state (numpy_stream), it reproduces out_<n>.npy. Finally the kinds' further
checks of a case (numpy_extra_check: e.g. a kind against another where the two are the same
function). Every kind of the table but the default one (tests/golden's, check_ref.py) must
have a case.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_ref as cr  # noqa: E402  (readers)
import kinds  # noqa: E402
from check_common import Stats, embed, feed_forward, head, layer_norm  # noqa: E402

DEFAULTS = dict(cr.DEFAULTS, causal=False)


def full_config(c):
    cfg = dict(DEFAULTS)
    cfg.update(c)
    cfg.setdefault("kv_heads", cfg["num_heads"])
    return cfg


def expected_shapes(cfg, sd):
    d, H, hd, kvh = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["kv_heads"]
    n, V = cfg["max_seq_len"], cfg["vocab_size"]
    kind = kinds.load(cfg["attention_kind"])
    qkv_bias = "layers.0.attention.q.bias" in sd
    model_own, layer_own = getattr(kind, "numpy_shapes", lambda cfg, qkv_bias: ({}, {}))(cfg, qkv_bias)
    s = {"token_embedding.weight": (V, d)}
    if cfg["positions"] == "learned":
        s["position_embedding.weight"] = (n + cfg["position_offset"], d)
    if cfg["embedding_norm"]:
        s["embedding_norm.weight"] = s["embedding_norm.bias"] = (d,)
    s.update(model_own)
    if cfg.get("rotary", "none") != "none":
        s["rotary_table"] = (n, hd)
    for i in range(cfg["num_layers"]):
        p = "layers.%d." % i
        for name, shape in (("q", (H * hd, d)), ("k", (kvh * hd, d)), ("v", (kvh * hd, d)), ("out", (d, H * hd))):
            if name == "k" and not getattr(kind, "KEY_LINEAR", True):
                continue  # the queries are the keys
            s[p + "attention.%s.weight" % name] = shape
            if qkv_bias:
                s[p + "attention.%s.bias" % name] = (shape[0],)
        s.update((p + "attention." + name, shape) for name, shape in layer_own.items())
        s[p + "attention_norm.weight"] = s[p + "attention_norm.bias"] = (d,)
        s[p + "feed_forward.fc1.weight"] = (cfg["ff_dim"], d)
        s[p + "feed_forward.fc1.bias"] = (cfg["ff_dim"],)
        s[p + "feed_forward.fc2.weight"] = (d, cfg["ff_dim"])
        s[p + "feed_forward.fc2.bias"] = (d,)
        s[p + "feed_forward_norm.weight"] = s[p + "feed_forward_norm.bias"] = (d,)
    if cfg["final_norm"]:
        s["final_norm.weight"] = s["final_norm.bias"] = (d,)
    if cfg["head"] != "none":
        if "head.dense.weight" in sd:
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
    """Streams are kept apart here: xs (T sequence rows) and, for a kind with added rows
    (ADDED_ROWS), xt (their rows)."""
    eps = float(cfg["norm_eps"])
    kind = kinds.load(cfg["attention_kind"])
    if not hasattr(kind, "numpy_attention"):
        raise ValueError("kinds/%s.py has no independent numpy forward (numpy_attention)" % cfg["attention_kind"])
    added = getattr(kind, "ADDED_ROWS", None)
    gt = added is not None

    def ln(name, v):
        return layer_norm(v, sd[name + ".weight"], sd[name + ".bias"], eps)

    def attn(p, s, t):  # -> (sequence output, added rows' output or None)
        if gt:
            return kind.numpy_attention(cfg, sd, p + "attention.", s, t)
        return kind.numpy_attention(cfg, sd, p + "attention.", s), None

    xs = embed(cfg, sd, ids)
    xt = sd[added].copy() if gt else None
    L = cfg["num_layers"]
    place = cfg["norm_placement"]
    if place == "reversible":
        s1, s2, t1, t2 = xs, xs, xt, xt
        for i in range(L):
            p = "layers.%d." % i
            As, At = attn(p, ln(p + "attention_norm", s2), ln(p + "attention_norm", t2) if gt else None)
            s1n = s1 + As
            s2 = s2 + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", s1n))
            s1 = s1n
            if gt:
                t1n = t1 + At
                t2 = t2 + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", t1n))
                t1 = t1n
        xs = (s1 + s2) * (0.5 if cfg.get("reversible_merge", "sum") == "mean" else 1.0)
    else:
        for i in range(L):
            p = "layers.%d." % i
            if place == "pre":
                As, At = attn(p, ln(p + "attention_norm", xs), ln(p + "attention_norm", xt) if gt else None)
                xs = xs + As
                xs = xs + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", xs))
                if gt:
                    xt = xt + At
                    xt = xt + feed_forward(cfg, sd, p, ln(p + "feed_forward_norm", xt))
            else:
                As, At = attn(p, xs, xt)
                xs = ln(p + "attention_norm", xs + As)
                xs = ln(p + "feed_forward_norm", xs + feed_forward(cfg, sd, p, xs))
                if gt:
                    xt = ln(p + "attention_norm", xt + At)
                    xt = ln(p + "feed_forward_norm", xt + feed_forward(cfg, sd, p, xt))
    return head(cfg, sd, xs)


# ------------------------------------------------------------------------------ driver


def load_case(root, name, ckpt):
    d = os.path.join(root, name)
    file_config = json.load(open(os.path.join(d, "config.json")))
    path = os.path.join(d, ckpt)
    sd, emb_config = cr.read_safetensors(path) if ckpt.endswith(".safetensors") else cr.read_torch(path)
    assert emb_config is not None, "kinds fixtures always embed their config"
    assert emb_config == file_config, "embedded config differs from config.json"
    return d, file_config, sd


def check_case(root, name, ckpt):
    import torch
    import linfer_ref as lr

    d, file_config, sd = load_case(root, name, ckpt)
    cfg = full_config(file_config)
    kind = kinds.load(cfg["attention_kind"])
    got = {k: tuple(v.shape) for k, v in sd.items()}
    want = expected_shapes(cfg, sd)
    assert got == want, "names/shapes differ from the doc table:\n  got  %s\n  want %s" % (
        sorted(set(got.items()) - set(want.items())), sorted(set(want.items()) - set(got.items())))
    if "rotary_table" in sd:  # the angles p * 10000^(-2i/hd), here in float64
        hd, n = cfg["head_dim"], cfg["max_seq_len"]
        ang = np.arange(n)[:, None] * 10000.0 ** (-2.0 * np.arange(hd // 2) / hd)
        assert np.abs(sd["rotary_table"] - np.concatenate([np.sin(ang), np.cos(ang)], 1)).max() < 1e-5

    model = lr.LinferEncoder(file_config).double().eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=True)

    worst_file = worst_mod = 0.0
    Stats.entropy_sum, Stats.rows = 0.0, 0
    if hasattr(kind, "numpy_case_start"):
        kind.numpy_case_start()
    n = cfg["max_seq_len"]
    ts = sorted(int(f[4:-4]) for f in os.listdir(d) if f.startswith("out_"))
    assert ts == sorted({1, 7, n // 2 + 1, n}), ts
    scale = 0.0
    for t in ts:
        ids = [int(v) for v in open(os.path.join(d, "ids_%d.txt" % t)).read().split()]
        assert len(ids) == t
        ref = np.load(os.path.join(d, "out_%d.npy" % t))
        assert ref.dtype == np.float32
        mine = numpy_forward(cfg, sd, ids)
        rows = 1 if cfg["head"] == "classifier" else t
        cols = {"lm": cfg["vocab_size"], "classifier": cfg["num_classes"]}.get(cfg["head"], cfg["dim"])
        assert ref.shape == (rows, cols) == mine.shape, (ref.shape, mine.shape)
        assert np.isfinite(ref).all()
        scale = max(scale, float(np.abs(ref).max()))
        worst_file = max(worst_file, float((np.abs(mine - ref) / np.maximum(1.0, np.abs(mine))).max()))
        with torch.no_grad():
            mod = model(torch.tensor(ids, dtype=torch.long)).numpy()
        worst_mod = max(worst_mod, float((np.abs(mod - mine) / np.maximum(1.0, np.abs(mine))).max()))
    entropy = "%.2f" % (Stats.entropy_sum / Stats.rows) if Stats.rows else "-"
    ok = worst_file <= 1e-6 and worst_mod <= 1e-9
    extra = ""
    if hasattr(kind, "numpy_case_verdict"):
        verdict, extra = kind.numpy_case_verdict()
        ok &= verdict
    if cfg["causal"] and getattr(kind, "CAUSAL_PREFIX", True):
        ok &= check_causal(d, cfg, sd, model)
        extra = " causal-prefix+stream ok" if ok else " causal FAIL"
    print("%-32s %-10s %-11s npy-vs-numpy %.1e  module-vs-numpy %.1e  |out| %.2f  attn-entropy %s%s  %s" % (
        name, cfg["attention_kind"], ckpt.split(".")[-1], worst_file, worst_mod, scale, entropy, extra,
        "ok" if ok else "FAIL"))
    return ok


def check_causal(d, cfg, sd, model):
    """Prefix property of the module and the token-by-token recurrent run."""
    import torch

    n = cfg["max_seq_len"]
    ids = [int(v) for v in open(os.path.join(d, "ids_%d.txt" % n)).read().split()]
    with torch.no_grad():
        full = model(torch.tensor(ids, dtype=torch.long)).numpy()
        worst = 0.0
        for t in range(1, n + 1):
            pre = model(torch.tensor(ids[:t], dtype=torch.long)).numpy()
            worst = max(worst, float(np.abs(pre - full[:t]).max()))
    kind = kinds.load(cfg["attention_kind"])
    if not hasattr(kind, "numpy_stream"):  # (a token-by-token run of the runtime: test_golden's step test)
        print("  causal: prefix runs vs full run max |diff| %.1e (t = 1..%d)" % (worst, n))
        return worst <= 1e-12
    stream = kind.numpy_stream(cfg, sd, ids)
    ref = np.load(os.path.join(d, "out_%d.npy" % n))
    stream_err = float((np.abs(stream - ref) / np.maximum(1.0, np.abs(stream))).max())
    print("  causal: prefix runs vs full run max |diff| %.1e (t = 1..%d); token-by-token numpy run vs out_%d %.1e"
          % (worst, n, n, stream_err))
    return worst <= 1e-12 and stream_err <= 1e-6


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "tests", "golden_kinds")
    root = os.path.abspath(root)
    try:
        kinds.load_all()
    except ValueError as e:
        sys.exit("check_kinds: %s" % e)
    cases = [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "cases.txt")) if line.strip()]
    results = [check_case(root, name, ckpt) for name, ckpt in cases]
    covered = {json.load(open(os.path.join(root, c[0], "config.json")))["attention_kind"] for c in cases}
    want = set(kinds.NAMES) - {DEFAULTS["attention_kind"]}  # the default kind: tests/golden's
    assert covered == want, "kinds with no case: %s; kinds with cases not expected: %s" % (
        sorted(want - covered), sorted(covered - want))
    assert any(json.load(open(os.path.join(root, c[0], "config.json"))).get("causal") for c in cases)
    for name, ckpt in cases:
        d, file_config, sd = load_case(root, name, ckpt)
        extra_check = getattr(kinds.load(file_config["attention_kind"]), "numpy_extra_check", None)
        verdict = extra_check(name, d, file_config, sd) if extra_check else None
        if verdict is not None:
            results.append(verdict)
    if not all(results):
        print("check_kinds: FAILED")
        sys.exit(1)
    print("check_kinds: all %d checks ok" % len(results))


if __name__ == "__main__":
    main()
