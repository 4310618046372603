# SPDX-License-Identifier: Apache-2.0
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

RUNTIMES = ("linfer", "linfer_int8", "ort", "ort_int8", "torch", "torch_int8")
NAMES = {"linfer": "linfer f32", "linfer_int8": "linfer int8", "ort": "ORT f32", "ort_int8": "ORT int8",
         "torch": "PyTorch f32", "torch_int8": "PyTorch int8"}
COLORS = {"linfer": "tab:blue", "linfer_int8": "tab:blue", "ort": "tab:orange", "ort_int8": "tab:orange",
          "torch": "tab:red", "torch_int8": "tab:red"}
# The int8 targets are set for these (model, n) cells, at 2 threads.
INT8_TARGET_CELLS = {("S", 512), ("S", 2048), ("S", 8192), ("M", 512), ("M", 4096)}


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
        for key in ("js_latency_ms", "handoff_ms", "profile_model_run_ms", "profiled_js_latency_ms"):
            if key in samples[0]:
                out[rt][key] = median([s[key] for s in samples])
        if "qengine" in samples[0]:
            out[rt]["qengine"] = samples[0]["qengine"]
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
            for rt in RUNTIMES:
                pts = [(c["T"], summarize(c)[rt]) for c in tc if rt in c["samples"]]
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ys = [p[1]["median"] for p in pts]
                lo = [p[1]["median"] - p[1]["min"] for p in pts]
                hi = [p[1]["max"] - p[1]["median"] for p in pts]
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="s" if rt.endswith("int8") else "o", capsize=3,
                            label=NAMES[rt], color=COLORS[rt], linestyle="--" if rt.endswith("int8") else "-")
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
    """The issue's targets (2 threads), each with the figure of this run and whether it is met.
    ONNX Runtime's figures are the fair ones (session.run() minus the output handoff); the raw
    session.run() ratio is shown next to them."""
    rows = []
    cells = {(c["model"], c["T"], c["threads"]): summarize(c) for c in results["cells"]}
    flops = {(c["model"], c["T"], c["threads"]): c["flops"] for c in results["cells"]}

    def add(target, key, figure, ok, ceiling="-"):
        rows.append((target, "%s n=%d" % (key[0], key[1]), figure, ceiling, "yes" if ok else "**no**"))

    def f32_ceiling(key, s, peer):
        """The ratio linfer f32 would reach against `peer` at 100% of the FMA peak (its FLOP count)."""
        return "%.2fx" % (s[peer]["median"] / (flops[key] / (peak[2] * 1e9) * 1e3))

    def ratio(s, slow, fast):
        return s[slow]["median"] / s[fast]["median"]

    def with_raw(s, ort, fast):
        r = ratio(s, ort, fast)
        raw = s[ort].get("js_latency_ms")
        return r, "%.2fx" % r + (" (raw session.run(): %.2fx)" % (raw / s[fast]["median"]) if raw else "")

    for key in sorted((k for k in cells if k[2] == 2), key=lambda k: (k[0] != "S", k[1])):
        s = cells[key]
        model, T = key[0], key[1]
        # int8
        if (model, T) in INT8_TARGET_CELLS:
            r, fig = with_raw(s, "ort_int8", "linfer_int8")
            add("linfer int8 >= 1.5x ORT int8", key, fig, r >= 1.5)
            r = ratio(s, "torch_int8", "linfer_int8")
            add("linfer int8 >= 4x PyTorch int8", key, "%.2fx" % r, r >= 4)
        if model == "M":
            r = ratio(s, "linfer", "linfer_int8")
            add("linfer int8 >= 3x linfer f32", key, "%.2fx" % r, r >= 3)
        # f32 (ORT on fair timings)
        need = 1.5 if model == "S" else 1.3
        if model == "S" or T in (512, 4096):
            r, fig = with_raw(s, "ort", "linfer")
            add("linfer f32 >= %.1fx ORT f32" % need, key, fig, r >= need, f32_ceiling(key, s, "ort"))
        if model == "S":
            r = ratio(s, "torch", "linfer")
            add("linfer f32 >= 4x PyTorch f32", key, "%.2fx" % r, r >= 4, f32_ceiling(key, s, "torch"))
        if T >= 2048:
            frac = flops[key] / (s["linfer"]["median"] * 1e6) / peak[2]
            add("linfer f32 >= 45% of the FMA peak", key, "%.0f%%" % (100 * frac), frac >= 0.45)
        if T == 8192:
            r = s["linfer"]["rss"] / s["ort"]["rss"]
            add("linfer f32 peak RSS <= 1/3 of ORT f32's", key, "%.2f" % r, r <= 1 / 3)
        if (model, T) == ("S", 2048):
            r = s["linfer_int8"]["median"] / s["linfer"]["median"]
            add("linfer int8 latency <= 0.6 of f32", key, "%.2f" % r, r <= 0.6)
    if not rows:
        return
    w("### Targets (2 threads, medians of this run)")
    w("")
    w("ORT figures use ONNX Runtime's fair latency (session.run() minus onnxruntime-node's output "
      "handoff, see the protocol); the ratio on the raw session.run() time is given in brackets. "
      "The ceiling of an f32 ratio is the ratio linfer would reach if its f32 forward pass (its own "
      "FLOP count, the compression reassociated) ran at 100% of the 2-thread FMA peak measured above: "
      "where it is below the target, no f32 kernel can meet the target on this machine, because the "
      "peer already runs faster than 1/target of the peak by that count.")
    w("")
    w("| target | cell | this run | ceiling at the FMA peak | met |")
    w("|---|---|---|---|---|")
    for r in rows:
        w("| %s | %s | %s | %s | %s |" % r)
    w("")
    met = sum(1 for r in rows if r[4] == "yes")
    w("%d of %d targets met in this run." % (met, len(rows)))
    w("")


