# SPDX-License-Identifier: Apache-2.0
"""Benchmark suite driver (run by run_suite.sh with /usr/bin/python3; see docs/benchmarks.md).

    suite.py [--quick] --work DIR --bin BUILD/bin [--out docs/benchmarks.md]

Steps: measure the FMA peak (fma_peak, 1 and 2 threads); build the models in PyTorch and export
them (make_models.py); convert them to .lfm (linfer-convert, f32 and int8) and build ONNX Runtime's
int8 graphs (ort_quantize.js); check ONNX Runtime (f32, int8) and PyTorch int8 against the PyTorch
float32 output at every benchmarked length; time every runtime x dtype, alternating between them run
by run, with linfer's timed runs on the check ids and their last output dumped for linfer's parity;
write DIR/results.json; render docs/benchmarks.md and the plots (report.py).

Timing protocol: for a cell (model, n, threads) and each of R rounds, every runtime is started once,
in its own process, loads the model, does W warm-up runs and P timed runs (steady state: ONNX
Runtime and PyTorch are still slower on their second run than later), reports the median of the P,
and exits. The order of the runtimes rotates from round to round. A runtime's latency for the cell
is the median of its R per-process medians; its peak RSS is the largest of its R processes' peaks.
ONNX Runtime's latency is session.run() minus onnxruntime-node's output handoff (ort_bench.js).
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)

import models  # noqa: E402
import numpy as np  # noqa: E402  (Debian's python3-numpy; run_suite.sh checks it)

PY = "/usr/bin/python3"
THREADS = (1, 2)
PARITY_THREADS = max(THREADS)  # linfer's parity comes from the timed runs with this many threads
PROC_TIMEOUT = 1800  # seconds for one process (load + warm-up + one run)
# Every runtime x dtype, for every model. Keys: linfer = linfer f32, ort = ONNX Runtime f32,
# torch = PyTorch f32 (the names of the f32-only suite, kept for its results files).
RUNTIMES = ("linfer", "linfer_int8", "ort", "ort_int8", "torch", "torch_int8")
# The suite stops when an f32 runtime is off by more than this share of the largest |output|, or
# when an int8 one has a mean cosine similarity below INT8_MIN_COSINE (a broken graph, not rounding).
F32_TOL = 1e-3
INT8_MIN_COSINE = 0.99


def plan(quick):
    """[(model, n_max, [(length, rounds, warm-up runs, timed runs per process), ...])]"""
    if quick:
        return [("S", 8192, [(512, 3, 2, 3), (2048, 3, 2, 3)])]
    return [
        ("S", 8192, [(512, 5, 3, 5), (2048, 5, 3, 5), (8192, 3, 2, 3)]),
        ("M", 4096, [(512, 3, 2, 3), (4096, 2, 1, 2)]),
    ]


def log(msg):
    print("[suite %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def run(cmd, env=None, timeout=PROC_TIMEOUT):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit("suite: command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def parse(text):
    out = {}
    m = re.search(r"^latency_ms: median (-?[\d.]+), min (-?[\d.]+), max (-?[\d.]+)", text, re.M)
    if not m:
        raise SystemExit("suite: no latency line in output:\n" + text)
    out["latency_ms"] = float(m.group(1))
    # ort_bench.js: the raw session.run() time, the handoff taken off it, and the profiler's figures.
    for key in ("js_latency_ms", "handoff_ms", "profile_model_run_ms", "profiled_js_latency_ms"):
        m = re.search(r"^%s: median (-?[\d.]+)" % key, text, re.M)
        if m:
            out[key] = float(m.group(1))
    m = re.search(r"^qengine: (\S+)", text, re.M)
    if m:
        out["qengine"] = m.group(1)
    for key in ("peak_rss_bytes", "arena_bytes", "packed_weight_bytes"):
        m = re.search(r"^%s: (\d+)" % key, text, re.M)
        if m:
            out[key] = int(m.group(1))
    for key in ("gflops", "load_ms"):
        m = re.search(r"^%s: ([\d.]+)" % key, text, re.M)
        if m:
            out[key] = float(m.group(1))
    return out


# ---------------------------------------------------------------------------------------------
# machine and versions


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return ""


def machine_info(binp):
    lscpu = sh("LC_ALL=C lscpu")

    def field(name):
        m = re.search(r"^%s:\s*(.+)$" % re.escape(name), lscpu, re.M)
        return m.group(1).strip() if m else "?"

    flags = field("Flags").split()
    ort_pkg = os.path.join(HERE, "node_modules", "onnxruntime-node", "package.json")
    ort_version = json.load(open(ort_pkg))["version"] if os.path.exists(ort_pkg) else "?"
    torch_version = sh(PY + " -c 'import torch; print(torch.__version__)'")
    qengines = sh(PY + " -c 'import torch; print(\" \".join(torch.backends.quantized.supported_engines))'")
    proto_pkg = os.path.join(HERE, "node_modules", "onnx-proto", "package.json")
    proto_version = json.load(open(proto_pkg))["version"] if os.path.exists(proto_pkg) else "?"
    commit = sh("git -C %s rev-parse --short HEAD" % ROOT)
    dirty = sh("git -C %s status --porcelain --untracked-files=no -- runtime kernels tools/bench/linfer_bench.cc" % ROOT)
    return {
        "cpu_model": field("Model name"),
        "cpus": field("CPU(s)"),
        "threads_per_core": field("Thread(s) per core"),
        "cores_per_socket": field("Core(s) per socket"),
        "sockets": field("Socket(s)"),
        "isa": " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16") if f in flags),
        "hypervisor": "hypervisor" in flags,
        "mem_total": sh("awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo"),
        "kernel": platform.release(),
        "os": sh(". /etc/os-release && echo $PRETTY_NAME"),
        "onnxruntime_node": ort_version,
        "node": sh("node --version"),
        "torch": torch_version,
        "torch_qengines": qengines,
        "onnx_proto": proto_version,
        "torch_pkg": sh("dpkg-query -W -f='${Version}' python3-torch"),
        "openblas": sh("dpkg-query -W -f='${Version}' libopenblas0-pthread"),
        "xnnpack": sh("dpkg-query -W -f='${Version}' libxnnpack0"),
        "gcc": sh("gcc -dumpfullversion"),
        "linfer_commit": commit + (" (runtime sources modified)" if dirty else ""),
        "linfer_built": time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(os.path.join(binp, "linfer-bench")))),
        "loadavg_start": open("/proc/loadavg").read().split()[:3],
    }


# ---------------------------------------------------------------------------------------------
# steps


def fma_peak(work):
    src = os.path.join(HERE, "fma_peak.cc")
    exe = os.path.join(work, "fma_peak")
    flags = open("/proc/cpuinfo").read()
    isa = ["-mavx512f", "-mfma"] if re.search(r"\bavx512f\b", flags) else ["-mavx2", "-mfma"]
    run(["g++", "-O2"] + isa + ["-pthread", src, "-o", exe])
    peaks = {}
    for t in THREADS:
        text = run([exe, "--threads", str(t), "--seconds", "1"])
        m = re.search(r"isa (\w+), lanes (\d+), gflops ([\d.]+)", text)
        peaks[str(t)] = float(m.group(3))
        isa_name = m.group(1)
        log("FMA peak, %d thread%s (%s): %.1f GFLOP/s" % (t, "s" if t > 1 else "", isa_name, peaks[str(t)]))
    return {"gflops": peaks, "isa": isa_name, "flags": " ".join(["-O2"] + isa)}


def fresh(out, *inputs):
    return os.path.exists(out) and os.path.getmtime(out) > max(os.path.getmtime(i) for i in inputs)


def build_models(work, binp, name, n, lengths):
    """PyTorch model, ONNX files and check data (make_models.py); .lfm f32 and int8; ONNX int8 graphs."""
    t0 = time.time()
    log("building model %s (n=%d), ONNX and check data for T in %s" % (name, n, lengths))
    out = run([PY, os.path.join(HERE, "make_models.py"), "--model", name, "--n", str(n),
               "--lengths", ",".join(map(str, lengths)), "--work", work])
    sys.stdout.write(out)
    st = os.path.join(work, name + ".safetensors")
    conv = os.path.join(binp, "linfer-convert")
    for dt in ("f32", "int8"):
        lfm = os.path.join(work, "%s_%s.lfm" % (name, dt))
        if not fresh(lfm, st, conv):
            run([conv, st, "-o", lfm, "--dtype", dt])
            log("converted %s" % lfm)
    quant = os.path.join(HERE, "ort_quantize.js")
    graphs = {}
    for T in lengths:
        src = os.path.join(work, "%s_n%d.onnx" % (name, T))
        dst = os.path.join(work, "%s_n%d_int8.onnx" % (name, T))
        info = dst + ".json"
        if not (fresh(dst, src, quant) and fresh(info, src, quant)):
            text = run(["node", quant, src, dst])
            with open(info, "w") as f:
                f.write(text.strip().splitlines()[-1] + "\n")
            log("ONNX Runtime int8 graph %s" % dst)
        with open(info) as f:
            graphs[str(T)] = json.loads(f.read())
    return time.time() - t0, graphs


def check_paths(work, name, T):
    return (os.path.join(work, "%s_check_ids_n%d.txt" % (name, T)),
            os.path.join(work, "%s_check_ref_n%d.npy" % (name, T)))


def compare(ref, out):
    """Errors of `out` against the PyTorch float32 reference `ref` ([T, vocab] LM logits)."""
    ref = ref.astype(np.float64)
    out = out.reshape(ref.shape).astype(np.float64)
    cos = (out * ref).sum(1) / np.maximum(np.linalg.norm(out, axis=1) * np.linalg.norm(ref, axis=1), 1e-300)
    return {"max_abs_ref": float(np.abs(ref).max()),
            "max_abs": float(np.abs(out - ref).max()),
            "rel": float(np.linalg.norm(out - ref) / np.linalg.norm(ref)),
            "cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
            "argmax": float((out.argmax(1) == ref.argmax(1)).mean())}


def judge(entry):
    """Stops the suite when an f32 runtime misses the reference or an int8 graph is broken."""
    rt = entry["runtime"]
    if rt.endswith("_int8"):
        if not entry["cos_mean"] >= INT8_MIN_COSINE:
            raise SystemExit("suite: parity check failed for %s on %s n=%d: mean cosine similarity %.4f < %g"
                             % (rt, entry["model"], entry["T"], entry["cos_mean"], INT8_MIN_COSINE))
    elif not entry["max_abs"] <= F32_TOL * entry["max_abs_ref"]:
        raise SystemExit("suite: parity check failed for %s on %s n=%d: max abs error %g > %g"
                         % (rt, entry["model"], entry["T"], entry["max_abs"], F32_TOL * entry["max_abs_ref"]))


def log_parity(e):
    log("parity %s n=%d %-11s max abs err %.3g (of %.3g), rel %.2g, cosine %.6f (min %.6f), arg-max %.1f%%" % (
        e["model"], e["T"], e["runtime"], e["max_abs"], e["max_abs_ref"], e["rel"], e["cos_mean"], e["cos_min"],
        100 * e["argmax"]))


def reference_checks(work, name, T):
    """ONNX Runtime f32 and int8 and PyTorch int8 against PyTorch float32 on the check ids of length T
    (one run each, in a process of its own, PARITY_THREADS threads). linfer's entries come from its
    timed runs (linfer_parity)."""
    ids, ref_path = check_paths(work, name, T)
    ref = np.load(ref_path)
    entries = []
    ops = {}
    for rt in ("ort", "ort_int8", "torch_int8"):
        if rt.startswith("ort"):
            onnx = os.path.join(work, "%s_n%d%s.onnx" % (name, T, "_int8" if rt == "ort_int8" else ""))
            out_path = os.path.join(work, "%s_n%d_%s_check_out.f32" % (name, T, rt))
            text = run(["node", os.path.join(HERE, "ort_bench.js"), onnx, "--check", ids, out_path,
                        "--threads", str(PARITY_THREADS)])
            out = np.fromfile(out_path, dtype="<f4")
            m = re.search(r"^ops: (.*)$", text, re.M)
            ops[rt] = m.group(1) if m else "?"
            source = "`ort_bench.js --check`, one run"
        else:
            cmd, env = command("torch_int8", work, None, name, T, PARITY_THREADS, 0, 1)
            out_path = os.path.join(work, "%s_n%d_%s_check_out.npy" % (name, T, rt))
            cmd = cmd[:3] + ["--dtype", "int8", "--check", ids, out_path, "--threads", str(PARITY_THREADS)]
            run(cmd, env=env)
            out = np.load(out_path)
            source = "`torch_bench.py --check`, one run"
        e = dict(compare(ref, out), model=name, T=T, runtime=rt, threads=PARITY_THREADS, source=source)
        log_parity(e)
        judge(e)
        entries.append(e)
    return entries, ops


def dump_path(work, name, T, rt, threads, rnd):
    return os.path.join(work, "dumps", "%s_n%d_%s_t%d_r%d.npy" % (name, T, rt, threads, rnd))


def linfer_parity(work, name, T, cells):
    """linfer f32 and int8 against PyTorch float32, from the outputs its timed runs dumped (the last
    timed run of each process): the PARITY_THREADS cell's last round, and whether every round of
    every thread count gave the same output bits."""
    _, ref_path = check_paths(work, name, T)
    ref = np.load(ref_path)
    entries = []
    for rt in ("linfer", "linfer_int8"):
        paths = [dump_path(work, name, T, rt, c["threads"], r) for c in cells for r in range(c["runs"])]
        blobs = {p: np.load(p) for p in paths}
        main = dump_path(work, name, T, rt, PARITY_THREADS, max(c["runs"] for c in cells if c["threads"] == PARITY_THREADS) - 1)
        same = all(np.array_equal(blobs[p], blobs[main]) for p in paths)
        if not same:
            log("WARNING: linfer %s n=%d %s: the timed runs' outputs differ between rounds or thread counts"
                % (name, T, rt))
        e = dict(compare(ref, blobs[main]), model=name, T=T, runtime=rt, threads=PARITY_THREADS,
                 source="timed runs (`linfer-bench --ids --dump`), last of %d rounds" % max(c["runs"] for c in cells),
                 identical_dumps=same, dumps=len(paths))
        log_parity(e)
        judge(e)
        entries.append(e)
    return entries


def command(rt, work, binp, name, T, threads, warmup, runs, rnd=0):
    env = dict(os.environ)
    if rt in ("linfer", "linfer_int8"):
        dt = "int8" if rt == "linfer_int8" else "f32"
        ids, _ = check_paths(work, name, T)
        cmd = [os.path.join(binp, "linfer-bench"), os.path.join(work, "%s_%s.lfm" % (name, dt)),
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
               "--ids", ids, "--dump", dump_path(work, name, T, rt, threads, rnd)]
    elif rt in ("ort", "ort_int8"):
        onnx = os.path.join(work, "%s_n%d%s.onnx" % (name, T, "_int8" if rt == "ort_int8" else ""))
        cmd = ["node", os.path.join(HERE, "ort_bench.js"), onnx,
               "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup)]
    else:
        cmd = [PY, os.path.join(HERE, "torch_bench.py"), os.path.join(work, name + ".safetensors"),
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
               "--dtype", "int8" if rt == "torch_int8" else "f32"]
        env["OMP_NUM_THREADS"] = str(threads)
        env["OPENBLAS_NUM_THREADS"] = str(threads)
        # Debian's torch runs two thread pools: OpenMP (element-wise ops, softmax, norms) and
        # OpenBLAS's own pthreads (matrix products). With the default wait policy the idle OpenMP
        # workers spin and take cores from OpenBLAS (3x slower at 2 threads on a busy machine).
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return cmd, env


def time_cell(work, binp, name, n, T, threads, runs, warmup, per_process):
    rts = list(RUNTIMES)
    samples = {rt: [] for rt in rts}
    t0 = time.time()
    for r in range(runs):
        order = rts[r % len(rts):] + rts[:r % len(rts)]
        for rt in order:
            cmd, env = command(rt, work, binp, name, T, threads, warmup, per_process, rnd=r)
            s = time.time()
            res = parse(run(cmd, env=env))
            res["wall_s"] = time.time() - s
            res["round"] = r
            samples[rt].append(res)
        log("  %s n=%d threads=%d round %d/%d: %s" % (name, T, threads, r + 1, runs, ", ".join(
            "%s %.1f ms" % (rt, samples[rt][-1]["latency_ms"]) for rt in rts)))
    return {"model": name, "n_max": n, "T": T, "threads": threads, "runs": runs, "warmup": warmup,
            "per_process": per_process,
            "flops": models.flops(models.config(name, n), T), "samples": samples, "wall_s": time.time() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args = ap.parse_args()
    work, binp = os.path.abspath(args.work), os.path.abspath(args.bin)
    os.makedirs(os.path.join(work, "dumps"), exist_ok=True)
    t_start = time.time()
    results = {"mode": "quick" if args.quick else "full", "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
               "machine": machine_info(binp), "threads": list(THREADS), "runtimes": list(RUNTIMES),
               "parity_threads": PARITY_THREADS, "cells": [], "parity": [], "configs": {},
               "ort_int8_graphs": {}, "ort_ops": {}}
    results["fma_peak"] = fma_peak(work)
    p = plan(args.quick)
    t_models = 0.0
    for name, n, cells in p:
        lengths = [cell[0] for cell in cells]
        results["configs"][name] = models.config(name, n)
        dt, graphs = build_models(work, binp, name, n, lengths)
        t_models += dt
        results["ort_int8_graphs"][name] = graphs
        for T in lengths:
            entries, ops = reference_checks(work, name, T)
            results["parity"].extend(entries)
            results["ort_ops"]["%s n=%d" % (name, T)] = ops
    results["models_wall_s"] = t_models
    results_path = os.path.join(work, "results.json")

    def save():
        with open(results_path + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(results_path + ".tmp", results_path)

    for name, n, cells in p:
        for T, runs, warmup, per_process in cells:
            done = []
            for threads in THREADS:
                log("timing %s n=%d threads=%d, %d rounds" % (name, T, threads, runs))
                done.append(time_cell(work, binp, name, n, T, threads, runs, warmup, per_process))
                results["cells"].append(done[-1])
                save()
            results["parity"].extend(linfer_parity(work, name, T, done))
            save()
    results["wall_s"] = time.time() - t_start
    results["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    save()
    log("results in %s (%.0f s)" % (results_path, results["wall_s"]))
    out = run([PY, os.path.join(HERE, "report.py"), results_path, "--out", args.out])
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
