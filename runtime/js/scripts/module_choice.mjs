// SPDX-License-Identifier: Apache-2.0
// Which module the package loads on this engine, and what it computes (scripts/test-wasm.sh runs
// it under several engines):
//   node module_choice.mjs PACKAGE DATA EXPECT [REASON] [OUT.json]
//     EXPECT: relaxed-simd or simd128, the module the package must choose here (by import and by
//     require), for REASON (moduleInfo().reason: relaxed probe passed, asked, relaxed probe
//     failed); the relaxed module's int8 kernel must be the one the timings favour (injected with
//     LINFER_WASM_TIMING), SIMD128's otherwise; with OUT.json, the outputs of every model in DATA
//     (the golden models at each length, the language-ID models on their samples) go there, and
//     the int8 sessions must run that kernel and the f32 and f16 sessions the module's.
//     EXPECT timed: the relaxed module, its int8 kernel chosen by this engine's own timing of the
//     two (not injected), the one the timings favour.
//     EXPECT none: the engine has no SIMD; loading must fail with one LinferError naming it.
//     EXPECT refused: LINFER_WASM_MODULE or LINFER_WASM_TIMING is malformed; loading must fail with
//     one LinferError naming the setting.
//     EXPECT threads (REASON simd128 or relaxed-simd): load({ threads: 2 }) must load that threads
//     module, linfer-threads.wasm or linfer-relaxed-threads.wasm (by import and by require);
//     OUT.json gets every model's outputs at 2 threads, which must equal the same module's at 1
//     thread, bit for bit; then the threads option's bad values, a second 2-thread session while
//     the pool's one worker is taken, the heap over runs and over create/run/dispose cycles, and a
//     package whose worker script is missing or throws: one LinferError from load(), and the
//     process ends.
//   node module_choice.mjs --compare A.json B.json [--fused]
//     The outputs of two modules or runs: bit for bit the same (their integer sums are exact and
//     the rest is the same code), every array; with --fused (the relaxed module's f32 and f16 layers
//     multiply-add in one rounding, SIMD128's in two), the f32 and f16 models' outputs within
//     1e-4 of the largest |output| (test_golden's bound), the int8 models' still the same bits.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const INT8_KERNEL = { 'relaxed-simd': 'dense_int8_wasm_relaxed', simd128: 'dense_int8_wasm_simd128' };
const FLOAT_KERNELS = { 'relaxed-simd': 'dense_f32_wasm_relaxed', simd128: 'dense_f32_wasm_simd128' };
const THREADS_FILES = { 'relaxed-simd': 'linfer-relaxed-threads', simd128: 'linfer-threads' };

// A relaxed dot product of splat(3) by splat(5), accumulator 0: 60 per lane by the spec. Whether
// this engine accepts the instruction, and what it computes (Node 20 behind its flag: 120).
function relaxedDot() {
  const bytes = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 112, 0, 0, 10, 22, 1,
    20, 0, 65, 3, 253, 15, 65, 5, 253, 15, 65, 0, 253, 17, 253, 147, 2, 253, 27, 0, 11];
  if (!WebAssembly.validate(new Uint8Array(bytes))) return 'not accepted';
  return `accepted, computes ${new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes))).exports.p()} (60 by the spec)`;
}

