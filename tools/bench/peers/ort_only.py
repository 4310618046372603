# SPDX-License-Identifier: Apache-2.0
"""ort_only.py: linfer beside ONNX Runtime alone on the suite's S and M models (f32, and int8 as
quantize_dynamic per channel, as peers.py makes it), n = 128 and 512, 1 and 2 threads: a
cross-check on a machine where the whole peers run (run.sh: every peer, PyTorch 2 for LiteRT
and ExecuTorch) is not wanted. Run after scripts/build.sh with the peers' venv (run.sh makes it;
Debian's python3 with its torch, and requirements.txt's onnxruntime and onnx are all it needs):

    build-peers/venv/bin/python tools/bench/peers/ort_only.py [--rounds 5] [--work DIR]

Builds the models into DIR (default build-peers/work-ort) with make_models.py and
linfer-convert when missing. Each cell alternates linfer-bench processes and ONNX Runtime
sessions in this process, round by round; it prints the medians, ONNX Runtime / linfer (the
median of the rounds' ratios) and linfer's GFLOP/s against one core's FMA peak (linfer-kernel-bench
--kernel none, read at the start).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, HERE)
from convert import ort_int8  # noqa: E402


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def ort_ms(path, T, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0]
    ids = np.random.RandomState(1).randint(0, 256, size=(T,)).astype(np.int64)
    feed = {inp.name: ids if len(inp.shape) == 1 else ids[None]}
    for _ in range(2):
        s.run(None, feed)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def linfer_ms(bindir, lfm, T, threads, runs):
    out = run([os.path.join(bindir, "linfer-bench"), lfm, "--seq-len", str(T), "--threads", str(threads), "--runs",
               str(runs)])
    fields = {l.split(":")[0]: l.split(":", 1)[1] for l in out.splitlines() if ":" in l}
    return float(fields["latency_ms"].split()[1].rstrip(",")), float(fields["gflops"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=os.path.join(ROOT, "build-peers", "work-ort"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.work, "peers"), exist_ok=True)
    for model in ("S", "M"):
        if not os.path.exists(os.path.join(args.work, "%s_n512.onnx" % model)):
            run(["/usr/bin/python3", os.path.join(ROOT, "tools", "bench", "suite", "make_models.py"), "--model", model,
                 "--n", "2048", "--lengths", "128,512", "--work", args.work])
        for dtype in ("f32", "int8"):
            lfm = os.path.join(args.work, "%s_%s.lfm" % (model, dtype))
            if not os.path.exists(lfm):
                run([os.path.join(args.bin, "linfer-convert"), os.path.join(args.work, model + ".safetensors"), "-o",
                     lfm, "--dtype", dtype])
    peak = run([os.path.join(args.bin, "linfer-kernel-bench"), "--kernel", "none"]).splitlines()[0]
    fma = max(float(peak.split("FMA zmm ")[1].split(",")[0]), float(peak.split("FMA ymm ")[1].split(",")[0]))
    print("onnxruntime %s; one core's FMA peak %.1f GFLOP/s; load average %.1f; %d rounds per cell\n" %
          (ort.__version__, fma, os.getloadavg()[0], args.rounds))
    print("| model | dtype | n | threads | linfer ms | ONNX Runtime ms | ONNX Runtime / linfer | linfer GFLOP/s (of the "
          "peak x threads) |")
    print("|---|---|---|---|---|---|---|---|")
    for model in ("S", "M"):
        runs = 10 if model == "S" else 3
        for T in (128, 512):
            for dtype in ("f32", "int8"):
                onnx = os.path.join(args.work, "%s_n%d.onnx" % (model, T)) if dtype == "f32" else ort_int8(
                    args.work, model, T)
                lfm = os.path.join(args.work, "%s_%s.lfm" % (model, dtype))
                for threads in (1, 2):
                    lin, onx, gf = [], [], 0.0
                    for _ in range(args.rounds):
                        ms, gf = linfer_ms(args.bin, lfm, T, threads, runs)
                        lin.append(ms)
                        onx.append(ort_ms(onnx, T, threads, runs))
                    ratio = statistics.median(o / l for o, l in zip(onx, lin))
                    share = "" if dtype == "int8" else " (%.0f%%)" % (100 * gf / (fma * threads))
                    print("| %s | %s | %d | %d | %.1f | %.1f | %.2fx | %.0f%s |" %
                          (model, dtype, T, threads, statistics.median(lin), statistics.median(onx), ratio, gf, share),
                          flush=True)
    print("\nload average at the end %.1f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
