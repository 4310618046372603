// web_bench.mjs WORK [--rounds R] [--lengths 128,512,2048]
//
// linfer's WebAssembly build against onnxruntime-web's wasm backend (SIMD, 1 thread) in Node, on the
// benchmark suite's S model (tools/bench/suite: make_models.py, ort_quantize.js) in f32 and int8,
// the same ids for both. WORK holds the suite's files for S: S_n{T}.onnx and S_n{T}_int8.onnx,
// S_check_ids_n{T}.txt and S_check_ref_n{T}.npy (PyTorch's float32 output), and S_f32.lfm and
// S_int8.lfm (linfer-convert). run_web.sh makes them and runs this.
//
// Parity first, with the suite's bounds against PyTorch (suite.py: f32 max abs error <= 1e-3 of
// the largest |output|; int8 mean cosine per row >= 0.99): a runtime that misses them is not timed.
// Then R rounds, each one run of linfer and one of ONNX Runtime, alternating (which goes first
// alternates too), after 3 warm-up runs each: wall time of session.run() seen from JavaScript for
// both (ORT's run is a promise; linfer's is a call). Prints the medians and the ratio, and the
// sizes of both runtimes' .wasm and JavaScript.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const args = process.argv.slice(2);
const work = args[0];
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const rounds = Number(opt('--rounds', 20));
const lengths = opt('--lengths', '128,512,2048').split(',').map(Number);
const pkg = path.resolve(process.env.LINFER_JS_PACKAGE || path.join(root, 'build-wasm/js/linfer'));

const linfer = await import(pathToFileURL(path.join(pkg, 'index.mjs')));
const ortDir = path.join(here, 'node_modules/onnxruntime-web');
const ort = await import(pathToFileURL(path.join(ortDir, 'dist/ort.wasm.min.mjs')));
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.wasm.proxy = false;
ort.env.wasm.wasmPaths = pathToFileURL(path.join(ortDir, 'dist/')).href;

function readNpy(file) {  // float32 C-order .npy
  const b = fs.readFileSync(file);
  const v1 = b[6] === 1, start = (v1 ? 10 : 12) + (v1 ? b.readUInt16LE(8) : b.readUInt32LE(8));
  return new Float32Array(b.buffer.slice(b.byteOffset + start, b.byteOffset + b.length));
}
function parity(out, ref, cols) {
  let maxAbs = 0, maxRef = 0, cosSum = 0;
  const rows = ref.length / cols;
  for (let r = 0; r < rows; ++r) {
    let dot = 0, aa = 0, bb = 0;
    for (let c = r * cols; c < (r + 1) * cols; ++c) {
      maxAbs = Math.max(maxAbs, Math.abs(out[c] - ref[c]));
      maxRef = Math.max(maxRef, Math.abs(ref[c]));
      dot += out[c] * ref[c]; aa += out[c] * out[c]; bb += ref[c] * ref[c];
    }
    cosSum += dot / Math.sqrt(aa * bb);
  }
  return { rel: maxAbs / maxRef, cos: cosSum / rows };
}
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const kb = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;
const fileSize = (f) => fs.statSync(f).size;

console.log(`# linfer wasm vs onnxruntime-web ${ort.env.versions?.web || ''} (wasm backend, SIMD, 1 thread), Node ${process.version}`);
console.log('| dtype | n | linfer ms | ORT ms | ORT / linfer | parity vs PyTorch (linfer; ORT) |');
console.log('|---|---|---|---|---|---|');
let failed = false;
for (const dtype of ['f32', 'int8']) {
  const model = await linfer.Model.fromBytes(fs.readFileSync(path.join(work, `S_${dtype}.lfm`)));
  for (const T of lengths) {
    const ids = Int32Array.from(fs.readFileSync(path.join(work, `S_check_ids_n${T}.txt`), 'utf8').trim().split(/\s+/), Number);
    const ref = readNpy(path.join(work, `S_check_ref_n${T}.npy`));
    const session = model.createSession({ maxSeqLen: T });
    const onnx = path.join(work, dtype === 'f32' ? `S_n${T}.onnx` : `S_n${T}_int8.onnx`);
    const ortSession = await ort.InferenceSession.create(fs.readFileSync(onnx),
      { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    const feeds = { [ortSession.inputNames[0]]: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [T]) };
    const runLinfer = () => session.run(ids);
    const runOrt = async () => (await ortSession.run(feeds))[ortSession.outputNames[0]];
    const l = runLinfer(), o = await runOrt();
    const cols = ref.length / T;
    const pl = parity(l.data, ref, cols), po = parity(o.data, ref, cols);
    const ok = (p) => (dtype === 'f32' ? p.rel <= 1e-3 : p.cos >= 0.99);
    const said = (p) => (dtype === 'f32' ? `max err ${p.rel.toExponential(1)}` : `cosine ${p.cos.toFixed(4)}`);
    if (!ok(pl) || !ok(po)) {
      console.log(`| ${dtype} | ${T} | - | - | - | parity failed: ${said(pl)}; ${said(po)} |`);
      failed = true;
      continue;
    }
    for (let i = 0; i < 3; ++i) { runLinfer(); await runOrt(); }
    const tl = [], to = [];
    for (let r = 0; r < rounds; ++r) {
      const timeLinfer = () => { const t0 = performance.now(); runLinfer(); tl.push(performance.now() - t0); };
      const timeOrt = async () => { const t0 = performance.now(); await runOrt(); to.push(performance.now() - t0); };
      if (r % 2) { await timeOrt(); timeLinfer(); } else { timeLinfer(); await timeOrt(); }
    }
    const ml = median(tl), mo = median(to);
    console.log(`| ${dtype} | ${T} | ${ml.toFixed(2)} | ${mo.toFixed(2)} | ${(mo / ml).toFixed(2)}x | ${said(pl)}; ${said(po)} |`);
    session.dispose();
    await ortSession.release();
  }
  model.dispose();
}
const ortWasm = path.join(ortDir, 'dist/ort-wasm-simd-threaded.wasm');
const ortJs = [path.join(ortDir, 'dist/ort.wasm.min.mjs'), path.join(ortDir, 'dist/ort-wasm-simd-threaded.mjs')];
const linferWasm = path.join(pkg, 'linfer.wasm'), linferJs = path.join(pkg, 'index.mjs');
const ortTotal = fileSize(ortWasm) + ortJs.reduce((s, f) => s + fileSize(f), 0);
const linferTotal = fileSize(linferWasm) + fileSize(linferJs);
console.log(`\nsizes: linfer.wasm ${kb(fileSize(linferWasm))} + index.mjs ${kb(fileSize(linferJs))} = ${kb(linferTotal)}; ` +
  `ORT ort-wasm-simd-threaded.wasm ${kb(fileSize(ortWasm))} + ort.wasm.min.mjs and its loader ${kb(ortTotal - fileSize(ortWasm))} ` +
  `= ${kb(ortTotal)}: ${(ortTotal / linferTotal).toFixed(1)}x`);
process.exitCode = failed ? 1 : 0;
