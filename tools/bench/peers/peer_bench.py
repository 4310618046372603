# SPDX-License-Identifier: Apache-2.0
"""peer_bench.py RUNTIME MODEL_FILE --seq-len T --threads N [--runs R] [--warmup W] [--ids IDS --out OUT.npy]

Runs one peer runtime in this process (started by peers.py, one process per measurement) on int64
token ids [T] and prints, in linfer-bench's format:
    latency_ms: median X, min Y, max Z
    load_ms: L
    threads_used: N        (what the runtime was asked for; tract is single-threaded)
With --ids: the timed runs use those ids and the output of the last run is written to OUT.npy
(float32 [T, vocab], or MiniLM's [1, 384]); that dump is what the parity check compares with PyTorch.

RUNTIME: ort (onnxruntime, .onnx), tract (.onnx), mnn (.mnn), ncnn (.ncnn.param; the .bin beside it),
litert (.tflite, XNNPACK delegate), executorch (.pte, run with build-peers/venv-torch2's python).
"""
import argparse
import os
import sys
import time

import numpy as np


def load_ort(path, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return lambda ids: sess.run(None, {name: ids})[0]


def load_tract(path, threads):
    import tract

    # into_runnable() declutters and optimizes the typed model.
    model = tract.onnx().load(path).into_model().into_runnable()
    return lambda ids: model.run([ids])[0].to_numpy()


def load_mnn(path, threads):
    import MNN

    nn, F = MNN.nn, MNN.expr
    # memory "low" makes MNN compute weight-quantized (int8) models with dynamic int8 activations;
    # for float models it changes nothing.
    config = {"backend": "CPU", "precision": "normal", "numThread": threads,
              "memory": "low" if os.environ.get("PEER_DTYPE") == "int8" else "normal"}
    rt = nn.create_runtime_manager((config,))
    net = nn.load_module_from_file(path, ["ids"], ["logits"], runtime_manager=rt)

    def run(ids):
        x = F.const(ids.astype(np.int32), [len(ids)], F.NCHW, F.int)
        out = net.forward([x])[0]
        return np.array(out.read(), dtype=np.float32)
    return run


def ncnn_failing_layer(net, param_path, feed):
    """': layer TYPE NAME (params ...) fails', the first layer of the .param whose output cannot be
    extracted, or '' when every layer's can."""
    with open(param_path) as f:
        lines = f.read().splitlines()[2:]
    for line in lines:
        fields = line.split()
        if len(fields) < 4:
            continue
        n_in, n_out = int(fields[2]), int(fields[3])
        for blob in fields[4 + n_in:4 + n_in + n_out]:
            ex = net.create_extractor()
            feed(ex)
            if ex.extract(blob)[0] != 0:
                return ": its first failing layer is %s %s (params %s)" % (
                    fields[0], fields[1], " ".join(fields[4 + n_in + n_out:]) or "none")
    return ""


def load_ncnn(path, threads):
    import ncnn

    net = ncnn.Net()
    net.opt.num_threads = threads
    net.opt.use_int8_inference = os.environ.get("PEER_DTYPE") == "int8"
    if net.load_param(path) != 0 or net.load_model(path[:-len(".param")] + ".bin") != 0:
        raise SystemExit("peer_bench: ncnn could not load %s" % path)
    inp, outp = net.input_names()[0], net.output_names()[0]

    def run(ids):
        ex = net.create_extractor()
        # As pnnx's generated m_ncnn.py feeds it: int32 ids, batch_index 233 (no batch axis).
        ex.input(inp, ncnn.Mat(ids.astype(np.int32), batch_index=233).clone())
        ret, out = ex.extract(outp)
        if ret != 0:
            raise SystemExit("peer_bench: ncnn: extract('%s') returned %d%s" % (outp, ret, ncnn_failing_layer(
                net, path, lambda ex: ex.input(inp, ncnn.Mat(ids.astype(np.int32), batch_index=233).clone()))))
        return out.numpy(batch_index=0).copy()
    return run


def load_litert(path, threads):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=path, num_threads=threads)
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    outp = it.get_output_details()[0]

    scale, zero_point = outp["quantization"]

    def run(ids):
        it.set_tensor(inp["index"], ids.astype(inp["dtype"]).reshape(inp["shape"]))
        it.invoke()
        out = it.get_tensor(outp["index"])
        # A full-integer model's output is int8 with a scale and zero point (as a caller reads it).
        return (out.astype("float32") - zero_point) * scale if scale else out
    return run


def load_executorch(path, threads):
    import torch
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    portable_lib._unsafe_reset_threadpool(threads)
    method = Runtime.get().load_program(path).load_method("forward")
    return lambda ids: method.execute([torch.from_numpy(ids)])[0].numpy()


LOADERS = {"ort": load_ort, "tract": load_tract, "mnn": load_mnn, "ncnn": load_ncnn,
           "litert": load_litert, "executorch": load_executorch}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runtime", choices=sorted(LOADERS))
    ap.add_argument("model")
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--ids")
    ap.add_argument("--out")
    ap.add_argument("--vocab", type=int, default=256)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        raise SystemExit("peer_bench: %s: no such file" % args.model)
    T = args.seq_len
    if args.ids:
        with open(args.ids) as f:
            ids = np.array([int(t) for t in f.read().split()], dtype=np.int64)
        if len(ids) != T:
            raise SystemExit("peer_bench: %s has %d ids, not %d" % (args.ids, len(ids), T))
    else:
        ids = np.random.default_rng(1234).integers(0, args.vocab, T).astype(np.int64)
    t0 = time.perf_counter()
    run = LOADERS[args.runtime](args.model, args.threads)
    load_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(args.warmup):
        run(ids)
    ms = []
    out = None
    for _ in range(max(args.runs, 1)):
        s = time.perf_counter()
        out = run(ids)
        ms.append((time.perf_counter() - s) * 1e3)
    ms.sort()
    k = len(ms)
    med = ms[k // 2] if k % 2 else 0.5 * (ms[k // 2 - 1] + ms[k // 2])
    if args.out:
        out = np.asarray(out, dtype=np.float32)
        out = out.reshape(-1, out.shape[-1])  # [T, vocab] (S, M) or [1, 384] (MiniLM)
        np.save(args.out, out)
    print("seq_len: %d, threads: %d, runs: %d, warmup: %d" % (T, args.threads, len(ms), args.warmup))
    print("latency_ms: median %.3f, min %.3f, max %.3f" % (med, ms[0], ms[-1]))
    print("load_ms: %.1f" % load_ms)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