def render(results, plot_files, plot_note):
    m = results["machine"]
    peak = {int(k): v for k, v in results["fma_peak"]["gflops"].items()}
    quick = results["mode"] == "quick"
    qengines = sorted({s["qengine"] for c in results["cells"] for s in c["samples"].get("torch_int8", []) if "qengine" in s})
    qengine = ", ".join(qengines) if qengines else "?"
    L = []
    w = L.append
    w("# Benchmarks: linfer vs ONNX Runtime vs PyTorch, f32 and int8")
    w("")
    w("<!-- Generated by tools/bench/suite/run_suite.sh (report.py); edit those, not this file. -->")
    w("")
    if quick:
        w("> **Quick mode (smoke test)**: only model S at n = 512 and 2048, 3 rounds each, on whatever "
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
    w("| ONNX Runtime | onnxruntime-node %s (npm; the libonnxruntime it ships), node %s, CPU execution provider; "
      "int8 graphs written with onnx-proto %s (npm) |" % (m["onnxruntime_node"], m["node"], m.get("onnx_proto", "?")))
    w("| PyTorch | torch %s (Debian python3-torch %s), eager mode, OpenBLAS %s (libopenblas0-pthread); "
      "int8 on the quantized engine %s (this torch has: %s) |" % (
          m["torch"], m["torch_pkg"], m["openblas"], qengine, m.get("torch_qengines", "?")))
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
    w("Built in PyTorch by tools/bench/suite/make_models.py from tools/python/reference/linfer_ref.py "
      "(`LinferEncoder`; `init_random` with seed 7, linear weights with std 1/sqrt(fan_in), E and F "
      "with std 1/sqrt(n), embeddings std 1), saved as safetensors, then:")
    w("")
    w("- linfer f32 and int8: `linfer-convert M.safetensors -o M.lfm --dtype f32` and `--dtype int8` "
      "(int8: symmetric int8 weights with one scale per output channel for every dense layer, run by "
      "kernels that quantize each activation row at run time; embeddings and the projections E, F are "
      "stored in int8 too and widened a few rows at a time where a run reads them; docs/quantization.md);")
    w("- ONNX Runtime f32: `torch.onnx.export` (opset 17, constant folding), one file per (model, n) with a "
      "fixed input shape `[n]` (int64 token ids);")
    w("- ONNX Runtime int8: `node tools/bench/suite/ort_quantize.js M_n.onnx M_n_int8.onnx`, the graph "
      "that onnxruntime's `quantize_dynamic` (per-channel, QInt8 weights) makes of the linear layers, after "
      "ORT's fusion: every Gemm/MatMul with a constant weight becomes `com.microsoft.DynamicQuantizeMatMul` "
      "(A float, B int8 [K, N], b_scale float [N], b_zero_point int8 [N] = 0, bias float [N]) with "
      "symmetric per-column int8 weights (scale = max |column| / 127, round half to even, range "
      "[-127, 127]); the op quantizes its input at run time to uint8 with one scale and zero point per "
      "tensor. It is built in the suite because `quantize_dynamic` itself (Python) is not available here, "
      "and because on this export it would quantize nothing: `torch.onnx.export` writes nn.Linear on a "
      "2-D input as Gemm, which its dynamic-quantization op registry does not cover. The attention "
      "products and the projections E, F (fed through Expand) stay float32, as they would;")
    w("- PyTorch f32: the `LinferEncoder` module itself, loaded from the safetensors file;")
    w("- PyTorch int8: the same module after `torch.ao.quantization.quantize_dynamic` on every `nn.Linear` "
      "with `per_channel_dynamic_qconfig` (int8 per-output-channel weights, activations quantized at "
      "run time per tensor; torch's dynamic Linear passes `reduce_range=True`, i.e. 7-bit activations on "
      "engines that honour it), on the "
      "%s engine (the issue asks for fbgemm, which Debian's torch is built without). E, F, norms and "
      "embeddings stay float32." % qengine)
    w("")
    graphs = results.get("ort_int8_graphs", {})
    if graphs:
        parts = []
        for name in sorted(graphs):
            for T, g in sorted(graphs[name].items(), key=lambda kv: int(kv[0])):
                parts.append("%s n=%s: %s DynamicQuantizeMatMul from %s, %d float MatMuls kept, int8 weights "
                             "%.1f MiB (f32 %.1f MiB), largest rounding error %.3f of a step" % (
                                 name, T, sum(g["replaced"].values()),
                                 " + ".join("%d %s" % (v, k) for k, v in sorted(g["replaced"].items()) if v),
                                 g["float_matmuls_kept"], g["weight_bytes_int8"] / 2**20,
                                 g["weight_bytes_f32"] / 2**20, g["max_rounding_steps"]))
        w("ORT int8 graphs: " + "; ".join(parts) + ".")
        w("")
    ops = results.get("ort_ops", {})
    if ops:
        first = min(ops, key=lambda k: (k.split()[0] != "S", int(k.split("n=")[1])))
        w("Operators ONNX Runtime runs after its graph optimizations (profiled check run, %s): f32: %s; "
          "int8: %s." % (first, ops[first].get("ort", "?"), ops[first].get("ort_int8", "?")))
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
    w("## Parity")
    w("")
    w("The LM-head output (logits [n, 256]) of each runtime and dtype against PyTorch float32, on the same "
      "random ids of length n, at every n benchmarked: largest absolute error (and the largest |output| "
      "for scale), relative error (Frobenius norm of the difference / norm of the reference), cosine "
      "similarity of each position's logits with the reference (mean and lowest over the n positions) and "
      "the share of positions whose arg-max token agrees. linfer's figures come from its timed runs: "
      "`linfer-bench --ids` times those ids and `--dump` writes the output of the last timed run, with "
      "%d threads as in the timed rows (the table says whether every round and thread count gave the same "
      "bits). ONNX Runtime and PyTorch int8 are checked in one run of their own (%d threads). The suite "
      "stops if an f32 runtime is off by more than %g of the largest |output|, or if an int8 one has a "
      "mean cosine similarity below %g." % (
          results.get("parity_threads", 2), results.get("parity_threads", 2), 1e-3, 0.99))
    w("")
    w("| model | n | runtime | max abs error (of max abs output) | relative error | cosine mean / min | arg-max agreement | from |")
    w("|---|---|---|---|---|---|---|---|")
    order = {rt: i for i, rt in enumerate(RUNTIMES)}
    for e in sorted(results["parity"], key=lambda e: (e["model"] != "S", e["T"], order.get(e["runtime"], 9))):
        src = e.get("source", "")
        if "identical_dumps" in e:
            src += "; %d dumps %s" % (e["dumps"], "bit-identical" if e["identical_dumps"] else "**differ**")
        w("| %s | %d | %s | %.2g (of %.3g) | %.2g | %.6f / %.6f | %.1f%% | %s |" % (
            e["model"], e["T"], NAMES[e["runtime"]], e["max_abs"], e["max_abs_ref"], e["rel"],
            e["cos_mean"], e["cos_min"], 100 * e["argmax"], src))
    w("")
    w("## Protocol")
    w("")
    w("For every cell (model, n, threads) the suite runs R rounds. In each round it starts every runtime "
      "and dtype once, in its own process: the process loads the model, does W warm-up forward passes and "
      "P timed passes (steady state: ONNX Runtime and PyTorch are still markedly slower on their second "
      "pass than later), reports the median of the P, and exits. The order of the runtimes rotates from "
      "round to round, so that machine noise hits all runtimes alike. The latency of a runtime is the "
      "median of its R per-process medians; its peak RSS is the largest peak of its R processes (weights, "
      "buffers and the runtime itself: node/V8 for ONNX Runtime, the Python interpreter and torch for "
      "PyTorch).")
    w("")
    w("- linfer: `linfer-bench M_{f32,int8}.lfm --seq-len n --threads T --runs P --warmup W --ids "
      "M_check_ids_n.txt --dump OUT.npy` (the parity ids; the dump feeds the parity table); peak RSS "
      "is VmHWM; arena bytes as linfer-bench reports them.")
    w("- ONNX Runtime: `node tools/bench/suite/ort_bench.js M_n{,_int8}.onnx --threads T --runs P --warmup W`: "
      "intraOpNumThreads = T, interOpNumThreads = 1, graphOptimizationLevel all, sequential execution; "
      "peak RSS is VmHWM from /proc/self/status. **Output handoff**: `session.run()` timed from "
      "JavaScript also contains onnxruntime-node's work around ORT's own Run() (dispatch to a worker "
      "thread, waking the JavaScript thread, turning the [n, 256] output into a JavaScript value), "
      "which linfer-bench and PyTorch do not have. ORT's profiler times Run() alone (its `model_run` "
      "events), but it records every operator with shapes, memory and thread statistics inside Run(), "
      "a per-operator cost that is a visible share of a short run (column \"profiler cost\" below), so "
      "its times are not used as such. Instead each ORT process first does the timed runs without "
      "profiling (the **raw** figure), then runs the same model again in a second, profiled session "
      "and takes, run by run, session.run() minus model_run: the handoff, measured on the model itself "
      "(the profiler's own cost is inside model_run on both sides of that difference). ORT's latency is "
      "the raw time minus the median handoff; the raw figures stay in the table below and in "
      "work/results.json. (Subtracting a Gather-only model with the same output instead would assume "
      "the handoff does not depend on the run before it.)")
    w("- PyTorch: `/usr/bin/python3 tools/bench/suite/torch_bench.py M.safetensors --seq-len n --threads T "
      "--runs P --warmup W --dtype {f32,int8}`: torch.set_num_threads(T), set_num_interop_threads(1), "
      "torch.inference_mode(); OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to T, OMP_WAIT_POLICY=PASSIVE "
      "(Debian's torch has two thread pools, OpenMP for element-wise work and OpenBLAS's pthreads for "
      "the matrix products; with the default policy idle OpenMP workers spin on the cores OpenBLAS "
      "needs, which made 2-thread runs about 3x slower on a busy machine); int8 is quantized in the "
      "process (part of its load time), with the same settings; peak RSS is VmHWM.")
    w("")
    w("Rounds R, warm-up passes W and timed passes P per process: %s." % "; ".join(sorted(
        {"%s n=%d: R=%d, W=%d, P=%d" % (c["model"], c["T"], c["runs"], c.get("warmup", 1), c.get("per_process", 1))
         for c in results["cells"]},
        key=lambda s: (s[0], int(s.split("=")[1].split(":")[0])))))
    w("")
    w("**FLOPs.** One count per (model, n) serves every runtime and dtype: the Linformer forward as linfer "
      "computes it (runtime/src/plan.cc `forward_flops`), 2 x the multiply-adds of the matrix products, per layer "
      "2·n·D·HD (Q) + 2·k·n·D·2 (E·X and F·X) + 4·k·D·HD (K', V') + 4·n·k·HD (scores, P·V') + 2·n·HD·D (out) "
      "+ 4·n·D·F (feed-forward), plus 2·n·D·V for the LM head (D = dim, HD = heads·head_dim, F = ff, "
      "V = vocab). ONNX Runtime and PyTorch run the exported order E·(X·Wk) (projection after the "
      "linear layer), which costs more; effective GFLOP/s = this count / median latency, so they are "
      "comparable as speed, not as hardware utilisation (int8 multiply-adds are counted like float ones, "
      "so int8 GFLOP/s can exceed the f32 FMA peak). Layer norms, GELU, softmax and the embedding are "
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
    w("Latency is the median over the rounds, in milliseconds per forward pass (ONNX Runtime: the fair "
      "figure, see the protocol). Speed-up = the other runtime's median / linfer's median of the same "
      "dtype (above 1: linfer is faster).")
    w("")
    for name in sorted({c["model"] for c in results["cells"]}):
        cells = sorted([c for c in results["cells"] if c["model"] == name], key=lambda c: (c["T"], c["threads"]))
        w("### Model %s" % name)
        w("")
        w("| n | threads | %s |" % " | ".join(NAMES[rt] + " ms" for rt in RUNTIMES))
        w("|---|---|%s" % ("---|" * len(RUNTIMES)))
        for c in cells:
            s = summarize(c)
            w("| %d | %d | %s |" % (c["T"], c["threads"], " | ".join(
                fmt_ms(s[rt]["median"]) if rt in s else "-" for rt in RUNTIMES)))
        w("")
        w("Speed-ups:")
        w("")
        w("| n | threads | f32: linfer vs ORT | f32: linfer vs PyTorch | int8: linfer vs ORT | int8: linfer vs PyTorch | linfer int8 vs f32 | ORT int8 vs f32 | PyTorch int8 vs f32 |")
        w("|---|---|---|---|---|---|---|---|---|")
        for c in cells:
            s = summarize(c)

            def x(a, b):
                return "%.2fx" % (s[a]["median"] / s[b]["median"]) if a in s and b in s else "-"

            w("| %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                c["T"], c["threads"], x("ort", "linfer"), x("torch", "linfer"), x("ort_int8", "linfer_int8"),
                x("torch_int8", "linfer_int8"), x("linfer", "linfer_int8"), x("ort", "ort_int8"),
                x("torch", "torch_int8")))
        w("")
        w("Effective GFLOP/s (% of the FMA peak with as many threads):")
        w("")
        w("| n | threads | %s |" % " | ".join(NAMES[rt] for rt in RUNTIMES))
        w("|---|---|%s" % ("---|" * len(RUNTIMES)))
        for c in cells:
            s = summarize(c)
            t = c["threads"]

            def g(rt):
                if rt not in s:
                    return "-"
                gf = c["flops"] / (s[rt]["median"] * 1e6)
                return "%.1f (%.0f%%)" % (gf, 100 * gf / peak[t])

            w("| %d | %d | %s |" % (c["T"], t, " | ".join(g(rt) for rt in RUNTIMES)))
        w("")
        w("ONNX Runtime's timing (ms, medians over the rounds): raw session.run() from JavaScript, the "
          "output handoff taken off it, the fair latency used above, and from the profiled session: "
          "ORT's model_run and the profiler's cost (profiled session.run() minus raw session.run(): two "
          "sessions of the same process, one after the other, so only a rough figure).")
        w("")
        w("| n | threads | dtype | raw session.run() | handoff | latency (raw - handoff) | profiled model_run | profiler cost |")
        w("|---|---|---|---|---|---|---|---|")
        for c in cells:
            s = summarize(c)
            for rt in ("ort", "ort_int8"):
                if rt not in s or "js_latency_ms" not in s[rt]:
                    continue
                o = s[rt]
                w("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
                    c["T"], c["threads"], "int8" if rt == "ort_int8" else "f32", fmt_ms(o["js_latency_ms"]),
                    fmt_ms(o["handoff_ms"]), fmt_ms(o["median"]), fmt_ms(o["profile_model_run_ms"]),
                    "%+.2f" % (o["profiled_js_latency_ms"] - o["js_latency_ms"])))
        w("")
        w("Memory (MiB): peak RSS of each process, and linfer's arena (activations and scratch, allocated "
          "once per session) and packed weights.")
        w("")
        w("| n | threads | %s | linfer arena (f32 / int8) | linfer packed weights (f32 / int8) |" % " | ".join(
            NAMES[rt] + " peak RSS" for rt in RUNTIMES))
        w("|---|---|%s---|---|" % ("---|" * len(RUNTIMES)))
        for c in cells:
            s = summarize(c)

            def mm(rt, key):
                v = s[rt][key] if rt in s else None
                return mib(v) if v else "-"

            w("| %d | %d | %s | %s / %s | %s / %s |" % (
                c["T"], c["threads"], " | ".join(mm(rt, "rss") for rt in RUNTIMES),
                mm("linfer", "arena"), mm("linfer_int8", "arena"), mm("linfer", "packed"), mm("linfer_int8", "packed")))
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
    w("min / median / max latency (ms) over the rounds, and model load time (median, ms; not part of the "
      "latency; PyTorch int8 includes quantizing).")
    w("")
    w("| model | n | threads | runtime | min | median | max | load |")
    w("|---|---|---|---|---|---|---|---|")
    for c in sorted(results["cells"], key=lambda c: (c["model"], c["T"], c["threads"])):
        s = summarize(c)
        for rt in RUNTIMES:
            if rt in s:
                lm = s[rt]["load_ms"]
                w("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
                    c["model"], c["T"], c["threads"], NAMES[rt], fmt_ms(s[rt]["min"]), fmt_ms(s[rt]["median"]),
                    fmt_ms(s[rt]["max"]), fmt_ms(lm) if lm is not None else "-"))
    w("")
    w("## Running it")
    w("")
    w("    bash tools/bench/suite/run_suite.sh            # full suite (S at n = 512, 2048, 8192; M at 512, 4096)")
    w("    bash tools/bench/suite/run_suite.sh --quick    # smoke test: S at n = 512 and 2048, 3 rounds")
    w("")
    w("The script installs what is missing (scripts/install-deps.sh, python3-matplotlib, "
      "onnxruntime-node and onnx-proto from tools/bench/suite/package-lock.json with `npm ci "
      "--ignore-scripts`), builds linfer (`scripts/build.sh build`, or an incremental build of the tools), "
      "builds and converts the models into tools/bench/suite/work/ (kept between runs; override with "
      "`LINFER_BENCH_WORK=DIR`; building and exporting them the first time takes several minutes), "
      "measures, and rewrites this file and the plots (`--no-install` and `--no-build` skip the first "
      "two steps). Raw results: work/results.json. Run it on an otherwise idle machine: the suite never "
      "runs two benchmark processes at once, but anything else running shares the same cores.")
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
