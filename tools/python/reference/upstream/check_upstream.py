# SPDX-License-Identifier: Apache-2.0
"""Independent checks of tests/golden_layouts/ and of the upstream packages they come from.

    build-upstream/venv/bin/python tools/python/reference/upstream/check_upstream.py [GOLDEN_LAYOUTS_DIR]

1. Documented facts (the upstream sources and their examples), on freshly built models:
   lucidrains' example LinformerLM(256, 64, 128, 2, k=32, heads=4) has 34 keys and 157,184
   values, share_kv 30 keys, one_kv_head / dim_head / reversible shapes and prefixes; tatp22's
   example LinformerLM(256, 128, 64, dim_k=32, dim_ff=128, nhead=4, depth=2) has 80 keys in every
   sharing mode and 80/56/52/50 storages (none/headwise/kv/layerwise) in the saved zip; fairseq's
   linformer_roberta_base shapes (2 layers built) and the key duplication of layerwise sharing.
2. For every case in cases.tsv: reads the checkpoint (own safetensors parser; torch.load), lists
   the pickle GLOBALs, checks key names, order and shapes against lists derived here from the
   config (not from any model), and checks storage aliasing groups exactly.
3. Recomputes every out_<T>.npy with a plain-numpy float64 forward written from the notes (per-head
   loops, no torch) and requires agreement within 1e-6 (relative to max(1, |ref|)); then loads the
   tensors into the upstream package's model (fairseq: the re-creation; strict) and requires
   agreement with numpy within 1e-9.

Run it with the upstream packages' interpreter: build-upstream/venv/bin/python (scripts/upstream-venv.sh).
   Prints the mean normalised attention entropy so degenerate fixtures stand out.
"""

import argparse
import copy
import io
import json
import math
import os
import pickletools
import sys
import zipfile

sys.dont_write_bytecode = True

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from upstream import fairseq_linformer as fq  # noqa: E402  (fairseq: the re-creation)
from upstream import packages as up  # noqa: E402  (the others: the PyPI packages)
import safetensors_file  # noqa: E402

luc, tat = up.lucidrains, up.tatp22


def upstream_model(layout, cls, config, **case):
    """The upstream package's model for a case's config.json (random weights, to be loaded)."""
    args = dict(config)
    if layout == "performer" and cls == "Performer":
        case["n"] = args.pop("max_seq_len")
    return up.build(dict(case, layout=layout, cls=cls, args=args))[0]


def upstream_out(model, layout, config, inp, **case):
    """The float64 model's output for one input (ids, or a float64 [T, dim] tensor), numpy, without
    the batch axis (class logits keep theirs: [1, labels])."""
    out = up.forward(model, dict(case, layout=layout), config, inp)
    return (out if out.dim() == 2 else out[0]).numpy()

# ------------------------------------------------------------------------------ numpy primitives

_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def relu(x):
    return np.maximum(x, 0.0)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACT = {"gelu": gelu, "relu": relu}
HF_ACT = {"gelu": gelu, "relu": relu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh}  # transformers' ACT2FN


def layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class Entropy:
    def __init__(self):
        self.values = []

    def add(self, P):
        if P.shape[-1] > 1:
            self.values.append(float((-(P * np.log(P + 1e-300)).sum(-1) / math.log(P.shape[-1])).mean()))

    def mean(self):
        return float(np.mean(self.values)) if self.values else float("nan")


def attend(Q, K, V, heads, hd, kv_heads, ent):
    """Q [T, heads*hd]; K, V [k, kv_heads*hd]. Head h reads kv head h (or 0 if kv_heads == 1)."""
    outs = []
    for h in range(heads):
        g = h if kv_heads == heads else 0
        q, kk, vv = Q[:, h * hd:(h + 1) * hd], K[:, g * hd:(g + 1) * hd], V[:, g * hd:(g + 1) * hd]
        P = softmax(q @ kk.T / math.sqrt(hd))
        ent.add(P)
        outs.append(P @ vv)
    return np.concatenate(outs, axis=1)


def lin(x, W, name, bias=True):
    y = x @ W[name + ".weight"].T
    return y + W[name + ".bias"] if bias else y


# ------------------------------------------------------------------------------ numpy forwards


def np_lucidrains(W, c, inp, ent):
    lm = "num_tokens" in c
    d, H, n = c["dim"], c["heads"], c["seq_len"]
    hd = c["dim_head"] or d // H
    kvh = 1 if c["one_kv_head"] else H
    if lm:
        T = len(inp)
        x = W["token_emb.weight"][inp] + W["pos_emb.weight"][:T]
    else:
        x = inp.astype(np.float64)
        T = x.shape[0]
    pre = "linformer.net." if lm else "net."

    def attn(h, p):  # projection after to_k/to_v, rows [:T] of the (n, k) parameter
        K = h @ W[p + "to_k.weight"].T
        V = K if c["share_kv"] else h @ W[p + "to_v.weight"].T
        Pk = W[p + "proj_k"][:T]
        Pv = Pk if c["share_kv"] else W[p + "proj_v"][:T]
        o = attend(h @ W[p + "to_q.weight"].T, Pk.T @ K, Pv.T @ V, H, hd, kvh, ent)
        return lin(o, W, p + "to_out")

    def ff(h, p):
        return lin(gelu(lin(h, W, p + "w1")), W, p + "w2")

    def pre_norm(fn, h, p):
        return fn(layer_norm(h, W[p + "norm.weight"], W[p + "norm.bias"]), p + "fn.")

    x1 = x2 = x  # reversible: both halves start as the input
    for i in range(c["depth"]):
        if c["reversible"]:
            a, f = pre + "blocks.%d.f.net." % i, pre + "blocks.%d.g.net." % i
            x1 = x1 + pre_norm(attn, x2, a)
            x2 = x2 + pre_norm(ff, x1, f)
        else:
            a, f = pre + "layers.%d.0." % i, pre + "layers.%d.1." % i
            x = x + pre_norm(attn, x, a)
            x = x + pre_norm(ff, x, f)
    if c["reversible"]:
        x = x1 + x2
    return lin(x, W, "to_logits") if lm else x


def np_fairseq(W, a, inp, head, ent):
    P = "encoder.sentence_encoder."
    T = len(inp)
    C, H = a.encoder_embed_dim, a.encoder_attention_heads
    hd = C // H
    act = ACT[a.activation_fn]
    x = W[P + "embed_tokens.weight"][inp] + W[P + "embed_positions.weight"][np.arange(T) + 2]
    x = layer_norm(x, W[P + "layernorm_embedding.weight"], W[P + "layernorm_embedding.bias"])
    for i in range(a.encoder_layers):
        p = P + "layers.%d." % i
        s = p + "self_attn."
        Ek = W[s + "compress_k.weight"][:, :T]  # (k, T); its bias (layerwise) is never used
        Ev = Ek if a.shared_kv_compressed else W[s + "compress_v.weight"][:, :T]
        Kc = lin(Ek @ x, W, s + "k_proj")  # compress BEFORE k_proj, then + k_proj bias
        Vc = lin(Ev @ x, W, s + "v_proj")
        o = lin(attend(lin(x, W, s + "q_proj"), Kc, Vc, H, hd, H, ent), W, s + "out_proj")
        x = layer_norm(x + o, W[p + "self_attn_layer_norm.weight"], W[p + "self_attn_layer_norm.bias"])
        f = lin(act(lin(x, W, p + "fc1")), W, p + "fc2")
        x = layer_norm(x + f, W[p + "final_layer_norm.weight"], W[p + "final_layer_norm.bias"])
    if head is not None:
        h = "classification_heads.%s." % head
        return lin(np.tanh(lin(x[:1], W, h + "dense")), W, h + "out_proj")
    L = "encoder.lm_head."
    y = layer_norm(act(lin(x, W, L + "dense")), W[L + "layer_norm.weight"], W[L + "layer_norm.bias"])
    return y @ W[L + "weight"].T + W[L + "bias"]


