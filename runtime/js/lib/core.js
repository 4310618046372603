// SPDX-License-Identifier: Apache-2.0
// ---- linfer's JavaScript API (runtime/js/lib/core.js) -------------------------------------------
// The C API (runtime/include/linfer/linfer.h) on the WebAssembly module, with the rules of the
// Python binding: one error type carrying the C API's message, a model shared by its sessions,
// memory given back by dispose() (and, as a safety net, when an object is garbage-collected).
// Placed before a tail (tail.cjs, tail.mjs) that supplies compileWasm(file) and loaderFiles(spec)
// (a module's emscripten loader) for Node or the browser, and exports the API.

const STATUS_NAMES = ['OK', 'INVALID_ARGUMENT', 'IO', 'INVALID_MODEL', 'UNSUPPORTED', 'OUT_OF_MEMORY',
  'BUFFER_TOO_SMALL', 'INTERNAL'];
const HEAD_KINDS = ['none', 'lm_logits', 'classifier', 'pooled'];
// The numbers linfer_js_model_info writes, in its order (runtime/js/src/linfer_js.c).
const INFO_NUMBERS = ['vocab_size', 'dim', 'num_layers', 'num_heads', 'head_dim', 'ff_dim', 'max_seq_len',
  'proj_len', 'head', 'output_channels', 'parameter_count', 'file_bytes', 'resident_weight_bytes',
  'format_version'];

class LinferError extends Error {
  // status: the linfer_status code; misuse the JavaScript side refuses first (not an integer
  // array, a disposed object) is INVALID_ARGUMENT (1) too.
  constructor(message, status = 1) {
    super(message);
    this.name = 'LinferError';
    this.status = status;
    this.statusName = STATUS_NAMES[status] || 'UNKNOWN';
  }
}

// ---- Which module the engine runs -------------------------------------------------------------
// The package has two builds of the same runtime: linfer-relaxed.wasm, whose dense layers use
// relaxed SIMD (i32x4.relaxed_dot_i8x16_i7x16_add_s for int8, f32x4.relaxed_madd for f32 and f16),
// and linfer.wasm (SIMD128), both with wasm exceptions. An engine may accept relaxed SIMD and
// still compute it otherwise (Node 20 behind --experimental-wasm-relaxed-simd gives twice the dot
// product), so the probes RUN the instructions the relaxed kernels use (i8x16.neg, the dot product
// with an accumulator, on operands in the kernel's ranges, -127..127 by 0..127; the multiply-add
// on values whose result is exact, fused or not) and compare every lane; validating them would not
// see that. Each probe is one function () -> i32 exported as "p", 1 when right.
const PROBE_RELAXED = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 112, 0, 0,
  10, 88, 1, 86, 0, 253, 12, 129, 127, 255, 5, 100, 156, 3, 0, 127, 127, 127, 127, 129, 129, 129, 129, 253, 97,
  253, 97, 253, 12, 127, 127, 3, 7, 0, 1, 5, 9, 127, 127, 127, 127, 127, 127, 127, 127, 253, 12, 1, 0, 0, 0, 254,
  255, 255, 255, 232, 3, 0, 0, 24, 252, 255, 255, 253, 147, 2, 253, 12, 33, 0, 0, 0, 169, 255, 255, 255, 236,
  255, 0, 0, 20, 0, 255, 255, 253, 55, 253, 163, 1, 11];
// f32x4.relaxed_madd([1.5, -2, 3, 0.25], [2, 3, -4, 8], [0.5, 1, 2, -1]) == [3.5, -5, -10, 1].
const PROBE_RELAXED_MADD = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 112, 0, 0,
  10, 84, 1, 82, 0, 253, 12, 0, 0, 192, 63, 0, 0, 0, 192, 0, 0, 64, 64, 0, 0, 128, 62, 253, 12, 0, 0, 0, 64, 0, 0,
  64, 64, 0, 0, 128, 192, 0, 0, 0, 65, 253, 12, 0, 0, 0, 63, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 128, 191, 253, 133,
  2, 253, 12, 0, 0, 96, 64, 0, 0, 160, 192, 0, 0, 32, 193, 0, 0, 128, 63, 253, 65, 253, 163, 1, 11];
// SIMD128: i32x4.dot_i16x8_s on the int16 extremes, compared lane by lane.
const PROBE_SIMD128 = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 112, 0, 0,
  10, 66, 1, 64, 0, 253, 12, 0, 128, 255, 127, 3, 0, 252, 255, 5, 0, 6, 0, 249, 255, 8, 0, 253, 12, 0, 128, 255,
  127, 232, 3, 232, 3, 254, 255, 3, 0, 100, 0, 100, 0, 253, 186, 1, 253, 12, 1, 0, 255, 127, 24, 252, 255, 255,
  8, 0, 0, 0, 100, 0, 0, 0, 253, 55, 253, 163, 1, 11];
