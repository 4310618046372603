#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// ort_quantize.js IN.onnx OUT.onnx
//
// Builds the ONNX Runtime int8 model of the suite from the float32 export: the graph that
// onnxruntime.quantization.quantize_dynamic(per_channel=True, weight_type=QInt8) produces for the
// linear layers, after ORT's own fusion. There is no Python onnxruntime package here, so the graph is
// rewritten directly (ONNX protobuf read and written with the onnx-proto npm package):
//
//   every Gemm(A, W, bias) with a constant W (alpha = beta = 1, transA = 0) and every MatMul(A, W)
//   with a constant 2-D W becomes
//     com.microsoft.DynamicQuantizeMatMul(A, W_q, W_scale, W_zero_point[, bias]) -> same output
//   (ORT contrib op, com.microsoft opset 1; inputs A: float, B: int8 [K, N], b_scale: float [N]
//   (per column), b_zero_point: int8 [N] (optional), bias: float [N] (optional); the op quantizes A
//   at run time to uint8 with one scale and zero point for the whole tensor, from its min and max).
//
// Weights: per output column n, symmetric int8 as quantize_dynamic does it (quant_utils:
// compute_scale_zp with symmetric=True and the int8 range [-127, 127]): absmax = max |W[:, n]|,
// scale = absmax / 127 (1 when the column is all zero), q = clamp(round_half_even(w / scale),
// -127, 127), zero point 0.
//
// Why not quantize_dynamic's own output: torch.onnx.export writes nn.Linear on a 2-D input as Gemm,
// and quantize_dynamic's integer-op registry has MatMul but no Gemm, so on this export it would
// leave every linear layer in float. With the linear layers exported as MatMul + Add (a 3-D input, as
// in Hugging Face exports) it writes DynamicQuantizeLinear + MatMulInteger + Mul + Add, which ORT's
// graph optimizer fuses into exactly this DynamicQuantizeMatMul with the bias. MatMuls whose weight
// is not a constant initializer (attention scores, P V, and the Linformer projections E, F, which the
// export feeds through Expand) stay float, as they do under quantize_dynamic.
//
// Prints one JSON line: nodes rewritten by kind, the float MatMuls left, weight bytes before/after,
// and the largest rounding error found (in units of each column's scale; must be <= 0.5).
'use strict';

const fs = require('fs');
const path = require('path');
const { onnx } = require(path.join(__dirname, 'node_modules', 'onnx-proto'));

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT8 = onnx.TensorProto.DataType.INT8;
const MS_DOMAIN = 'com.microsoft';

function num(v) {
  return typeof v === 'number' ? v : v && typeof v.toNumber === 'function' ? v.toNumber() : Number(v);
}

function fail(msg) {
  process.stderr.write(`ort_quantize: ${msg}\n`);
  process.exit(1);
}

function floatData(t) {
  if (t.dataType !== FLOAT) return null;
  const n = t.dims.reduce((a, d) => a * num(d), 1);
  if (t.rawData && t.rawData.length) {
    if (t.rawData.length !== 4 * n) fail(`initializer ${t.name}: raw data of ${t.rawData.length} bytes for ${n} floats`);
    const copy = Buffer.from(t.rawData);  // aligned copy
    return new Float32Array(copy.buffer, copy.byteOffset, n);
  }
  if (t.floatData && t.floatData.length === n) return Float32Array.from(t.floatData);
  if (t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) fail(`initializer ${t.name}: external data is not supported`);
  fail(`initializer ${t.name}: no data`);
  return null;
}

function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// W as [K, N] (row-major) -> int8 [K, N], scale [N] (float32), largest |w/scale - q|.
function quantizeColumns(w, K, N) {
  const absmax = new Float64Array(N);
  for (let k = 0; k < K; ++k)
    for (let n = 0; n < N; ++n) {
      const a = Math.abs(w[k * N + n]);
      if (a > absmax[n]) absmax[n] = a;
    }
  const scale = new Float32Array(N);
  for (let n = 0; n < N; ++n) scale[n] = absmax[n] > 0 ? absmax[n] / 127 : 1;
  const q = new Int8Array(K * N);
  let worst = 0;
  for (let k = 0; k < K; ++k)
    for (let n = 0; n < N; ++n) {
      const x = w[k * N + n] / scale[n];
      const v = Math.max(-127, Math.min(127, roundHalfEven(x)));
      q[k * N + n] = v;
      worst = Math.max(worst, Math.abs(x - v));
    }
  return { q, scale, worst };
}

function attr(node, name, dflt) {
  const a = node.attribute.find((x) => x.name === name);
  if (!a) return dflt;
  if (a.type === onnx.AttributeProto.AttributeType.FLOAT) return a.f;
  if (a.type === onnx.AttributeProto.AttributeType.INT) return num(a.i);
  return dflt;
}

function tensor(name, dataType, dims, bytes) {
  return onnx.TensorProto.create({ name, dataType, dims, rawData: bytes });
}

