#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// ort_bench.js MODEL.onnx --threads T [--runs R] [--warmup W]
// ort_bench.js MODEL.onnx --check IDS.txt OUT.f32 [--threads T]
//
// Times ONNX Runtime (onnxruntime-node, CPU execution provider) on a model with a fixed int64
// input [T]: W warm-up runs, then R timed runs of session.run(). Session options:
// intraOpNumThreads = T, interOpNumThreads = 1, graph optimizations "all", sequential execution.
//
// The output handoff. session.run() as seen from JavaScript also includes what onnxruntime-node does
// around ORT's own Run(): the asynchronous dispatch to a worker thread, waking the JavaScript thread
// and turning the output tensor into a JavaScript value (milliseconds per run for the suite's
// [n, 256] logits). linfer-bench and PyTorch have nothing like it, so it is measured and taken off.
// ORT's profiler times Run() itself (the "model_run" events), but it also records every operator with
// its shapes, memory and thread statistics inside Run(), a cost per operator that is a visible share
// of a short run (the suite's report shows it: profiled_js_latency_ms against js_latency_ms). So the
// profiler's times are not the figure; the profiler only measures the handoff:
//   1. the timed runs: a session without profiling, W warm-up runs, then R timed runs of
//      session.run() (wall time from JavaScript: the raw figure); peak RSS is read after them;
//   2. that session is released, and a second session of the same model with ORT's profiler on does
//      the same W + R runs; for each timed run, handoff = its session.run() wall time minus its
//      "model_run" duration in the profile (the profiler's own cost falls inside model_run, so it
//      cancels out);
//   3. latency = each raw time of step 1 minus the median handoff of step 2.
//
// Prints, in linfer-bench's format:
//   latency_ms: median X, min Y, max Z             (raw session.run() minus the median handoff)
//   js_latency_ms: median X, min Y, max Z          (raw: session.run() measured from JavaScript)
//   handoff_ms: median X, min Y, max Z             (step 2)
//   profile_model_run_ms: median X, min Y, max Z   (ORT's model_run in step 2, profiler cost included)
//   profiled_js_latency_ms: median X, min Y, max Z (session.run() in step 2)
//   peak_rss_bytes: B                              (VmHWM of this process after step 1)
//   load_ms: L                                     (step 1's session creation, not part of the latency)
// With --check it instead runs once on the given ids (whitespace-separated), writes the output as raw
// little-endian float32 to OUT.f32 (the suite compares it with PyTorch's) and prints
//   ops: OP xN, ...   (the operators ORT ran, after its graph optimizations, from ORT's profiler)
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function usage(msg) {
  if (msg) process.stderr.write(`ort_bench: ${msg}\n`);
  process.stderr.write('usage: ort_bench.js MODEL.onnx --threads T [--runs R] [--warmup W]\n' +
                       '       ort_bench.js MODEL.onnx --check IDS.txt OUT.f32 [--threads T]\n');
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

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

function stats(name, xs) {
  return `${name}: median ${median(xs).toFixed(3)}, min ${Math.min(...xs).toFixed(3)}, max ${Math.max(...xs).toFixed(3)}`;
}

function sessionOptions(threads, profilePrefix) {
  const o = {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  };
  if (profilePrefix) {
    o.enableProfiling = true;
    o.profileFilePrefix = profilePrefix;
  }
  return o;
}

// Ends profiling and returns the profile's events (the file is removed).
function readProfile(session, dir) {
  session.endProfiling();
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (files.length !== 1) throw new Error(`expected one profile file in ${dir}, found ${files.length}`);
  const file = path.join(dir, files[0]);
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  return events;
}

async function timeRuns(session, feeds, warmup, runs) {
  let last = null;
  for (let w = 0; w < warmup; ++w) last = await session.run(feeds);
  const ms = [];
  for (let r = 0; r < runs; ++r) {
    const s = process.hrtime.bigint();
    last = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  return { ms, last };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));

  if (a.checkIds) {
    // Profiled (one run), so that it can also list the operators ORT runs after its graph
    // optimizations (for the int8 model: that the DynamicQuantizeMatMul nodes are there).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_bench_'));
    try {
      const session = await ort.InferenceSession.create(a.model, sessionOptions(a.threads, path.join(dir, 'check')));
      const meta = session.inputMetadata ? session.inputMetadata[0] : null;
      const T = meta && meta.shape ? Number(meta.shape[0]) : NaN;
      const ids = fs.readFileSync(a.checkIds, 'utf8').trim().split(/\s+/).map((x) => BigInt(x));
      if (Number.isFinite(T) && ids.length !== T) throw new Error(`check ids have length ${ids.length}, model wants ${T}`);
      const feeds = { [session.inputNames[0]]: new ort.Tensor('int64', BigInt64Array.from(ids), [ids.length]) };
      const out = (await session.run(feeds))[session.outputNames[0]].data;
      fs.writeFileSync(a.checkOut, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
      const counts = {};
      for (const e of readProfile(session, dir))
        if (e.cat === 'Node' && e.args && e.args.op_name) counts[e.args.op_name] = (counts[e.args.op_name] || 0) + 1;
      console.log(`check: wrote ${out.length} float32 values to ${a.checkOut}`);
      console.log(`ops: ${Object.entries(counts).sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map(([k, v]) => `${k} x${v}`).join(', ')}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    return;
  }

  // Step 1: the timed runs, without profiling.
  const t0 = process.hrtime.bigint();
  let session = await ort.InferenceSession.create(a.model, sessionOptions(a.threads, null));
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const inputName = session.inputNames[0];
  const outputName = session.outputNames[0];
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const T = meta && meta.shape ? Number(meta.shape[0]) : NaN;
  if (!Number.isFinite(T)) usage('the model has no fixed input length');

  // Random token ids (fixed seed); the values do not matter for speed.
  const ids = new BigInt64Array(T);
  let state = 1234 >>> 0;
  for (let i = 0; i < T; ++i) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    ids[i] = BigInt(state % 256);
  }
  const feeds = { [inputName]: new ort.Tensor('int64', ids, [T]) };
  const raw = await timeRuns(session, feeds, a.warmup, a.runs);
  const out = raw.last[outputName];
  const peak = vmHWM();
  await session.release();
  session = null;

  // Step 2: the same runs with ORT's profiler on, for the handoff.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_bench_'));
  let prof;
  let modelRun;
  try {
    const ps = await ort.InferenceSession.create(a.model, sessionOptions(a.threads, path.join(dir, 'run')));
    prof = await timeRuns(ps, feeds, a.warmup, a.runs);
    modelRun = readProfile(ps, dir).filter((e) => e.cat === 'Session' && e.name === 'model_run')
      .sort((x, y) => x.ts - y.ts).map((e) => e.dur / 1000);
    await ps.release();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (modelRun.length !== a.warmup + a.runs)
    throw new Error(`the profile has ${modelRun.length} model_run events, expected ${a.warmup + a.runs}`);
  modelRun = modelRun.slice(a.warmup);
  const handoff = prof.ms.map((x, i) => x - modelRun[i]);
  const h = median(handoff);

  console.log(`seq_len: ${T}, threads: ${a.threads}, runs: ${a.runs}, warmup: ${a.warmup}, output: ${out.type} [${out.dims.join(', ')}]`);
  console.log(stats('latency_ms', raw.ms.map((x) => x - h)));
  console.log(stats('js_latency_ms', raw.ms));
  console.log(stats('handoff_ms', handoff));
  console.log(stats('profile_model_run_ms', modelRun));
  console.log(stats('profiled_js_latency_ms', prof.ms));
  console.log(`peak_rss_bytes: ${peak}`);
  console.log(`load_ms: ${loadMs.toFixed(1)}`);
}

main().catch((e) => {
  process.stderr.write(`ort_bench: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