// A base64 output back as floats (a small Buffer is a view into a shared pool: its own bytes only).
function floats(base64) {
  const bytes = Buffer.from(base64, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
}

async function outputs(linfer, data, lines, options = {}) {
  const out = {};
  const golden = path.join(root, 'tests', 'golden');
  const files = fs.readdirSync(data).filter((f) => f.endsWith('.lfm')).sort();
  const langid = fs.readdirSync(data).filter((f) => /^langid_\d+\.txt$/.test(f)).sort();
  for (const file of files) {
    const model = await linfer.Model.fromBytes(fs.readFileSync(path.join(data, file)));
    const session = model.createSession(options);
    const name = file.split('.')[0];
    const inputs = fs.readdirSync(path.join(golden, name)).filter((f) => /^ids_\d+\.txt$/.test(f))
      .map((f) => Int32Array.from(fs.readFileSync(path.join(golden, name, f), 'utf8').trim().split(/\s+/), Number));
    inputs.forEach((ids, i) => { out[`${file}#${i}`] = Buffer.from(session.run(ids).data.buffer).toString('base64'); });
    lines.push(`${file}: ${session.describe()}`);
    session.dispose();
    model.dispose();
  }
  for (const dtype of ['f32', 'f16', 'int8']) {
    const model = await linfer.Model.fromBytes(fs.readFileSync(path.join(root, 'examples', 'models', `langid.${dtype}.lfm`)));
    const session = model.createSession(options);
    for (const t of langid) {
      const ids = Int32Array.from(new TextEncoder().encode(fs.readFileSync(path.join(data, t), 'utf8')));
      out[`langid.${dtype}#${t}`] = Buffer.from(session.run(ids).data.buffer).toString('base64');
    }
    lines.push(`langid.${dtype}: ${session.describe()}`);
    session.dispose();
    model.dispose();
  }
  return out;
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--compare') {
    const [a, b] = args.slice(1, 3).map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
    const fused = args[3] === '--fused';
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort(), 'the two runs have different outputs');
    const differ = Object.keys(a).filter((k) => a[k] !== b[k]);
    let failed = 0, close = 0, worst = 0;
    for (const k of differ) {
      const x = floats(a[k]), y = floats(b[k]);
      let d = 0, m = 0;
      x.forEach((v, i) => { d = Math.max(d, Math.abs(v - y[i])); m = Math.max(m, Math.abs(v)); });
      if (fused && /\.(f32|f16)[.#]/.test(k) && d <= 1e-4 * m) {
        ++close;
        worst = Math.max(worst, d / m);
        continue;
      }
      ++failed;
      console.log(`FAIL ${k}: outputs differ, by up to ${d.toExponential(2)} (largest |output| ${m.toFixed(3)})`);
    }
    if (failed) throw new Error(`${failed} of ${Object.keys(a).length} outputs differ between the modules`);
    console.log(`module_choice: ${Object.keys(a).length - close} outputs identical` +
      (fused ? `, ${close} f32 and f16 outputs within ${worst.toExponential(1)} of the largest |output|` : ''));
    return;
  }
  const [pkg, data, expect, reason, outFile] = args;
  console.log(`module_choice: node ${process.version} ${process.execArgv.join(' ')}; relaxed dot product: ${relaxedDot()}`);
  const linfer = await import(pathToFileURL(path.join(pkg, 'index.mjs')));
  const linferCjs = createRequire(import.meta.url)(path.resolve(pkg, 'index.cjs'));
  if (expect === 'refused') {
    for (const api of [linfer, linferCjs]) {
      const error = await api.moduleInfo().then(() => null, (e) => e);
      assert.ok(error instanceof api.LinferError, `expected a LinferError, got ${error}`);
      assert.match(error.message, /^LINFER_WASM_(MODULE|TIMING) must be /);
    }
    console.log(`module_choice: refused, as expected: ${(await linfer.version().catch((e) => e)).message}`);
    return;
  }
  if (expect === 'none') {
    for (const api of [linfer, linferCjs]) {
      const error = await api.moduleInfo().then(() => null, (e) => e);
      assert.ok(error instanceof api.LinferError, `expected a LinferError, got ${error}`);
      assert.equal(error.statusName, 'UNSUPPORTED');
      assert.match(error.message, /lacks SIMD128/);
      const again = await api.Model.fromBytes(new Uint8Array(8)).then(() => null, (e) => e);  // the same error again
      assert.equal(again?.message, error.message);
    }
    console.log(`module_choice: no module, as expected: LinferError: ${(await linfer.version().catch((e) => e)).message}`);
    return;
  }
  if (expect === 'threads') {
    assert.ok(THREADS_FILES[reason], `threads: expected simd128 or relaxed-simd, got ${reason}`);
    await threads(linfer, linferCjs, pkg, data, reason, outFile);
    return;
  }
  const chosen = await linfer.moduleInfo(), chosenCjs = await linferCjs.moduleInfo();
  console.log(`module_choice: moduleInfo() ${JSON.stringify(chosen)}`);
  // The relaxed module's int8 kernel: the faster dot product in the timing (injected or its own).
  const favoured = (info) => INT8_KERNEL[info.timing.relaxedUs < info.timing.simd128Us ? 'relaxed-simd' : 'simd128'];
  if (expect === 'timed') {
    assert.equal(chosen.simd, 'relaxed-simd', `the package loaded ${chosen.file}`);
    assert.equal(chosen.reason, 'relaxed probe passed');
    assert.ok(chosen.relaxedProbe && chosen.timing && !chosen.timing.injected, 'the int8 kernel must come from a timing here');
    assert.ok(chosen.timing.relaxedUs > 0 && chosen.timing.simd128Us > 0 && chosen.timing.reps > 0);
    assert.equal(chosen.int8Kernel, favoured(chosen));
    assert.equal(chosenCjs.int8Kernel, favoured(chosenCjs));  // require() times on its own: its choice may differ
    const model = await linfer.Model.fromBytes(fs.readFileSync(path.join(root, 'examples', 'models', 'langid.int8.lfm')));
    const session = model.createSession();
    assert.match(session.describe(), new RegExp(`int8 ${chosen.int8Kernel}`));
    session.dispose();
    model.dispose();
    console.log(`module_choice: loaded ${chosen.file}, int8 on ${chosen.int8Kernel} by timing: relaxed ` +
      `${chosen.timing.relaxedUs.toFixed(0)} us, SIMD128 ${chosen.timing.simd128Us.toFixed(0)} us for the same work ` +
      `(${chosen.timing.reps} rounds), the probes and the timing ${chosen.chooseMs.toFixed(1)} ms`);
    return;
  }
  assert.equal(chosen.simd, expect, `the package loaded ${chosen.file}`);
  assert.equal(chosenCjs.simd, expect, `require() loaded ${chosenCjs.file}`);
  assert.equal(chosen.reason, reason);
  assert.equal(chosenCjs.reason, reason);
  const int8Kernel = expect === 'relaxed-simd' ? favoured(chosen) : INT8_KERNEL.simd128;
  if (expect === 'relaxed-simd') assert.ok(chosen.timing.injected, 'expected the timings of LINFER_WASM_TIMING');
  assert.equal(chosen.int8Kernel, int8Kernel);
  assert.equal(chosenCjs.int8Kernel, int8Kernel);
  if (!outFile) {
    console.log(`module_choice: loaded ${chosen.file} (${chosen.simd}) as expected (${chosen.reason}), int8 on ${int8Kernel}`);
    return;
  }
  const lines = [];
  const out = await outputs(linfer, data, lines);
  for (const line of lines) {
    if (/\.int8[.:]/.test(line)) assert.match(line, new RegExp(`int8 ${int8Kernel}`), line);
    else assert.match(line, new RegExp(FLOAT_KERNELS[expect].replace('f32', '(f32|f16)')), line);
  }
  fs.writeFileSync(outFile, JSON.stringify(out));
  console.log(`module_choice: loaded ${chosen.file} (${chosen.simd}) as expected (${chosen.reason}); int8 sessions run ` +
    `${int8Kernel}, f32 and f16 sessions ${FLOAT_KERNELS[expect].replace('f32', 'f32/f16')}; ${Object.keys(out).length} outputs`);
}

