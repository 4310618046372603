"""report.py RESULTS.json --out docs/benchmarks.md: renders the suite's results (tables and plots).

The plots (latency vs n per runtime, one PNG per model) go next to the document; they need
matplotlib (Debian python3-matplotlib), and are left out with a note when it is missing.
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402

NAMES = {"linfer": "linfer f32", "linfer_int8": "linfer int8", "ort": "ONNX Runtime", "torch": "PyTorch"}
COLORS = {"linfer": "tab:blue", "linfer_int8": "tab:cyan", "ort": "tab:orange", "torch": "tab:red"}


def median(xs):
    return statistics.median(xs)


def mib(b):
    return "%.0f" % (b / 2**20) if b >= 10 * 2**20 else "%.1f" % (b / 2**20)


def summarize(cell):
    out = {}
    for rt, samples in cell["samples"].items():
        lat = [s["latency_ms"] for s in samples]
        out[rt] = {
            "median": median(lat), "min": min(lat), "max": max(lat),
            "rss": max(s.get("peak_rss_bytes", 0) for s in samples),
            "arena": samples[0].get("arena_bytes"),
            "packed": samples[0].get("packed_weight_bytes"),
            "linfer_flops": median([s["gflops"] * 1e6 * s["latency_ms"] for s in samples]) if "gflops" in samples[0] else None,
            "load_ms": median([s["load_ms"] for s in samples]) if "load_ms" in samples[0] else None,
        }
    return out


def fmt_ms(ms):
    return "%.0f" % ms if ms >= 100 else "%.1f" % ms if ms >= 10 else "%.2f" % ms


def plots(results, outdir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None, "matplotlib is not installed (apt-get install python3-matplotlib); no plots."
    files = {}
    for name in sorted({c["model"] for c in results["cells"]}):
        cells = [c for c in results["cells"] if c["model"] == name]
        threads = sorted({c["threads"] for c in cells})
        fig, axes = plt.subplots(1, len(threads), figsize=(5.2 * len(threads), 4.2), squeeze=False)
        for ax, t in zip(axes[0], threads):
            tc = sorted([c for c in cells if c["threads"] == t], key=lambda c: c["T"])
            for rt in ("linfer", "linfer_int8", "ort", "torch"):
                pts = [(c["T"], summarize(c)[rt]) for c in tc if rt in c["samples"]]
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ys = [p[1]["median"] for p in pts]
                lo = [p[1]["median"] - p[1]["min"] for p in pts]
                hi = [p[1]["max"] - p[1]["median"] for p in pts]
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=NAMES[rt], color=COLORS[rt])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks([c["T"] for c in tc])
            ax.set_xticklabels([str(c["T"]) for c in tc])
            ax.set_xlabel("sequence length n (tokens)")
            ax.set_ylabel("latency per forward pass (ms, median; bars: min-max)")
            ax.set_title("model %s, %d thread%s" % (name, t, "s" if t > 1 else ""))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fname = "benchmarks_%s.png" % name
        fig.savefig(os.path.join(outdir, fname), dpi=110)
        plt.close(fig)
        files[name] = fname
    return files, None


def cfg_line(cfg):
    return ("dim %d, %d layers, %d heads x head_dim %d, ff %d, k = %d, n = %d, vocab %d, %s-norm, %s, "
            "%s positions, %s projection sharing (separate E and F), LM head" % (
                cfg["dim"], cfg["num_layers"], cfg["num_heads"], cfg["head_dim"], cfg["ff_dim"], cfg["proj_len"],
                cfg["max_seq_len"], cfg["vocab_size"], cfg["norm_placement"], cfg["activation"].upper(),
                cfg["positions"], cfg["projection_sharing"]))


def targets(results, peak, w):
    """The issue's targets (2 threads), each with the figures of this run and whether it is met."""
    rows = []
    cells = {(c["model"], c["T"], c["threads"]): summarize(c) for c in results["cells"]}
    flops = {(c["model"], c["T"], c["threads"]): c["flops"] for c in results["cells"]}

    def add(target, key, figure, ok):
        rows.append((target, "%s n=%d" % (key[0], key[1]), figure, "yes" if ok else "**no**"))

    for key in sorted(k for k in cells if k[2] == 2):
        s = cells[key]
        vs_ort = s["ort"]["median"] / s["linfer"]["median"]
        need = 1.5 if key[0] == "S" else 1.3
        add("linfer f32 >= %.1fx ONNX Runtime" % need, key, "%.2fx" % vs_ort, vs_ort >= need)
        if key[0] == "S":
            vs_torch = s["torch"]["median"] / s["linfer"]["median"]
            add("linfer f32 >= 4x PyTorch", key, "%.2fx" % vs_torch, vs_torch >= 4)
        if key[1] >= 2048:
            frac = flops[key] / (s["linfer"]["median"] * 1e6) / peak[2]
            add(">= 45% of the FMA peak", key, "%.0f%%" % (100 * frac), frac >= 0.45)
        if key[1] == 8192:
            r = s["linfer"]["rss"] / s["ort"]["rss"]
            add("peak RSS <= 1/3 of ONNX Runtime's", key, "%.2f" % r, r <= 1 / 3)
        if key == ("S", 2048, 2) and "linfer_int8" in s:
            r = s["linfer_int8"]["median"] / s["linfer"]["median"]
            add("int8 latency <= 0.6 of f32", key, "%.2f" % r, r <= 0.6)
    if not rows:
        return
    w("### Targets (2 threads, medians of this run)")
    w("")
    w("| target | cell | this run | met |")
    w("|---|---|---|---|")
    for r in rows:
        w("| %s | %s | %s | %s |" % r)
    w("")