// Exception handling: try (result i32) i32.const 1 catch_all i32.const 0 end.
const PROBE_EXCEPTIONS = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 112, 0,
  0, 10, 12, 1, 10, 0, 6, 127, 65, 1, 25, 65, 0, 11, 11];
const INT8_KERNEL = { 'relaxed-simd': 'dense_int8_wasm_relaxed', simd128: 'dense_int8_wasm_simd128' };
// The package's modules, each a .wasm and its emscripten loader, a script of its own (so that a
// page downloads only the loader of the module it runs; `factory` is the loader's export), by SIMD
// flavour: single-threaded, and with wasm threads (a shared memory, Web Workers: also a worker
// script), loaded only when asked for more than one thread (load({ threads })) where
// SharedArrayBuffer is usable. BUILT (which of the optional ones the package has) is written by
// the package's staging (runtime/js/stage_package.cmake).
const MODULES = {
  'relaxed-simd': { file: 'linfer-relaxed.wasm', loader: 'linfer-relaxed.js', factory: 'createLinferWasmRelaxed' },
  simd128: { file: 'linfer.wasm', loader: 'linfer.js', factory: 'createLinferWasm' },
};
const THREADS_MODULES = {
  'relaxed-simd': { file: 'linfer-relaxed-threads.wasm', loader: 'linfer-relaxed-threads.js',
    worker: 'linfer-relaxed-threads.worker.js', factory: 'createLinferWasmRelaxedThreads' },
  simd128: { file: 'linfer-threads.wasm', loader: 'linfer-threads.js', worker: 'linfer-threads.worker.js',
    factory: 'createLinferWasmThreads' },
};
const MAX_THREADS = 256;  // the C API's limit (linfer_session_options.num_threads)
const NOT_ISOLATED = 'SharedArrayBuffer is unavailable: the page is not cross-origin isolated (serve it with ' +
  'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)';

// The two int8 dense kernels' arithmetic, timed (runtime/js/src/int8_timing_probe.c, written by
// runtime/js/scripts/make_timing_probe.sh): tile(relaxed, reps) runs reps x 128 multiply-adds of
// one kernel. Only compiled where the relaxed probe passed.
const PROBE_INT8_TIMING = 'AGFzbQEAAAABBwFgAn9/AX8DAgEABAUBcAEBAQUEAQEBAQYHAX8BQeAQCwcRAgZtZW1vcnkCAAR0aWxlAAAKjQYBigYBEHsCQAJAAkAgAEUNACABQQFIDQFBAP0ABLCIgIAAIQJBAP0ABJCIgIAAIgP9YSEEQQD9AASAiICAACIF/WEhBkEA/QAEoIiAgAAhB/0MAAAAAAAAAAAAAAAAAAAAACIIIQkgCCEKIAghCyAIIQwgCCENIAghDiAIIQ8DQCAEIAIgAyAHIAn9kwL9kwIhCSAGIAIgBSAHIAj9kwL9kwIhCCAEIAIgAyAHIAL9eyIHIAv9kwL9kwIhCyAGIAIgBSAHIAr9kwL9kwIhCiAEIAIgAyAHIAL9eyIHIA39kwL9kwIhDSAGIAIgBSAHIAz9kwL9kwIhDCAEIAIgAyAHIAL9eyIHIA/9kwL9kwIhDyAGIAIgBSAHIA79kwL9kwIhDiAHIAL9eyEHIAFBf2oiAQ0ADAMLCyABQQFIDQBBAP0ABNCIgIAAIQVBAP0ABLCIgIAAIQZBAP0ABKCIgIAAIQdBAP0ABJCIgIAAIRBBAP0ABICIgIAAIRFBAP0ABMCIgIAAIQL9DAAAAAAAAAAAAAAAAAAAAAAiCCEJIAghCiAIIQsgCCEMIAghDSAIIQ4gCCEPA0AgBiAC/boBIAv9rgEgBiACIAX9jgEiAyAF/Y4BIgT9ugH9rgEhCyAHIAL9ugEgCv2uASAHIAT9ugH9rgEhCiAQIAL9ugEgCf2uASAQIAT9ugH9rgEhCSAIIBEgAv26Af2uASARIAT9ugH9rgEhCCAGIAP9ugEgD/2uASAGIAQgBf2OASIC/boB/a4BIQ8gByAD/boBIA79rgEgByAC/boB/a4BIQ4gECAD/boBIA39rgEgECAC/boB/a4BIQ0gESAD/boBIAz9rgEgESAC/boB/a4BIQwgAiAF/Y4BIQIgAUF/aiIBDQAMAgsL/QwAAAAAAAAAAAAAAAAAAAAAIg8hDiAPIQ0gDyEMIA8hCyAPIQogDyEJIA8hCAsgDiAP/a4BIA39rgEgDP2uASAL/a4BIAr9rgEgCf2uASAI/a4BIgL9GwAgAv0bAXMgAv0bAnMgAv0bA3ML';

function probeRuns(bytes) {
  try {  // a few dozen bytes: compiled synchronously, as browsers allow on the main thread
    return new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes))).exports.p() === 1;
  } catch (e) {
    return false;
  }
}

