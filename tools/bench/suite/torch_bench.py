"""torch_bench.py MODEL.safetensors --seq-len N --threads T [--runs R] [--warmup W]

Times the PyTorch reference (tools/python/linfer_ref.py LinferEncoder, eager mode, float32) on
random token ids [N]: torch.set_num_threads(T), torch.set_num_interop_threads(1),
torch.inference_mode(); W warm-up runs, then R timed runs. Run with /usr/bin/python3 (Debian's
torch). The driver also sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS to T for this process, so
that OpenBLAS (which does Debian torch's matrix products) uses the same number of threads, and
OMP_WAIT_POLICY=PASSIVE, so that idle OpenMP workers do not spin on the cores OpenBLAS works on.
Prints, in linfer-bench's format:
    latency_ms: median X, min Y, max Z
    peak_rss_bytes: B     (VmHWM of this process; getrusage would include the parent's at fork)
    load_ms: L
"""

import argparse
import json
import os
import resource
import struct
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import linfer_ref  # noqa: E402



def peak_rss_bytes():
    """VmHWM from /proc: Linux carries ru_maxrss across exec, so getrusage would report the
    parent's peak when that is larger."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def load_model(path):
    """Reads the safetensors file tensor by tensor straight into the model's parameters, so that
    the peak RSS holds the weights once (linfer_ref.load_safetensors would hold the file twice)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
        base = 8 + n
        cfg = json.loads(header.pop("__metadata__")["linfer_config"])
        model = linfer_ref.LinferEncoder(cfg).eval()
        state = model.state_dict()
        if set(state) != set(header):
            raise SystemExit("torch_bench: tensor names differ from LinferEncoder's")
        for name, info in header.items():
            t = state[name]
            if info["dtype"] != "F32" or list(t.shape) != info["shape"]:
                raise SystemExit("torch_bench: %s: unexpected dtype or shape" % name)
            b, e = info["data_offsets"]
            f.seek(base + b)
            view = t.numpy().reshape(-1).view("uint8")
            if f.readinto(memoryview(view)) != e - b:
                raise SystemExit("torch_bench: %s: short read" % name)
    return model, cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    t0 = time.perf_counter()
    with torch.no_grad():
        model, cfg = load_model(args.model)
    load_ms = (time.perf_counter() - t0) * 1e3
    T = args.seq_len
    if not 1 <= T <= cfg["max_seq_len"]:
        raise SystemExit("torch_bench: --seq-len outside [1, n]")
    ids = torch.randint(0, cfg["vocab_size"], (T,), generator=torch.Generator().manual_seed(1234))
    ms = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            model(ids)
        for _ in range(args.runs):
            s = time.perf_counter()
            model(ids)
            ms.append((time.perf_counter() - s) * 1e3)
    ms.sort()
    k = len(ms)
    med = ms[k // 2] if k % 2 else 0.5 * (ms[k // 2 - 1] + ms[k // 2])
    rss = peak_rss_bytes()
    print("seq_len: %d, threads: %d (torch %s, num_threads %d), runs: %d, warmup: %d"
          % (T, args.threads, torch.__version__, torch.get_num_threads(), args.runs, args.warmup))
    print("latency_ms: median %.3f, min %.3f, max %.3f" % (med, ms[0], ms[-1]))
    print("peak_rss_bytes: %d" % rss)
    print("load_ms: %.1f" % load_ms)


if __name__ == "__main__":
    main()