def np_tatp22(W, c, inp, ent):
    T, C, H = len(inp), c["channels"], c["nhead"]
    d = C // H
    i = np.arange(C // 2)
    ang = np.arange(T)[:, None] * (100000.0 ** (-2.0 * i / C))[None, :]
    x = W["to_token_emb.weight"][inp] + np.concatenate([np.sin(ang), np.cos(ang)], axis=1)
    act = ACT[c["activation"]]
    for layer in range(c["depth"]):
        p = "linformer.seq.%d." % (2 * layer)
        outs = []
        for h in range(H):
            Q = x @ W[p + "fn.to_q.%d.weight" % h].T
            K = x @ W[p + "fn.to_k.%d.weight" % h].T
            V = x @ W[p + "fn.to_v.%d.weight" % h].T
            e, f = p + "fn.heads.%d.E." % h, p + "fn.heads.%d.F." % h
            Kp = W[e + "weight"][:, :T] @ K + W[e + "bias"][:, None]  # (k, d): bias per row k
            Vp = W[f + "weight"][:, :T] @ V + W[f + "bias"][:, None]
            Pm = softmax(Q @ Kp.T / math.sqrt(d))
            ent.add(Pm)
            outs.append(Pm @ Vp)
        x = layer_norm(x + lin(np.concatenate(outs, 1), W, p + "fn.w_o"), W[p + "norm.weight"], W[p + "norm.bias"])
        q = "linformer.seq.%d." % (2 * layer + 1)
        x = layer_norm(x + lin(act(lin(x, W, q + "fn.w_1")), W, q + "fn.w_2"), W[q + "norm.weight"], W[q + "norm.bias"])
    return lin(x, W, "to_logits")


# ------------------------------------------------------------------------------ expected keys


def keys_lucidrains(c):
    lm = "num_tokens" in c
    d, H, n, k = c["dim"], c["heads"], c["seq_len"], c["k"]
    hd = c["dim_head"] or d // H
    kv = hd if c["one_kv_head"] else hd * H
    out = []
    if lm:
        out += [("token_emb.weight", (c["num_tokens"], d)), ("pos_emb.weight", (n, d))]
    pre = "linformer.net." if lm else "net."
    for i in range(c["depth"]):
        if c["reversible"]:
            a, f = pre + "blocks.%d.f.net." % i, pre + "blocks.%d.g.net." % i
        else:
            a, f = pre + "layers.%d.0." % i, pre + "layers.%d.1." % i
        out.append((a + "fn.proj_k", (n, k)))
        if not c["share_kv"]:
            out.append((a + "fn.proj_v", (n, k)))
        out += [(a + "fn.to_q.weight", (H * hd, d)), (a + "fn.to_k.weight", (kv, d))]
        if not c["share_kv"]:
            out.append((a + "fn.to_v.weight", (kv, d)))
        out += [(a + "fn.to_out.weight", (d, H * hd)), (a + "fn.to_out.bias", (d,)),
                (a + "norm.weight", (d,)), (a + "norm.bias", (d,)),
                (f + "fn.w1.weight", (4 * d, d)), (f + "fn.w1.bias", (4 * d,)),
                (f + "fn.w2.weight", (d, 4 * d)), (f + "fn.w2.bias", (d,)),
                (f + "norm.weight", (d,)), (f + "norm.bias", (d,))]
    if lm:
        out += [("to_logits.weight", (c["num_tokens"], d)), ("to_logits.bias", (c["num_tokens"],))]
    return out, []


def keys_tatp22(c):
    V, n, C, k, H, F = c["num_tokens"], c["input_size"], c["channels"], c["dim_k"], c["nhead"], c["dim_ff"]
    d, mode = C // H, c["parameter_sharing"]
    out = [("to_token_emb.weight", (V, C)), ("pos_emb.inv_freq", ((C + 1) // 2,))]
    groups = {}  # alias group id -> names

    def proj(name, layer, h, which):
        gid = {"none": (layer, h, which), "headwise": (layer, which), "kv": (layer,), "layerwise": ()}[mode]
        for leaf, shape in (("weight", (k, n)), ("bias", (k,))):
            out.append((name + leaf, shape))
            groups.setdefault(gid + (leaf,), []).append(name + leaf)

    for layer in range(c["depth"]):
        p = "linformer.seq.%d." % (2 * layer)
        for h in range(H):
            proj(p + "fn.heads.%d.E." % h, layer, h, "E")
            proj(p + "fn.heads.%d.F." % h, layer, h, "F")
        for m in ("to_q", "to_k", "to_v"):
            out += [(p + "fn.%s.%d.weight" % (m, h), (d, C)) for h in range(H)]
        out += [(p + "fn.w_o.weight", (C, d * H)), (p + "fn.w_o.bias", (C,)),
                (p + "norm.weight", (C,)), (p + "norm.bias", (C,))]
        q = "linformer.seq.%d." % (2 * layer + 1)
        out += [(q + "fn.w_1.weight", (F, C)), (q + "fn.w_1.bias", (F,)), (q + "fn.w_2.weight", (C, F)),
                (q + "fn.w_2.bias", (C,)), (q + "norm.weight", (C,)), (q + "norm.bias", (C,))]
    out += [("to_logits.weight", (V, C)), ("to_logits.bias", (V,))]
    return out, [g for g in groups.values() if len(g) > 1]


def keys_fairseq(a, V, heads):
    """Order = module registration order, own parameters/buffers before children (the version
    buffers therefore come first in their module)."""
    C, F, n = a.encoder_embed_dim, a.encoder_ffn_embed_dim, a.max_positions
    k = n // a.compressed
    layerwise, skv = a.shared_layer_kv_compressed == 1, a.shared_kv_compressed == 1
    P = "encoder.sentence_encoder."
    out = [("encoder.version", ()), (P + "version", (1,)), (P + "embed_tokens.weight", (V, C)),
           (P + "embed_positions.weight", (n + 2, C)),
           (P + "layernorm_embedding.weight", (C,)), (P + "layernorm_embedding.bias", (C,))]
    comp = {"weight": [P + "compress_layer.weight"], "bias": [P + "compress_layer.bias"]}
    for i in range(a.encoder_layers):
        p = P + "layers.%d." % i
        out.append((p + "version", ()))
        for m in ("k_proj", "v_proj", "q_proj"):
            out += [(p + "self_attn.%s.weight" % m, (C, C)), (p + "self_attn.%s.bias" % m, (C,))]
        for m in ("compress_k",) if skv else ("compress_k", "compress_v"):
            out.append((p + "self_attn.%s.weight" % m, (k, n)))
            if layerwise:
                out.append((p + "self_attn.%s.bias" % m, (k,)))
                comp["weight"].append(p + "self_attn.%s.weight" % m)
                comp["bias"].append(p + "self_attn.%s.bias" % m)
        out += [(p + "self_attn.out_proj.weight", (C, C)), (p + "self_attn.out_proj.bias", (C,)),
                (p + "self_attn_layer_norm.weight", (C,)), (p + "self_attn_layer_norm.bias", (C,)),
                (p + "fc1.weight", (F, C)), (p + "fc1.bias", (F,)), (p + "fc2.weight", (C, F)),
                (p + "fc2.bias", (C,)), (p + "final_layer_norm.weight", (C,)), (p + "final_layer_norm.bias", (C,))]
    if layerwise:
        out += [(P + "compress_layer.weight", (k, n)), (P + "compress_layer.bias", (k,))]
    L = "encoder.lm_head."
    out += [(L + "weight", (V, C)), (L + "bias", (V,)), (L + "dense.weight", (C, C)), (L + "dense.bias", (C,)),
            (L + "layer_norm.weight", (C,)), (L + "layer_norm.bias", (C,))]
    for name, ncls in heads:
        h = "classification_heads.%s." % name
        out += [(h + "dense.weight", (C, C)), (h + "dense.bias", (C,)), (h + "out_proj.weight", (ncls, C)),
                (h + "out_proj.bias", (ncls,))]
    groups = [] if a.untie_weights_roberta else [[P + "embed_tokens.weight", L + "weight"]]
    if layerwise:
        groups += [comp["weight"], comp["bias"]]
    return out, groups


# ------------------------------------------------------------------------------ reading files


def read_safetensors(path):
    """The checkpoint's tensors as torch tensors (I64: performer-pytorch's redraw counter)."""
    arrays, _ = safetensors_file.read_safetensors(path, dtypes=("F32", "I64"), aligned=True)
    return {name: torch.from_numpy(a.copy()) for name, a in arrays.items()}


def pickle_globals(path):
    """GLOBAL opcodes of the object pickle (zip: data.pkl; legacy: the 4th pickle)."""
    raw = open(path, "rb").read()
    if raw[:2] == b"PK":
        z = zipfile.ZipFile(path)
        name = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        streams = [z.read(name)]
    else:
        f = io.BytesIO(raw)
        streams = []
        for _ in range(4):
            start = f.tell()
            for _op in pickletools.genops(f):
                pass
            streams.append(raw[start:f.tell()])
        streams = streams[3:]
    found = set()
    for s in streams:
        for op, arg, _pos in pickletools.genops(s):
            if op.name == "GLOBAL":
                found.add(arg.replace(" ", "."))
    return sorted(found)


def alias_groups(sd):
    by_ptr = {}
    for name, t in sd.items():
        if t.numel():
            by_ptr.setdefault((t.storage().data_ptr(), t.storage_offset(), tuple(t.shape)), []).append(name)
    return sorted(sorted(g) for g in by_ptr.values() if len(g) > 1)


# ------------------------------------------------------------------------------ checks


def check_doc_facts():
    m = luc.LinformerLM(num_tokens=256, dim=64, seq_len=128, depth=2, k=32, heads=4)
    sd = m.state_dict()
    assert len(sd) == 34 and sum(t.numel() for t in sd.values()) == 157184
    assert len(luc.LinformerLM(256, 64, 128, 2, k=32, heads=4, share_kv=True).state_dict()) == 30
    sd = luc.LinformerLM(256, 64, 128, 2, k=32, heads=4, one_kv_head=True).state_dict()
    assert sd["linformer.net.layers.0.0.fn.to_k.weight"].shape == (16, 64)
    assert sd["linformer.net.layers.0.0.fn.to_v.weight"].shape == (16, 64)
    sd = luc.LinformerLM(256, 64, 128, 2, k=32, heads=4, dim_head=32).state_dict()
    assert sd["linformer.net.layers.1.0.fn.to_q.weight"].shape == (128, 64)
    assert sd["linformer.net.layers.1.0.fn.to_out.weight"].shape == (64, 128)
    sd = luc.LinformerLM(256, 64, 128, 2, k=32, heads=4, reversible=True).state_dict()
    assert "linformer.net.blocks.1.f.net.fn.proj_k" in sd and "linformer.net.blocks.1.g.net.norm.bias" in sd
    assert len(sd) == 34
    print("lucidrains doc example: 34 keys, 157184 values, variants as documented")

    counts = {}
    for mode in ("none", "headwise", "kv", "layerwise"):
        m = tat.LinformerLM(num_tokens=256, input_size=128, channels=64, dim_k=32, dim_ff=128, nhead=4,
                            depth=2, parameter_sharing=mode)
        buf = io.BytesIO()
        torch.save(m.state_dict(), buf)
        names = zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()
        counts[mode] = (len(m.state_dict()), sum(1 for x in names if "/data/" in x))
        assert m.state_dict()["linformer.seq.0.fn.heads.0.E.weight"].shape == (32, 128)
        assert m.state_dict()["pos_emb.inv_freq"].shape == (32,)
    assert counts == {"none": (80, 80), "headwise": (80, 56), "kv": (80, 52), "layerwise": (80, 50)}, counts
    print("tatp22 doc example: (keys, storages)", counts)

    a = fq.base_architecture(argparse.Namespace(encoder_layers=2, tokens_per_sample=512))
    m = fq.LinformerModel(copy.deepcopy(a), 50)
    sd = m.state_dict()
    expect, _ = keys_fairseq(a, 50, [])
    assert [(k, tuple(v.shape)) for k, v in sd.items()] == expect
    assert sd["encoder.sentence_encoder.embed_positions.weight"].shape == (514, 768)
    assert sd["encoder.sentence_encoder.layers.1.self_attn.compress_k.weight"].shape == (128, 512)
    assert sd["encoder.sentence_encoder.version"].tolist() == [3.0] and sd["encoder.version"].item() == 2
    del m, sd
    for skv, per_layer in ((0, 4), (1, 2)):
        a = fq.base_architecture(argparse.Namespace(encoder_layers=3, encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                                                    encoder_attention_heads=2, max_positions=64,
                                                    shared_layer_kv_compressed=1, shared_kv_compressed=skv))
        sd = fq.LinformerModel(a, 20).state_dict()
        comp = [k for k in sd if "compress" in k]
        assert len(comp) == 3 * per_layer + 2, comp
        assert len({sd[k].storage().data_ptr() for k in comp}) == 2
    print("fairseq base shapes as documented; layerwise: compress_k/v.{weight,bias} repeated per layer "
          "on the compress_layer storages")


def load_case(root, row):
    name, layout, ckpt, cfg_file = row[:4]
    d = os.path.join(root, name)
    path = os.path.join(d, ckpt)
    config = json.load(open(os.path.join(d, cfg_file))) if cfg_file != "-" else None
    state = None
    if ckpt.endswith(".safetensors"):
        sd = read_safetensors(path)
        globs = []
    elif layout == "fairseq":
        state = torch.load(path, map_location="cpu")  # holds an argparse.Namespace
        sd = state["model"]
        globs = pickle_globals(path)
    else:
        sd = torch.load(path, map_location="cpu", weights_only=True)
        globs = pickle_globals(path)
    return d, config, state, sd, globs


def fairseq_args(state):
    if state.get("args") is not None:
        return "args", state["args"]
    m = state["cfg"]["model"]
    return ("cfg.model Namespace", m) if isinstance(m, argparse.Namespace) else ("cfg.model dict", argparse.Namespace(**m))


def check_case(root, row):
    name, layout, ckpt, cfg_file, kind, out_kind = row
    d, config, state, sd, globs = load_case(root, row)
    W = {k: v.double().numpy() for k, v in sd.items()}
    note = ""
    heads = []
    if layout == "lucidrains":
        expect, groups = keys_lucidrains(config)
        model = upstream_model(layout, "LinformerLM" if "num_tokens" in config else "Linformer", config)
    elif layout == "tatp22":
        expect, groups = keys_tatp22(config)
        model = upstream_model(layout, "LinformerLM", config)
    else:
        style, ns = fairseq_args(state)
        a = fq.base_architecture(copy.deepcopy(ns))
        heads = sorted({(k.split(".")[1], sd[k].shape[0]) for k in sd if k.startswith("classification_heads.")
                        and k.endswith("out_proj.weight")})
        V = sd["encoder.sentence_encoder.embed_tokens.weight"].shape[0]
        expect, groups = keys_fairseq(a, V, heads)
        model = fq.LinformerModel(copy.deepcopy(ns), V)
        for h, ncls in heads:
            model.register_classification_head(h, ncls)
        dtypes = sorted({str(t.dtype).replace("torch.", "") for t in sd.values()})
        assert sd["encoder.version"].dtype == torch.int64 and sd["encoder.sentence_encoder.layers.0.version"].dtype == torch.int64
        assert float(sd["encoder.sentence_encoder.version"][0]) == 3.0
        assert not W["encoder.sentence_encoder.embed_tokens.weight"][fq.PAD].any()
        assert not W["encoder.sentence_encoder.embed_positions.weight"][fq.PAD].any()
        if a.shared_layer_kv_compressed:
            assert np.abs(W["encoder.sentence_encoder.compress_layer.bias"]).min() > 0  # must be ignored
        note = "%s, dtypes %s, top-level %s" % (style, "/".join(dtypes), ",".join(state))
    got = [(k, tuple(v.shape)) for k, v in sd.items()]
    assert got == expect, "key list differs:\n%s" % "\n".join(
        "%s %s" % x for x in sorted(set(got) ^ set(expect)))
    if not ckpt.endswith(".safetensors"):
        assert alias_groups(sd) == sorted(sorted(g) for g in groups), (alias_groups(sd), groups)
    model.load_state_dict(sd, strict=True)
    model = model.double().eval()
    if layout == "tatp22":
        C = config["channels"]
        saved_inv_freq = model.pos_emb.inv_freq.clone()
        model.pos_emb.inv_freq = 1.0 / (100000.0 ** (torch.arange(0, C, 2, dtype=torch.float64) / C))
    ent = Entropy()
    worst_ref = worst_torch = inv_freq_effect = 0.0
    n_out = 0
    for fn in sorted(os.listdir(d)):
        if not fn.startswith("out_"):
            continue
        T = int(fn[4:-4])
        ref = np.load(os.path.join(d, fn))
        assert ref.dtype == np.float32
        if kind == "emb":
            inp = np.load(os.path.join(d, "emb_%d.npy" % T))
            assert inp.dtype == np.float32 and inp.shape == (T, config["dim"])
        else:
            inp = np.array([int(x) for x in open(os.path.join(d, "ids_%d.txt" % T)).read().split()])
            assert len(inp) == T
        if layout == "lucidrains":
            out = np_lucidrains(W, config, inp, ent)
        elif layout == "tatp22":
            out = np_tatp22(W, config, inp, ent)
        else:
            assert not (inp == fq.PAD).any()
            out = np_fairseq(W, a, inp, heads[0][0] if heads else None, ent)
        if out_kind == "lm logits":
            exp_shape = (T, W["encoder.lm_head.bias" if layout == "fairseq" else "to_logits.bias"].shape[0])
        else:
            exp_shape = (1, heads[0][1]) if out_kind == "class logits" else (T, config["dim"])
        assert ref.shape == out.shape == exp_shape, (ref.shape, out.shape, exp_shape)
        worst_ref = max(worst_ref, float(np.max(np.abs(out - ref) / np.maximum(1.0, np.abs(out)))))
        with torch.no_grad():
            if kind == "emb":
                t_out = model(torch.from_numpy(inp).double()[None])[0]
            elif layout == "tatp22":  # T < n: upstream's forward with E/F cut to T columns
                t_out = up.tatp22_for_length(model, T)(torch.as_tensor(inp)[None])[0]
                m2 = up.tatp22_for_length(model, T)
                m2.pos_emb.inv_freq = saved_inv_freq.double()
                inv_freq_effect = max(inv_freq_effect, float((m2(torch.as_tensor(inp)[None])[0] - t_out).abs().max()))
            elif layout == "fairseq":
                t_out = model(torch.as_tensor(inp)[None], classification_head_name=heads[0][0] if heads else None)
                t_out = t_out if out_kind == "class logits" else t_out[0]
            else:
                t_out = model(torch.as_tensor(inp)[None])[0]
        worst_torch = max(worst_torch, float(np.max(np.abs(t_out.numpy() - out))))
        n_out += 1
    assert worst_ref <= 1e-6, (name, worst_ref)
    assert worst_torch <= 1e-9, (name, worst_torch)
    extra = " inv_freq(f32 buffer) effect %.1e" % inv_freq_effect if layout == "tatp22" else ""
    print("%-36s ok  %2d keys %d alias groups, %d outputs, numpy vs file %.1e, torch vs numpy %.1e, "
          "entropy %.2f%s  %s  globals: %s" % (name, len(sd), len(groups), n_out, worst_ref, worst_torch,
                                                ent.mean(), extra, note, " ".join(globs)))


def check_performer_case(root, row):
    """performer-pytorch cases: no numpy forward here (the reference is upstream's own code);
    checks that the file loads strictly into performer-pytorch's model (a file that keeps one name
    of each shared tensor: the other names are exactly the missing ones) and that out_<T>.npy is
    its float64 forward within 1e-6."""
    name, layout, ckpt, cfg_file, kind, out_kind = row
    d, config, state, sd, globs = load_case(root, row)
    lm = "num_tokens" in config
    model = upstream_model(layout, "PerformerLM" if lm else "Performer", config).double().eval()
    want = model.state_dict()
    missing = sorted(set(want) - set(sd))
    prefix = "performer." if lm else ""
    for k in missing:  # the twin under the other name must be present
        twin = k.replace(prefix + "net.", prefix + "proj_updater.instance.", 1)
        assert twin != k and twin in sd, k
        sd[k] = sd[twin]
    assert sorted(sd) == sorted(want), sorted(set(sd) ^ set(want))
    model.load_state_dict({k: v for k, v in sd.items()}, strict=True)
    model = model.double()
    worst = 0.0
    for f in sorted(os.listdir(d)):
        if not f.startswith("out_"):
            continue
        T = f[4:-4]
        if kind == "emb":
            inp = torch.from_numpy(np.load(os.path.join(d, "emb_%s.npy" % T))).double()[None]
        else:
            inp = torch.tensor([[int(v) for v in open(os.path.join(d, "ids_%s.txt" % T)).read().split()]])
        with torch.no_grad():
            out = model(inp)[0].numpy()
        ref = np.load(os.path.join(d, f))
        worst = max(worst, float((np.abs(out - ref) / np.maximum(1.0, np.abs(out))).max()))
    assert worst < 1e-6, worst
    print("%-40s performer  %d keys (%d read under the updater's name)  out vs performer-pytorch %.1e  ok"
          % (name, len(want), len(missing), worst))


def keys_bert(P, c, self_linears, qkv_bias=True, positions_last=False):
    """A Hugging Face BERT-family model's embeddings and encoder layers (Longformer, BigBird), state_dict
    names and shapes in module order, from the config alone. positions_last: RoBERTa's embeddings
    (Longformer's) create position_embeddings after the LayerNorm, BERT's (BigBird's) second."""
    C, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    pos = [(P + "embeddings.position_embeddings.weight", (c["max_position_embeddings"], C))]
    keys = [(P + "embeddings.word_embeddings.weight", (V, C))] + ([] if positions_last else pos) + \
           [(P + "embeddings.token_type_embeddings.weight", (c.get("type_vocab_size", 2), C)),
            (P + "embeddings.LayerNorm.weight", (C,)), (P + "embeddings.LayerNorm.bias", (C,))] + \
           (pos if positions_last else [])
    for i in range(c["num_hidden_layers"]):
        p = P + "encoder.layer.%d." % i
        for w in self_linears:
            keys += [(p + "attention.self." + w + ".weight", (C, C))] + \
                    ([(p + "attention.self." + w + ".bias", (C,))] if qkv_bias else [])
        for lin_name, shape in [("attention.output.dense", (C, C)), ("attention.output.LayerNorm", None),
                                ("intermediate.dense", (F, C)), ("output.dense", (C, F)), ("output.LayerNorm", None)]:
            keys += [(p + lin_name + ".weight", shape or (C,)), (p + lin_name + ".bias", (shape or (C,))[:1])]
    return keys


def keys_longformer(c, cls, num_labels):
    """HF Longformer state_dict names and shapes in module order, from the config alone."""
    C, V = c["hidden_size"], c["vocab_size"]
    P = "" if cls == "LongformerModel" else "longformer."
    keys = keys_bert(P, c, ("query", "key", "value", "query_global", "key_global", "value_global"),
                     positions_last=True)
    groups = []
    if cls == "LongformerModel":
        keys += [("pooler.dense.weight", (C, C)), ("pooler.dense.bias", (C,))]
    elif cls == "LongformerForMaskedLM":
        keys += [("lm_head.bias", (V,)), ("lm_head.dense.weight", (C, C)), ("lm_head.dense.bias", (C,)),
                 ("lm_head.layer_norm.weight", (C,)), ("lm_head.layer_norm.bias", (C,)),
                 ("lm_head.decoder.weight", (V, C)), ("lm_head.decoder.bias", (V,))]
        groups = [["lm_head.bias", "lm_head.decoder.bias"],
                  ["lm_head.decoder.weight", "longformer.embeddings.word_embeddings.weight"]]
    else:
        keys += [("classifier.dense.weight", (C, C)), ("classifier.dense.bias", (C,)),
                 ("classifier.out_proj.weight", (num_labels, C)), ("classifier.out_proj.bias", (num_labels,))]
    return keys, groups


def np_longformer(W, c, cls, inp, g, ent):
    """Written from modeling_longformer.py's semantics for one unpadded sequence, as dense masks:
    positions from pad + 1, token type 0; row i >= g sees |i - j| <= w/2 except the global rows,
    plus the global rows; global rows see all rows through the *_global linears; post-norm."""
    P = "" if cls == "LongformerModel" else "longformer."
    C, H, eps, pad = c["hidden_size"], c["num_attention_heads"], c["layer_norm_eps"], c.get("pad_token_id", 1)
    hd, T = C // H, len(inp)
    w = c["attention_window"]
    r = (w[0] if isinstance(w, list) else w) // 2
    act = HF_ACT[c.get("hidden_act", "gelu")]
    e = P + "embeddings."
    x = W[e + "word_embeddings.weight"][inp] + W[e + "position_embeddings.weight"][np.arange(T) + pad + 1] + \
        W[e + "token_type_embeddings.weight"][0]
    x = layer_norm(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    seen = ((np.abs(i - j) <= r) & (j >= g)) | (j < g)
    for layer in range(c["num_hidden_layers"]):
        p = P + "encoder.layer.%d." % layer
        a = p + "attention.self."
        Q, K, V = (lin(x, W, a + n) for n in ("query", "key", "value"))
        heads = []
        for h in range(H):
            sl = slice(h * hd, (h + 1) * hd)
            S = np.where(seen, Q[:, sl] @ K[:, sl].T / math.sqrt(hd), -np.inf)
            Pr = softmax(S)
            ent.add(Pr)
            O = Pr @ V[:, sl]
            if g:
                Qg, Kg, Vg = (lin(x, W, a + n)[:, sl] for n in ("query_global", "key_global", "value_global"))
                O[:g] = softmax(Qg[:g] @ Kg.T / math.sqrt(hd)) @ Vg
            heads.append(O)
        x = layer_norm(lin(np.concatenate(heads, 1), W, p + "attention.output.dense") + x,
                       W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        f = lin(act(lin(x, W, p + "intermediate.dense")), W, p + "output.dense")
        x = layer_norm(f + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    if cls == "LongformerForMaskedLM":
        y = layer_norm(gelu(lin(x, W, "lm_head.dense")), W["lm_head.layer_norm.weight"], W["lm_head.layer_norm.bias"], eps)
        return y @ W["lm_head.decoder.weight"].T + W["lm_head.bias"]
    if cls == "LongformerForSequenceClassification":
        return lin(np.tanh(lin(x[:1], W, "classifier.dense")), W, "classifier.out_proj")
    return x


def check_longformer_case(root, row):
    """HF Longformer cases: key list, order, shapes and aliasing from the config; the outputs from
    np_longformer (dense masks; an implementation beside transformers' chunked one and linfer_ref);
    the file loaded into transformers' model (strict but for the tied names save_pretrained leaves
    out), which must agree with numpy, also at the lengths it pads to a multiple of the window."""
    name, layout, ckpt, cfg_file, kind, out_kind = row
    d, config, state, sd, globs = load_case(root, row)
    cls = {"lm logits": "LongformerForMaskedLM", "class logits": "LongformerForSequenceClassification",
           "hidden": "LongformerModel"}[out_kind]
    num_labels = sd["classifier.out_proj.weight"].shape[0] if "classifier.out_proj.weight" in sd else 0
    expect, groups = keys_longformer(config, cls, num_labels)
    got = [(k, tuple(v.shape)) for k, v in sd.items()]
    assert got == expect, "key list differs:\n%s" % "\n".join("%s %s" % x for x in sorted(set(got) ^ set(expect)))
    if not ckpt.endswith(".safetensors"):
        assert alias_groups(sd) == sorted(sorted(g) for g in groups), (alias_groups(sd), groups)
    W = {k: v.double().numpy() for k, v in sd.items()}
    g = config.get("global_positions", 1 if cls == "LongformerForSequenceClassification" else 0)
    ent = Entropy()
    worst, n_out = 0.0, 0
    for fn in sorted(os.listdir(d)):
        if not fn.startswith("out_"):
            continue
        T = int(fn[4:-4])
        inp = np.array([int(v) for v in open(os.path.join(d, "ids_%d.txt" % T)).read().split()])
        assert len(inp) == T and not (inp == config.get("pad_token_id", 1)).any()
        out = np_longformer(W, config, cls, inp, min(g, T), ent)
        ref = np.load(os.path.join(d, fn))
        assert ref.shape == out.shape, (ref.shape, out.shape)
        worst = max(worst, float(np.max(np.abs(out - ref) / np.maximum(1.0, np.abs(out)))))
        n_out += 1
    assert worst <= 1e-6, (name, worst)
    model = upstream_model(layout, cls, config, num_labels=num_labels) if num_labels else \
        upstream_model(layout, cls, config)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and all(k.startswith("lm_head.decoder.") for k in missing), (missing, unexpected)
    model = model.double().eval()
    rng = np.random.RandomState(6)
    worst_torch = 0.0
    for T in sorted({1, 7, config["max_position_embeddings"] - config.get("pad_token_id", 1) - 1}):
        inp = rng.randint(0, config["vocab_size"], size=T)
        inp = np.where(inp == config.get("pad_token_id", 1), 0, inp)
        ref = np_longformer(W, config, cls, inp, min(g, T), Entropy())
        out = upstream_out(model, layout, config, inp, global_positions=min(g, T))
        worst_torch = max(worst_torch, float(np.max(np.abs(out - ref) / np.maximum(1.0, np.abs(ref)))))
    assert worst_torch <= 1e-9, (name, worst_torch)
    print("%-36s ok  %2d keys %d alias groups, %d outputs, numpy vs file %.1e, transformers vs numpy %.1e, "
          "entropy %.2f, global rows %d  globals: %s" % (name, len(sd), len(groups), n_out, worst, worst_torch,
                                                         ent.mean(), g, " ".join(globs)))


# BigBirdConfig's defaults (configuration_big_bird.py) for the keys read here
BIGBIRD_DEFAULTS = dict(hidden_act="gelu_new", type_vocab_size=2, layer_norm_eps=1e-12, attention_type="block_sparse",
                        use_bias=True, rescale_embeddings=False, block_size=64, num_random_blocks=3)


def keys_bigbird(c, cls, num_labels=0, position_ids=False, tied_saved=True):
    """HF BigBird state_dict names and shapes in module order, from the config alone. position_ids:
    the embeddings' buffer older transformers saved (it comes first: a module's own buffers precede
    its children); tied_saved: whether the file keeps the tied cls.predictions.decoder.* names
    (torch.save of a state_dict does, save_pretrained does not)."""
    c = dict(BIGBIRD_DEFAULTS, **c)
    C, V = c["hidden_size"], c["vocab_size"]
    P = "" if cls == "BigBirdModel" else "bert."
    keys = ([(P + "embeddings.position_ids", (1, c["max_position_embeddings"]))] if position_ids else []) + \
        keys_bert(P, c, ("query", "key", "value"), c["use_bias"]) + \
        [(P + "pooler.weight", (C, C)), (P + "pooler.bias", (C,))]  # add_pooling_layer: True in all three
    groups = []
    if cls == "BigBirdForMaskedLM":
        keys += [("cls.predictions.bias", (V,)), ("cls.predictions.transform.dense.weight", (C, C)),
                 ("cls.predictions.transform.dense.bias", (C,)), ("cls.predictions.transform.LayerNorm.weight", (C,)),
                 ("cls.predictions.transform.LayerNorm.bias", (C,))]
        if tied_saved:
            keys += [("cls.predictions.decoder.weight", (V, C)), ("cls.predictions.decoder.bias", (V,))]
            groups = [["cls.predictions.bias", "cls.predictions.decoder.bias"],
                      ["bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight"]]
    elif cls == "BigBirdForSequenceClassification":
        keys += [("classifier.dense.weight", (C, C)), ("classifier.dense.bias", (C,)),
                 ("classifier.out_proj.weight", (num_labels, C)), ("classifier.out_proj.bias", (num_labels,))]
    return keys, groups


def bigbird_counts(T, b, R, sparse):
    """[T, T]: how often query row i lists key row j in BigBird's eval-mode attention, from the five
    parts of bigbird_block_sparse_attention: the input is padded to nb blocks of b rows; query blocks
    0 and nb-1 list every key; block 1 lists blocks [0, 1, 2, nb-1], blocks 2..nb-3 list [0, i-1, i,
    i+1, nb-1], block nb-2 lists [0, nb-3, nb-2, nb-1], and each of those lists its R random blocks,
    all block 0 in eval mode; padded keys get -10000 added, exp of which is 0 here. Full attention
    (every key once) when not sparse."""
    if not sparse:
        return np.ones((T, T))
    nb = -(-T // b)
    block = np.arange(nb * b) // b
    counts = np.zeros((nb * b, nb * b))
    for q in range(nb * b):
        i = block[q]
        if i in (0, nb - 1):
            counts[q] = 1
            continue
        listed = [0, 1, 2, nb - 1] if i == 1 else [0, nb - 3, nb - 2, nb - 1] if i == nb - 2 else [0, i - 1, i, i + 1, nb - 1]
        for k in listed + [0] * R:
            counts[q] += block == k
    return counts[:T, :T]


def np_bigbird(W, c, cls, inp, ent, counts=None, head_act=None):
    """Written from modeling_big_bird.py's semantics for one unpadded sequence, with key counts
    (bigbird_counts) weighting the softmax: positions from 0, token type 0, word embeddings times
    sqrt(hidden_size) for rescale_embeddings, post-norm, hidden_act in the feed-forward, the LM
    head's transform and the classification head (first token, dense, hidden_act, out_proj);
    decoder tied to the word embeddings. counts: instead of HF's; head_act: instead of hidden_act
    in the classification head."""
    c = dict(BIGBIRD_DEFAULTS, **c)
    P = "" if cls == "BigBirdModel" else "bert."
    C, H, eps, T = c["hidden_size"], c["num_attention_heads"], c["layer_norm_eps"], len(inp)
    hd, b, R = C // H, c["block_size"], c["num_random_blocks"]
    act = HF_ACT[c["hidden_act"]]
    sparse = c["attention_type"] == "block_sparse" and T > (5 + 2 * R) * b  # BigBirdModel.forward's switch
    N = bigbird_counts(T, b, R, sparse) if counts is None else counts
    e = P + "embeddings."
    x = W[e + "word_embeddings.weight"][inp] * (math.sqrt(C) if c["rescale_embeddings"] else 1.0) + \
        W[e + "position_embeddings.weight"][np.arange(T)] + W[e + "token_type_embeddings.weight"][0]
    x = layer_norm(x, W[e + "LayerNorm.weight"], W[e + "LayerNorm.bias"], eps)
    for layer in range(c["num_hidden_layers"]):
        p = P + "encoder.layer.%d." % layer
        Q, K, V = (lin(x, W, p + "attention.self." + n, c["use_bias"]) for n in ("query", "key", "value"))
        heads = []
        for h in range(H):
            sl = slice(h * hd, (h + 1) * hd)
            S = np.where(N > 0, Q[:, sl] @ K[:, sl].T / math.sqrt(hd), -np.inf)
            E = N * np.exp(S - S.max(-1, keepdims=True))
            Pr = E / E.sum(-1, keepdims=True)
            ent.add(Pr)
            heads.append(Pr @ V[:, sl])
        x = layer_norm(lin(np.concatenate(heads, 1), W, p + "attention.output.dense") + x,
                       W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        f = lin(act(lin(x, W, p + "intermediate.dense")), W, p + "output.dense")
        x = layer_norm(f + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    if cls == "BigBirdForMaskedLM":
        t = "cls.predictions.transform."
        y = layer_norm(act(lin(x, W, t + "dense")), W[t + "LayerNorm.weight"], W[t + "LayerNorm.bias"], eps)
        return y @ W["bert.embeddings.word_embeddings.weight"].T + W["cls.predictions.bias"]
    if cls == "BigBirdForSequenceClassification":
        return lin((head_act or act)(lin(x[:1], W, "classifier.dense")), W, "classifier.out_proj")
    return x


def check_bigbird_case(root, row):
    """HF BigBird cases: key list, order, shapes and aliasing from the config (the .pt fixtures are
    pytorch_model.bin files as older transformers saved them, with the position_ids buffer; the
    safetensors ones as save_pretrained writes them, without the tied decoder names); the outputs
    from np_bigbird (a third implementation beside transformers' per-block key lists and
    linfer_ref); the file loaded strictly into transformers' model, which must agree with numpy, also at
    lengths around HF's switch to full attention and padded ones; and how much the fixture tells
    block-sparse from full attention and the random blocks' extra weight from none."""
    name, layout, ckpt, cfg_file, kind, out_kind = row
    d, config, state, sd, globs = load_case(root, row)
    cls = {"lm logits": "BigBirdForMaskedLM", "hidden": "BigBirdModel",
           "class logits": "BigBirdForSequenceClassification"}[out_kind]
    old = ckpt.endswith(".pt")
    num_labels = sd["classifier.out_proj.weight"].shape[0] if "classifier.out_proj.weight" in sd else 0
    # (the classification fixtures are saved without the position_ids buffer)
    buffer = old and cls != "BigBirdForSequenceClassification"
    expect, groups = keys_bigbird(config, cls, num_labels, position_ids=buffer, tied_saved=old)
    got = [(k, tuple(v.shape)) for k, v in sd.items()]
    assert got == expect, "key list differs:\n%s" % "\n".join("%s %s" % x for x in sorted(set(got) ^ set(expect)))
    if old:
        assert alias_groups(sd) == sorted(sorted(g) for g in groups), (alias_groups(sd), groups)
    W = {k: v.double().numpy() for k, v in sd.items()}
    c = dict(BIGBIRD_DEFAULTS, **config)
    ent = Entropy()
    worst, n_out, inputs = 0.0, 0, {}
    for fn in sorted(os.listdir(d)):
        if not fn.startswith("out_"):
            continue
        T = int(fn[4:-4])
        inputs[T] = inp = np.array([int(v) for v in open(os.path.join(d, "ids_%d.txt" % T)).read().split()])
        out = np_bigbird(W, config, cls, inp, ent)
        ref = np.load(os.path.join(d, fn))
        assert ref.shape == out.shape, (ref.shape, out.shape)
        worst = max(worst, float(np.max(np.abs(out - ref) / np.maximum(1.0, np.abs(out)))))
        n_out += 1
    assert worst <= 1e-6, (name, worst)

    extra = dict(num_labels=num_labels) if num_labels else {}
    model = upstream_model(layout, cls, config, position_ids=buffer, **extra)
    full_sd = dict(sd)
    if cls == "BigBirdForMaskedLM" and not old:  # the tied names save_pretrained leaves out
        full_sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"]
        full_sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"]
    model.load_state_dict(full_sd, strict=True)
    model = model.double().eval()
    b, R, n = c["block_size"], c["num_random_blocks"], c["max_position_embeddings"]
    bound = (5 + 2 * R) * b
    extra = sorted({t for t in (bound, bound + 1, bound + b - 1, n - 1) if 1 <= t <= n} - set(inputs))
    rng = np.random.RandomState(5)
    for T in extra:
        inputs[T] = rng.randint(0, c["vocab_size"], size=T)
    worst_torch = 0.0
    for T, inp in sorted(inputs.items()):
        with torch.no_grad():
            out = upstream_out(model, layout, config, inp)
        ref = np_bigbird(W, config, cls, inp, Entropy())
        worst_torch = max(worst_torch, float(np.max(np.abs(out - ref) / np.maximum(1.0, np.abs(ref)))))
    assert worst_torch <= 1e-9, (name, worst_torch)

    # What the longest input tells apart: block-sparse vs full attention, and block 0's 1 + R weight
    # vs 1 (the random blocks dropped).
    effects = ""
    T = max(inputs)
    if c["attention_type"] == "block_sparse" and T > bound:
        ref = np_bigbird(W, config, cls, inputs[T], Entropy())
        scale = np.maximum(1.0, np.abs(ref))
        full = np_bigbird(W, config, cls, inputs[T], Entropy(), counts=np.ones((T, T)))
        no_random = np_bigbird(W, config, cls, inputs[T], Entropy(), counts=bigbird_counts(T, b, 0, True))
        effects = ", at T=%d full attention differs by %.1e, no random blocks by %.1e" % (
            T, float(np.max(np.abs(full - ref) / scale)), float(np.max(np.abs(no_random - ref) / scale)))
        assert min(np.max(np.abs(full - ref) / scale), np.max(np.abs(no_random - ref) / scale)) > 1e-3
    if cls == "BigBirdForSequenceClassification":  # hidden_act after classifier.dense, not tanh
        ref = np_bigbird(W, config, cls, inputs[T], Entropy())
        tanh = np_bigbird(W, config, cls, inputs[T], Entropy(), head_act=np.tanh)
        diff = float(np.max(np.abs(tanh - ref) / np.maximum(1.0, np.abs(ref))))
        effects += ", %d labels, a tanh head differs by %.1e" % (num_labels, diff)
        assert diff > 1e-3
    print("%-36s ok  %2d keys %d alias groups, %d outputs, numpy vs file %.1e, torch vs numpy %.1e (also T=%s), "
          "entropy %.2f%s  globals: %s" % (name, len(sd), len(groups), n_out, worst, worst_torch,
                                            ",".join(map(str, extra)), ent.mean(), effects, " ".join(globs)))


# ------------------------------------------------------------------------------ reformer-pytorch


def keys_reformer(c):
    """ReformerLM's state_dict names and shapes in module order, and the alias groups of a file
    saved with torch.save (every block tensor under blocks.{i}.{f,g}.net. and irrev_blocks.{i}.{f,g}.;
    weight_tie: every layer's attention and feed-forward are layer 0's; weight_tie_embedding:
    out.1.tensor is token_emb.weight), from the constructor arguments alone."""
    lm = "num_tokens" in c  # ReformerLM; Reformer has layers.* only, dim_head dim // heads by default
    D, L, V, H = c["dim"], c["depth"], c.get("num_tokens"), c.get("heads", 8)
    dh = c.get("dim_head") or (64 if lm else D // H)
    Fd = D * c.get("ff_mult", 4)
    vd = dh if c.get("one_value_head") else H * dh
    P = "reformer.layers." if lm else "layers."
    keys = [("token_emb.weight", (V, D))] if lm else []
    if lm and c.get("absolute_position_emb"):
        keys.append(("pos_emb.emb.weight", (c["max_seq_len"], D)))
    elif lm and c.get("fixed_position_emb"):
        keys.append(("pos_emb.inv_freq", (D // 2,)))
    elif lm:
        keys.append(("layer_pos_emb.inv_freq", (dh // 2,)))
    f_keys = [("norm.weight", (D,)), ("norm.bias", (D,)), ("fn.toqk.weight", (H * dh, D)), ("fn.tov.weight", (vd, D)),
              ("fn.to_out.weight", (D, H * dh)), ("fn.to_out.bias", (D,))]
    g_keys = [("norm.weight", (D,)), ("norm.bias", (D,)), ("fn.fn.w1.weight", (Fd, D)), ("fn.fn.w1.bias", (Fd,)),
              ("fn.fn.w2.weight", (D, Fd)), ("fn.fn.w2.bias", (D,))]
    groups = {}
    for part in ("blocks", "irrev_blocks"):
        for i in range(L):
            for branch, rest in (("f", f_keys), ("g", g_keys)):
                for k, shape in rest:
                    name = "%s%s.%d.%s%s.%s" % (P, part, i, branch, ".net" if part == "blocks" else "", k)
                    keys.append((name, shape))
                    owner = 0 if c.get("weight_tie") and not k.startswith("norm.") else i
                    groups.setdefault((owner, branch, k), []).append(name)
    if not lm:
        return keys, sorted(sorted(g) for g in groups.values() if len(g) > 1)
    keys += [("norm.weight", (D,)), ("norm.bias", (D,))]
    tied = [["token_emb.weight"]]
    if not c.get("return_embeddings"):
        if c.get("weight_tie_embedding"):
            keys.append(("out.1.tensor", (V, D)))
            tied[0].append("out.1.tensor")
        else:
            keys += [("out.1.weight", (V, D)), ("out.1.bias", (V,))]
    return keys, sorted(sorted(g) for g in list(groups.values()) + tied if len(g) > 1)


def np_reformer(W, c, inp, margins, merge="mean"):
    """ReformerLM in float64 numpy, written from the paper's description by query rows: per head and
    round, each row's bucket (argmax over [xR, -xR]), its place in the (bucket, position) order and
    so its chunk; then, row by row, the keys of its chunk and the chunk before (cyclic over all
    rounds' chunks, a repeated key counted twice), scores q . k / |k| / sqrt(dh), later keys dropped
    (causal), itself at -5e4; rounds weighed by softmax of their log-sum-exps."""
    lm = "num_tokens" in c  # ReformerLM takes ids, Reformer embeddings [T, dim]
    T, D, L, H = len(inp), c["dim"], c["depth"], c.get("heads", 8)
    dh = c.get("dim_head") or (64 if lm else D // H)
    b, R = c.get("bucket_size", 64), c.get("n_hashes", 4 if lm else 8)
    assert T % (2 * b) == 0
    t = np.arange(T, dtype=np.float64)[:, None]
    x = W["token_emb.weight"][inp] if lm else inp
    if "pos_emb.emb.weight" in W:
        x = x + W["pos_emb.emb.weight"][:T]
    elif "pos_emb.inv_freq" in W:
        a = t * W["pos_emb.inv_freq"][None]
        x = x + np.concatenate([np.sin(a), np.cos(a)], axis=1)
    rot_sin = rot_cos = None
    if "layer_pos_emb.inv_freq" in W:
        a = t * W["layer_pos_emb.inv_freq"][None]
        rot_sin, rot_cos = np.sin(a), np.cos(a)
    half = T // (2 * b)
    nchunks = T // b  # per round
    act = ACT[c.get("ff_activation") or "gelu"]

    def block(i, branch, k):
        P = "reformer.layers." if lm else "layers."
        a = "%sblocks.%d.%s.net.%s" % (P, i, branch, k)
        return W[a] if a in W else W["%sirrev_blocks.%d.%s.%s" % (P, i, branch, k)]

    def lsh(i, X):
        rot = up.rotations(c.get("rotation_seed", 0), i, (R, dh, up.half_buckets(c["max_seq_len"], b)))
        QK = X @ block(i, "f", "fn.toqk.weight").T
        Vall = X @ block(i, "f", "fn.tov.weight").T
        outs = []
        for h in range(H):
            raw = QK[:, h * dh:(h + 1) * dh]
            v = Vall[:, h * dh:(h + 1) * dh] if Vall.shape[1] == H * dh else Vall
            q = raw
            if rot_sin is not None:
                q = raw.copy()
                q[:, 0::2] = raw[:, 0::2] * rot_cos - raw[:, 1::2] * rot_sin
                q[:, 1::2] = raw[:, 1::2] * rot_cos + raw[:, 0::2] * rot_sin
            k = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
            chunk_rows = []  # global chunk index -> its rows
            chunk_of = np.zeros((R, T), dtype=np.int64)
            for r in range(R):
                y = np.concatenate([raw @ rot[r][:, :half], -(raw @ rot[r][:, :half])], axis=1)
                srt = np.sort(y, axis=1)
                margins.append(float(((srt[:, -1] - srt[:, -2]) / np.abs(y).max()).min()))
                bucket = y.argmax(axis=1)
                order = sorted(range(T), key=lambda p: (bucket[p], p))
                for j in range(nchunks):
                    rows = order[j * b:(j + 1) * b]
                    chunk_of[r, rows] = len(chunk_rows)
                    chunk_rows.append(rows)
            out = np.zeros((T, dh))
            for p in range(T):
                os_, ls_ = [], []
                for r in range(R):
                    g = chunk_of[r, p]
                    keys = chunk_rows[g] + chunk_rows[g - 1]
                    s = np.array([q[p] @ k[j] / math.sqrt(dh) for j in keys])
                    for n, j in enumerate(keys):
                        if c.get("causal") and j > p:
                            s[n] = -np.finfo(np.float64).max
                        if j == p:
                            s[n] = -5e4
                    m = s.max()
                    lse = m + math.log(np.exp(s - m).sum())
                    os_.append(np.exp(s - lse) @ v[keys])
                    ls_.append(lse)
                wts = softmax(np.array(ls_))
                out[p] = sum(w_ * o_ for w_, o_ in zip(wts, os_))
            outs.append(out)
        return np.concatenate(outs, axis=1) @ block(i, "f", "fn.to_out.weight").T + block(i, "f", "fn.to_out.bias")

    x1 = x2 = x
    for i in range(L):
        y1 = x1 + lsh(i, layer_norm(x2, block(i, "f", "norm.weight"), block(i, "f", "norm.bias")))
        hdn = layer_norm(y1, block(i, "g", "norm.weight"), block(i, "g", "norm.bias"))
        y2 = x2 + (act(hdn @ block(i, "g", "fn.fn.w1.weight").T + block(i, "g", "fn.fn.w1.bias"))
                   @ block(i, "g", "fn.fn.w2.weight").T + block(i, "g", "fn.fn.w2.bias"))
        x1, x2 = y1, y2
    x = (x1 + x2) / 2 if merge == "mean" else x1 + x2
    if not lm:
        return x
    x = layer_norm(x, W["norm.weight"], W["norm.bias"])
    if c.get("return_embeddings"):
        return x
    if c.get("weight_tie_embedding"):
        E = W["token_emb.weight"]
        return x @ (E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)).T
    return x @ W["out.1.weight"].T + W["out.1.bias"]


def check_reformer_case(root, row):
    """reformer-pytorch cases: key list, order, shapes and aliasing from the constructor arguments (a
    safetensors file keeps one name of each block tensor: the irrev_blocks one here); out_<T>.npy
    from np_reformer (a third implementation beside reformer-pytorch and linfer_ref) and from the file
    loaded strictly into reformer-pytorch's model (its rotations fixed); every hash decision at least 1e-4 (relative) from a tie;
    what the mean of the reversible halves changes against their sum."""
    name, layout, ckpt, cfg_file, kind, out_kind = row
    d, config, state, sd, globs = load_case(root, row)
    expect, groups = keys_reformer(config)
    want = [k for k, _ in expect]
    if ckpt.endswith(".safetensors"):
        want = [k for k in want if not k.startswith("reformer.layers.blocks.")]
        groups = []
    assert list(sd) == want, (name, set(sd) ^ set(want))
    for k, shape in expect:
        if k in sd:
            assert tuple(sd[k].shape) == shape, (k, tuple(sd[k].shape), shape)
    assert alias_groups(sd) == groups, (name, alias_groups(sd), groups)
    W = {k: v.double().numpy() for k, v in sd.items()}
    model = upstream_model(layout, "ReformerLM" if "num_tokens" in config else "Reformer", config).double().eval()
    full = dict(sd)
    for k in model.state_dict():  # the other name of each block tensor
        if k not in full:
            full[k] = sd[k.replace("layers.blocks.", "layers.irrev_blocks.").replace(".net.", ".", 1)]
    model.load_state_dict(full, strict=True)
    worst_np = worst_torch = 0.0
    margins = []
    n_out = 0
    for f in sorted(os.listdir(d)):
        if not f.startswith("out_"):
            continue
        T = f[4:-4]
        if kind == "emb":
            ids = np.load(os.path.join(d, "emb_%s.npy" % T)).astype(np.float64)
            t_in = torch.from_numpy(ids)
        else:
            ids = np.array([int(v) for v in open(os.path.join(d, "ids_%s.txt" % T)).read().split()])
            t_in = ids
        ref = np.load(os.path.join(d, f))
        out = np_reformer(W, config, ids, margins)
        scale = np.maximum(1.0, np.abs(out))
        worst_np = max(worst_np, float((np.abs(out - ref) / scale).max()))
        t_out = upstream_out(model, layout, config, t_in)
        worst_torch = max(worst_torch, float((np.abs(t_out - out) / scale).max()))
        n_out += 1
    summed = np_reformer(W, config, ids, [], merge="sum")
    merge_effect = float((np.abs(summed - out) / scale).max())
    assert worst_np <= 1e-6, (name, worst_np)
    assert worst_torch <= 1e-9, (name, worst_torch)
    assert min(margins) >= 1e-4, (name, min(margins))
    print("%-40s reformer  %d keys %d alias groups, %d outputs, numpy vs file %.1e, torch vs numpy %.1e, "
          "hash margin %.1e, sum instead of mean of the halves %.1e  globals: %s"
          % (name, len(sd), len(groups), n_out, worst_np, worst_torch, min(margins), merge_effect, " ".join(globs)))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "..", "tests", "golden_layouts"))
    check_doc_facts()
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "cases.tsv"))]
    assert rows[0] == ["case", "layout", "checkpoint", "config", "input", "output"]
    for row in rows[1:]:
        if row[1] == "performer":
            check_performer_case(root, row)
        elif row[1] == "longformer":
            check_longformer_case(root, row)
        elif row[1] == "bigbird":
            check_bigbird_case(root, row)
        elif row[1] == "reformer":
            check_reformer_case(root, row)
        else:
            check_case(root, row)
    print("all %d cases ok" % (len(rows) - 1))


if __name__ == "__main__":
    main()