// A setting from Node's environment or, first, a global set before the first call.
function setting(name) {
  if (globalThis[name] !== undefined) return String(globalThis[name]);
  return typeof process === 'object' && process.env ? process.env[name] : undefined;
}

// LINFER_WASM_TIMING=relaxed=US,simd128=US: the timings to decide the int8 kernel with, instead
// of measuring (the tests of the decision).
function injectedTiming(text) {
  const m = /^relaxed=([0-9.]+),simd128=([0-9.]+)$/.exec(text);
  if (!m || !(Number(m[1]) > 0) || !(Number(m[2]) > 0))
    throw new LinferError(`LINFER_WASM_TIMING must be relaxed=MICROSECONDS,simd128=MICROSECONDS, got '${text}'`);
  return { relaxedUs: Number(m[1]), simd128Us: Number(m[2]), reps: 0, injected: true, ms: 0 };
}

// Times the two kernels' arithmetic on the same work, alternating, and keeps each one's best of 3
// (a shared machine's interruptions only ever add time). Each run lasts about 0.1 ms where the
// timer is fine, 1 ms where it is coarse (browsers coarsen performance.now: 0.1 ms in Chromium's
// pages that are not cross-origin isolated). First 5 ms of warm-up: engines run a function in a
// baseline compiler first and replace it once it has run a while, and the two tiers may lower the
// relaxed dot product differently (Chromium 156: Liftoff without AVX-VNNI, slower than SIMD128's
// sequence; TurboFan with it, faster; replaced after about 3 ms). The kernels run in the final tier.
function timeInt8Kernels() {
  const now = typeof performance === 'object' ? () => performance.now() : () => Date.now();
  const start = now();
  const bytes = Uint8Array.from(atob(PROBE_INT8_TIMING), (c) => c.charCodeAt(0));
  const { tile } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  let step = 0;
  for (let i = 0; i < 3; ++i) {
    const t = now();
    let u;
    while ((u = now()) === t);
    step = Math.max(step, u - t);
  }
  const target = step > 0.02 ? 1 : 0.1;  // milliseconds per run
  const run = (relaxed, reps) => {
    const t = now();
    tile(relaxed, reps);
    return now() - t;
  };
  // More repetitions for a run of `target` ms, never fewer (an interruption only makes a run longer).
  const scaled = (reps, ms) => Math.max(reps, Math.min(1 << 30, Math.ceil(reps * target / Math.max(ms, step))));
  run(0, 1);  // compiles the function (engines compile lazily)
  let reps = 64, ms;
  while ((ms = run(0, reps)) < target / 4 && reps < (1 << 26)) reps *= 4;
  reps = scaled(reps, ms);
  const warmUntil = now() + 5;
  let last;
  do last = Math.min(run(1, reps), run(0, reps)); while (now() < warmUntil);
  reps = scaled(reps, last);
  let best = [Infinity, Infinity];  // SIMD128, relaxed
  for (let round = 0, restarts = 0; round < 3; ++round) {
    const ms = [0, 0];
    for (const relaxed of round & 1 ? [1, 0] : [0, 1]) ms[relaxed] = run(relaxed, reps);
    best = [Math.min(best[0], ms[0]), Math.min(best[1], ms[1])];
    if (Math.min(ms[0], ms[1]) < target / 2 && restarts < 2) {  // faster code arrived: longer runs, again
      reps = scaled(reps, Math.min(ms[0], ms[1]));
      best = [Infinity, Infinity];
      round = -1;
      ++restarts;
    }
  }
  return { relaxedUs: best[1] * 1000, simd128Us: best[0] * 1000, reps, injected: false, ms: now() - start };
}

// Why this engine cannot run the threads module, or null when it can: SharedArrayBuffer (browsers
// give it only to cross-origin-isolated pages; Node always), a shared wasm memory, and workers.
function threadsUnavailable() {
  if (!BUILT.threads) return 'this package has no threads module';
  if (globalThis.crossOriginIsolated === false) return NOT_ISOLATED;
  if (typeof SharedArrayBuffer !== 'function') return 'this engine has no SharedArrayBuffer';
  try {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    if (!(memory.buffer instanceof SharedArrayBuffer)) throw new Error('not shared');
  } catch (e) {
    return 'this engine has no shared WebAssembly memory (wasm threads)';
  }
  const node = typeof process === 'object' && process.versions && process.versions.node;
  if (!node && typeof Worker !== 'function') return 'this context cannot start Web Workers';
  return null;
}

// The threads option of load() and createSession(): an integer from 1 to MAX_THREADS.
function checkThreads(value, where) {
  if (!Number.isInteger(value) || value < 1 || value > MAX_THREADS)
    throw new LinferError(`${where}: threads must be an integer from 1 to ${MAX_THREADS}, got ` +
      `${typeof value === 'string' ? `'${value}'` : String(value)}`);
  return value;
}

