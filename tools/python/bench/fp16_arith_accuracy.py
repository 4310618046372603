# SPDX-License-Identifier: Apache-2.0
"""Accuracy of fp16 arithmetic (ARMv8.2 FMLA .8H) in an f16 model's dense layers, emulated in numpy
on the benchmark suite's model S (issue 37 item 4; docs/quantization.md, "fp16 arithmetic on
ARMv8.2 (Pi 5)").

    /usr/bin/python3 tools/python/bench/fp16_arith_accuracy.py --work DIR [--lengths 128,512]

DIR holds what tools/bench/suite/make_models.py writes: S.safetensors, S_check_ids_n{T}.txt and
S_check_ref_n{T}.npy (the PyTorch float32 output, the suite's parity reference). Read only.

Variants, each compared with that reference (the suite's figures: cosine per row, max abs error
relative to max |reference|, arg-max agreement):
  f32        the f32 model in PyTorch (sanity: reproduces the reference);
  f16w       what linfer runs today for an f16 model: every tensor the converter stores as half
             (dense weights, embeddings, projections E and F) rounded to f16, arithmetic f32;
  fp16_seq   f16w, and every dense layer (Q, K, V, out, FF1, FF2, LM head) computed as an
             FMLA .8H kernel would: inputs rounded to f16, one f16 accumulator per output
             element, one fused multiply-add per k in order k = 0..K-1, the sum rounded to f16
             after each (emulated exactly: the f16 x f16 product and the sum are exact in float64,
             then rounded once to f16); the accumulator widened to f32 at the end and the bias,
             GELU, residual added in f32. This is the prototype tile's scheme
             (tools/bench/arm/fp16_fmla_loop.cc: each accumulator lane is one chain over all K);
  fp16_split4 the same with 4 partial f16 accumulators taking turns over k (k mod 4), added in
             f16 at the end (a tile that splits its chains, as dense_f16_neon does for few rows);
  fp16_flush32 f16 accumulation over blocks of 32 k steps, each block's sum added into an f32
             accumulator (a mitigation: costs an FCVTL + FADD per 32 steps, not a pure .8H loop).
Layer norms, softmax, GELU, E X and the attention's products stay f32, as in linfer.
Per dense layer it also prints the error the fp16 sum adds to that layer's own output
(relative to the float64 product of the same f16-rounded inputs and weights).
About a minute and a half on one core for both lengths and all five variants.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference"))
import linfer_ref  # noqa: E402

def load_model(path):
    tensors, meta = linfer_ref.load_safetensors(path)
    cfg = json.loads(meta["linfer_config"])
    model = linfer_ref.LinferEncoder(cfg)
    model.load_state_dict(tensors)
    return model.eval(), cfg


def round_half_tensors(model):
    """Rounds what `linfer-convert --dtype f16` stores as half (docs/quantization.md's table)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
            leaf = name.rsplit(".", 1)[-1]
            if (isinstance(owner, (nn.Linear, nn.Embedding)) and leaf == "weight") or leaf in ("proj_k", "proj_v"):
                p.copy_(p.half().float())


def fp16_matmul(x, w, scheme):
    """x [R, K] float32, w [N, K] (f16-exact) -> [R, N] float32 as an f16-accumulating kernel sums."""
    x64 = x.astype(np.float16).astype(np.float64)
    wt64 = np.ascontiguousarray(w.astype(np.float16).astype(np.float64).T)  # [K, N]
    R, K = x64.shape
    N = wt64.shape[1]
    parts = 4 if scheme == "split4" else 1
    acc = np.zeros((parts, R, N), np.float16)
    acc32 = np.zeros((R, N), np.float32)
    tmp = np.empty((R, N), np.float64)
    for k in range(K):
        a = acc[k % parts]
        np.multiply(x64[:, k, None], wt64[k][None, :], out=tmp)
        tmp += a
        a[...] = tmp  # one rounding to f16: the fused multiply-add
        if scheme == "flush32" and (k % 32 == 31 or k == K - 1):
            acc32 += a.astype(np.float32)
            a[...] = 0
    if scheme == "flush32":
        return acc32
    total = acc[0]
    for p in range(1, parts):
        total = (total.astype(np.float64) + acc[p]).astype(np.float16)
    return total.astype(np.float32)


def install_fp16_linears(model, scheme, stats):
    """Replaces every nn.Linear's forward by the emulated f16 kernel (+ f32 bias); records per layer
    the error of the fp16 sum against the float64 product of the same f16-rounded operands."""
    for name, mod in model.named_modules():
        if not isinstance(mod, nn.Linear):
            continue

        def forward(x, mod=mod, name=name):
            xn = x.detach().numpy().astype(np.float32)
            w = mod.weight.detach().numpy()
            y = fp16_matmul(xn, w, scheme)
            exact = xn.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64).T
            err = np.abs(y - exact)
            key = name.split(".", 2)[-1] if name.startswith("layers.") else name
            s = stats.setdefault(key, {"K": w.shape[1], "rel_max": 0.0, "rel_l2": 0.0, "inf": 0})
            s["rel_max"] = max(s["rel_max"], float(err.max() / np.abs(exact).max()))
            s["rel_l2"] = max(s["rel_l2"], float(np.linalg.norm(y - exact) / np.linalg.norm(exact)))
            s["inf"] += int((~np.isfinite(y)).sum())
            out = torch.from_numpy(y)
            return out + mod.bias if mod.bias is not None else out

        mod.forward = forward


