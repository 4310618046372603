// SPDX-License-Identifier: Apache-2.0
// web_bench.mjs WORK [--rounds R] [--lengths 128,512,2048] [--threads N]
//
// linfer's WebAssembly build against onnxruntime-web's wasm backend (SIMD, 1 thread; with --threads N
// both on N threads: linfer's threads module, ORT's numThreads = N) in Node, on the
// benchmark suite's S model (tools/bench/suite: make_models.py, ort_quantize.js) in f32 and int8,
// the same ids for both. WORK holds the suite's files for S: S_n{T}.onnx and S_n{T}_int8.onnx,
// S_check_ids_n{T}.txt and S_check_ref_n{T}.npy (PyTorch's float32 output), and S_f32.lfm and
// S_int8.lfm (linfer-convert). run_web.sh makes them and runs this.
//
// Parity first, with the suite's bounds against PyTorch (suite.py: f32 max abs error <= 1e-3 of
// the largest |output|; int8 mean cosine per row >= 0.99): a runtime that misses them is not timed.
// Then R rounds after 3 warm-up runs each (bench_core.mjs: on one thread a round is one run of
// each, alternating which goes first; on more, a block of runs of each after a pause, so that
// neither is timed beside the other's spinning threads): wall time of session.run() seen from
// JavaScript for both. Prints the medians and the ratio, and the sizes of both runtimes' .wasm
// and JavaScript.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compare } from './bench_core.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const args = process.argv.slice(2);
const work = args[0];
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const rounds = Number(opt('--rounds', 20));
const threads = Number(opt('--threads', 1));
const lengths = opt('--lengths', '128,512,2048').split(',').map(Number);

const pkg = path.resolve(process.env.LINFER_JS_PACKAGE || path.join(root, 'build-wasm/js/linfer'));

// onnxruntime-web's threaded start fetches its worker's script (ort-wasm-simd-threaded.mjs) and
// imports it from an object URL unless the script has the page's origin. Node has no page origin,
// its fetch() reads no file: URL and its import() takes no blob: URL. So, here only: fetching a
// file: URL gives the file, and that file's object URL is its own URL (ORT then imports the file,
// and its workers are Node's worker_threads, as its loader makes them in Node).
if (threads > 1) {
  const fetchUrl = globalThis.fetch, objectUrl = URL.createObjectURL;
  const fileOf = new WeakMap();
  globalThis.fetch = async (url, init) => {
    if (!String(url).startsWith('file:')) return fetchUrl(url, init);
    const blob = new Blob([fs.readFileSync(new URL(String(url)))]);
    fileOf.set(blob, String(url));
    return { ok: true, blob: async () => blob };
  };
  URL.createObjectURL = (blob) => fileOf.get(blob) ?? objectUrl(blob);
}
const linfer = await import(pathToFileURL(path.join(pkg, 'index.mjs')));
const ortDir = path.join(here, 'node_modules/onnxruntime-web');
const ort = await import(pathToFileURL(path.join(ortDir, 'dist/ort.wasm.min.mjs')));
ort.env.wasm.numThreads = threads;
ort.env.wasm.simd = true;
ort.env.wasm.proxy = false;
ort.env.wasm.wasmPaths = pathToFileURL(path.join(ortDir, 'dist/')).href;

const kb = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;
const fileSize = (f) => fs.statSync(f).size;
const wasmModule = await linfer.load({ threads });
if (wasmModule.threads !== threads) throw new Error(`linfer runs on ${wasmModule.threads} threads: ${wasmModule.threadsReason}`);

console.log(`# linfer wasm (${wasmModule.file}, ${wasmModule.simd}, ${threads} thread(s)) vs onnxruntime-web ` +
  `${ort.env.versions?.web || ''} (wasm backend, SIMD, ${threads} thread(s)), Node ${process.version}`);
console.log('| dtype | n | linfer ms | ORT ms | ORT / linfer | parity vs PyTorch (linfer; ORT) |');
console.log('|---|---|---|---|---|---|');
const { failed } = await compare({ linfer, ort, lengths, rounds, threads, read: (name) => fs.readFileSync(path.join(work, name)),
  log: (row) => console.log(row) });
const ortWasm = path.join(ortDir, 'dist/ort-wasm-simd-threaded.wasm');
const ortJs = [path.join(ortDir, 'dist/ort.wasm.min.mjs'), path.join(ortDir, 'dist/ort-wasm-simd-threaded.mjs')];
const linferWasm = path.join(pkg, wasmModule.file), linferJs = path.join(pkg, 'index.mjs');
const ortTotal = fileSize(ortWasm) + ortJs.reduce((s, f) => s + fileSize(f), 0);
// (a page also loads the module's loader and, for a threads module, its worker script)
const base = wasmModule.file.replace(/\.wasm$/, '');
const loaderJs = [`${base}.js`, ...(wasmModule.threads > 1 ? [`${base}.worker.js`] : [])]
  .reduce((sum, f) => sum + fileSize(path.join(pkg, f)), 0);
const linferTotal = fileSize(linferWasm) + fileSize(linferJs) + loaderJs;
console.log(`\nsizes: ${wasmModule.file} ${kb(fileSize(linferWasm))} + index.mjs ${kb(fileSize(linferJs))}` +
  ` + its loader${wasmModule.threads > 1 ? ' and worker' : ''} ${kb(loaderJs)} = ${kb(linferTotal)}; ` +
  `ORT ort-wasm-simd-threaded.wasm ${kb(fileSize(ortWasm))} + ort.wasm.min.mjs and its loader ${kb(ortTotal - fileSize(ortWasm))} ` +
  `= ${kb(ortTotal)}: ${(ortTotal / linferTotal).toFixed(1)}x`);
process.exitCode = failed ? 1 : 0;
