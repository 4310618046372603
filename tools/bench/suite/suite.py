"""Benchmark suite driver (run by run_suite.sh with /usr/bin/python3; see docs/benchmarks.md).

    suite.py [--quick] --work DIR --bin BUILD/bin [--out docs/benchmarks.md]

Steps: measure the FMA peak (fma_peak, 1 and 2 threads); build the models in PyTorch and export
them (make_models.py); convert them to .lfm (linfer-convert, f32 and int8 for S); check that linfer
and ONNX Runtime reproduce the PyTorch output; time every runtime, alternating between runtimes run
by run; write DIR/results.json; render docs/benchmarks.md and the plots (report.py).

Timing protocol: for a cell (model, n, threads) and each of R rounds, every runtime is started once,
in its own process, loads the model, does W warm-up runs and P timed runs (steady state: ONNX
Runtime and PyTorch are still slower on their second run than later), reports the median of the P,
and exits. The order of the runtimes rotates from round to round. A runtime's latency for the cell
is the median of its R per-process medians; its peak RSS is the largest of its R processes' peaks.
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

PY = "/usr/bin/python3"
THREADS = (1, 2)
PROC_TIMEOUT = 1800  # seconds for one process (load + warm-up + one run)


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
    m = re.search(r"latency_ms: median ([\d.]+), min ([\d.]+), max ([\d.]+)", text)
    if not m:
        raise SystemExit("suite: no latency line in output:\n" + text)
    out["latency_ms"] = float(m.group(1))
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


def build_models(work, binp, name, n, lengths):
    t0 = time.time()
    log("building model %s (n=%d), ONNX for T in %s" % (name, n, lengths))
    out = run([PY, os.path.join(HERE, "make_models.py"), "--model", name, "--n", str(n),
               "--lengths", ",".join(map(str, lengths)), "--work", work])
    sys.stdout.write(out)
    st = os.path.join(work, name + ".safetensors")
    dtypes = ["f32", "int8"] if name == "S" else ["f32"]
    conv = os.path.join(binp, "linfer-convert")
    for dt in dtypes:
        lfm = os.path.join(work, "%s_%s.lfm" % (name, dt))
        fresh = os.path.exists(lfm) and os.path.getmtime(lfm) > max(os.path.getmtime(st), os.path.getmtime(conv))
        if not fresh:
            run([conv, st, "-o", lfm, "--dtype", dt])
            log("converted %s" % lfm)
    return time.time() - t0


def parity(work, binp, name):
    """linfer (f32, and int8 for S) and ORT against the PyTorch float32 output on the check ids."""
    ids = os.path.join(work, name + "_check_ids.txt")
    ref = os.path.join(work, name + "_check_ref.npy")
    with open(ids) as f:
        T = len(f.read().split())
    onnx = os.path.join(work, "%s_n%d.onnx" % (name, T))
    if not os.path.exists(onnx):
        raise SystemExit("suite: no ONNX file for the parity length %d" % T)
    outs = {"ort": os.path.join(work, "%s_ort_check_out.f32" % name)}
    run(["node", os.path.join(HERE, "ort_bench.js"), onnx, "--check", ids, outs["ort"]])
    dtypes = ["f32", "int8"] if name == "S" else ["f32"]
    for dt in dtypes:
        outs["linfer_" + dt] = os.path.join(work, "%s_%s_check_out.npy" % (name, dt))
        run([os.path.join(binp, "linfer-run"), os.path.join(work, "%s_%s.lfm" % (name, dt)), "--ids", ids,
             "--dump", outs["linfer_" + dt]])
    code = """
import json, sys, numpy as np
ref = np.load(sys.argv[1]).astype(np.float64)
res = {"max_abs_ref": float(np.abs(ref).max())}
for kv in sys.argv[2:]:
    key, path = kv.split("=", 1)
    out = np.fromfile(path, dtype="<f4") if path.endswith(".f32") else np.load(path)
    out = out.reshape(ref.shape).astype(np.float64)
    res[key] = {"max_abs": float(np.abs(out - ref).max()),
                "rel": float(np.linalg.norm(out - ref) / np.linalg.norm(ref)),
                "argmax": float((out.argmax(1) == ref.argmax(1)).mean())}