def compare(ref, out):
    """tools/bench/suite/suite.py compare(), plus max abs error / max |ref|."""
    ref = ref.astype(np.float64)
    out = out.reshape(ref.shape).astype(np.float64)
    cos = (out * ref).sum(1) / np.maximum(np.linalg.norm(out, axis=1) * np.linalg.norm(ref, axis=1), 1e-300)
    return {"cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
            "rel_max": float(np.abs(out - ref).max() / np.abs(ref).max()),
            "rel_l2": float(np.linalg.norm(out - ref) / np.linalg.norm(ref)),
            "argmax": float((out.argmax(1) == ref.argmax(1)).mean())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="directory with S.safetensors and the check files")
    ap.add_argument("--model", default="S")
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--variants", default="f32,f16w,fp16_seq,fp16_split4,fp16_flush32")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for T in [int(t) for t in args.lengths.split(",")]:
        with open(os.path.join(args.work, "%s_check_ids_n%d.txt" % (args.model, T))) as f:
            ids = torch.tensor([int(t) for t in f.read().split()], dtype=torch.long)
        ref = np.load(os.path.join(args.work, "%s_check_ref_n%d.npy" % (args.model, T)))
        for variant in args.variants.split(","):
            model, _ = load_model(os.path.join(args.work, args.model + ".safetensors"))
            stats = {}
            if variant != "f32":
                round_half_tensors(model)
            if variant.startswith("fp16_"):
                install_fp16_linears(model, variant[5:], stats)
            with torch.no_grad():
                out = model(ids).numpy()
            e = compare(ref, out)
            rows.append((T, variant, e))
            print("n=%d %-12s cosine mean %.7f min %.7f | max abs err / max |ref| %.2e | rel L2 %.2e | arg-max %.1f%%"
                  % (T, variant, e["cos_mean"], e["cos_min"], e["rel_max"], e["rel_l2"], 100 * e["argmax"]), flush=True)
            for key, s in sorted(stats.items()):
                print("    %-28s K=%4d  fp16-sum error: max/max|y| %.2e  L2 rel %.2e%s"
                      % (key, s["K"], s["rel_max"], s["rel_l2"], "  %d non-finite" % s["inf"] if s["inf"] else ""))
    print("\n| n | variant | cosine mean | cosine min | max abs err / max abs ref | rel L2 | arg-max agreement |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for T, v, e in rows:
        print("| %d | %s | %.7f | %.7f | %.2e | %.2e | %.1f%% |"
              % (T, v, e["cos_mean"], e["cos_min"], e["rel_max"], e["rel_l2"], 100 * e["argmax"]))


if __name__ == "__main__":
    main()