// The module this engine runs, and why:
// - LINFER_WASM_MODULE=simd128 (or relaxed-simd), in Node's environment or as a global set before
//   the first call, asks for one (reason 'asked');
// - SIMD128 where the package has no relaxed module or the engine fails the relaxed probe;
// - else the relaxed module (reason 'relaxed probe passed'): its f32 and f16 layers multiply-add in
//   one instruction where the engine fuses it, and its int8 layers take whichever dot product
//   (relaxed or SIMD128's, int8Kernel) ran faster just now: both compute the same bits, so only
//   the speed is at stake, and engines lower the relaxed one to one instruction or to five;
// - a threads module when more than one thread is asked for and the engine can run it (reason
//   'threads'): the relaxed one where relaxed SIMD passes its probes and the package has it (its
//   int8 kernel timed as above), else SIMD128's; else one of the single-threaded modules, with
//   threadsReason saying why.
function chooseModule(threadsAsked) {
  const start = typeof performance === 'object' ? performance.now() : Date.now();
  if (typeof WebAssembly !== 'object')
    throw new LinferError('this JavaScript engine has no WebAssembly: linfer needs WebAssembly with SIMD128 and exception handling', 4);
  const env = setting('LINFER_WASM_MODULE');
  if (env !== undefined && !MODULES[env])
    throw new LinferError(`LINFER_WASM_MODULE must be one of ${Object.keys(MODULES).join(', ')}, got '${env}'`);
  const timingSetting = setting('LINFER_WASM_TIMING');
  const injected = timingSetting !== undefined ? injectedTiming(timingSetting) : null;
  const missing = [];
  if (!probeRuns(PROBE_SIMD128)) missing.push('SIMD128');
  if (!probeRuns(PROBE_EXCEPTIONS)) missing.push('exception handling');
  if (missing.length)
    throw new LinferError(`this WebAssembly engine lacks ${missing.join(' and ')}, which linfer's modules need ` +
      '(Chrome 95, Firefox 100, Safari 16.4, Node 18 or later)', 4);
  const relaxedProbe = BUILT.relaxed ? probeRuns(PROBE_RELAXED) && probeRuns(PROBE_RELAXED_MADD) : null;
  const now = () => (typeof performance === 'object' ? performance.now() : Date.now());
  let threadsReason = null, threads = 1;
  if (threadsAsked > 1) {
    threadsReason = env ? `LINFER_WASM_MODULE=${env} asks for a single-threaded module` : threadsUnavailable();
    if (!threadsReason) threads = threadsAsked;
  }
  if (env === 'relaxed-simd' && !relaxedProbe)
    throw new LinferError(BUILT.relaxed ? "LINFER_WASM_MODULE=relaxed-simd: this engine's relaxed SIMD fails the probe"
      : 'LINFER_WASM_MODULE=relaxed-simd: this package has no relaxed-SIMD module', 4);
  let simd, reason, timing = null;
  if (threads > 1) {
    simd = relaxedProbe && BUILT.relaxedThreads ? 'relaxed-simd' : 'simd128';
    reason = 'threads';
  } else if (env) {
    simd = env;
    reason = 'asked';
  } else if (relaxedProbe === null) {
    simd = 'simd128';
    reason = 'no relaxed module';
  } else if (!relaxedProbe) {
    simd = 'simd128';
    reason = 'relaxed probe failed';
  } else {
    simd = 'relaxed-simd';
    reason = 'relaxed probe passed';
  }
  let int8Kernel = INT8_KERNEL.simd128;
  if (simd === 'relaxed-simd') {
    timing = injected || timeInt8Kernels();
    if (timing.relaxedUs < timing.simd128Us) int8Kernel = INT8_KERNEL['relaxed-simd'];
  }
  return { simd, file: moduleFiles({ simd, reason }).file, reason, relaxedProbe, timing, int8Kernel,
    chooseMs: now() - start, threads, threadsAsked, threadsReason };
}

// The loader and files of the module a choice names.
function moduleFiles(choice) {
  return (choice.reason === 'threads' ? THREADS_MODULES : MODULES)[choice.simd];
}

// The module made ready for sessions: the relaxed modules told which int8 kernel to take (before
// any session exists: a session's kernels are chosen when it is created).
function ready(M, choice) {
  if (choice.simd === 'relaxed-simd') M._linfer_js_use_relaxed_dot(choice.int8Kernel === INT8_KERNEL['relaxed-simd'] ? 1 : 0);
  M.linferModule = choice;
  return M;
}

// A loader that did not load or defines no factory: one LinferError naming the file.
function loaderError(spec, e) {
  return e instanceof LinferError ? e : new LinferError(`cannot load ${spec.loader}: ${(e && e.message) || e}`, 2);
}

let wasmPromise = null;
let wasmThreadsAsked = 1;  // what the module was (or is being) loaded for