async function rejects(f, api, status, pattern) {
  const error = await (async () => f())().then(() => null, (e) => e);
  assert.ok(error instanceof api.LinferError, `expected a LinferError, got ${error}`);
  assert.equal(error.statusName, status, error.message);
  assert.match(error.message, pattern);
  return error;
}

// The threads module (EXPECT threads, above).
async function threads(linfer, linferCjs, pkg, data, simd, outFile) {
  const base = THREADS_FILES[simd];
  for (const api of [linfer, linferCjs]) {
    const info = await api.load({ threads: 2 });
    assert.equal(info.file, `${base}.wasm`, JSON.stringify(info));
    assert.deepEqual([info.simd, info.reason, info.threads, info.threadsAsked, info.threadsReason], [simd, 'threads', 2, 2, null]);
  }
  console.log(`module_choice: load({ threads: 2 }) ${JSON.stringify(await linfer.moduleInfo())}`);
  const lines = [], linesOne = [];
  const start = Date.now();
  const out = await outputs(linfer, data, lines);
  const ms2 = Date.now() - start;
  const one = await outputs(linfer, data, linesOne, { threads: 1 });
  for (const line of lines) assert.match(line, /threads: 2/, line);
  for (const line of linesOne) assert.match(line, /threads: 1/, line);
  for (const line of lines.filter((l) => /\.f32[.:]/.test(l))) assert.match(line, new RegExp(FLOAT_KERNELS[simd]), line);
  const differ = Object.keys(out).filter((k) => out[k] !== one[k]);
  assert.equal(differ.length, 0, `outputs at 2 threads differ from 1 thread's: ${differ.join(', ')}`);
  fs.writeFileSync(outFile, JSON.stringify(out));
  console.log(`module_choice: ${Object.keys(out).length} outputs at 2 threads (${ms2} ms), the same bits at 1 thread; ` +
    `${lines[0]}`);

  // Bad input, and a pool too small for two 2-thread sessions at once.
  const model = await linfer.Model.fromBytes(fs.readFileSync(path.join(root, 'examples', 'models', 'langid.int8.lfm')));
  for (const threads of [0, -1, 1.5, 1e9, 257, '2', NaN])
    await rejects(() => model.createSession({ threads }), linfer, 'INVALID_ARGUMENT', /createSession: threads must be an integer from 1 to 256/);
  await rejects(() => model.createSession({ threads: 3 }), linfer, 'UNSUPPORTED', /threads 3: the threads module was loaded for 2/);
  await rejects(() => linfer.load({ threads: 4 }), linfer, 'INVALID_ARGUMENT', /loaded already, for threads: 2/);
  await rejects(() => linfer.load({ threads: -2 }), linfer, 'INVALID_ARGUMENT', /load: threads must be an integer/);
  const ids = Int32Array.from(new TextEncoder().encode('Ein kleiner Satz auf Deutsch, bitte.'));
  const heapBefore = await linfer.heapStats();
  const first = model.createSession();
  const answer = first.run(ids).data;
  const busy = await rejects(() => model.createSession(), linfer, 'INTERNAL', /could not start a thread of a pool of 2: it needs 1 of the module's workers and 0 are free/);
  const heapRefused = await linfer.heapStats();  // (the first refusal's message may have grown the error string)
  await rejects(() => model.createSession(), linfer, 'INTERNAL', /could not start a thread of a pool of 2/);
  assert.deepEqual(await linfer.heapStats(), heapRefused, 'a refused session kept memory');
  const single = model.createSession({ threads: 1 });  // needs no worker
  assert.deepEqual(single.run(ids).data, answer);
  single.dispose();
  const heapRuns = await linfer.heapStats();
  for (let i = 0; i < 10; ++i) assert.deepEqual(first.run(ids).data, answer);
  assert.deepEqual(await linfer.heapStats(), heapRuns, 'runs changed the heap');
  first.dispose();
  const second = model.createSession();  // the worker is free again
  assert.deepEqual(second.run(ids).data, answer);
  second.dispose();
  model.dispose();
  console.log(`module_choice: bad threads refused; a second 2-thread session while the worker is taken: ${busy.message}; ` +
    `10 runs leave the heap (${heapBefore.inUse} -> ${heapRuns.inUse} bytes in use with the sessions) unchanged`);

  // The heap over create/run/dispose cycles (this module's allocator is emmalloc, the others'
  // dlmalloc: heapStats() must read both right). A model and a 2-thread session kept show as at
  // least the model's bytes more in use; runs change nothing; 200 cycles (at 2 threads and at 1,
  // with a refused load: the C API's message) leave the heap where it started.
  const langid = fs.readFileSync(path.join(root, 'examples', 'models', 'langid.int8.lfm'));
  const cycle = async () => {
    await rejects(() => linfer.Model.fromBytes(langid.subarray(0, 64)), linfer, 'INVALID_MODEL', /./);
    const m = await linfer.Model.fromBytes(langid);
    for (const threads of [2, 1]) {
      const s = m.createSession({ maxSeqLen: 64, threads });
      assert.deepEqual(s.run(ids).data, answer);
      s.dispose();
    }
    m.dispose();
  };
  await cycle();  // one-time allocations (the first error string, Highway's tables)
  const cyclesBefore = await linfer.heapStats();
  const kept = await linfer.Model.fromBytes(langid);
  const keptSession = kept.createSession({ maxSeqLen: 64 });
  keptSession.run(ids);
  const withKept = await linfer.heapStats();
  assert.ok(withKept.inUse >= cyclesBefore.inUse + langid.length,
    `a model of ${langid.length} bytes and a session kept: ${cyclesBefore.inUse} -> ${withKept.inUse} bytes in use`);
  for (let i = 0; i < 10; ++i) keptSession.run(ids);
  assert.deepEqual(await linfer.heapStats(), withKept, 'runs changed the heap');
  keptSession.dispose();
  kept.dispose();
  for (let i = 0; i < 200; ++i) await cycle();
  const cyclesAfter = await linfer.heapStats();
  assert.deepEqual(cyclesAfter, cyclesBefore, 'the heap after 200 create/run/dispose cycles');
  console.log(`module_choice: heap in use ${cyclesBefore.inUse} bytes before and after 200 cycles at 2 and 1 threads; ` +
    `${withKept.inUse - cyclesBefore.inUse} with a model and a 2-thread session`);

  // A worker that cannot start: its script missing, or throwing. load() rejects, the process ends.
  const { spawnSync } = await import('node:child_process');
  const os = await import('node:os');
  for (const [what, script] of [['missing', null], ['throwing', "throw new Error('a broken worker');\n"]]) {
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'linfer-threads-'));
    try {
      for (const f of fs.readdirSync(pkg)) if (fs.statSync(path.join(pkg, f)).isFile()) fs.copyFileSync(path.join(pkg, f), path.join(copy, f));
      if (script === null) fs.rmSync(path.join(copy, `${base}.worker.js`));
      else fs.writeFileSync(path.join(copy, `${base}.worker.js`), script);
      const program = `import(${JSON.stringify(pathToFileURL(path.join(copy, 'index.mjs')).href)}).then((l) => ` +
        'l.load({ threads: 2 }).then(() => console.log("loaded"), (e) => console.log(`${e.name} ${e.statusName}: ${e.message}`)))';
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', timeout: 60000 });
      assert.equal(child.error, undefined, `the ${what} worker's process did not end: ${child.error}`);
      assert.equal(child.status, 0, child.stderr);
      assert.match(child.stdout, /^LinferError INTERNAL: a worker of the threads module (failed|ended)/, child.stdout + child.stderr);
      console.log(`module_choice: ${what} worker script: ${child.stdout.trim()}`);
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  }
}

main().catch((e) => { console.error(`module_choice: FAILED: ${e.stack || e}`); process.exitCode = 1; });
