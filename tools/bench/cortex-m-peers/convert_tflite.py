# SPDX-License-Identifier: Apache-2.0
"""The microcontroller language-ID model (examples/models/langid-mcu.safetensors) as a full-int8
.tflite for TensorFlow Lite Micro, by TensorFlow's own route: the graph written in TensorFlow with
the model's weights, then tf.lite.TFLiteConverter with a representative dataset
(Optimize.DEFAULT, TFLITE_BUILTINS_INT8, int8 inputs and outputs).

    python convert_tflite.py CASES.bin OUT.tflite [--check] [--header OUT.h]

CASES.bin is tests/cortex_m/make_cases.py's file (the 100 shipped inputs and linfer's logits).
--check runs the .tflite with LiteRT's interpreter on the 100 inputs and prints how many classes
agree with linfer's. --header writes what the firmware (tflm_firmware.cc) needs to know of the
model: its inputs' order and quantization, and the operators to register (no others are linked).

The graph has a static shape (TFLite Micro has no dynamic shapes): n = 128 positions, the input's
bytes then zeros. Two inputs and the output make it compute the same function as the model at the
input's length T (linfer runs T rows):
  ids  [128] int32, padded with 0;
  mask [1, 128] int8, 1 for the T real positions, 0 after (exact in int8): the Linformer's
       projection E (k x n) is multiplied by it, so that E X sums the first T rows only, as
       E[:, :T] X[:T] does;
  output [128, classes] int8: the classifier applied to every position; the application adds up
       the first T rows (int32) and takes the largest: the classifier is linear, so the mean of the
       rows' logits is the logits of the mean-pooled row, the model's head (a mean pooling in the
       graph would need 1/T as an int8 input, which int8 cannot hold for T from 1 to 128, or a
       division, which TFLite Micro has only in float).
Two changes of operator, since TFLite Micro has no GELU (nor ERF) kernel: GELU's tanh form
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) instead of the erf form the model was trained with
(they differ by at most 5e-4), and LayerNorm as MEAN, SQUARED_DIFFERENCE, RSQRT and MUL (what the
converter makes of it)."""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "python", "reference"))
N = 128


def read_cases(path):
    data = open(path, "rb").read()
    if data[:4] != b"LFCM":
        raise SystemExit("convert_tflite.py: %s is not a make_cases.py file" % path)
    count, classes = struct.unpack_from("<II", data, 4)
    at, cases = 12, []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, at)
        text = data[at + 4:at + 4 + length]
        at += 4 + length + (-length % 4)
        logits = np.frombuffer(data, np.float32, classes, at)
        at += 4 * classes
        top = np.sort(logits)
        cases.append((list(text), int(np.argmax(logits)), float(top[-1] - top[-2])))
    return cases


def inputs_for(ids):
    T = len(ids)
    x = np.zeros(N, np.int32)
    x[:T] = ids
    mask = np.zeros((1, N), np.float32)
    mask[0, :T] = 1
    return x, mask


def predicted_class(rows, T):
    """The class from the output's per-position logits: the largest sum of the first T rows."""
    return int(np.argmax(rows.reshape(N, -1)[:T].astype(np.int64 if rows.dtype == np.int8 else np.float64).sum(0)))