// The module, chosen and instantiated once (the tail fetches or reads the file and its loader), for
// `threadsAsked` threads (load()); every other call loads it for one thread.
function wasm(threadsAsked = 1) {
  if (!wasmPromise) {
    wasmThreadsAsked = threadsAsked;
    wasmPromise = new Promise((resolve, reject) => {
      const choice = chooseModule(threadsAsked);
      const spec = moduleFiles(choice);
      // The module is fetched and compiled while its loader loads (the tail's compileWasm).
      const compiled = compileWasm(spec.file);
      compiled.catch(() => {});  // (rejected below, where it is awaited)
      if (choice.reason === 'threads') {
        startThreadsModule(choice, spec, compiled, resolve, reject);
        return;
      }
      loaderFiles(spec).then((files) => {
        if (typeof files.factory !== 'function') throw new Error(`it defines no ${spec.factory}`);
        return files.factory({
          instantiateWasm(imports, receive) {
            compiled.then((module) => WebAssembly.instantiate(module, imports).then((instance) => receive(instance, module)))
              .catch(reject);
            return {};  // instantiated asynchronously
          },
        });
      }).then((M) => resolve(ready(M, choice)), (e) => reject(loaderError(spec, e)));
    });
    wasmPromise.catch(() => { wasmPromise = null; });  // a failed load may be tried again
  }
  return wasmPromise;
}

// A threads module: its loader (linfer-threads.js or linfer-relaxed-threads.js, read by the tail's
// loaderFiles) creates threads - 1 workers, each of which loads the same loader and the compiled
// module; the module is ready when all of them are. A worker that fails to start (its script
// missing, an error while it loads) rejects the load with a LinferError and the others are
// stopped: never a promise left waiting. In Node the loaded workers are unref'd, so that a program
// ends when its own work does.
function startThreadsModule(choice, spec, compiled, resolve, reject) {
  const workers = [];
  let failed = false;
  const fail = (message, status) => {
    if (failed) return;
    failed = true;
    for (const w of workers) w.terminate();
    reject(new LinferError(message, status));
  };
  loaderFiles(spec).then((files) => {
    if (typeof files.factory !== 'function') throw new Error(`it defines no ${spec.factory}`);
    const failedWorker = (e) => fail(`a worker of the threads module failed (${files.worker}): ` +
      `${(e && e.message) || 'its script did not load'}`, 7);
    const loadedWorkers = new Set();
    const settings = {
      linferWorkersAtStart: 0,  // PTHREAD_POOL_SIZE (runtime/js/CMakeLists.txt): made below instead
      mainScriptUrlOrBlob: files.script,  // what each worker loads
      locateFile: (name) => (name.endsWith('.worker.js') ? files.worker : name),
      // A browser's main thread waits for the workers by spinning, a run's length at most (as a
      // single-threaded run holds it): emscripten's warning about that is dropped, not the rest.
      printErr: (text) => { if (!/^Blocking on the main thread/.test(text)) console.warn(text); },
      instantiateWasm(imports, receive) {
        compiled.then((module) => WebAssembly.instantiate(module, imports).then((instance) => ({ instance, module }))).then((r) => {
          const pthreads = settings.PThread;  // (exported once the loader's first pass is done)
          // The workers, made here and not as the loader starts, so that each is watched from its
          // creation: a script that does not load may say so before the module is ready.
          for (let i = 1; i < choice.threads; ++i) {
            pthreads.allocateUnusedWorker();
            const worker = pthreads.unusedWorkers[pthreads.unusedWorkers.length - 1];
            workers.push(worker);
            if (typeof worker.on === 'function') {  // Node's worker_threads
              worker.on('error', failedWorker);
              worker.on('exit', (code) => { if (!loadedWorkers.has(worker)) fail(`a worker of the threads module ended while loading (exit code ${code})`, 7); });
            } else {
              worker.addEventListener('error', failedWorker);
            }
          }
          const loadWorker = pthreads.loadWasmModuleToWorker;
          pthreads.loadWasmModuleToWorker = (worker, loaded) => {
            loadWorker(worker, () => {
              loadedWorkers.add(worker);
              if (typeof worker.unref === 'function') worker.unref();
              if (loaded) loaded(worker);
            });
            worker.onerror = failedWorker;  // emscripten's rethrows: uncaught in Node, the process would end
          };
          receive(r.instance, r.module);
        }).catch((e) => fail(e instanceof LinferError ? e.message : `cannot load ${choice.file}: ${e.message || e}`,
          e instanceof LinferError ? e.status : 2));
        return {};
      },
    };
    return files.factory(settings).then((M) => {
      if (!failed) resolve(ready(M, choice));
    });
  }).catch((e) => fail(e instanceof LinferError ? e.message : `cannot load the threads module's ${spec.loader}: ${e.message || e}`,
    e instanceof LinferError ? e.status : 2));
}

