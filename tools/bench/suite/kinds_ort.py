# SPDX-License-Identifier: Apache-2.0
"""Every attention kind of scaling.py's S models in linfer against ONNX Runtime running the same
model as exported from the PyTorch reference (tools/python/reference/linfer_ref.py), where it exports.

    /usr/bin/python3 tools/bench/suite/kinds_ort.py [--threads 2] [--lengths 2048,4096]

Needs what run_suite.sh installs (build/bin, tools/bench/suite/node_modules: `npm ci
--ignore-scripts` there). For each kind and length: the model (scaling.py's configuration, seed 7,
max_seq_len 32768, the weights of scaling.py's .lfm files) is exported with torch.onnx.export at a
fixed input length (opset 17, constant folding), then linfer-bench and ort_bench.js (ONNX Runtime's
latency without onnxruntime-node's output handoff, as in benchmarks.md) time it, kinds alternating.
The reference implements each kind plainly (block sparse and sliding window as masks over full
scores, LSH as a loop over chunks), so ONNX Runtime runs what the exported graph says: the figure
compares linfer with the obvious export of each model, not with a hand-written ONNX kernel. A kind
whose export fails or takes longer than --export-timeout is listed with the reason. Writes
docs/kinds_ort.md.
"""

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scaling  # noqa: E402  (KINDS, make_model, slug, build_models, bench, cpu_name, ROOT)
import suite  # noqa: E402  (fma_peak: the machine's FMA peak, to say which CPU; parse: ort_bench.js's output)

ROOT = scaling.ROOT
MAX_N = 32768  # the models scaling.py builds (their E and F have this many columns)


def export(name, T, path):
    import torch
    model = scaling.make_model(name, MAX_N)[0].eval()
    ids = torch.randint(0, 256, (T,), generator=torch.Generator().manual_seed(T), dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), path + ".tmp", input_names=["ids"], output_names=["logits"],
                          opset_version=17, do_constant_folding=True)
    os.replace(path + ".tmp", path)


def export_with_timeout(name, T, path, timeout):
    """'' when the file exists or was written, else why not (one line)."""
    if os.path.exists(path):
        return ""
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()

    def run():
        try:
            export(name, T, path)
            q.put("")
        except Exception as e:  # noqa: BLE001  (any failure is a row of the report)
            q.put("%s: %s" % (type(e).__name__, str(e).splitlines()[0][:160] if str(e) else ""))
    p = ctx.Process(target=run)
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        for f in (path, path + ".tmp"):
            if os.path.exists(f):
                os.remove(f)
        return "export did not finish in %d s" % timeout
    return q.get() if not q.empty() else "export process failed (exit %s)" % p.exitcode


def ort_latency(onnx, threads, runs):
    r = subprocess.run(["node", os.path.join(HERE, "ort_bench.js"), onnx, "--threads", str(threads), "--runs",
                        str(runs), "--warmup", "1"], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        return None, "ONNX Runtime failed: " + (r.stderr.strip().splitlines() or ["?"])[-1][:160]
    return suite.parse(r.stdout)["latency_ms"], ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lengths", default="2048,4096")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--export-timeout", type=int, default=120)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    args = ap.parse_args()
    lengths = [int(t) for t in args.lengths.split(",")]
    os.makedirs(args.work, exist_ok=True)
    start = time.time()
    peak = suite.fma_peak(args.work)
    lfm = scaling.build_models(args.work, MAX_N)
    rows = {}
    for T in lengths:
        for name in scaling.KINDS:
            onnx = os.path.join(args.work, "kinds_%s_n%d.onnx" % (scaling.slug(name), T))
            t0 = time.time()
            why = export_with_timeout(name, T, onnx, args.export_timeout)
            export_s = time.time() - t0
            linfer = scaling.bench(lfm[name], T, args.threads, args.runs)["ms"]
            ort = None
            if not why:
                ort, why = ort_latency(onnx, args.threads, args.runs)
            rows[(name, T)] = (linfer, ort, why)
            print("n=%-5d %-26s linfer %8.1f ms  ORT %s  (export %.0f s)" % (
                T, name, linfer, "%8.1f ms" % ort if ort else why, export_s), flush=True)
    lines = ["# Every attention kind against ONNX Runtime", "",
             "    /usr/bin/python3 tools/bench/suite/kinds_ort.py --threads %d --lengths %s" %
             (args.threads, args.lengths), "",
             "Machine: %s, %d threads (FMA peak measured in this run by fma_peak.cc, %s: %.1f GFLOP/s with 1 "
             "thread, %.1f with 2); %s; the whole run took %.0f s. Models: scaling.md's (dim 256, 4 layers, "
             "4 heads x 64, ff 1024, vocab 256, LM head, sinusoidal positions, random weights, seed 7; the kinds' "
             "settings are the column names there). ONNX Runtime: onnxruntime-node from "
             "tools/bench/suite/package-lock.json, CPU provider, graph optimizations on, running the graph "
             "torch.onnx.export (opset 17) makes of tools/python/reference/linfer_ref.py's module at a fixed input length, "
             "timed without onnxruntime-node's output handoff (benchmarks.md, protocol). That reference writes "
             "block sparse and sliding window attention as masks over full scores and LSH as a loop over "
             "chunks, so ONNX Runtime runs the plain export of each model, not a specialised kernel: where a "
             "kind's graph is quadratic in n, that is the export's doing. Median of %d runs, one session per "
             "model; kinds alternate at each length." %
             (scaling.cpu_name(), args.threads, peak["isa"], peak["gflops"]["1"], peak["gflops"]["2"],
              time.strftime("%Y-%m-%d"), time.time() - start, args.runs), "",
             "| kind | " + " | ".join("n=%d linfer ms | ORT ms | linfer speed-up" % T for T in lengths) + " |",
             "|---|" + "---|---|---|" * len(lengths)]
    notes = []
    for name in scaling.KINDS:
        cells = []
        for T in lengths:
            linfer, ort, why = rows[(name, T)]
            if ort:
                cells.append("%.1f | %.1f | %.2fx" % (linfer, ort, ort / linfer))
            else:
                cells.append("%.1f | - | -" % linfer)
                notes.append("%s at n=%d: %s." % (name, T, why))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    if notes:
        lines += ["", "Not timed in ONNX Runtime: " + " ".join(notes)]
    with open(os.path.join(ROOT, "docs", "kinds_ort.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote docs/kinds_ort.md")


if __name__ == "__main__":
    main()
