# SPDX-License-Identifier: Apache-2.0
"""Edge-runtime comparison driver (run by run.sh with build-peers/venv/bin/python; see docs/peers.md).

    peers.py [--quick] [--models S,M,MiniLM] --work DIR --bin BUILD/bin --out docs/peers.md

Steps, for the suite's models S and M (max_seq_len 2048) at n = 128, 512, 2048 and the pretrained
all-MiniLM-L6-v2 at n = 128, 256:
  1. builds the models in PyTorch (tools/bench/suite/make_models.py: safetensors, ONNX per length,
     check ids and the PyTorch float32 reference output; MiniLM: scripts/minilm.sh and
     minilm_model.py) and linfer's .lfm files (f32, int8);
  2. converts them for every peer (convert.py, one process per file; a failure is recorded with its
     error's last line and that peer's cell says so);
  3. checks every runtime's output on the check ids against the PyTorch reference (max abs error,
     mean cosine) BEFORE timing: an f32 runtime off by more than 1e-3 of the largest |output|, or an
     int8 one with mean cosine < 0.99 or an output off by more than 0.1 of it, is reported as
     wrong and not timed; linfer failing its own
     check stops the run (exit 1);
  4. times every cell (model, n, threads): R rounds; in each round every runtime of the dtype, linfer
     included, runs once in its own process (load, W warm-up runs, P timed runs, median of the P),
     in an order that rotates from round to round; a runtime's figure is the median of its R
     per-process medians, and its ratio is that over linfer's from the same rounds. The 1-minute
     load average is recorded at every process start;
  5. writes DIR/peers_results.json, docs/peers.md and docs/peers.png.
--models runs some of the models and keeps the others' cells from the last full run on this CPU.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

import minilm_model  # this directory's; no torch at import

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SUITE = os.path.join(ROOT, "tools", "bench", "suite")
SYS_PY = "/usr/bin/python3"
VENV_PY = sys.executable
TORCH2_PY = os.path.join(ROOT, "build-peers", "venv-torch2", "bin", "python")
HF_PY = os.path.join(ROOT, "build-hf", "venv", "bin", "python")  # scripts/hf-venv.sh: transformers
MINILM = minilm_model.NAME
F32_TOL = 1e-3
INT8_MIN_COSINE = 0.99
INT8_MAX_ERR = 0.1  # int8: no output off by more than this share of the largest |output|
PARITY_THREADS = 2
PROC_TIMEOUT = 1800

# name: (label, dtype, python, convert args or None, bench kind)
RUNTIMES = {
    "linfer": ("linfer", "f32", None, None, "linfer"),
    "ort": ("ONNX Runtime", "f32", VENV_PY, ("ort", "f32"), "ort"),
    "tract": ("tract", "f32", VENV_PY, ("tract", "f32"), "tract"),
    "mnn": ("MNN", "f32", VENV_PY, ("mnn", "f32"), "mnn"),
    "ncnn": ("ncnn", "f32", VENV_PY, ("ncnn", "f32"), "ncnn"),
    "litert": ("LiteRT (XNNPACK)", "f32", TORCH2_PY, ("litert", "f32"), "litert"),
    "executorch": ("ExecuTorch (XNNPACK)", "f32", TORCH2_PY, ("executorch", "f32"), "executorch"),
    "torch": ("PyTorch (eager)", "f32", SYS_PY, None, "torch"),
    "linfer_int8": ("linfer", "int8", None, None, "linfer"),
    "ort_int8": ("ONNX Runtime quantize_dynamic", "int8", VENV_PY, ("ort", "int8"), "ort"),
    "tract_int8": ("tract (ORT's quantized ONNX)", "int8", VENV_PY, ("tract", "int8"), "tract"),
    "mnn_int8": ("MNN weightQuantBits 8", "int8", VENV_PY, ("mnn", "int8"), "mnn"),
    "ncnn_int8": ("ncnn int8", "int8", VENV_PY, ("ncnn", "int8"), "ncnn"),
    "litert_int8_dyn": ("LiteRT dynamic-range int8", "int8", TORCH2_PY, ("litert", "int8_dyn"), "litert"),
    "litert_int8_full": ("LiteRT full-integer int8", "int8", TORCH2_PY, ("litert", "int8_full"), "litert"),
    "executorch_int8": ("ExecuTorch XNNPACK dynamic int8", "int8", TORCH2_PY, ("executorch", "int8"), "executorch"),
    "torch_int8": ("PyTorch quantize_dynamic", "int8", SYS_PY, None, "torch"),
}
VERSION_OF = {"ort": ("onnxruntime", VENV_PY), "tract": ("tract", VENV_PY), "mnn": ("MNN", VENV_PY),
              "ncnn": ("ncnn", VENV_PY), "litert": ("ai-edge-litert", TORCH2_PY),
              "executorch": ("executorch", TORCH2_PY), "torch": (None, SYS_PY),
              # MiniLM's exports: ONNX and the reference from the HF venv, LiteRT and ExecuTorch from torch 2's
              "transformers": ("transformers", HF_PY), "transformers (torch 2)": ("transformers", TORCH2_PY)}


def plan(quick, only):
    """[(model, [(n, rounds, warm-up runs, timed runs per process)])], thread counts."""
    if quick:
        return [("S", [(512, 3, 1, 3)])], (1, 2)
    models = [("S", [(128, 3, 1, 5), (512, 3, 1, 5), (2048, 3, 1, 3)]),
              ("M", [(128, 3, 1, 3), (512, 3, 1, 3), (2048, 2, 1, 2)]),
              (MINILM, [(128, 5, 1, 5), (256, 5, 1, 5)])]
    return [m for m in models if not only or m[0] in only], (1, 2)


def log(msg):
    print("[peers %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def last_error_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    for l in reversed(lines):
        if re.search(r"(Error|error|failed|Exception|SystemExit|returned|not supported|Unsupported)", l):
            return l[:300]
    return lines[-1][:300] if lines else "(no output)"


def run(cmd, env=None, timeout=PROC_TIMEOUT):
    """(ok, stdout+stderr)"""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s" % timeout
    except OSError as e:
        return False, str(e)
    return p.returncode == 0, p.stdout


def pip_version(pkg, py):
    if not os.path.exists(py):
        return "not installed"
    code = ("import importlib.metadata as m, sys\ntry: print(m.version(sys.argv[1]))\n"
            "except Exception: print('not installed')") if pkg else "import torch; print(torch.__version__)"
    ok, out = run([py, "-c", code] + ([pkg] if pkg else []), timeout=120)
    return out.strip().splitlines()[-1] if ok and out.strip() else "not installed"


def machine(binp):
    def sh(c):
        return subprocess.run(c, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    lscpu = sh("LC_ALL=C lscpu")
    m = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    # A virtual machine's model name can be as bare as "AMD EPYC", which two generations share:
    # the family and model numbers tell them apart (family 25 is Zen 3 and 4, 26 is Zen 5).
    fam = re.search(r"^CPU family:\s*(\d+)$", lscpu, re.M)
    num = re.search(r"^Model:\s*(\d+)$", lscpu, re.M)
    flags = re.search(r"^Flags:\s*(.+)$", lscpu, re.M)
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8")
           if flags and f in flags.group(1).split()]
    cpu = m.group(1) if m else platform.processor()
    if fam and num:
        cpu += " (family %s, model %s)" % (fam.group(1), num.group(1))
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": isa,
            "kernel": platform.release(), "python": platform.python_version(),
            "commit": sh("git -C %s rev-parse --short HEAD" % ROOT),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


# ---------------------------------------------------------------------------------------------


def lfm_path(work, model, dtype):
    if model == MINILM:  # scripts/minilm.sh's names
        return os.path.join(work, "minilm", "minilm-%s.lfm" % dtype)
    return os.path.join(work, "%s_%s.lfm" % (model, dtype))


def build_minilm(work, binp, lengths):
    """all-MiniLM-L6-v2 from its PyPI package: linfer's .lfm files (scripts/minilm.sh), then the
    ONNX export and the check data from transformers (minilm_model.py, in the HF venv)."""
    ok, out = run(["bash", os.path.join(ROOT, "scripts", "minilm.sh"), os.path.join(work, "minilm"), binp])
    if not ok and not os.path.exists(os.path.join(minilm_model.MODEL_DIR, "model.safetensors")):
        log("%s skipped: its package could not be fetched: %s" % (MINILM, last_error_line(out)))
        return False
    if not ok:
        raise SystemExit("peers: scripts/minilm.sh failed:\n" + out)
    if not os.path.exists(HF_PY):
        log("%s skipped: %s is missing (scripts/hf-venv.sh makes it; run.sh runs that)" % (MINILM, HF_PY))
        return False
    ok, out = run([HF_PY, os.path.join(HERE, "minilm_model.py"), "--lengths", ",".join(map(str, lengths)),
                   "--work", work])
    if not ok:
        raise SystemExit("peers: minilm_model.py failed:\n" + out)
    log("models %s ready (n = %s)" % (MINILM, lengths))
    return True


def build_models(work, binp, model, lengths):
    if model == MINILM:
        return build_minilm(work, binp, lengths)
    ok, out = run([SYS_PY, os.path.join(SUITE, "make_models.py"), "--model", model, "--n", "2048",
                   "--lengths", ",".join(map(str, lengths)), "--work", work])
    if not ok:
        raise SystemExit("peers: make_models.py failed:\n" + out)
    st = os.path.join(work, model + ".safetensors")
    for dt in ("f32", "int8"):
        lfm = os.path.join(work, "%s_%s.lfm" % (model, dt))
        if not os.path.exists(lfm) or os.path.getmtime(lfm) < os.path.getmtime(st):
            ok, out = run([os.path.join(binp, "linfer-convert"), st, "-o", lfm, "--dtype", dt])
            if not ok:
                raise SystemExit("peers: linfer-convert failed:\n" + out)
    log("models %s ready (n = %s)" % (model, lengths))
    return True


def convert_all(work, model, T, files, errors):
    for rt, (label, dtype, py, conv, kind) in RUNTIMES.items():
        if conv is None:
            continue
        key = "%s/%s/%d" % (rt, model, T)
        if not os.path.exists(py):
            errors[key] = "not installed: %s is missing (run.sh installs it)" % py
            continue
        t0 = time.time()
        ok, out = run([py, os.path.join(HERE, "convert.py"), conv[0], conv[1], model, str(T), "--work", work])
        path = out.strip().splitlines()[-1] if ok and out.strip() else ""
        if ok and os.path.exists(path):
            files[key] = path
            log("converted %-18s %s n=%d (%.0f s): %s" % (rt, model, T, time.time() - t0, os.path.relpath(path, work)))
        else:
            errors[key] = "conversion failed: " + last_error_line(out)
            log("conversion FAILED %s %s n=%d: %s" % (rt, model, T, errors[key]))


def ids_path(work, model, T):
    return os.path.join(work, "%s_check_ids_n%d.txt" % (model, T))


def command(rt, work, binp, files, model, T, threads, warmup, runs, out=None):
    label, dtype, py, conv, kind = RUNTIMES[rt]
    env = dict(os.environ, PEER_DTYPE=dtype)
    ids = ids_path(work, model, T)
    if kind == "linfer":
        cmd = [os.path.join(binp, "linfer-bench"), lfm_path(work, model, dtype),
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
               "--ids", ids] + (["--dump", out] if out else [])
    elif kind == "torch":
        # MiniLM: transformers' model from the package's directory, in the HF venv (same torch).
        st, tpy = ((minilm_model.MODEL_DIR, HF_PY) if model == MINILM
                   else (os.path.join(work, model + ".safetensors"), SYS_PY))
        if out:
            cmd = [tpy, os.path.join(SUITE, "torch_bench.py"), st, "--dtype", dtype, "--check", ids, out,
                   "--threads", str(threads)]
        else:
            cmd = [tpy, os.path.join(SUITE, "torch_bench.py"), st, "--seq-len", str(T), "--threads",
                   str(threads), "--runs", str(runs), "--warmup", str(warmup), "--dtype", dtype]
        # As the suite does: OpenBLAS threads = T, idle OpenMP workers must not spin.
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    else:
        cmd = [py, os.path.join(HERE, "peer_bench.py"), kind, files["%s/%s/%d" % (rt, model, T)],
               "--seq-len", str(T), "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
               "--ids", ids] + (["--out", out] if out else [])
        env.update(OMP_NUM_THREADS=str(threads))
    return cmd, env


def compare(ref, out):
    ref = ref.astype(np.float64)
    out = np.asarray(out).reshape(ref.shape).astype(np.float64)
    cos = (out * ref).sum(1) / np.maximum(np.linalg.norm(out, axis=1) * np.linalg.norm(ref, axis=1), 1e-300)
    return {"max_abs_ref": float(np.abs(ref).max()), "max_abs": float(np.abs(out - ref).max()),
            "cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
            "argmax": float((out.argmax(1) == ref.argmax(1)).mean())}


def parity(work, binp, files, errors, model, T):
    """Checks every runnable runtime; returns {rt: entry}; records the wrong ones in errors."""
    ref = np.load(os.path.join(work, "%s_check_ref_n%d.npy" % (model, T)))
    res = {}
    os.makedirs(os.path.join(work, "check"), exist_ok=True)
    for rt, (label, dtype, py, conv, kind) in RUNTIMES.items():
        key = "%s/%s/%d" % (rt, model, T)
        if key in errors:
            continue
        out = os.path.join(work, "check", "%s_%s_n%d.npy" % (rt, model, T))
        if os.path.exists(out):
            os.remove(out)
        cmd, env = command(rt, work, binp, files, model, T, PARITY_THREADS, 0, 1, out=out)
        ok, text = run(cmd, env=env)
        if not ok or not os.path.exists(out):
            errors[key] = "run failed: " + last_error_line(text)
            log("parity %s %s n=%d: RUN FAILED: %s" % (rt, model, T, errors[key]))
            if kind == "linfer":
                raise SystemExit("peers: linfer failed on %s n=%d:\n%s" % (model, T, text))
            continue
        e = compare(ref, np.load(out))
        if dtype == "int8":
            good = e["cos_mean"] >= INT8_MIN_COSINE and e["max_abs"] <= INT8_MAX_ERR * e["max_abs_ref"]
        else:
            good = e["max_abs"] <= F32_TOL * e["max_abs_ref"]
        e["ok"] = bool(good)
        res[rt] = e
        log("parity %s n=%d %-17s max abs err %.3g (of %.3g), cosine %.6f (min %.6f), arg-max %.1f%% %s" % (
            model, T, rt, e["max_abs"], e["max_abs_ref"], e["cos_mean"], e["cos_min"], 100 * e["argmax"],
            "ok" if good else "WRONG"))
        if not good:
            errors[key] = "wrong output: max abs error %.3g of %.3g, mean cosine %.4f" % (
                e["max_abs"], e["max_abs_ref"], e["cos_mean"])
            if kind == "linfer":
                raise SystemExit("peers: linfer's output is wrong on %s n=%d: %s" % (model, T, errors[key]))
    return res


def parse_latency(text):
    m = re.search(r"^latency_ms: median (-?[\d.]+)", text, re.M)
    return float(m.group(1)) if m else None


def time_cell(work, binp, files, errors, model, T, threads, rounds, warmup, runs):
    cell = {}
    for dtype in ("f32", "int8"):
        rts = [rt for rt, v in RUNTIMES.items() if v[1] == dtype and "%s/%s/%d" % (rt, model, T) not in errors]
        samples = {rt: [] for rt in rts}
        loads = []
        failed = {}
        for r in range(rounds):
            order = rts[r % len(rts):] + rts[:r % len(rts)]
            for rt in order:
                if rt in failed:
                    continue
                loads.append(os.getloadavg()[0])
                cmd, env = command(rt, work, binp, files, model, T, threads, warmup, runs)
                ok, text = run(cmd, env=env)
                ms = parse_latency(text) if ok else None
                if ms is None:
                    failed[rt] = "run failed: " + last_error_line(text)
                    if RUNTIMES[rt][4] == "linfer":
                        raise SystemExit("peers: linfer failed:\n" + text)
                    continue
                samples[rt].append(ms)
            log("  %s n=%d t=%d %s round %d/%d: %s" % (model, T, threads, dtype, r + 1, rounds, ", ".join(
                "%s %.1f" % (rt, samples[rt][-1]) for rt in rts if samples[rt] and rt not in failed)))
        for rt in rts:
            if rt in failed:
                cell[rt] = {"error": failed[rt]}
            else:
                cell[rt] = {"ms": float(np.median(samples[rt])), "samples": samples[rt]}
        cell["load_" + dtype] = [float(min(loads)), float(np.mean(loads)), float(max(loads))]
    return cell


def prior_results(work):
    """For a run of some models only: the last full run's results (WORK's, else the committed
    record) and its path, whose other models' cells the new results keep; (None, None) when there
    is none. (main refuses one from another CPU: two machines' ratios would share a table.)"""
    for path in (os.path.join(work, "peers_results.json"), os.path.join(HERE, "results", "peers_results.json")):
        if os.path.exists(path):
            with open(path) as f:
                prior = json.load(f)
            if not prior.get("quick") and prior.get("complete", True):
                return prior, path
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default="", help="comma-separated subset of S, M, MiniLM (default: all); "
                    "the other models' cells come from the last full run")
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t_start = time.time()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    only = [m for m in args.models.split(",") if m]
    known = [m for m, _ in plan(False, [])[0]]
    if only and args.quick:
        raise SystemExit("peers: --quick runs S at n = 512 only; it takes no --models")
    if any(m not in known for m in only):
        raise SystemExit("peers: --models takes a subset of %s, not '%s'" % (",".join(known), args.models))
    models, threads = plan(args.quick, only)
    info = machine(args.bin)
    versions = {k: pip_version(*v) for k, v in VERSION_OF.items()}
    versions["linfer"] = info["commit"]
    log("versions: %s" % versions)
    files, errors, checks, cells = {}, {}, {}, []
    model_runs = {}  # model: {"date", "wall_s", "commit"} of the run that measured it
    kept_wall = 0.0
    if only:
        prior, path = prior_results(work)
        if prior is None:
            log("no earlier full run to keep the other models' cells from: this run's models only")
        elif prior["machine"]["cpu"] != info["cpu"]:
            raise SystemExit("peers: the last full run (%s) was on %s, this machine is %s: run every model" % (
                path, prior["machine"]["cpu"], info["cpu"]))
        else:
            log("keeping the cells of %s from %s" % (
                ", ".join(sorted({c["model"] for c in prior["cells"]} - set(only))), path))
            cells = [c for c in prior["cells"] if c["model"] not in only]
            errors = {k: v for k, v in prior["errors"].items() if k.split("/")[1] not in only}
            checks = {k: v for k, v in prior["checks"].items() if k.split("/")[0] not in only}
            for m in {c["model"] for c in cells}:
                model_runs[m] = prior.get("model_runs", {}).get(m, {"date": prior["machine"]["date"], "wall_s": None,
                                                                    "commit": prior["machine"]["commit"]})
            # The earlier run's time less that of the models this run measures again.
            kept_wall = prior["wall_s"] - sum(r.get("wall_s") or 0 for m, r in prior.get("model_runs", {}).items()
                                              if m in only)
            versions = dict(prior["versions"], **versions)
            models = [(m, lens) for m, lens in prior["plan"] if m not in only] + models
    sys.path.insert(0, HERE)
    import report

    def save(done):
        """Results and report after every cell, so that an interrupted run still leaves its cells."""
        result = {"quick": args.quick, "complete": done, "machine": info, "versions": versions,
                  "errors": errors, "checks": checks, "cells": cells, "wall_s": kept_wall + time.time() - t_start,
                  "plan": [[m, lens] for m, lens in models], "threads": list(threads), "model_runs": model_runs}
        with open(os.path.join(work, "peers_results.json"), "w") as f:
            json.dump(result, f, indent=1)
        report.write(result, args.out)

    for model, lens in models:
        if model in model_runs:  # kept from the last full run
            continue
        t_model = time.time()
        if not build_models(work, args.bin, model, [T for T, *_ in lens]):
            continue
        for T, rounds, warmup, runs in lens:
            convert_all(work, model, T, files, errors)
            checks["%s/%d" % (model, T)] = parity(work, args.bin, files, errors, model, T)
            for th in threads:
                c = time_cell(work, args.bin, files, errors, model, T, th, rounds, warmup, runs)
                c.update(model=model, T=T, threads=th, rounds=rounds, warmup=warmup, runs=runs)
                cells.append(c)
                model_runs[model] = {"date": info["date"], "wall_s": time.time() - t_model, "commit": info["commit"]}
                save(False)
    save(True)
    log("done in %.1f min: %s" % ((time.time() - t_start) / 60, args.out))


if __name__ == "__main__":
    main()