// Chooses and loads the module (once: every other call of the package waits for it), and says
// which (moduleInfo()). options.threads (default 1): more than 1 loads the threads module where
// SharedArrayBuffer is usable, with threads - 1 workers started now; elsewhere a single-threaded
// module, with threadsReason saying why. Call it before anything else loads the module.
async function load(options = {}) {
  if (options === null || typeof options !== 'object') throw new LinferError('load options must be an object');
  for (const key of Object.keys(options))
    if (key !== 'threads') throw new LinferError(`unknown load option '${key}' (known: threads)`);
  const threads = options.threads === undefined ? 1 : checkThreads(options.threads, 'load');
  if (wasmPromise && threads !== wasmThreadsAsked)
    throw new LinferError(`load({ threads: ${threads} }): the module is loaded already, for threads: ${wasmThreadsAsked}; ` +
      'call load() before any other call of the package');
  await wasm(threads);
  return moduleInfo();
}

// Which module this engine runs and why: { simd: 'relaxed-simd' | 'simd128', file, reason:
// 'relaxed probe passed' | 'asked' | 'relaxed probe failed' | 'no relaxed module' | 'threads',
// relaxedProbe (null: no relaxed module), timing: { relaxedUs, simd128Us, reps, injected, ms } or
// null (the relaxed module's two int8 dot products, timed), int8Kernel: the int8 dense layers' kernel,
// chooseMs: the probes' and the timing's milliseconds, threads: the most a session may run on,
// threadsAsked: load()'s, threadsReason: why more than one was asked for and not given, or null }.
async function moduleInfo() {
  const M = await wasm();
  const info = M.linferModule;
  return { ...info, timing: info.timing && { ...info.timing } };
}

// The threads module's memory is shared: a worker that grows it (its thread's first allocation)
// leaves this thread's views of the old, shorter buffer. Renewed before the heap is touched.
function heap(M) {
  const memory = M.wasmMemory;
  if (memory && M.HEAPU8.length !== memory.buffer.byteLength) {
    const b = memory.buffer;
    M.HEAP8 = new Int8Array(b); M.HEAPU8 = new Uint8Array(b); M.HEAP16 = new Int16Array(b);
    M.HEAPU16 = new Uint16Array(b); M.HEAP32 = new Int32Array(b); M.HEAPU32 = new Uint32Array(b);
    M.HEAPF32 = new Float32Array(b); M.HEAPF64 = new Float64Array(b);
  }
  return M;
}

// Throws the C API's error for a failed status.
function check(M, status) {
  if (status !== 0) throw new LinferError(M.UTF8ToString(M._linfer_last_error()), status);
}

// Scratch space in the wasm heap for a call's out-parameters; freed by the caller.
function withScratch(M, bytes, f) {
  const p = M._malloc(bytes);
  if (!p) throw new LinferError(`out of memory allocating ${bytes} bytes`, 5);
  heap(M);
  try {
    return f(p);
  } finally {
    M._free(p);
  }
}

// Objects left to the garbage collector free their wasm memory here (dispose() unregisters).
const finalizer = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((release) => release()) : null;

class Model {
  constructor(M, ptr, info) {  // use Model.fromBytes
    this._M = M;
    this._ptr = ptr;
    this._info = info;
    this._disposed = false;
    // What the memory's release needs, apart from the object (a closure over the object would
    // keep it alive): the pointer, and the live sessions, until which the model's memory stays.
    const cell = { ptr, sessions: 0, disposed: false };
    this._cell = cell;
    if (finalizer) finalizer.register(this, () => releaseModel(M, cell), this);
  }

  // Loads a model from the bytes of an .lfm file (Uint8Array, ArrayBuffer or a typed array view);
  // the library verifies them and keeps its own copy.
  static async fromBytes(bytes) {
    let view;
    if (bytes instanceof Uint8Array) view = bytes;
    else if (bytes instanceof ArrayBuffer) view = new Uint8Array(bytes);
    else if (ArrayBuffer.isView(bytes)) view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    else throw new LinferError('model bytes must be a Uint8Array, an ArrayBuffer or a typed array');
    const M = await wasm();
    const data = M._malloc(Math.max(view.length, 1));
    if (!data) throw new LinferError(`out of memory allocating ${view.length} bytes for the model's bytes`, 5);
    let ptr = 0;
    try {
      heap(M).HEAPU8.set(view, data);
      ptr = withScratch(M, 4, (out) => {
        check(M, M._linfer_model_load_from_memory(data, view.length, out));
        return M.HEAPU32[out >> 2];
      });
    } finally {
      M._free(data);  // the library copied the bytes
    }
    let info;
    try {
      info = readInfo(M, ptr);
    } catch (e) {
      M._linfer_model_free(ptr);
      throw e;
    }
    return new Model(M, ptr, info);
  }

  // The C API's linfer_model_info, as Python's Model.info: a new object each time.
  get info() {
    this._live();
    return { ...this._info };
  }

  // Floating-point operations of one run over `length` tokens (multiply-add = 2).
  flops(length) {
    this._live();
    return this._M._linfer_js_model_flops(this._ptr, checkCount('length', length));
  }

