# SPDX-License-Identifier: Apache-2.0
"""convert.py PEER DTYPE MODEL T --work DIR

Builds one peer's model file for the suite's model MODEL (S or M, built by make_models.py into DIR)
at length T, by that peer's own conversion route, and prints its path on the last line. Routes:

  ort    f32: the ONNX export (torch.onnx.export, opset 17) as it is.
         int8: onnxruntime.quantization.quantize_dynamic(per_channel=True, weight_type=QInt8), after
         each Gemm with a constant weight is written as MatMul + Add (quantize_dynamic quantizes
         MatMul but leaves Gemm, which torch.onnx.export writes for nn.Linear on a 2-D input, float).
  tract  the same two ONNX files (tract has no quantizer; it runs the quantized ONNX ops).
  mnn    f32: mnnconvert -f ONNX. int8: mnnconvert -f ONNX --weightQuantBits 8 (int8 weights; MNN
         computes them with dynamic int8 activations when the runtime's memory mode is "low").
  ncnn   f32: pnnx on the ONNX file (inputshape=[T]i64) -> .ncnn.param/.ncnn.bin.
  litert f32: litert_torch.convert on the PyTorch model -> .tflite.
         int8_dyn: ai_edge_quantizer, recipe dynamic_wi8_afp32 (dynamic-range int8).
         int8_full: ai_edge_quantizer, recipe static_wi8_ai8 calibrated on 8 random id sequences.
  executorch  torch.export -> to_edge_transform_and_lower(XnnpackPartitioner) -> .pte; int8: the
         XNNPACK quantizer, symmetric per-channel dynamic int8 (prepare_pt2e/convert_pt2e) first.

litert and executorch need PyPI's torch 2: run them with build-peers/venv-torch2/bin/python.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "suite")
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "reference"))
sys.path.insert(0, SUITE)
import minilm_model  # noqa: E402


def onnx_path(work, model, T):
    return os.path.join(work, "%s_n%d.onnx" % (model, T))


def gemm_to_matmul(src, dst):
    """Rewrites Gemm(A, W, b) with constant W (alpha = beta = 1, transA = 0) as MatMul(A, W') + b."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(src)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    rewritten = 0
    for node in g.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (node.op_type == "Gemm" and node.input[1] in inits and attrs.get("alpha", 1.0) == 1.0
                and attrs.get("beta", 1.0) == 1.0 and not attrs.get("transA", 0)):
            w = numpy_helper.to_array(inits[node.input[1]])
            if attrs.get("transB", 0):
                w = np.ascontiguousarray(w.T)
            wname = node.input[1] + "_kn"
            g.initializer.append(numpy_helper.from_array(w, wname))
            if len(node.input) > 2 and node.input[2]:
                mid = node.output[0] + "_mm"
                nodes.append(helper.make_node("MatMul", [node.input[0], wname], [mid], name=node.name + "_mm"))
                nodes.append(helper.make_node("Add", [mid, node.input[2]], [node.output[0]], name=node.name + "_add"))
            else:
                nodes.append(helper.make_node("MatMul", [node.input[0], wname], [node.output[0]], name=node.name + "_mm"))
            rewritten += 1
        else:
            nodes.append(node)
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    onnx.save(m, dst)
    return rewritten


def ort_int8(work, model, T):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = os.path.join(work, "peers", "%s_n%d_ortq.onnx" % (model, T))
    if not os.path.exists(out):
        mm = os.path.join(work, "peers", "%s_n%d_matmul.onnx" % (model, T))
        n = gemm_to_matmul(onnx_path(work, model, T), mm)
        quantize_dynamic(mm, out + ".tmp", per_channel=True, weight_type=QuantType.QInt8)
        os.replace(out + ".tmp", out)
        print("convert: %d Gemm written as MatMul + Add, then quantize_dynamic" % n)
    return out


def mnn(work, model, T, dtype):
    out = os.path.join(work, "peers", "%s_n%d_%s.mnn" % (model, T, dtype))
    if not os.path.exists(out):
        exe = os.path.join(os.path.dirname(sys.executable), "mnnconvert")
        cmd = [exe, "-f", "ONNX", "--modelFile", onnx_path(work, model, T), "--MNNModel", out + ".tmp",
               "--bizCode", "linfer"]
        if dtype == "int8":
            cmd += ["--weightQuantBits", "8"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or not os.path.exists(out + ".tmp"):
            raise SystemExit("mnnconvert failed (%d): %s" % (p.returncode, p.stdout.strip().splitlines()[-1:]))
        os.replace(out + ".tmp", out)
    return out


def ncnn(work, model, T):
    d = os.path.join(work, "peers", "ncnn_%s_n%d" % (model, T))
    param = os.path.join(d, "m.ncnn.param")
    if not os.path.exists(param):
        os.makedirs(d, exist_ok=True)
        src = os.path.join(d, "m.onnx")
        shutil.copyfile(onnx_path(work, model, T), src)
        exe = os.path.join(os.path.dirname(sys.executable), "pnnx")
        p = subprocess.run([exe, src, "inputshape=[%d]i64" % T], cwd=d, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or not os.path.exists(param):
            tail = [l for l in p.stdout.strip().splitlines() if l.strip()][-3:]
            raise SystemExit("pnnx failed (%d): %s" % (p.returncode, " | ".join(tail)))
    return param


def torch_model(work, model):
    if model == minilm_model.NAME:
        import torch
        return minilm_model.embedder(minilm_model.MODEL_DIR), None, torch
    import make_models  # noqa: F401  (ExportEncoder)
    import linfer_ref
    import torch

    tensors, meta = linfer_ref.load_safetensors(os.path.join(work, model + ".safetensors"))
    import json
    cfg = json.loads(meta["linfer_config"])
    m = linfer_ref.LinferEncoder(cfg).eval()
    m.load_state_dict(tensors)
    cfg = m.cfg  # with the defaults filled in
    if cfg["positions"] == "learned" and int(cfg["position_offset"]) == 0 and not cfg["embedding_norm"]:
        # LinferEncoder.embed without its "+ position_offset" (0 here): prepare_pt2e turns that
        # constant into a float tensor, and the position embedding's indices with it.
        scale = float(cfg["embedding_scale"])

        def embed(ids):
            pos = torch.arange(ids.shape[0])
            return scale * m.token_embedding(ids) + m.position_embedding(pos)
        m.embed = embed
    return make_models.ExportEncoder(m).eval(), cfg, torch


def sample_ids(torch, T, seed, model):
    if model == minilm_model.NAME:  # real text
        return torch.from_numpy(minilm_model.calibration_ids(T, seed))
    return torch.randint(0, 256, (T,), generator=torch.Generator().manual_seed(seed), dtype=torch.long)


def litert(work, model, T, dtype):
    f32 = os.path.join(work, "peers", "%s_n%d_f32.tflite" % (model, T))
    if not os.path.exists(f32):
        import litert_torch

        m, _, torch = torch_model(work, model)
        litert_torch.convert(m, (sample_ids(torch, T, 1, model),)).export(f32 + ".tmp")
        os.replace(f32 + ".tmp", f32)
    if dtype == "f32":
        return f32
    out = os.path.join(work, "peers", "%s_n%d_%s.tflite" % (model, T, dtype))
    if not os.path.exists(out):
        from ai_edge_quantizer import quantizer, recipe

        qt = quantizer.Quantizer(f32)
        if dtype == "int8_dyn":
            # The recipe as published, restricted to FULLY_CONNECTED (the linear layers, as
            # quantize_dynamic does): on every op ("*") it also makes the Linformer projection's
            # constant left operand of BATCH_MATMUL int8, which the kernel rejects ("Node number 21
            # (BATCH_MATMUL) failed to prepare").
            rec = recipe.dynamic_wi8_afp32()
            for r in rec:
                r["operation"] = "FULLY_CONNECTED"
            qt.load_quantization_recipe(rec)
            res = qt.quantize()
        else:
            import numpy as np
            from ai_edge_litert.interpreter import Interpreter

            qt.load_quantization_recipe(recipe.static_wi8_ai8())
            sig = Interpreter(model_path=f32).get_signature_list()
            key = next(iter(sig))
            name = sig[key]["inputs"][0]
            rng = np.random.default_rng(5)
            if model == minilm_model.NAME:
                samples = [minilm_model.calibration_ids(T, seed) for seed in range(8)]
            else:
                samples = [rng.integers(0, 256, T) for _ in range(8)]
            data = {key: [{name: ids.astype(np.int32)} for ids in samples]}
            res = qt.quantize(qt.calibrate(data))
        res.export_model(out + ".tmp")
        os.replace(out + ".tmp", out)
    return out


def executorch(work, model, T, dtype):
    out = os.path.join(work, "peers", "%s_n%d_%s.pte" % (model, T, dtype))
    if os.path.exists(out):
        return out
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    m, _, torch = torch_model(work, model)
    example = (sample_ids(torch, T, 1, model),)
    if dtype == "int8":
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer, get_symmetric_quantization_config)
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        # Linear layers only, as the dynamic recipes do (set_global also annotates the embedding's
        # index input, and calibration then feeds it floats).
        cfg = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)
        q = XNNPACKQuantizer().set_module_type(torch.nn.Linear, cfg)
        gm = torch.export.export(m, example).module()
        gm = prepare_pt2e(gm, q)
        gm(*example)
        m = convert_pt2e(gm)
    ep = torch.export.export(m, example)
    prog = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    with open(out + ".tmp", "wb") as f:
        f.write(prog.buffer)
    os.replace(out + ".tmp", out)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=["ort", "tract", "mnn", "ncnn", "litert", "executorch"])
    ap.add_argument("dtype", choices=["f32", "int8", "int8_dyn", "int8_full"])
    ap.add_argument("model")
    ap.add_argument("T", type=int)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)
    os.makedirs(os.path.join(a.work, "peers"), exist_ok=True)
    if a.peer in ("ort", "tract"):
        path = onnx_path(a.work, a.model, a.T) if a.dtype == "f32" else ort_int8(a.work, a.model, a.T)
    elif a.peer == "mnn":
        path = mnn(a.work, a.model, a.T, a.dtype)
    elif a.peer == "ncnn":
        if a.dtype != "f32":
            raise SystemExit("no int8 route in the PyPI packages: ncnn's int8 needs ncnn2table and "
                             "ncnn2int8, which neither the ncnn nor the pnnx wheel ships")
        path = ncnn(a.work, a.model, a.T)
    elif a.peer == "litert":
        path = litert(a.work, a.model, a.T, a.dtype)
    else:
        path = executorch(a.work, a.model, a.T, a.dtype)
    print(path)


if __name__ == "__main__":
    main()
