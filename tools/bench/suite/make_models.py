# SPDX-License-Identifier: Apache-2.0
"""Builds one benchmark model in PyTorch and exports it (run with /usr/bin/python3).

    make_models.py --model S --n 8192 --lengths 512,2048,8192 --work DIR

writes into DIR:
    S.safetensors           weights + linfer config (input of linfer-convert and of torch_bench.py)
    S_n{T}.onnx             one ONNX file per benchmarked length T, fixed input shape [T] (int64)
    S_check_ids_n{T}.txt    T token ids per benchmarked length T, for the parity checks (linfer
                            times its runs on these ids and dumps the output of the last one)
    S_check_ref_n{T}.npy    PyTorch float32 output for those ids (the reference of every parity check)
    S.stamp                 what was built (everything is rebuilt when the stamp differs; the ONNX
                            files and check data of lengths not built yet are added)
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "reference"))
sys.path.insert(0, HERE)

import linfer_ref  # noqa: E402
import models  # noqa: E402

SEED = 7
OPSET = 17


def init(model, cfg):
    """Deterministic weights (the same every time) on the scale of a trained model: linear weights
    with std 1/sqrt(fan_in), projections E and F with std 1/sqrt(n) (so that E X keeps the scale of
    X), embeddings std 1. linfer_ref.init_random's defaults (std up to 0.3 for everything) suit
    parity tests but make a deep model chaotic: there, int8 weights change the output completely,
    here by about 1%."""
    linfer_ref.init_random(model, seed=SEED, weight_std=(0.0, 1.0), proj_std=cfg["max_seq_len"] ** -0.5)


class ExportEncoder(nn.Module):
    """LinferEncoder.forward without the Python-side argument checks (which call int() on tensors
    and so would only produce tracer warnings). Same modules, same operations: numerically equal."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, ids):
        m = self.m
        cfg = m.cfg
        x = m.embed(ids)
        placement = cfg["norm_placement"]
        for layer in m.layers:
            if placement == "pre":
                x = x + layer.attention(layer.attention_norm(x))
                x = x + layer.feed_forward(layer.feed_forward_norm(x))
            elif placement == "post":
                x = layer.attention_norm(x + layer.attention(x))
                x = layer.feed_forward_norm(x + layer.feed_forward(x))
            else:
                raise ValueError("export: norm placement %r not used by the suite" % placement)
        if cfg["final_norm"]:
            x = m.final_norm(x)
        if cfg["head"] != "none":
            x = m.head(x)
        return x


def export_onnx(model, T, path):
    wrapper = ExportEncoder(model).eval()
    ids = torch.randint(0, models.VOCAB, (T,), generator=torch.Generator().manual_seed(T), dtype=torch.long)
    with torch.no_grad():
        ref = model(ids)
        got = wrapper(ids)
    if not torch.equal(ref, got):
        raise SystemExit("make_models: export wrapper differs from LinferEncoder")
    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper, (ids,), tmp, input_names=["ids"], output_names=["logits"],
            opset_version=OPSET, do_constant_folding=True,
        )
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=["S", "M"])
    ap.add_argument("--n", type=int, required=True, help="max_seq_len of the model")
    ap.add_argument("--lengths", required=True, help="comma-separated lengths to export")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    lengths = sorted(int(t) for t in args.lengths.split(","))
    if lengths[-1] > args.n:
        raise SystemExit("make_models: a length exceeds n")
    os.makedirs(args.work, exist_ok=True)
    name = args.model
    cfg = models.config(name, args.n)
    stamp = {"config": cfg, "seed": SEED, "init": "std 1/sqrt(fan_in), proj 1/sqrt(n)", "opset": OPSET,
             "torch": torch.__version__}
    stamp_path = os.path.join(args.work, name + ".stamp")
    st_path = os.path.join(args.work, name + ".safetensors")
    onnx_paths = {T: os.path.join(args.work, "%s_n%d.onnx" % (name, T)) for T in lengths}
    check_paths = {T: (os.path.join(args.work, "%s_check_ids_n%d.txt" % (name, T)),
                       os.path.join(args.work, "%s_check_ref_n%d.npy" % (name, T))) for T in lengths}
    base_ok = False
    if os.path.exists(stamp_path) and os.path.exists(st_path):
        with open(stamp_path) as f:
            base_ok = json.load(f) == stamp
    missing = [T for T, p in onnx_paths.items() if not (base_ok and os.path.exists(p))]
    missing_check = [T for T, ps in check_paths.items() if not (base_ok and all(os.path.exists(p) for p in ps))]
    if base_ok and not missing and not missing_check:
        print("make_models: %s is up to date" % name)
        return
    if not base_ok and os.path.exists(stamp_path):
        os.remove(stamp_path)

    t0 = time.time()
    model = linfer_ref.LinferEncoder(cfg)
    init(model, cfg)
    model.eval()
    if not base_ok:
        nparams = sum(p.numel() for p in model.parameters())
        linfer_ref.save_safetensors(model, cfg, st_path)
        print("make_models: %s: %.1fM parameters, %s" % (name, nparams / 1e6, st_path))
        with open(stamp_path, "w") as f:
            json.dump(stamp, f)

    for T in missing_check:
        # Parity data: PyTorch float32 output on fixed random ids of length T.
        ids_path, ref_path = check_paths[T]
        ids = torch.randint(0, models.VOCAB, (T,), generator=torch.Generator().manual_seed(99 + T), dtype=torch.long)
        with torch.inference_mode():
            out = model(ids).numpy().astype(np.float32)
        if not np.isfinite(out).all():
            raise SystemExit("make_models: non-finite output")
        np.save(ref_path + ".tmp.npy", out)
        os.replace(ref_path + ".tmp.npy", ref_path)
        with open(ids_path + ".tmp", "w") as f:
            f.write(" ".join(str(int(i)) for i in ids) + "\n")
        os.replace(ids_path + ".tmp", ids_path)
        print("make_models: %s check data for T=%d" % (name, T))

    for T in missing:
        path = onnx_paths[T]
        t1 = time.time()
        export_onnx(model, T, path)
        print("make_models: %s (%.0f MB, %.1f s)" % (path, os.path.getsize(path) / 2**20, time.time() - t1))
    print("make_models: %s built in %.1f s" % (name, time.time() - t0))

if __name__ == "__main__":
    main()
