// SPDX-License-Identifier: Apache-2.0
// chromium_bench.mjs WORK [--rounds R] [--lengths 128,512,2048] [--module relaxed-simd|simd128] [--threads N] [--chromium PATH]
//
// web_bench.mjs's comparison in a page of headless Chromium (tools/bench/web/chromium.mjs): the
// repository's folder served over HTTP, linfer's package from build-wasm/js/linfer (the module its
// loader chooses, or --module), onnxruntime-web from tools/bench/web/node_modules (wasm backend,
// SIMD, 1 thread, no proxy worker), the model files fetched from WORK (inside the repository).
// --threads N: a cross-origin-isolated page, linfer's threads module (load({ threads: N })) and
// ORT's numThreads = N.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluateInPage } from './chromium.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const work = path.resolve(args[0]);
if (!work.startsWith(root + path.sep)) throw new Error(`WORK must be inside ${root} (the page fetches it)`);
const config = {
  work: '/' + path.relative(root, work), rounds: Number(opt('--rounds', 20)),
  lengths: opt('--lengths', '128,512,2048').split(',').map(Number), module: opt('--module', null),
  threads: Number(opt('--threads', 1)),
};
const expression = `(async () => {
  const config = ${JSON.stringify(config)};
  if (config.module) globalThis.LINFER_WASM_MODULE = config.module;
  const linfer = await import('/build-wasm/js/linfer/index.mjs');
  const loaded = await linfer.load({ threads: config.threads });
  if (loaded.threads !== config.threads) throw new Error('linfer runs on ' + loaded.threads + ' threads: ' + loaded.threadsReason);
  const ort = await import('/tools/bench/web/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs');
  ort.env.wasm.numThreads = config.threads; ort.env.wasm.simd = true; ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = '/tools/bench/web/node_modules/onnxruntime-web/dist/';
  const { compare } = await import('/tools/bench/web/bench_core.mjs');
  const read = async (name) => new Uint8Array(await (await fetch(config.work + '/' + name)).arrayBuffer());
  const m = await linfer.moduleInfo();
  const r = await compare({ linfer, ort, read, lengths: config.lengths, rounds: config.rounds, threads: config.threads, log: (row) => console.log(row) });
  return { ...r, module: m, ort: ort.env.versions?.web || '', crossOriginIsolated };
})()`;
console.log(`# linfer wasm vs onnxruntime-web in headless Chromium (wasm backend, SIMD, ${config.threads} thread(s))`);
console.log('| dtype | n | linfer ms | ORT ms | ORT / linfer | parity vs PyTorch (linfer; ORT) |');
console.log('|---|---|---|---|---|---|');
const { product, value } = await evaluateInPage(opt('--chromium', '/usr/bin/chromium'), root, '/tools/bench/web/blank.html', expression,
  { isolated: config.threads > 1 });
console.log(`\n${product}; linfer ${value.module.file} (${value.module.simd}); onnxruntime-web ${value.ort}`);
process.exitCode = value.failed ? 1 : 0;