print(json.dumps(res))
"""
    res = json.loads(run([PY, "-c", code, ref] + ["%s=%s" % kv for kv in outs.items()]))
    res.update({"model": name, "T": T})
    tol = 1e-3 * res["max_abs_ref"]
    for key in ("ort", "linfer_f32"):
        if not res[key]["max_abs"] <= tol:
            raise SystemExit("suite: parity check failed for %s on %s: max abs error %g > %g"
                             % (key, name, res[key]["max_abs"], tol))
    log("parity %s T=%d (max |ref| %.3g): %s" % (name, T, res["max_abs_ref"], ", ".join(
        "%s max abs err %.3g, rel %.2g" % (k, res[k]["max_abs"], res[k]["rel"]) for k in outs)))
    return res


def runtimes_for(name):
    rts = ["linfer", "ort", "torch"]
    if name == "S":
        rts.append("linfer_int8")
    return rts


def command(rt, work, binp, name, T, threads, warmup, runs):
    env = dict(os.environ)
    if rt in ("linfer", "linfer_int8"):
        dt = "int8" if rt == "linfer_int8" else "f32"
        cmd = [os.path.join(binp, "linfer-bench"), os.path.join(work, "%s_%s.lfm" % (name, dt)),
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup)]
    elif rt == "ort":
        cmd = ["node", os.path.join(HERE, "ort_bench.js"), os.path.join(work, "%s_n%d.onnx" % (name, T)),
               "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup)]
    else:
        cmd = [PY, os.path.join(HERE, "torch_bench.py"), os.path.join(work, name + ".safetensors"),
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup)]
        env["OMP_NUM_THREADS"] = str(threads)
        env["OPENBLAS_NUM_THREADS"] = str(threads)
        # Debian's torch runs two thread pools: OpenMP (element-wise ops, softmax, norms) and
        # OpenBLAS's own pthreads (matrix products). With the default wait policy the idle OpenMP
        # workers spin and take cores from OpenBLAS (3x slower at 2 threads on a busy machine).
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return cmd, env


def time_cell(work, binp, name, n, T, threads, runs, warmup, per_process):
    rts = runtimes_for(name)
    samples = {rt: [] for rt in rts}
    t0 = time.time()
    for r in range(runs):
        order = rts[r % len(rts):] + rts[:r % len(rts)]
        for rt in order:
            cmd, env = command(rt, work, binp, name, T, threads, warmup, per_process)
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
    os.makedirs(work, exist_ok=True)
    t_start = time.time()
    results = {"mode": "quick" if args.quick else "full", "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
               "machine": machine_info(binp), "threads": list(THREADS), "cells": [], "parity": [], "configs": {}}
    results["fma_peak"] = fma_peak(work)
    p = plan(args.quick)
    t_models = 0.0
    for name, n, cells in p:
        lengths = [cell[0] for cell in cells]
        results["configs"][name] = models.config(name, n)
        t_models += build_models(work, binp, name, n, lengths)
        results["parity"].append(parity(work, binp, name))
    results["models_wall_s"] = t_models
    results_path = os.path.join(work, "results.json")
    for name, n, cells in p:
        for T, runs, warmup, per_process in cells:
            for threads in THREADS:
                log("timing %s n=%d threads=%d, %d rounds" % (name, T, threads, runs))
                results["cells"].append(time_cell(work, binp, name, n, T, threads, runs, warmup, per_process))
                with open(results_path, "w") as f:
                    json.dump(results, f, indent=1)
    results["wall_s"] = time.time() - t_start
    results["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)
    log("results in %s (%.0f s)" % (results_path, results["wall_s"]))
    out = run([PY, os.path.join(HERE, "report.py"), results_path, "--out", args.out])
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
