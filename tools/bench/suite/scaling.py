# SPDX-License-Identifier: Apache-2.0
"""Scaling benchmark: linfer's Linformer against linfer's other attention kinds as n grows.

    /usr/bin/python3 tools/bench/suite/scaling.py [--threads 2] [--max-n 65536] [--full-max-n 16384]

Builds S-sized models (dim 256, 4 layers, 4 heads, ff 1024, vocab 256, LM head, sinusoidal
positions so that one model serves every n) of each kind with tools/python/reference/linfer_ref.py, converts
them with build/bin/linfer-convert, times build/bin/linfer-bench at each n (kinds alternating at
each n), and writes docs/scaling.md and docs/scaling.png. Linformer rows use layerwise sharing, as
the Linformer paper's Table 3 does. Full attention stops at --full-max-n (its time grows as n^2).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tools", "python", "reference"))

# The Linformer paper's Table 3 (arXiv 2006.04768v3), k = 128 / 256.
PAPER_SPEEDUP = {512: (1.5, 1.3), 1024: (1.7, 1.6), 2048: (2.6, 2.4), 4096: (3.4, 3.2),
                 8192: (5.5, 5.0), 16384: (8.6, 7.8), 32768: (13, 12), 65536: (20, 18)}
PAPER_MEMORY = {512: (1.7, 1.5), 1024: (3.0, 2.9), 2048: (6.1, 5.6), 4096: (14, 13),
                8192: (28, 26), 16384: (56, 48), 32768: (56, 48), 65536: (60, 52)}


HEADS = 4


def base_config(n):
    return {"vocab_size": 256, "dim": 256, "num_layers": 4, "num_heads": HEADS, "head_dim": 64,
            "ff_dim": 1024, "max_seq_len": n, "positions": "sinusoidal", "norm_placement": "pre",
            "activation": "gelu", "head": "lm"}


KINDS = {
    "linformer k=128": {"attention_kind": "linformer", "proj_len": 128, "projection_sharing": "layerwise"},
    "linformer k=256": {"attention_kind": "linformer", "proj_len": 256, "projection_sharing": "layerwise"},
    "full": {"attention_kind": "full"},
    "linear (elu+1)": {"attention_kind": "linear_elu"},
    "givetake p=32": {"attention_kind": "givetake", "num_global_tokens": 32},
    # lucidrains' default feature count for head_dim 64: int(64 ln 64) = 266
    "performer m=266": {"attention_kind": "performer", "num_features": 266},
    # Longformer-base's window (attention_window 512, i.e. 256 keys each side) and one global CLS row
    "sliding window r=256 g=1": {"attention_kind": "sliding_window", "window_radius": 256, "global_positions": 1},
    # BigBird-base's pattern (block_size 64, num_random_blocks 3; first and last block global), random
    # blocks drawn uniformly and fixed in the file
    "block sparse b=64 R=3": {"attention_kind": "block_sparse", "block_size": 64, "global_blocks": 1,
                              "num_random_blocks": 3},
    # reformer-pytorch's LSHSelfAttention defaults: buckets of 64 rows; ReformerLM's 4 hashing rounds
    "lsh b=64 rounds=4": {"attention_kind": "lsh", "bucket_size": 64, "num_hashes": 4},
}


def slug(name):
    """A kind's name as a file-name part: "linear (elu+1)" -> "linear_elu_1_"."""
    return re.sub(r"[^a-z0-9]+", "_", name)


def make_model(name, max_n):
    """The PyTorch reference of kind `name` with the weights of its .lfm file (seed 7): (model, config)."""
    from linfer_ref import LinferEncoder, init_random  # only the model builders need torch
    cfg = dict(base_config(max_n), **KINDS[name])
    model = LinferEncoder(cfg)
    init_random(model, seed=7)
    return model, cfg