  // The model ids of `text` with the tokenizer its file carries (docs/tokenizers.md), the model's
  // template ([CLS] ... [SEP], <s> ... </s>) included, as the native tokenizer gives them: an
  // Int32Array. A model without a tokenizer is a LinferError (UNSUPPORTED). The text's UTF-8 and
  // the ids pass through the wasm heap for the call (run() alone allocates nothing).
  tokenize(text) {
    this._live();
    if (typeof text !== 'string') throw new LinferError('text must be a string');
    const M = this._M;
    const utf8 = new TextEncoder().encode(text);
    const p = M._malloc(Math.max(utf8.length, 1));
    if (!p) throw new LinferError(`out of memory allocating ${utf8.length} bytes for the text`, 5);
    try {
      heap(M).HEAPU8.set(utf8, p);
      return withScratch(M, 4, (out) => {
        check(M, M._linfer_tokenize(this._ptr, p, utf8.length, 0, 0, out));  // the count
        const count = M.HEAPU32[out >> 2];
        return withScratch(M, 4 * Math.max(count, 1), (ids) => {
          check(M, M._linfer_tokenize(this._ptr, p, utf8.length, ids, count, out));
          return heap(M).HEAP32.slice(ids >> 2, (ids >> 2) + count);
        });
      });
    } finally {
      M._free(p);
    }
  }

  // Whether the model file carries a tokenizer (tokenize, Session.runText).
  get hasTokenizer() {
    this._live();
    return this._M._linfer_model_has_tokenizer(this._ptr) === 1;
  }

  // Sentence embeddings, as Python's Model.embed: a string gives one Float32Array of the model's
  // dim, an array of strings one Float32Array per string. The model must carry its tokenizer and
  // pool its output (info.head === 'pooled'). A text longer than the model's n ids is cut to n,
  // keeping its closing id, as Hugging Face's truncation does. One session for the call.
  embed(texts) {
    this._live();
    const single = typeof texts === 'string';
    if (!single && !Array.isArray(texts))
      throw new LinferError(`embed takes a string or an array of strings, got ${texts === null ? 'null' : typeof texts}`);
    const list = single ? [texts] : texts;
    list.forEach((t, i) => {
      if (typeof t !== 'string')
        throw new LinferError(`embed takes a string or an array of strings, got an item of type ${t === null ? 'null' : typeof t} at ${i}`);
    });
    if (this._info.head !== 'pooled')
      throw new LinferError("the model's output is not a pooled vector (convert it with its modules.json, " +
        'or with linfer-convert --pooling cls|mean)', 4);
    if (!this.hasTokenizer) throw new LinferError('the model file carries no tokenizer', 4);
    const n = this._info.max_seq_len;
    const session = this.createSession();
    try {
      const rows = list.map((text) => {
        let ids = this.tokenize(text);
        if (ids.length > n) {
          const last = ids[ids.length - 1];
          ids = ids.slice(0, n);
          ids[n - 1] = last;
        }
        return session.run(ids).data;
      });
      return single ? rows[0] : rows;
    } finally {
      session.dispose();
    }
  }

  // A session for inputs of up to maxSeqLen tokens (default: the model's n) on `threads` threads
  // (default: what the module was loaded for, moduleInfo().threads; more only with the threads
  // module). All of its memory, and its threads, are set up here: run() allocates none.
  createSession(options = {}) {
    this._live();
    if (options === null || typeof options !== 'object') throw new LinferError('session options must be an object');
    for (const key of Object.keys(options))
      if (key !== 'maxSeqLen' && key !== 'threads')
        throw new LinferError(`unknown session option '${key}' (known: maxSeqLen, threads)`);
    const maxSeqLen = options.maxSeqLen === undefined ? 0 : checkCount('maxSeqLen', options.maxSeqLen);
    const loaded = this._M.linferModule;
    const threads = options.threads === undefined ? loaded.threads : checkThreads(options.threads, 'createSession');
    if (threads > loaded.threads)
      throw new LinferError(loaded.threads === 1
        ? `createSession: threads ${threads}: ${loaded.file} runs on one thread (` +
          (loaded.threadsReason || 'load({ threads }) before any other call of the package loads the threads module') + ')'
        : `createSession: threads ${threads}: the threads module was loaded for ${loaded.threads} (load({ threads }))`, 4);
    return new Session(this, maxSeqLen, threads);
  }

  // Releases the model's wasm memory once its sessions are disposed too. Idempotent.
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    if (finalizer) finalizer.unregister(this);
    releaseModel(this._M, this._cell);
  }

  _live() {
    if (this._disposed) throw new LinferError('the model is disposed');
  }
}

// The model is released: its memory goes now, or with its last session (freeSession).
function releaseModel(M, cell) {
  cell.disposed = true;
  if (cell.sessions === 0) freeModel(M, cell);
}

function freeModel(M, cell) {
  if (cell.ptr) M._linfer_model_free(cell.ptr);
  cell.ptr = 0;
}

