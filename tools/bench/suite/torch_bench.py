# SPDX-License-Identifier: Apache-2.0
"""torch_bench.py MODEL.safetensors --seq-len N --threads T [--runs R] [--warmup W] [--dtype f32|int8]
torch_bench.py MODEL.safetensors --check IDS.txt OUT.npy --threads T [--dtype f32|int8]
torch_bench.py HF_MODEL_DIR ...   (all-MiniLM-L6-v2 in transformers; a Python that has it)

Times the PyTorch reference (tools/python/reference/linfer_ref.py LinferEncoder, eager mode) on random token
ids [N]: torch.set_num_threads(T), torch.set_num_interop_threads(1), torch.inference_mode(); W warm-up
runs, then R timed runs. Run with /usr/bin/python3 (Debian's torch). The driver also sets
OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to T for this process, so that OpenBLAS (which does Debian
torch's matrix products) uses the same number of threads, and OMP_WAIT_POLICY=PASSIVE, so that idle
OpenMP workers do not spin on the cores OpenBLAS works on.

--dtype int8: torch.ao.quantization.quantize_dynamic on every nn.Linear (Q, K, V, out, feed-forward,
LM head) with per-output-channel symmetric int8 weights (per_channel_dynamic_qconfig) and activations
quantized at run time (uint8, one scale per tensor), on the quantized engine fbgemm when this torch
has it, else x86, else onednn (Debian's torch 1.13 is built without fbgemm), else qnnpack; the
Linformer projections E and F, norms and embeddings stay float32, as in ONNX Runtime's dynamic
quantization. Quantizing is part of load_ms.

--check: one run on the given ids (whitespace-separated), output written as float32 .npy.

Prints, in linfer-bench's format:
    latency_ms: median X, min Y, max Z
    peak_rss_bytes: B     (VmHWM of this process; getrusage would include the parent's at fork)
    load_ms: L
    qengine: E            (int8 only)
"""
import argparse
import json
import os
import resource
import struct
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "reference"))

import linfer_ref  # noqa: E402



def peak_rss_bytes():
    """VmHWM from /proc: Linux carries ru_maxrss across exec, so getrusage would report the
    parent's peak when that is larger."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def load_hf_model(path):
    """A Hugging Face model directory (the peers' all-MiniLM-L6-v2): the sentence embedding of
    tools/bench/peers/minilm_model.py, run with a Python that has transformers."""
    sys.path.insert(0, os.path.join(HERE, "..", "peers"))
    import minilm_model

    model = minilm_model.embedder(path)
    c = model.bert.config
    return model, {"max_seq_len": c.max_position_embeddings, "vocab_size": c.vocab_size}


def load_model(path):
    """Reads the safetensors file tensor by tensor straight into the model's parameters, so that
    the peak RSS holds the weights once (linfer_ref.load_safetensors would hold the file twice)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
        base = 8 + n
        cfg = json.loads(header.pop("__metadata__")["linfer_config"])
        model = linfer_ref.LinferEncoder(cfg).eval()
        state = model.state_dict()
        if set(state) != set(header):
            raise SystemExit("torch_bench: tensor names differ from LinferEncoder's")
        for name, info in header.items():
            t = state[name]
            if info["dtype"] != "F32" or list(t.shape) != info["shape"]:
                raise SystemExit("torch_bench: %s: unexpected dtype or shape" % name)
            b, e = info["data_offsets"]
            f.seek(base + b)
            view = t.numpy().reshape(-1).view("uint8")
            if f.readinto(memoryview(view)) != e - b:
                raise SystemExit("torch_bench: %s: short read" % name)
    return model, cfg


QENGINES = ("fbgemm", "x86", "onednn", "qnnpack")


def quantize(model):
    """Dynamic int8 quantization of every nn.Linear (see the module docstring). Returns the engine."""
    import torch.nn as nn
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    engines = torch.backends.quantized.supported_engines
    engine = next((e for e in QENGINES if e in engines), None)
    if engine is None:
        raise SystemExit("torch_bench: no quantized engine in %s" % engines)
    torch.backends.quantized.engine = engine
    quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True)
    n = sum(1 for m in model.modules() if type(m).__name__ == "Linear" and "dynamic" in type(m).__module__)
    left = sum(1 for m in model.modules() if type(m) is nn.Linear)
    if n == 0 or left:
        raise SystemExit("torch_bench: quantize_dynamic left %d float nn.Linear (quantized %d)" % (left, n))
    return engine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--seq-len", type=int)
    ap.add_argument("--dtype", choices=["f32", "int8"], default="f32")
    ap.add_argument("--check", nargs=2, metavar=("IDS", "OUT_NPY"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    t0 = time.perf_counter()
    with torch.no_grad():
        model, cfg = load_hf_model(args.model) if os.path.isdir(args.model) else load_model(args.model)
        engine = quantize(model) if args.dtype == "int8" else None
    load_ms = (time.perf_counter() - t0) * 1e3
    if args.check:
        import numpy as np

        with open(args.check[0]) as f:
            ids = torch.tensor([int(t) for t in f.read().split()], dtype=torch.long)
        if not 1 <= len(ids) <= cfg["max_seq_len"]:
            raise SystemExit("torch_bench: the check ids have a length outside [1, n]")
        with torch.inference_mode():
            out = model(ids).numpy().astype(np.float32)
        np.save(args.check[1], out)
        print("check: wrote float32 %s to %s (%s%s)" % (list(out.shape), args.check[1], args.dtype,
                                                      ", qengine " + engine if engine else ""))
        return
    T = args.seq_len
    if T is None or not 1 <= T <= cfg["max_seq_len"]:
        raise SystemExit("torch_bench: --seq-len missing or outside [1, n]")
    ids = torch.randint(0, cfg["vocab_size"], (T,), generator=torch.Generator().manual_seed(1234))
    ms = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            model(ids)
        for _ in range(args.runs):
            s = time.perf_counter()
            model(ids)
            ms.append((time.perf_counter() - s) * 1e3)
    ms.sort()
    k = len(ms)
    med = ms[k // 2] if k % 2 else 0.5 * (ms[k // 2 - 1] + ms[k // 2])
    rss = peak_rss_bytes()
    print("seq_len: %d, threads: %d (torch %s, num_threads %d), runs: %d, warmup: %d, dtype: %s"
          % (T, args.threads, torch.__version__, torch.get_num_threads(), args.runs, args.warmup, args.dtype))
    print("latency_ms: median %.3f, min %.3f, max %.3f" % (med, ms[0], ms[-1]))
    print("peak_rss_bytes: %d" % rss)
    print("load_ms: %.1f" % load_ms)
    if engine:
        print("qengine: %s" % engine)


if __name__ == "__main__":
    main()
