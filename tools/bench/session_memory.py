#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What one model and N sessions on it cost in resident memory, against the bound
weights (in their file dtype) + N x arena + 5 %.

    /usr/bin/python3 tools/bench/session_memory.py MODEL.lfm [MODEL.lfm ...] [--seq-len 512]
        [--threads 1] [--sessions 1,2,3,4] [--runs 3] [--bench build/bin/linfer-bench]
        [--launcher "qemu-aarch64 -cpu max ..."]

For every model and N it runs `linfer-bench MODEL --sessions N` once (its own process) and reads
linfer-bench's lines: the resident set added by loading the model and creating, then running, N
sessions (VmRSS after minus before, so the process's code and libraries are not counted), the
weights the model holds and the sessions' arenas as the API reports them, session creation time
and the median latency of session 1. Under --launcher (qemu-user) the RSS is the guest's memory
as qemu maps it. Prints a Markdown table; the first model is the reference of the "weights vs
first" column (give the f32 model first).
"""
import argparse
import re
import shlex
import subprocess
import sys


def measure(bench, launcher, model, sessions, seq_len, threads, runs):
    cmd = launcher + [bench, model, "--sessions", str(sessions), "--threads", str(threads),
                      "--runs", str(runs), "--warmup", "1"]
    if seq_len:
        cmd += ["--seq-len", str(seq_len)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    mem = re.search(r"memory: format version (\d+), weights (\d+) bytes, (\d+) sessions, arenas (\d+) bytes, "
                    r"session-owned weights (\d+) bytes, rss added by load (-?\d+) bytes, by load and sessions "
                    r"(-?\d+) bytes", out)
    create = re.search(r"create_ms: first ([\d.]+), max ([\d.]+)", out)
    latency = re.search(r"latency_ms: median ([\d.]+)", out)
    load = re.search(r"load_ms: ([\d.]+)", out)
    session = re.search(r"session: (.*)", out)
    if not (mem and create and latency and load):
        sys.exit("session_memory.py: unexpected linfer-bench output:\n" + out)
    return {
        "version": int(mem.group(1)), "weights": int(mem.group(2)), "arenas": int(mem.group(4)),
        "owned": int(mem.group(5)), "rss_load": int(mem.group(6)), "rss": int(mem.group(7)),
        "create_ms": float(create.group(2)), "latency_ms": float(latency.group(1)),
        "load_ms": float(load.group(1)), "session": session.group(1) if session else "",
    }


def mib(b):
    return "%.1f" % (b / 2**20)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sessions", default="1,2,3,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bench", default="build/bin/linfer-bench")
    ap.add_argument("--launcher", default="", help="command prefix, e.g. qemu-aarch64 with its options")
    args = ap.parse_args()
    launcher = shlex.split(args.launcher)
    counts = [int(n) for n in args.sessions.split(",")]

    print("| model | weights (MiB) | weights vs first | N | arenas (MiB) | RSS added (MiB) | bound: weights + arenas + 5% | RSS / bound | load (ms) | create (ms, slowest) | one run (ms) | create / run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    first_weights = None
    worst = 0.0
    for model in args.models:
        for n in counts:
            m = measure(args.bench, launcher, model, n, args.seq_len, args.threads, args.runs)
            if first_weights is None:
                first_weights = m["weights"]
            bound = 1.05 * (m["weights"] + m["arenas"] + m["owned"])
            ratio = m["rss"] / bound
            worst = max(worst, ratio)
            name = model.rsplit("/", 1)[-1] + " (v%d)" % m["version"]
            print("| %s | %s | %.3f | %d | %s | %s | %s | %.2f | %.1f | %.1f | %.1f | %.2f%% |" % (
                name, mib(m["weights"]), m["weights"] / first_weights, n, mib(m["arenas"]), mib(m["rss"]),
                mib(bound), ratio, m["load_ms"], m["create_ms"], m["latency_ms"],
                100.0 * m["create_ms"] / m["latency_ms"]))
            sys.stdout.flush()
    print()
    print("largest RSS / bound: %.2f (seq_len %d, %d thread(s) per session)" % (worst, args.seq_len, args.threads))


if __name__ == "__main__":
    main()
