#!/usr/bin/env node
// ort_bench.js MODEL.onnx --threads T [--runs R] [--warmup W] [--check IDS.txt OUT.f32]
//
// Times ONNX Runtime (onnxruntime-node, CPU execution provider) on a model with a fixed int64
// input [T]: W warm-up runs, then R timed runs of session.run(). Session options:
// intraOpNumThreads = T, interOpNumThreads = 1, graph optimizations "all", sequential execution.
// Prints, in linfer-bench's format:
//   latency_ms: median X, min Y, max Z
//   peak_rss_bytes: B        (VmHWM of this process, /proc/self/status)
//   load_ms: L               (session creation, not part of the latency)
// With --check it instead runs once on the given ids (whitespace-separated) and writes the output
// as raw little-endian float32 to OUT.f32 (the suite compares it with PyTorch's).
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function usage(msg) {
  if (msg) process.stderr.write(`ort_bench: ${msg}\n`);
  process.stderr.write('usage: ort_bench.js MODEL.onnx --threads T [--runs R] [--warmup W] [--check IDS.txt OUT.f32]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, threads: 1, runs: 10, warmup: 1, checkIds: null, checkOut: null };
  for (let i = 0; i < argv.length; ++i) {
    const s = argv[i];
    const num = () => {
      if (i + 1 >= argv.length) usage(`${s} needs a value`);
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) usage(`${s} must be a non-negative integer`);
      return v;
    };
    if (s === '--threads') a.threads = num();
    else if (s === '--runs') a.runs = num();
    else if (s === '--warmup') a.warmup = num();
    else if (s === '--check') {
      if (i + 2 >= argv.length) usage('--check needs IDS.txt and OUT.f32');
      a.checkIds = argv[++i];
      a.checkOut = argv[++i];
    } else if (s.startsWith('-')) usage(`unknown option ${s}`);
    else if (!a.model) a.model = s;
    else usage(`unexpected argument ${s}`);
  }
  if (!a.model) usage('no model given');
  if (a.threads < 1 || a.runs < 1) usage('--threads and --runs must be >= 1');
  return a;
}

function vmHWM() {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : -1;
}

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const inputName = session.inputNames[0];
  const outputName = session.outputNames[0];
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  let T = meta && meta.shape ? Number(meta.shape[0]) : NaN;

  if (a.checkIds) {
    const ids = fs.readFileSync(a.checkIds, 'utf8').trim().split(/\s+/).map((x) => BigInt(x));
    if (Number.isFinite(T) && ids.length !== T) throw new Error(`check ids have length ${ids.length}, model wants ${T}`);
    const feeds = { [inputName]: new ort.Tensor('int64', BigInt64Array.from(ids), [ids.length]) };
    const out = (await session.run(feeds))[outputName].data;
    fs.writeFileSync(a.checkOut, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
    console.log(`check: wrote ${out.length} float32 values to ${a.checkOut}`);
    return;
  }

  if (!Number.isFinite(T)) usage('the model has no fixed input length');
  // Random token ids (fixed seed); the values do not matter for speed.
  const ids = new BigInt64Array(T);
  let state = 1234 >>> 0;
  for (let i = 0; i < T; ++i) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    ids[i] = BigInt(state % 256);
  }
  const feeds = { [inputName]: new ort.Tensor('int64', ids, [T]) };
  for (let w = 0; w < a.warmup; ++w) await session.run(feeds);
  const ms = [];
  for (let r = 0; r < a.runs; ++r) {
    const s = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  ms.sort((x, y) => x - y);
  console.log(`seq_len: ${T}, threads: ${a.threads}, runs: ${a.runs}, warmup: ${a.warmup}`);
  console.log(`latency_ms: median ${median(ms).toFixed(3)}, min ${ms[0].toFixed(3)}, max ${ms[ms.length - 1].toFixed(3)}`);
  console.log(`peak_rss_bytes: ${vmHWM()}`);
  console.log(`load_ms: ${loadMs.toFixed(1)}`);
}

main().catch((e) => {
  process.stderr.write(`ort_bench: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