def render(results, plot_files, plot_note):
    m = results["machine"]
    peak = {int(k): v for k, v in results["fma_peak"]["gflops"].items()}
    quick = results["mode"] == "quick"
    L = []
    w = L.append
    w("# Benchmarks: linfer vs ONNX Runtime vs PyTorch")
    w("")
    w("<!-- Generated by tools/bench/suite/run_suite.sh (report.py); edit those, not this file. -->")
    w("")
    if quick:
        w("> **Quick mode (smoke test)**: only model S at n = 512 and 2048, 3 runs each, on whatever "
          "else the machine was doing at the time. These numbers show that the suite works; they are "
          "not the benchmark. Run `bash tools/bench/suite/run_suite.sh` on a quiet machine for that.")
        w("")
    w("Generated %s by `bash tools/bench/suite/run_suite.sh%s` in %.0f min (%s mode)." % (
        results["started"], " --quick" if quick else "", results.get("wall_s", 0) / 60, results["mode"]))
    w("")
    w("## Machine and versions")
    w("")
    w("| | |")
    w("|---|---|")
    w("| CPU (lscpu model name) | %s%s |" % (m["cpu_model"], " (virtual machine)" if m["hypervisor"] else ""))
    w("| CPUs | %s (%s socket x %s cores x %s threads per core) |" % (m["cpus"], m["sockets"], m["cores_per_socket"], m["threads_per_core"]))
    w("| vector ISA | %s |" % m["isa"])
    w("| memory | %s |" % m["mem_total"])
    w("| OS, kernel | %s, Linux %s |" % (m["os"], m["kernel"]))
    w("| linfer | source commit %s; binaries built %s (Release, scripts/build.sh), gcc %s, XNNPACK %s |" % (
        m["linfer_commit"], m.get("linfer_built", "?"), m["gcc"], m["xnnpack"]))
    w("| ONNX Runtime | onnxruntime-node %s (npm; the libonnxruntime it ships), node %s, CPU execution provider |" % (m["onnxruntime_node"], m["node"]))
    w("| PyTorch | torch %s (Debian python3-torch %s), eager mode, OpenBLAS %s (libopenblas0-pthread) |" % (m["torch"], m["torch_pkg"], m["openblas"]))
    w("| threads | 1 and 2 (the machine has %s CPUs) |" % m["cpus"])
    w("| load average (1, 5, 15 min) | %s at the start, %s at the end |" % (
        " ".join(m.get("loadavg_start", ["?"])), " ".join(m.get("loadavg_end", ["?"]))))
    w("")
    fp = results["fma_peak"]
    w("**Measured FMA peak** (tools/bench/suite/fma_peak.cc, `g++ %s`, 16 independent %s FMA "
      "accumulators per thread, single precision, best of 3 one-second repetitions): %s. "
      "The \"%% of peak\" columns divide by the peak measured with the same number of threads." % (
          fp["flags"], fp["isa"].upper(),
          ", ".join("%.1f GFLOP/s with %d thread%s" % (peak[t], t, "s" if t > 1 else "") for t in sorted(peak))))
    w("")
    w("## Models")
    w("")
    w("Built in PyTorch by tools/bench/suite/make_models.py from tools/python/linfer_ref.py "
      "(`LinferEncoder`; `init_random` with seed 7, linear weights with std 1/sqrt(fan_in), E and F "
      "with std 1/sqrt(n), embeddings std 1), saved as safetensors, then:")
    w("")
    w("- linfer: `linfer-convert M.safetensors -o M.lfm --dtype f32` (and `--dtype int8` for S);")
    w("- ONNX Runtime: `torch.onnx.export` (opset 17, constant folding), one file per (model, n) with a "
      "fixed input shape `[n]` (int64 token ids);")
    w("- PyTorch: the `LinferEncoder` module itself, loaded from the safetensors file.")
    w("")
    for name, cfg in sorted(results["configs"].items()):
        what = "small Linformer encoder" if name == "S" else "the Linformer paper's RoBERTa-base setting"
        w("- **%s** (%s): %s." % (name, what, cfg_line(cfg)))
    w("")
    w("The vocabulary is 256 (byte-level) for both: the benchmark is about the encoder. RoBERTa's "
      "50265-entry vocabulary would add an LM-head matrix product of 2 x n x dim x 50265 FLOPs (for M "
      "about as much as 6 of its 12 layers) and 150 MB per embedding or head matrix: the same dense "
      "product for every runtime, which would only dilute the differences in the attention and "
      "feed-forward layers. Every model is built with n = the largest length benchmarked; a shorter "
      "input of T tokens uses the first T columns of E and F (linfer and PyTorch), and the ONNX file "
      "of length T has those columns folded in as constants.")
    w("")
    w("**Parity**: the LM-head output of each runtime on the same random ids, against PyTorch float32: "
      "largest absolute error, relative error (Frobenius norm of the difference / norm of the "
      "reference) and the share of positions whose arg-max token agrees. The suite stops if linfer f32 "
      "or ONNX Runtime is off by more than 1e-3 of the largest |output|.")
    w("")
    w("| model | n | max abs output | ONNX Runtime | linfer f32 | linfer int8 |")
    w("|---|---|---|---|---|---|")

    def perr(p, key):
        if key not in p:
            return "-"
        e = p[key]
        return "%.2g / %.2g / %.1f%%" % (e["max_abs"], e["rel"], 100 * e["argmax"])

    for p in results["parity"]:
        w("| %s | %d | %.3g | %s | %s | %s |" % (p["model"], p["T"], p["max_abs_ref"], perr(p, "ort"),
                                                perr(p, "linfer_f32"), perr(p, "linfer_int8")))
    w("")
    w("(cells: max abs error / relative error / arg-max agreement)")
    w("")
    w("## Protocol")
    w("")
    w("For every cell (model, n, threads) the suite runs R rounds. In each round it starts every runtime "
      "once, in its own process: the process loads the model, does W warm-up forward passes and P timed "
      "passes (steady state: ONNX Runtime and PyTorch are still markedly slower on their second pass than "
      "later), reports the median of the P, and exits. The order of the runtimes rotates from round to "
      "round, so that machine noise hits all runtimes alike. The latency of a runtime is the median of "
      "its R per-process medians; its peak RSS is the largest peak of its R processes (weights, buffers "
      "and the runtime itself: node/V8 for ONNX Runtime, the Python interpreter and torch for PyTorch).")
    w("")
    w("- linfer: `linfer-bench M.lfm --seq-len n --threads T --runs P --warmup W`; peak RSS "
      "from getrusage; arena bytes as linfer-bench reports them.")
    w("- ONNX Runtime: `node tools/bench/suite/ort_bench.js M_n.onnx --threads T --runs P --warmup W`: "
      "intraOpNumThreads = T, interOpNumThreads = 1, graphOptimizationLevel all, sequential execution; "
      "peak RSS is VmHWM from /proc/self/status.")
    w("- PyTorch: `/usr/bin/python3 tools/bench/suite/torch_bench.py M.safetensors --seq-len n --threads T "
      "--runs P --warmup W`: torch.set_num_threads(T), set_num_interop_threads(1), "
      "torch.inference_mode(); OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to T, OMP_WAIT_POLICY=PASSIVE "
      "(Debian's torch has two thread pools, OpenMP for element-wise work and OpenBLAS's pthreads for "
      "the matrix products; with the default policy idle OpenMP workers spin on the cores OpenBLAS "
      "needs, which made 2-thread runs about 3x slower on a busy machine); peak RSS from "
      "resource.getrusage.")
    w("")
    w("Rounds R, warm-up passes W and timed passes P per process: %s." % "; ".join(sorted(
        {"%s n=%d: R=%d, W=%d, P=%d" % (c["model"], c["T"], c["runs"], c.get("warmup", 1), c.get("per_process", 1))
         for c in results["cells"]},
        key=lambda s: (s[0], int(s.split("=")[1].split(":")[0])))))
    w("")
    w("**FLOPs.** One count per (model, n) serves every runtime: the Linformer forward as linfer computes "
      "it (runtime/src/encoder.cc `forward_flops`), 2 x the multiply-adds of the matrix products, per layer "
      "2·n·D·HD (Q) + 2·k·n·D·2 (E·X and F·X) + 4·k·D·HD (K', V') + 4·n·k·HD (scores, P·V') + 2·n·HD·D (out) "
      "+ 4·n·D·F (feed-forward), plus 2·n·D·V for the LM head (D = dim, HD = heads·head_dim, F = ff, "
      "V = vocab). ONNX Runtime and PyTorch run the exported order E·(X·Wk) (projection after the "
      "linear layer), which costs more; effective GFLOP/s = this count / median latency, so they are "
      "comparable as speed, not as hardware utilisation. Layer norms, GELU, softmax and the embedding are "
      "not counted.")
    w("")
    fl = {}
    for c in results["cells"]:
        s = summarize(c)
        fl[(c["model"], c["T"])] = (c["flops"], s["linfer"]["linfer_flops"])
    w("| model | n | GFLOP per forward | linfer-bench's count (gflops x median) |")
    w("|---|---|---|---|")
    for (name, T), (f, lf) in sorted(fl.items()):
        w("| %s | %d | %.2f | %.2f |" % (name, T, f / 1e9, lf / 1e9 if lf else float("nan")))
    w("")

    w("## Results")
    w("")
    w("Latency is the median over the rounds, in milliseconds per forward pass. Speed-up = the other "
      "runtime's median / linfer's median (above 1: linfer is faster).")
    w("")
    for name in sorted({c["model"] for c in results["cells"]}):
        cells = sorted([c for c in results["cells"] if c["model"] == name], key=lambda c: (c["T"], c["threads"]))
        w("### Model %s" % name)
        w("")
        w("| n | threads | linfer ms | ORT ms | PyTorch ms | linfer GFLOP/s (% peak) | ORT GFLOP/s (% peak) | PyTorch GFLOP/s (% peak) | speed-up vs ORT | speed-up vs PyTorch |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for c in cells:
            s = summarize(c)
            t = c["threads"]

            def g(rt):
                gf = c["flops"] / (s[rt]["median"] * 1e6)
                return "%.1f (%.0f%%)" % (gf, 100 * gf / peak[t])

            w("| %d | %d | %s | %s | %s | %s | %s | %s | %.2fx | %.2fx |" % (
                c["T"], t, fmt_ms(s["linfer"]["median"]), fmt_ms(s["ort"]["median"]), fmt_ms(s["torch"]["median"]),
                g("linfer"), g("ort"), g("torch"),
                s["ort"]["median"] / s["linfer"]["median"], s["torch"]["median"] / s["linfer"]["median"]))
        w("")
        w("Memory (MiB): peak RSS of each process, and linfer's arena (activations and scratch, allocated "
          "once per session) and packed weights.")
        w("")
        w("| n | threads | linfer peak RSS | ORT peak RSS | PyTorch peak RSS | linfer arena | linfer packed weights |")
        w("|---|---|---|---|---|---|---|")
        for c in cells:
            s = summarize(c)
            w("| %d | %d | %s | %s | %s | %s | %s |" % (
                c["T"], c["threads"], mib(s["linfer"]["rss"]), mib(s["ort"]["rss"]), mib(s["torch"]["rss"]),
                mib(s["linfer"]["arena"]), mib(s["linfer"]["packed"])))
        w("")
        if "linfer_int8" in cells[0]["samples"]:
            w("linfer int8 (per-row int8 weights, `--dtype int8`) against linfer f32 on the same rounds "
              "(int8 GFLOP/s counts the same multiply-adds; it can exceed the f32 FMA peak):")
            w("")
            w("| n | threads | f32 ms | int8 ms | int8 speed-up | int8 GFLOP/s | f32 peak RSS | int8 peak RSS | int8 packed weights |")
            w("|---|---|---|---|---|---|---|---|---|")
            for c in cells:
                s = summarize(c)
                w("| %d | %d | %s | %s | %.2fx | %.1f | %s | %s | %s |" % (
                    c["T"], c["threads"], fmt_ms(s["linfer"]["median"]), fmt_ms(s["linfer_int8"]["median"]),
                    s["linfer"]["median"] / s["linfer_int8"]["median"], c["flops"] / (s["linfer_int8"]["median"] * 1e6),
                    mib(s["linfer"]["rss"]), mib(s["linfer_int8"]["rss"]), mib(s["linfer_int8"]["packed"])))
            w("")
        if plot_files and name in plot_files:
            w("![latency vs n, model %s](%s)" % (name, plot_files[name]))
            w("")
    if plot_note:
        w("(%s)" % plot_note)
        w("")
    targets(results, peak, w)
    w("### Spread")
    w("")
    w("min / median / max latency (ms) over the rounds, and model load time (median, ms; not part of the latency).")
    w("")
    w("| model | n | threads | runtime | min | median | max | load |")
    w("|---|---|---|---|---|---|---|---|")
    for c in sorted(results["cells"], key=lambda c: (c["model"], c["T"], c["threads"])):
        s = summarize(c)
        for rt in ("linfer", "linfer_int8", "ort", "torch"):
            if rt in s:
                lm = s[rt]["load_ms"]
                w("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
                    c["model"], c["T"], c["threads"], NAMES[rt], fmt_ms(s[rt]["min"]), fmt_ms(s[rt]["median"]),
                    fmt_ms(s[rt]["max"]), fmt_ms(lm) if lm is not None else "-"))
    w("")
    w("## Running it")
    w("")
    w("    bash tools/bench/suite/run_suite.sh            # full suite (10-15 minutes on an idle 2-core machine)")
    w("    bash tools/bench/suite/run_suite.sh --quick    # smoke test: S at n = 512 and 2048, 3 rounds")
    w("")
    w("The script installs what is missing (scripts/install-deps.sh, python3-matplotlib, "
      "onnxruntime-node from tools/bench/suite/package-lock.json with `npm ci --ignore-scripts`), "
      "builds linfer (`scripts/build.sh build`, or an incremental build of the tools), builds and "
      "converts the models into tools/bench/suite/work/ (kept between runs; override with "
      "`LINFER_BENCH_WORK=DIR`; building and exporting them the first time takes about 3 minutes), "
      "measures, and rewrites this file and the plots (`--no-install` and `--no-build` skip the first "
      "two steps). Raw results: "
      "work/results.json. Run it on an otherwise idle machine: the suite never runs two benchmark "
      "processes at once, but anything else running shares the same cores.")
    w("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    outdir = os.path.dirname(os.path.abspath(args.out))
    plot_files, note = plots(results, outdir)
    text = render(results, plot_files, note)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print("report: wrote %s%s" % (args.out, "".join(", " + os.path.join(outdir, p) for p in (plot_files or {}).values())))


if __name__ == "__main__":
    main()