function readInfo(M, ptr) {
  return withScratch(M, 8 * INFO_NUMBERS.length + 8, (p) => {
    const strings = p + 8 * INFO_NUMBERS.length;
    check(M, M._linfer_js_model_info(ptr, p, strings));
    const info = {};
    INFO_NUMBERS.forEach((name, i) => { info[name] = M.HEAPF64[(p >> 3) + i]; });
    info.head = HEAD_KINDS[info.head] || `unknown(${info.head})`;
    info.attention_kind = M.UTF8ToString(M.HEAPU32[strings >> 2]);
    info.weight_dtype = M.UTF8ToString(M.HEAPU32[(strings >> 2) + 1]);
    info.n = info.max_seq_len;
    info.k = info.proj_len;
    info.num_classes = info.head === 'classifier' ? info.output_channels : 0;
    return info;
  });
}

function checkCount(name, value) {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff)
    throw new LinferError(`${name} must be an integer in [0, 2^32), got ${String(value)}`);
  return value;
}

class Session {
  constructor(model, maxSeqLen, threads) {  // use model.createSession
    const M = model._M;
    const ptr = withScratch(M, 4, (out) => {
      check(M, M._linfer_js_session_create(model._ptr, maxSeqLen, threads, out));
      return M.HEAPU32[out >> 2];
    });
    this.maxSeqLen = maxSeqLen || model._info.max_seq_len;
    this.threads = threads;
    // The ids and the output's address, rows and columns: allocated once, here.
    const ids = M._malloc(4 * this.maxSeqLen + 12);
    if (!ids) {
      M._linfer_session_free(ptr);
      throw new LinferError(`out of memory allocating ${4 * this.maxSeqLen} bytes for the session's ids`, 5);
    }
    this._M = M;
    this._model = model;  // keeps the model alive while the session is
    this._vocab = model._info.vocab_size;
    const cell = { ptr, ids, model: model._cell };
    this._cell = cell;
    model._cell.sessions++;
    if (finalizer) finalizer.register(this, () => freeSession(M, cell), this);
  }

  // Runs the model on token ids (an Int32Array, or an array of integers) and returns a copy of
  // the output: { data: Float32Array (rows x cols, row-major), rows, cols }.
  run(ids) {
    const cell = this._live();
    if (!(ids instanceof Int32Array)) {
      if (!Array.isArray(ids) && !ArrayBuffer.isView(ids))
        throw new LinferError('token ids must be an Int32Array or an array of integers');
      for (const id of ids) {
        const n = Number(id);
        if (!Number.isInteger(n) || typeof id === 'boolean')
          throw new LinferError(`token ids must be integers, got ${String(id)}`);
        if (n < -0x80000000 || n > 0x7fffffff)  // Int32Array.from would wrap it into another id
          throw new LinferError(`token id ${String(id)} does not fit a 32-bit integer`);
      }
      ids = Int32Array.from(ids, Number);
    }
    const M = this._M;
    // A longer input is not copied: the C API refuses its length before it reads any id.
    if (ids.length <= this.maxSeqLen) heap(M).HEAP32.set(ids, cell.ids >> 2);
    check(M, M._linfer_session_run(cell.ptr, cell.ids, ids.length));
    const out = cell.ids + 4 * this.maxSeqLen;
    check(M, M._linfer_js_session_output(cell.ptr, out));
    const [data, rows, cols] = heap(M).HEAPU32.subarray(out >> 2, (out >> 2) + 3);
    return { data: M.HEAPF32.slice(data >> 2, (data >> 2) + rows * cols), rows, cols };
  }

  // run() on the model's ids of `text` (Model.tokenize): a text longer than maxSeqLen ids is the
  // C API's error, as run()'s.
  runText(text) {
    this._live();
    return this.run(this._model.tokenize(text));
  }

  // One line on what the session runs: its kernels, Highway's target.
  describe() {
    const cell = this._live();
    return this._M.UTF8ToString(this._M._linfer_session_describe(cell.ptr));
  }

  // Releases the session's wasm memory (and the model's, if it was disposed). Idempotent.
  dispose() {
    if (!this._cell.ptr) return;
    if (finalizer) finalizer.unregister(this);
    freeSession(this._M, this._cell);
  }

  _live() {
    if (!this._cell.ptr) throw new LinferError('the session is disposed');
    return this._cell;
  }
}

function freeSession(M, cell) {
  if (!cell.ptr) return;
  M._linfer_session_free(cell.ptr);
  M._free(cell.ids);
  cell.ptr = 0;
  cell.model.sessions--;
  if (cell.model.disposed && cell.model.sessions === 0) freeModel(M, cell.model);
}

// The library's version (LINFER_VERSION_STRING).
async function version() {
  const M = await wasm();
  return M.UTF8ToString(M._linfer_version());
}

// Bytes of the wasm heap in use (allocated and not freed) and the memory's size: what the
// tests watch to see that dispose() gives everything back.
async function heapStats() {
  const M = await wasm();
  return { inUse: M._linfer_js_heap_in_use(), memoryBytes: heap(M).HEAPU8.length };
}
