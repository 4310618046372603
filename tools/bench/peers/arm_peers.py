# SPDX-License-Identifier: Apache-2.0
"""Arm proxy of the peer comparison (run by run_arm.sh with /usr/bin/python3; see docs/peers.md).

    arm_peers.py --arm build-peers-arm --work build-peers/work --bench ARM64/linfer-bench
                 --plugin libinsn_count.so --python SYSROOT/usr/bin/python3 --results FILE.json
                 [--cpus cortex-a72,cortex-a76] [--lengths 128,512] [--runtimes a,b] [--jobs N]

PROXY, not a timing: the number of aarch64 instructions one inference executes under
qemu-aarch64 (tools/bench/arm/insn_count.c), for linfer (its arm64 linfer-bench) and for the peers
that publish aarch64 wheels, run through their Python bindings (peer_bench.py) on Debian's arm64
CPython. One inference = count(warm-up 1 + 2 runs) - count(warm-up 1 + 1 run): interpreter start,
imports, model load and the first runs cancel, as tools/bench/arm/run_proxy.sh does for ONNX
Runtime's C API. Model S, one thread. The 1-run count also writes the output, which is checked
against the PyTorch reference with peers.py's rules before the 2-run count is made: a wrong or
failing peer is recorded with its numbers or its error's last line and not counted.
Results are merged into --results (entries already there are kept, so the grid can be widened
run by run); a per-process log of each guest goes to ARM/logs/.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (compare, tolerances, labels, last_error_line)

# runtime: (peer_bench kind, site-packages folders under ARM (':'), model file under WORK, PyPI name).
# PyPI's aarch64 torch (ExecuTorch's Python runtime imports it) is a CUDA build whose libraries
# load the CUDA runtime's even on a CPU: those come from site-torch-cuda.
PEERS = {
    "ort": ("ort", "site-onnxruntime", "S_n{T}.onnx", "onnxruntime"),
    "mnn": ("mnn", "site-MNN", "peers/S_n{T}_f32.mnn", "MNN"),
    "ncnn": ("ncnn", "site-ncnn", "peers/ncnn_S_n{T}/m.ncnn.param", "ncnn"),
    "litert": ("litert", "site-ai-edge-litert", "peers/S_n{T}_f32.tflite", "ai-edge-litert"),
    "executorch": ("executorch", "site-executorch:site-torch-cuda", "peers/S_n{T}_f32.pte", "executorch"),
    "ort_int8": ("ort", "site-onnxruntime", "peers/S_n{T}_ortq.onnx", "onnxruntime"),
    "mnn_int8": ("mnn", "site-MNN", "peers/S_n{T}_int8.mnn", "MNN"),
    "litert_int8_dyn": ("litert", "site-ai-edge-litert", "peers/S_n{T}_int8_dyn.tflite", "ai-edge-litert"),
    "litert_int8_full": ("litert", "site-ai-edge-litert", "peers/S_n{T}_int8_full.tflite", "ai-edge-litert"),
    "executorch_int8": ("executorch", "site-executorch:site-torch-cuda", "peers/S_n{T}_int8.pte", "executorch"),
}
ORDER = ["linfer", "ort", "litert", "executorch", "mnn", "ncnn",
         "linfer_int8", "ort_int8", "litert_int8_dyn", "litert_int8_full", "executorch_int8", "mnn_int8"]
# The MIDR fields qemu gives each model, for an arm64 /proc/cpuinfo (see tools/bench/arm/README.md).
CPUINFO = {
    "cortex-a72": ("0x41", "0x0", "0xd08", "3", "fp asimd evtstrm crc32 cpuid"),
    "cortex-a76": ("0x41", "0x4", "0xd0b", "1", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
                   "asimdhp cpuid asimdrdm lrcpc dcpop asimddp"),
}
GUEST_TIMEOUT = 3600
lock = threading.Lock()


def log(msg):
    print("[arm-peers %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def fake_cpuinfo(arm, cpu):
    impl, var, part, rev, feat = CPUINFO[cpu]
    path = os.path.join(arm, "cpuinfo-" + cpu)
    with open(path, "w") as f:
        for p in range(os.cpu_count() or 1):
            f.write("processor\t: %d\nBogoMIPS\t: 100.00\nFeatures\t: %s\nCPU implementer\t: %s\n"
                    "CPU architecture: 8\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %s\n\n"
                    % (p, feat, impl, var, part, rev))
    return path


class Ctx:
    pass


def guest(ctx, cpu, rt, T, runs, out, tag):
    """Runs one guest process under the plugin; returns (count or None, log text)."""
    dtype = "int8" if "int8" in rt else "f32"
    ids = os.path.join(ctx.work, "S_check_ids_n%d.txt" % T)
    cnt = os.path.join(ctx.arm, "counts", tag + ".count")
    if os.path.exists(cnt):
        os.remove(cnt)
    env = ["PATH=/usr/bin:/bin"]
    qenv = []
    if rt.startswith("linfer"):
        prefix = []
        mode = "inline"  # linfer-bench --threads 1 runs one thread
        qenv += ["-E", "LD_LIBRARY_PATH=" + ctx.linfer_libs]
        prog = [ctx.bench, os.path.join(ctx.work, "S_%s.lfm" % dtype), "--seq-len", str(T), "--threads", "1",
                "--warmup", "1", "--runs", str(runs), "--ids", ids, "--dump", out]
    else:
        kind, site, model, _ = PEERS[rt]
        # The peers' bundled cpuinfo (XNNPACK's, ORT's) reads /proc/cpuinfo, which qemu-user does not
        # emulate for aarch64 guests: the model's own in a private mount namespace (as run_proxy.sh).
        prefix = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /proc/cpuinfo && exec "$@"', ctx.cpuinfo[cpu]]
        # Python bindings start helper threads (thread pools, OpenBLAS): the atomic counter is exact.
        mode = "atomic"
        qenv += ["-E", "LD_LIBRARY_PATH=" + ctx.py_libs, "-E", "PYTHONPATH=" + ":".join(os.path.join(ctx.arm, d) for d in site.split(":")),
                 "-E", "PEER_DTYPE=" + dtype, "-E", "OMP_NUM_THREADS=1", "-E", "OPENBLAS_NUM_THREADS=1",
                 "-E", "ORT_DISABLE_TELEMETRY=1", "-E", "PYTHONDONTWRITEBYTECODE=1", "-E", "PYTHONHASHSEED=0", "-E", "HOME=" + ctx.arm]
        prog = [ctx.python, "-s", os.path.join(HERE, "peer_bench.py"), kind,
                os.path.join(ctx.work, model.format(T=T)), "--seq-len", str(T), "--threads", "1",
                "--warmup", "1", "--runs", str(runs), "--ids", ids, "--out", out]
    cmd = prefix + ["env", "-i"] + env + ["qemu-aarch64", "-cpu", cpu, "-L", "/usr/aarch64-linux-gnu"] + qenv + [
        "-plugin", "%s,outfile=%s,mode=%s" % (ctx.plugin, cnt, mode)] + prog
    with lock:
        with open(os.path.join(ctx.arm, "logs", "commands.log"), "a") as f:
            f.write(" ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=GUEST_TIMEOUT)
        text, ok = p.stdout, p.returncode == 0
    except subprocess.TimeoutExpired:
        text, ok = "timed out after %d s" % GUEST_TIMEOUT, False
    with open(os.path.join(ctx.arm, "logs", tag + ".log"), "w") as f:
        f.write(text)
    if not ok or not os.path.exists(cnt):
        return None, text
    if mode == "inline" and "insn_count: warning" in text:
        return None, "more than one guest thread under the inline counter: " + text
    return int(open(cnt).read().split()[0]), text


def measure(ctx, cpu, rt, T):
    dtype = "int8" if "int8" in rt else "f32"
    tag = "%s-S%d-%s" % (cpu, T, rt)
    e = {"cpu": cpu, "model": "S", "T": T, "rt": rt, "dtype": dtype,
         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = os.path.join(ctx.arm, "out", tag + ".npy")
    if os.path.exists(out):
        os.remove(out)
    t0 = time.time()
    c1, text = guest(ctx, cpu, rt, T, 1, out, tag + "-1")
    if c1 is None or not os.path.exists(out):
        e["error"] = "run failed: " + peers.last_error_line(text)
        log("%s: %s" % (tag, e["error"]))
        return e
    ref = np.load(os.path.join(ctx.work, "S_check_ref_n%d.npy" % T))
    chk = peers.compare(ref, np.load(out))
    if dtype == "int8":
        good = chk["cos_mean"] >= peers.INT8_MIN_COSINE and chk["max_abs"] <= peers.INT8_MAX_ERR * chk["max_abs_ref"]
    else:
        good = chk["max_abs"] <= peers.F32_TOL * chk["max_abs_ref"]
    chk["ok"] = bool(good)
    e["check"] = chk
    if not good:
        e["error"] = "wrong output: max abs error %.3g of %.3g, mean cosine %.4f" % (
            chk["max_abs"], chk["max_abs_ref"], chk["cos_mean"])
        log("%s: %s" % (tag, e["error"]))
        return e
    c2, text = guest(ctx, cpu, rt, T, 2, out + ".2.npy", tag + "-2")
    if c2 is None:
        e["error"] = "run failed: " + peers.last_error_line(text)
        log("%s: %s" % (tag, e["error"]))
        return e
    e.update(count_runs1=c1, count_runs2=c2, insns=c2 - c1)
    log("%s: %d instructions per inference (check: max abs err %.3g, cosine %.6f; %.0f s)" % (
        tag, c2 - c1, chk["max_abs"], chk["cos_mean"], time.time() - t0))
    return e


def versions(arm):
    v = {}
    for rt, (kind, site, model, pkg) in PEERS.items():
        d = os.path.join(arm, site.split(":")[0])
        m = [x for x in (os.listdir(d) if os.path.isdir(d) else [])
             if re.match(r"%s-[^-]+\.dist-info$" % re.escape(pkg.replace("-", "_")), x, re.I)]
        v[kind] = m[0][len(pkg) + 1:-len(".dist-info")] if m else "not installed"
    return v


def main():
    ap = argparse.ArgumentParser()
    for a in ("--arm", "--work", "--bench", "--plugin", "--python", "--results"):
        ap.add_argument(a, required=True)
    ap.add_argument("--linfer-libs", default="", help="LD_LIBRARY_PATH of linfer-bench (its arm64 sysroot)")
    ap.add_argument("--cpus", default="cortex-a72,cortex-a76")
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--runtimes", default=",".join(ORDER))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    ctx = Ctx()
    ctx.arm, ctx.work = os.path.abspath(args.arm), os.path.abspath(args.work)
    ctx.bench, ctx.plugin, ctx.python = args.bench, args.plugin, args.python
    sysroot = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.python))))
    ctx.py_libs = ":".join(os.path.join(sysroot, d, "aarch64-linux-gnu") for d in ("usr/lib", "lib"))
    ctx.linfer_libs = args.linfer_libs
    for d in ("counts", "out", "logs"):
        os.makedirs(os.path.join(ctx.arm, d), exist_ok=True)
    cpus = args.cpus.split(",")
    for c in cpus:
        if c not in CPUINFO:
            raise SystemExit("arm_peers: --cpus takes cortex-a72 and cortex-a76 (got '%s')" % c)
    ctx.cpuinfo = {c: fake_cpuinfo(ctx.arm, c) for c in cpus}
    rts = args.runtimes.split(",")
    for rt in rts:
        if rt not in ORDER:
            raise SystemExit("arm_peers: unknown runtime '%s' (%s)" % (rt, ", ".join(ORDER)))
    lengths = [int(x) for x in args.lengths.split(",")]

    res = {"entries": []}
    if os.path.exists(args.results):
        with open(args.results) as f:
            res = json.load(f)
    qemu = subprocess.run(["qemu-aarch64", "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    pyv = subprocess.run(["env", "-i", "qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-E",
                          "LD_LIBRARY_PATH=" + ctx.py_libs, args.python, "-c",
                          "import platform; print(platform.python_version())"],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    # a runtime not installed this time keeps the version its kept entries were measured with
    res["versions"] = {k: v if v != "not installed" else res.get("versions", {}).get(k, v)
                       for k, v in versions(ctx.arm).items()}
    res["versions"]["linfer"] = commit
    res["qemu"] = qemu
    res["python"] = "Debian arm64 python3 %s" % pyv
    if args.command:
        res["command"] = args.command
    # a run that failed is tried again (and its entry replaced); a wrong output stays recorded
    res["entries"] = [e for e in res["entries"] if not e.get("error", "").startswith("run failed")
                      or (e["cpu"] not in cpus or e["T"] not in lengths or e["rt"] not in rts)]
    done = {(e["cpu"], e["T"], e["rt"]) for e in res["entries"]}
    jobs = [(c, rt, T) for T in lengths for c in cpus for rt in rts if (c, T, rt) not in done]
    log("%d measurements to make (%d already in %s)" % (len(jobs), len(done), args.results))

    def save():
        res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        res["entries"].sort(key=lambda e: (e["T"], e["cpu"], ORDER.index(e["rt"])))
        tmp = args.results + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, args.results)

    linfer_failed = False
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as ex:
        futs = {ex.submit(measure, ctx, c, rt, T): (c, rt, T) for c, rt, T in jobs}
        for fu in concurrent.futures.as_completed(futs):
            e = fu.result()
            with lock:
                res["entries"].append(e)
                save()
            if e["rt"].startswith("linfer") and "error" in e:
                linfer_failed = True
    save()
    sys.exit(1 if linfer_failed else 0)


if __name__ == "__main__":
    main()