def build_models(work, max_n):
    from linfer_ref import save_safetensors
    paths = {}
    for name in KINDS:
        lfm = os.path.join(work, "scaling_%s_%d.lfm" % (slug(name), max_n))
        if not os.path.exists(lfm):
            model, cfg = make_model(name, max_n)
            ckpt = lfm.replace(".lfm", ".safetensors")
            save_safetensors(model, cfg, ckpt)
            subprocess.run([os.path.join(ROOT, "build", "bin", "linfer-convert"), ckpt, "-o", lfm],
                           check=True, stdout=subprocess.DEVNULL)
            os.remove(ckpt)
        paths[name] = lfm
    return paths


def bench(lfm, n, threads, runs):
    out = subprocess.run([os.path.join(ROOT, "build", "bin", "linfer-bench"), lfm, "--seq-len", str(n),
                          "--threads", str(threads), "--runs", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    get = lambda key: re.search(key + r":\s*(?:median\s*)?([0-9.]+)", out).group(1)
    return {"ms": float(get("latency_ms")), "gflops": float(get("gflops")),
            "arena": int(get("arena_bytes")), "rss": int(get("peak_rss_bytes"))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-n", type=int, default=65536)
    ap.add_argument("--full-max-n", type=int, default=16384)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    paths = build_models(args.work, args.max_n)
    ns = [n for n in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536) if n <= args.max_n]
    results = {}
    start = time.time()
    for n in ns:
        runs = 5 if n <= 4096 else 3 if n <= 16384 else 1
        for name in KINDS:  # kinds alternate at each n, so machine noise hits all alike
            if name == "full" and n > args.full_max_n:
                continue
            r = bench(paths[name], n, args.threads, runs)
            results.setdefault(name, {})[n] = r
            print("n=%-6d %-16s %10.1f ms  arena %8.1f MiB  rss %8.1f MiB" %
                  (n, name, r["ms"], r["arena"] / 2**20, r["rss"] / 2**20), flush=True)
    with open(os.path.join(args.work, "scaling.json"), "w") as f:
        json.dump({k: {str(n): v for n, v in d.items()} for k, d in results.items()}, f, indent=1)
    write_report(results, ns, args, time.time() - start)


def write_report(results, ns, args, seconds):
    full = results.get("full", {})
    lines = ["# Scaling: Linformer against the other attention kinds", "",
             "    /usr/bin/python3 tools/bench/suite/scaling.py --threads %d --max-n %d --full-max-n %d" %
             (args.threads, args.max_n, args.full_max_n), "",
             "Machine: %s, %d threads; %s. Models: dim 256, 4 layers, 4 heads x 64, ff 1024, vocab 256, "
             "LM head, sinusoidal positions, random weights; Linformer with layerwise sharing (as the "
             "paper's Table 3); GiveTake with 32 tokens; Performer with 266 softmax features (lucidrains' "
             "default for head_dim 64); sliding window of radius 256 (Longformer-base's attention_window "
             "512) with 1 global position; block sparse with BigBird-base's blocks of 64 rows, the first and "
             "last block global and 3 random blocks per block; LSH (Reformer) with chunks of 64 rows and 4 "
             "hashing rounds (reformer-pytorch's defaults). One session per model, median of 5 runs "
             "(n <= 4096), 3 (n <= 16384) or 1; kinds alternate at each n. The whole run took %.0f s." %
             (cpu_name(), args.threads, time.strftime("%Y-%m-%d"), seconds), "",
             "## Latency (ms) and arena (MiB)", "",
             "| n | " + " | ".join(KINDS) + " |", "|---|" + "---|" * len(KINDS)]
    for n in ns:
        cells = []
        for name in KINDS:
            r = results.get(name, {}).get(n)
            cells.append("%.1f / %.1f" % (r["ms"], r["arena"] / 2**20) if r else "-")
        lines.append("| %d | %s |" % (n, " | ".join(cells)))
    lines += ["", "## Linformer against full attention, beside the paper's Table 3", "",
              "Speed-up = full latency / Linformer latency. Memory saved is the ratio of the sessions' "
              "activation arenas. linfer's full attention computes its scores in blocks (online softmax), "
              "so its memory grows as n*d, not n^2: the memory saving against it is small by design. "
              "The last two columns give the ratio against a standard implementation, which "
              "materialises n x n score matrices on top of linfer's full arena: one layer's for one "
              "head (4 n^2 bytes), and for all %d heads of the layer (4 h n^2 bytes, what PyTorch's and "
              "ONNX Runtime's attention graphs hold at once, and the paper's baseline)." % HEADS, "",
              "| n | speed-up k=128 (paper) | speed-up k=256 (paper) | arena saved k=128 (paper memory saved) | "
              "vs n^2 scores of one head, k=128 | vs n^2 scores of all heads, k=128 |",
              "|---|---|---|---|---|---|"]
    for n in ns:
        f = full.get(n)
        l128 = results["linformer k=128"].get(n)
        l256 = results["linformer k=256"].get(n)
        if not (f and l128 and l256):
            continue
        p = PAPER_SPEEDUP.get(n, (None, None))
        m = PAPER_MEMORY.get(n, (None, None))
        one_head = f["arena"] + 4 * n * n
        all_heads = f["arena"] + 4 * HEADS * n * n
        lines.append("| %d | %.2fx (%sx) | %.2fx (%sx) | %.2fx (%sx) | %.1fx | %.1fx |" % (
            n, f["ms"] / l128["ms"], p[0], f["ms"] / l256["ms"], p[1], f["arena"] / l128["arena"],
            m[0], one_head / l128["arena"], all_heads / l128["arena"]))
    lines += ["", "## Every kind against full attention", "",
              "Speed-up = full latency / the kind's latency (n where full ran); arena per 1024 tokens "
              "(MiB): constant when memory grows linearly in n.", "",
              "| kind | " + " | ".join("n=%d" % n for n in ns) + " |", "|---|" + "---|" * len(ns)]
    for name in KINDS:
        if name == "full":
            continue
        cells = []
        for n in ns:
            r, f = results.get(name, {}).get(n), full.get(n)
            if not r:
                cells.append("-")
                continue
            per_k = r["arena"] / 2**20 / (n / 1024)
            cells.append(("%.2fx, " % (f["ms"] / r["ms"]) if f else "") + "%.2f MiB" % per_k)
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    gt = results.get("givetake p=32", {}).get(8192)
    f8 = full.get(8192)
    if gt and f8:
        lines += ["", "GiveTake at n = 8192, batch 4 (four runs one after the other in one session): "
                  "%.0f ms against full attention's %.0f ms, a %.2fx speed-up (the GT-SA paper reports 6.53x "
                  "at 8192 with batch 4 on its hardware)." % (4 * gt["ms"], 4 * f8["ms"], f8["ms"] / gt["ms"])]
    lines += ["", "![latency against n](scaling.png)", ""]
    with open(os.path.join(ROOT, "docs", "scaling.md"), "w") as f:
        f.write("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for name in KINDS:
            xs = sorted(results.get(name, {}))
            ax[0].plot(xs, [results[name][n]["ms"] for n in xs], marker="o", label=name)
            ax[1].plot(xs, [results[name][n]["arena"] / 2**20 for n in xs], marker="o", label=name)
        for a, label in zip(ax, ("latency (ms)", "arena (MiB)")):
            a.set_xscale("log", base=2)
            a.set_yscale("log")
            a.set_xlabel("n")
            a.set_ylabel(label)
            a.grid(True, which="both", alpha=0.3)
        ax[0].legend()
        fig.suptitle("linfer attention kinds, S model, %d threads" % args.threads)
        fig.tight_layout()
        fig.savefig(os.path.join(ROOT, "docs", "scaling.png"), dpi=100)
    except ImportError:
        print("matplotlib missing: no plot")


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return re.search(r"Model name:\s*(.*)", out).group(1).strip()
    except Exception:  # noqa: BLE001
        return "unknown CPU"


if __name__ == "__main__":
    main()