function main() {
  const [src, dst] = process.argv.slice(2);
  if (!src || !dst || process.argv.length !== 4) {
    process.stderr.write('usage: ort_quantize.js IN.onnx OUT.onnx\n');
    process.exit(2);
  }
  const model = onnx.ModelProto.decode(fs.readFileSync(src));
  // onnx-proto 8.0.1 carries the IR 8 schema; fields of a newer IR would be dropped on re-encoding.
  if (num(model.irVersion) > 8) fail(`${src} has IR version ${num(model.irVersion)}; this tool reads IR <= 8`);
  const g = model.graph;
  const inits = new Map(g.initializer.map((t) => [t.name, t]));
  const uses = new Map();
  for (const n of g.node) for (const i of n.input) uses.set(i, (uses.get(i) || 0) + 1);
  for (const o of g.output) uses.set(o.name, (uses.get(o.name) || 0) + 1);

  const replaced = { Gemm: 0, MatMul: 0 };
  const skipped = [];
  let floatMatMuls = 0;
  let bytesBefore = 0;
  let bytesAfter = 0;
  let worst = 0;
  const added = [];
  const dropped = new Set();

  g.node = g.node.map((node) => {
    const isGemm = node.opType === 'Gemm' && !node.domain;
    const isMatMul = node.opType === 'MatMul' && !node.domain;
    if (!isGemm && !isMatMul) return node;
    const W = inits.get(node.input[1]);
    if (!W || W.dataType !== FLOAT || W.dims.length !== 2) {
      if (isMatMul) ++floatMatMuls;
      else skipped.push(`${node.name}: weight is not a constant 2-D float`);
      return node;
    }
    let transB = 0;
    let bias = null;
    if (isGemm) {
      if (attr(node, 'alpha', 1) !== 1 || attr(node, 'beta', 1) !== 1 || attr(node, 'transA', 0) !== 0) {
        skipped.push(`${node.name}: alpha/beta/transA not 1/1/0`);
        return node;
      }
      transB = attr(node, 'transB', 0);
      if (node.input.length > 2 && node.input[2]) {
        bias = inits.get(node.input[2]);
        const N = num(W.dims[transB ? 0 : 1]);
        const nb = bias ? bias.dims.reduce((a, d) => a * num(d), 1) : 0;
        if (!bias || bias.dataType !== FLOAT || nb !== N || (bias.dims.length === 2 && num(bias.dims[0]) !== 1)) {
          skipped.push(`${node.name}: bias is not a constant float [N]`);
          return node;
        }
      }
    }
    const d0 = num(W.dims[0]);
    const d1 = num(W.dims[1]);
    const K = transB ? d1 : d0;
    const N = transB ? d0 : d1;
    const w = floatData(W);
    let kn = w;
    if (transB) {  // [N, K] -> [K, N]
      kn = new Float32Array(K * N);
      for (let n = 0; n < N; ++n) for (let k = 0; k < K; ++k) kn[k * N + n] = w[n * K + k];
    }
    const { q, scale, worst: wq } = quantizeColumns(kn, K, N);
    worst = Math.max(worst, wq);
    const base = `${W.name}_dqmm`;
    added.push(tensor(`${base}_quantized`, INT8, [K, N], Buffer.from(q.buffer)));
    added.push(tensor(`${base}_scale`, FLOAT, [N], Buffer.from(scale.buffer)));
    added.push(tensor(`${base}_zero_point`, INT8, [N], Buffer.alloc(N)));
    bytesBefore += 4 * K * N;
    bytesAfter += K * N + 5 * N;
    const inputs = [node.input[0], `${base}_quantized`, `${base}_scale`, `${base}_zero_point`];
    if (bias) {
      let biasName = bias.name;
      if (bias.dims.length !== 1) {  // [1, N] -> [N]
        biasName = `${bias.name}_1d`;
        added.push(tensor(biasName, FLOAT, [N], Buffer.from(floatData(bias).buffer)));
      }
      inputs.push(biasName);
    }
    for (const i of node.input.slice(1)) if (i) uses.set(i, uses.get(i) - 1);
    if (uses.get(W.name) === 0) dropped.add(W.name);
    if (bias && bias.dims.length !== 1 && uses.get(bias.name) === 0) dropped.add(bias.name);
    ++replaced[isGemm ? 'Gemm' : 'MatMul'];
    return onnx.NodeProto.create({
      name: `${node.name}_quant`,
      opType: 'DynamicQuantizeMatMul',
      domain: MS_DOMAIN,
      input: inputs,
      output: node.output,
    });
  });
  if (replaced.Gemm + replaced.MatMul === 0) fail(`${src}: no linear layer with a constant weight found`);
  if (worst > 0.5 + 1e-6) fail(`rounding error ${worst} of a quantization step (must be <= 0.5)`);

  g.initializer = g.initializer.filter((t) => !dropped.has(t.name)).concat(added);
  g.input = g.input.filter((i) => !dropped.has(i.name));
  if (!model.opsetImport.some((o) => o.domain === MS_DOMAIN))
    model.opsetImport.push(onnx.OperatorSetIdProto.create({ domain: MS_DOMAIN, version: 1 }));
  model.producerName = `linfer-bench-suite ort_quantize.js (from ${model.producerName} ${model.producerVersion})`;
  model.producerVersion = '';

  const bytes = onnx.ModelProto.encode(model).finish();
  const tmp = `${dst}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, dst);
  console.log(JSON.stringify({
    out: dst, replaced, float_matmuls_kept: floatMatMuls, skipped,
    weight_bytes_f32: bytesBefore, weight_bytes_int8: bytesAfter, max_rounding_steps: Number(worst.toFixed(6)),
    bytes: bytes.length,
  }));
}

main();