def calibration_texts(count_per_language):
    """Sentences of the short test set after the first 10 per language (those are the 100 checked
    inputs), cut to 128 bytes as make_cases.py cuts them."""
    import make_cases  # noqa
    taken, texts = {}, []
    with open(os.path.join(ROOT, "examples", "data", "langid_short_test.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lang, _p, _u, text = line.rstrip("\n").split("\t", 3)
            taken[lang] = taken.get(lang, 0) + 1
            if 10 < taken[lang] <= 10 + count_per_language:
                texts.append(list(make_cases.cut(text.encode("utf-8"), N)))
    return texts


def build(tf, w, cfg):
    dim, H, hd, L = cfg["dim"], cfg["num_heads"], cfg["head_dim"], cfg["num_layers"]
    eps = 1e-5
    c = lambda name: tf.constant(w[name])

    def linear(x, name):
        return tf.matmul(x, tf.constant(w[name + ".weight"].T.copy())) + c(name + ".bias")

    def norm(x, name):
        mu = tf.reduce_mean(x, axis=-1, keepdims=True)
        d = x - mu
        var = tf.reduce_mean(tf.math.squared_difference(x, mu), axis=-1, keepdims=True)
        return d * tf.math.rsqrt(var + eps) * c(name + ".weight") + c(name + ".bias")

    def gelu_tanh(x):
        if os.environ.get("GELU_ERF"):  # a check of the graph only: TFLite Micro has no ERF
            return 0.5 * x * (1.0 + tf.math.erf(x * (1 / math.sqrt(2))))
        return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))

    @tf.function(input_signature=[tf.TensorSpec([N], tf.int32, name="ids"),
                                  tf.TensorSpec([1, N], tf.float32, name="mask")])
    def forward(ids, mask):
        x = tf.gather(c("token_embedding.weight"), ids) + c("position_embedding.weight")
        for i in range(L):
            p = "layers.%d." % i
            h = norm(x, p + "attention_norm")
            q = tf.transpose(tf.reshape(linear(h, p + "attention.q"), [N, H, hd]), [1, 0, 2])
            k = linear(h, p + "attention.k")
            v = linear(h, p + "attention.v")
            E = c(p + "attention.proj_k") * mask  # [k, n]: the first T columns
            kp = tf.transpose(tf.reshape(tf.matmul(E, k), [-1, H, hd]), [1, 0, 2])  # [H, k, hd]
            vp = tf.transpose(tf.reshape(tf.matmul(E, v), [-1, H, hd]), [1, 0, 2])
            s = tf.matmul(q, kp, transpose_b=True) * (1.0 / math.sqrt(hd))  # [H, n, k]
            o = tf.matmul(tf.nn.softmax(s, axis=-1), vp)  # [H, n, hd]
            x = x + linear(tf.reshape(tf.transpose(o, [1, 0, 2]), [N, H * hd]), p + "attention.out")
            h = norm(x, p + "feed_forward_norm")
            x = x + linear(gelu_tanh(linear(h, p + "feed_forward.fc1")), p + "feed_forward.fc2")
        x = norm(x, "final_norm")
        return linear(x, "head.out")  # [n, classes]: every position's logits
    return forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("out")
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "models", "langid-mcu.safetensors"))
    ap.add_argument("--calibration", type=int, default=20, help="sentences per language")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--header")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "tests", "cortex_m"))
    import tensorflow as tf
    from safetensors_file import read_safetensors

    w, meta = read_safetensors(a.model)
    w = {k: np.asarray(v, np.float32) for k, v in w.items()}
    cfg = json.loads(meta["linfer_config"])
    forward = build(tf, w, cfg)
    cases = read_cases(a.cases)

    # The float graph first: it must give linfer's classes (a wrong graph is not quantized).
    agree = 0
    for i, (ids, cls, margin) in enumerate(cases):
        got = predicted_class(forward(*inputs_for(ids)).numpy(), len(ids))
        agree += got == cls
        if got != cls:
            print("convert_tflite.py: float graph, input %d (%d bytes): class %d, linfer's %d (linfer's top-2 margin %.3f)"
                  % (i, len(ids), got, cls, margin))
    print("convert_tflite.py: the TensorFlow float graph gives linfer's class on %d of %d inputs" % (agree, len(cases)))

    calib = calibration_texts(a.calibration)

    def representative():
        for ids in calib:
            yield list(inputs_for(ids))

    conv = tf.lite.TFLiteConverter.from_concrete_functions([forward.get_concrete_function()], forward)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    blob = conv.convert()
    with open(a.out + ".tmp", "wb") as f:
        f.write(blob)
    os.replace(a.out + ".tmp", a.out)
    print("convert_tflite.py: %s, %d bytes, calibrated on %d sentences" % (a.out, len(blob), len(calib)))
    if a.check:
        check(tf, a.out, cases)
    if a.header:
        write_header(tf, a.out, a.header)


def write_header(tf, path, header):
    it = reference_interpreter(tf, path)
    ops = sorted({op["op_name"] for op in it._get_ops_details()})
    lines = ["// Written by convert_tflite.py for %s: do not edit." % os.path.basename(path), "#pragma once",
             "#define TFLM_SEQ_LEN %d" % N]
    for i, d in enumerate(it.get_input_details()):
        key = d["name"].split(":")[0].split("_")[-1].upper()
        lines.append("#define TFLM_INPUT_%s %d" % (key, i))
        if key != "IDS":
            scale, zero = d["quantization"]
            lines += ["#define TFLM_%s_SCALE %.9gf" % (key, scale), "#define TFLM_%s_ZERO %d" % (key, zero)]
    special = {"BATCH_MATMUL": "AddBatchMatMul"}  # MicroMutableOpResolver's method names
    camel = lambda op: special.get(op, "Add" + "".join(w.capitalize() for w in op.split("_")))
    out = it.get_output_details()[0]
    lines += ["#define TFLM_CLASSES %d" % out["shape"][-1]]
    lines += ["#define TFLM_OP_COUNT %d" % len(ops), "#define TFLM_OPS(X) " + " ".join("X(%s)" % camel(o) for o in ops)]
    with open(header, "w") as f:
        f.write("\n".join(lines) + "\n")


def quantize(detail, values):
    scale, zero = detail["quantization"]
    return np.clip(np.round(values / scale) + zero, -128, 127).astype(detail["dtype"]) \
        if detail["dtype"] == np.int8 else values.astype(detail["dtype"])


def reference_interpreter(tf, path):
    """LiteRT's interpreter with its reference kernels (no XNNPACK delegate), closest to TFLM's."""
    return tf.lite.Interpreter(model_path=path,
                               experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)


def check(tf, path, cases):
    it = reference_interpreter(tf, path)
    it.allocate_tensors()
    ins = {d["name"].split(":")[0].split("_")[-1]: d for d in it.get_input_details()}
    ops = sorted({op["op_name"] for op in it._get_ops_details()})
    print("convert_tflite.py: operators:", " ".join(ops))
    print("convert_tflite.py: inputs:", ", ".join("%s %s %s" % (d["name"], d["dtype"].__name__, d["quantization"]) for d in it.get_input_details()))
    out = it.get_output_details()[0]
    agree = 0
    for i, (ids, cls, margin) in enumerate(cases):
        vals = dict(zip(("ids", "mask"), inputs_for(ids)))
        for key, d in ins.items():
            it.set_tensor(d["index"], quantize(d, vals[key]).reshape(d["shape"]))
        it.invoke()
        got = predicted_class(it.get_tensor(out["index"]), len(ids))
        agree += got == cls
        if got != cls:
            print("convert_tflite.py: int8, input %d (%d bytes): class %d, linfer's %d (linfer's top-2 margin %.3f)"
                  % (i, len(ids), got, cls, margin))
    print("convert_tflite.py: the int8 .tflite (LiteRT interpreter, x86) gives linfer's class on %d of %d inputs" % (agree, len(cases)))


if __name__ == "__main__":
    main()
