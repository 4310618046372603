// SPDX-License-Identifier: Apache-2.0
// The JavaScript package under node (scripts/test-wasm.sh runs it with --expose-gc): parity with
// the native build, bad input, memory. LINFER_JS_PACKAGE: the staged package folder;
// LINFER_JS_TEST_DATA: the models and native outputs test-wasm.sh wrote.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const pkg = path.resolve(process.env.LINFER_JS_PACKAGE || path.join(root, 'build-wasm/js/linfer'));
const data = path.resolve(process.env.LINFER_JS_TEST_DATA || path.join(root, 'build-wasm/js-test-data'));
const linfer = await import(pathToFileURL(path.join(pkg, 'index.mjs')));
const linferCjs = createRequire(import.meta.url)(path.join(pkg, 'index.cjs'));
const { Model, LinferError, heapStats } = linfer;

// A .npy array (float32 or float64, little-endian, C order) as a Float64Array.
function readNpy(file) {
  const b = fs.readFileSync(file);
  const v1 = b[6] === 1;  // format version 1: a 16-bit header length, else 32-bit
  const headerStart = v1 ? 10 : 12;
  const start = headerStart + (v1 ? b.readUInt16LE(8) : b.readUInt32LE(8));
  const header = b.subarray(headerStart, start).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const bytes = b.buffer.slice(b.byteOffset + start, b.byteOffset + b.length);
  if (descr === '<f4') return Float64Array.from(new Float32Array(bytes));
  if (descr === '<f8') return new Float64Array(bytes);
  throw new Error(`${file}: unsupported dtype ${descr}`);
}

const readIds = (file) => Int32Array.from(fs.readFileSync(file, 'utf8').trim().split(/\s+/), Number);
const maxAbs = (a) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
function cosine(a, b) {
  let dot = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; ++i) { dot += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return dot / Math.sqrt(aa * bb);
}
const load = (file) => Model.fromBytes(fs.readFileSync(file));

const goldenDir = path.join(root, 'tests/golden');
const cases = fs.readFileSync(path.join(goldenDir, 'cases.txt'), 'utf8').trim().split('\n')
  .map((line) => line.split(/\s+/)[0]);
const lengthsOf = (name) => fs.readdirSync(path.join(goldenDir, name))
  .map((f) => /^ids_(\d+)\.txt$/.exec(f)).filter(Boolean).map((m) => Number(m[1])).sort((a, b) => a - b);

// Runs every length of a golden case on one model; returns the outputs by length.
async function runCase(name, dtype) {
  const model = await load(path.join(data, `${name}.${dtype}.lfm`));
  const session = model.createSession();
  const outs = {};
  for (const T of lengthsOf(name)) {
    const out = session.run(readIds(path.join(goldenDir, name, `ids_${T}.txt`)));
    assert.equal(out.rows * out.cols, out.data.length);
    outs[T] = out.data;
  }
  session.dispose();
  model.dispose();
  return outs;
}

test('golden models: f32 within 1e-4 of PyTorch and of the native build (test_golden\'s bound)', async () => {
  assert.equal(cases.length, 10);
  for (const name of cases) {
    const outs = await runCase(name, 'f32');
    for (const T of lengthsOf(name)) {
      const torch = readNpy(path.join(goldenDir, name, `out_${T}.npy`));
      const native = readNpy(path.join(data, `${name}.f32.out_${T}.npy`));
      assert.equal(outs[T].length, torch.length, `${name} T=${T}`);
      const scale = Math.max(maxAbs(torch), 1e-30);
      assert.ok(maxDiff(outs[T], torch) <= 1e-4 * scale, `${name} T=${T}: vs PyTorch ${maxDiff(outs[T], torch) / scale}`);
      assert.ok(maxDiff(outs[T], native) <= 1e-4 * scale, `${name} T=${T}: vs native ${maxDiff(outs[T], native) / scale}`);
    }
  }
});

test('golden models: f16 as the native f16 model (1e-4), and within test_quantization\'s f16 bound of f32', async () => {
  for (const name of cases) {
    const outs = await runCase(name, 'f16');
    for (const T of lengthsOf(name)) {
      const native = readNpy(path.join(data, `${name}.f16.out_${T}.npy`));
      const nativeF32 = readNpy(path.join(data, `${name}.f32.out_${T}.npy`));
      const scale = maxAbs(nativeF32);
      assert.ok(maxDiff(outs[T], native) <= 1e-4 * scale, `${name} T=${T}: vs native f16 ${maxDiff(outs[T], native) / scale}`);
      assert.ok(maxDiff(outs[T], nativeF32) <= 2.5e-3 + 1e-3 * scale, `${name} T=${T}: vs f32 ${maxDiff(outs[T], nativeF32)}`);
    }
  }
});

test('golden models: int8 by cosine to the f32 outputs (test_quantization\'s bound) and to the native int8 model', async () => {
  let cosSum = 0, count = 0;
  for (const name of cases) {
    const outs = await runCase(name, 'int8');
    for (const T of lengthsOf(name)) {
      const native = readNpy(path.join(data, `${name}.int8.out_${T}.npy`));
      const nativeF32 = readNpy(path.join(data, `${name}.f32.out_${T}.npy`));
      const vsNative = cosine(outs[T], native);
      const vsF32 = cosine(outs[T], nativeF32), nativeVsF32 = cosine(native, nativeF32);
      console.log(`${name} T=${T}: int8 cosine to native int8 ${vsNative.toFixed(7)}, to f32 ${vsF32.toFixed(5)} (native ${nativeVsF32.toFixed(5)})`);
      assert.ok(vsNative >= 0.999, `${name} T=${T}: int8 cosine to native int8 ${vsNative}`);
      if (T === lengthsOf(name).at(-1)) { cosSum += vsF32; ++count; }
    }
  }
  assert.ok(cosSum / count >= 0.99, `mean int8 cosine to f32 ${cosSum / count}`);
});

test('language-ID models (f32, f16, int8): the native logits and the same language', async () => {
  const samples = fs.readFileSync(path.join(root, 'examples/data/langid_samples.txt'), 'utf8').split('\n').filter(Boolean);
  for (const dtype of ['f32', 'f16', 'int8']) {
    const model = await load(path.join(root, `examples/models/langid.${dtype}.lfm`));
    assert.equal(model.info.weight_dtype, dtype);
    assert.equal(model.info.head, 'classifier');
    const session = model.createSession({ maxSeqLen: 512 });
    samples.forEach((line, i) => {
      const out = session.run(Int32Array.from(fs.readFileSync(path.join(data, `langid_${i}.txt`))));
      const native = readNpy(path.join(data, `langid_${i}.${dtype}.npy`));
      const argmax = (a) => a.indexOf(Math.max(...a));
      assert.equal(argmax(Array.from(out.data)), argmax(Array.from(native)), `${dtype} line ${i}`);
      const scale = maxAbs(native);
      if (dtype === 'int8') assert.ok(cosine(out.data, native) >= 0.999, `${dtype} line ${i}`);
      else assert.ok(maxDiff(out.data, native) <= 1e-4 * scale, `${dtype} line ${i}: ${maxDiff(out.data, native) / scale}`);
    });
    session.dispose();
    model.dispose();
  }
});

test('CommonJS and ES module entry points are the same API', async () => {
  const bytes = fs.readFileSync(path.join(data, `${cases[0]}.f32.lfm`));
  const ids = readIds(path.join(goldenDir, cases[0], `ids_${lengthsOf(cases[0])[0]}.txt`));
  const results = [];
  for (const api of [linfer, linferCjs]) {
    const model = await api.Model.fromBytes(bytes);
    const session = model.createSession();
    results.push(session.run(ids).data);
    session.dispose();
    model.dispose();
    assert.equal(typeof api.LinferError, 'function');
  }
  assert.deepEqual(results[0], results[1]);
  assert.match(await linfer.version(), /^\d+\.\d+\.\d+/);
});

test('model.flops: the C API\'s 64-bit count, exact beyond 2^32', async () => {
  // A Linformer's count is linear in the length beyond k (every term is rows x a constant), so
  // the differences between these four are equal; they exceed 2^32, where a count passed through
  // 32 bits wraps.
  const model = await load(path.join(data, `${cases[0]}.f32.lfm`));
  const counts = [100000, 200000, 300000, 400000].map((length) => model.flops(length));
  model.dispose();
  assert.ok(counts.every(Number.isSafeInteger), String(counts));
  assert.ok(counts[3] > 2 ** 32, String(counts));
  const steps = counts.slice(1).map((c, i) => c - counts[i]);
  assert.ok(steps[0] > 0 && steps.every((s) => s === steps[0]), String(counts));
});

// Expects LinferError with the C API's status and a message matching `pattern`.
async function rejects(f, status, pattern) {
  try {
    await f();
  } catch (e) {
    assert.ok(e instanceof LinferError, `not a LinferError: ${e}`);
    assert.equal(e.statusName, status, e.message);
    assert.match(e.message, pattern);
    return;
  }
  assert.fail('no error');
}

// Runs f seven times and checks that the wasm heap does not grow from pass to pass: the smallest
// in-use figure of passes 5-7 is at most that of passes 2-4, so memory a call keeps (8 bytes at
// least, the allocator's unit) raises the second three by at least three times its size, more
// than the 8 bytes of the allocator's state below, and fails. (The first pass may settle state
// that earlier tests left: the C API's message buffer, linfer_last_error's string, grown or
// shrunk to its last message. After it the in-use figure moves between two values 8 bytes apart
// with the allocator's state, in no fixed order (80, 88, 80 or 80, 80, 80, 88): not memory kept.)
async function leavesHeapAsItWas(f) {
  const inUse = [];
  for (let pass = 0; pass < 7; ++pass) {
    await f();
    inUse.push((await heapStats()).inUse);
  }
  const settled = Math.min(...inUse.slice(1, 4)), later = Math.min(...inUse.slice(4));
  assert.ok(later <= settled, `the heap grew from pass to pass: ${inUse.join(', ')} bytes in use`);
  return settled;
}

test('bad input: one LinferError each, and the model and session keep working', () => leavesHeapAsItWas(async () => {
  const file = path.join(data, `${cases[0]}.f32.lfm`);
  const bytes = fs.readFileSync(file);
  await rejects(() => Model.fromBytes(new TextEncoder().encode('not a model at all')), 'INVALID_MODEL', /./);
  await rejects(() => Model.fromBytes(new Uint8Array(0)), 'INVALID_MODEL', /too small/);
  for (const cut of [8, 64, Math.floor(bytes.length / 2), bytes.length - 1])
    await rejects(() => Model.fromBytes(bytes.subarray(0, cut)), 'INVALID_MODEL', /./);
  await rejects(() => Model.fromBytes('a string'), 'INVALID_ARGUMENT', /Uint8Array/);

  const model = await Model.fromBytes(bytes);
  const { vocab_size: vocab, n } = model.info;
  await rejects(() => model.createSession({ maxSeqLen: n + 1 }), 'INVALID_ARGUMENT', /max_seq_len/);
  await rejects(() => model.createSession({ maxSeqLen: -1 }), 'INVALID_ARGUMENT', /maxSeqLen/);
  await rejects(() => model.createSession({ maxLen: 4 }), 'INVALID_ARGUMENT', /unknown session option/);
  // threads: an integer from 1 to 256; more than 1 needs the threads module (load({ threads })).
  for (const threads of [0, -1, 1.5, 1e9, '2', NaN, null])
    await rejects(() => model.createSession({ threads }), 'INVALID_ARGUMENT', /createSession: threads must be an integer from 1 to 256/);
  await rejects(() => model.createSession({ threads: 2 }), 'UNSUPPORTED', /threads 2: linfer(-relaxed)?\.wasm runs on one thread/);
  for (const threads of [0, -3, 2.5, 257, Infinity])
    await rejects(() => linfer.load({ threads }), 'INVALID_ARGUMENT', /load: threads must be an integer from 1 to 256/);
  await rejects(() => linfer.load({ workers: 2 }), 'INVALID_ARGUMENT', /unknown load option 'workers'/);
  await rejects(() => linfer.load({ threads: 2 }), 'INVALID_ARGUMENT', /the module is loaded already, for threads: 1/);
  assert.equal((await linfer.load({ threads: 1 })).threads, 1);  // what it was loaded for: fine
  const one = model.createSession({ threads: 1 });
  assert.equal(one.threads, 1);
  one.dispose();
  const session = model.createSession({ maxSeqLen: 8 });
  const good = session.run(Int32Array.of(1, 2, 3));
  await rejects(() => session.run(Int32Array.of(1, vocab, 2)), 'INVALID_ARGUMENT', /token id \d+ at position 1 is outside the vocabulary/);
  await rejects(() => session.run(Int32Array.of(-1)), 'INVALID_ARGUMENT', /outside the vocabulary/);
  await rejects(() => session.run(new Int32Array(9)), 'INVALID_ARGUMENT', /input length 9 is outside \[1, 8\]/);
  await rejects(() => session.run(new Int32Array(0)), 'INVALID_ARGUMENT', /input length 0/);
  await rejects(() => session.run([1, 2.5]), 'INVALID_ARGUMENT', /integers/);
  await rejects(() => session.run([1, 2 ** 32 + 1]), 'INVALID_ARGUMENT', /does not fit a 32-bit integer/);
  await rejects(() => session.run('abc'), 'INVALID_ARGUMENT', /Int32Array/);
  assert.deepEqual(session.run([1, 2, 3]).data, good.data);  // still works, same answer
  session.dispose();
  session.dispose();  // idempotent
  await rejects(() => session.run(Int32Array.of(1)), 'INVALID_ARGUMENT', /disposed/);
  model.dispose();
  await rejects(() => model.createSession(), 'INVALID_ARGUMENT', /disposed/);
}));

test('damaged model files: a LinferError or a working model, never a crash', () => leavesHeapAsItWas(async () => {
  const bytes = fs.readFileSync(path.join(data, `${cases[0]}.int8.lfm`));
  let seed = 12345;
  const rand = (k) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k; };
  let refused = 0, loaded = 0;
  for (let i = 0; i < 200; ++i) {
    const copy = Uint8Array.from(bytes);
    for (let j = 0; j < 4; ++j) copy[rand(Math.min(copy.length, i < 100 ? 4096 : copy.length))] = rand(256);
    try {
      const model = await Model.fromBytes(copy);
      const session = model.createSession({ maxSeqLen: 4 });
      session.run(Int32Array.of(1, 2, 3, 4));
      session.dispose();
      model.dispose();
      ++loaded;
    } catch (e) {
      assert.ok(e instanceof LinferError, `${e}`);
      ++refused;
    }
  }
  console.log(`damaged files: ${refused} refused, ${loaded} loaded and ran`);
  assert.ok(refused > 0);
}));

test('run() allocates no wasm memory; 1,000 create/run/dispose cycles leave the heap where it started', async () => {
  const bytes = fs.readFileSync(path.join(root, 'examples/models/langid.int8.lfm'));
  const ids = Int32Array.from(new TextEncoder().encode('Dobrý den, jak se máte?'));
  const cycle = async () => {
    const model = await Model.fromBytes(bytes);
    const session = model.createSession({ maxSeqLen: 64 });
    const out = session.run(ids);
    session.dispose();
    model.dispose();
    return out;
  };
  await cycle();  // one-time allocations (the library's first error string, Highway's tables)
  const before = await heapStats();
  const model = await Model.fromBytes(bytes);
  const session = model.createSession({ maxSeqLen: 64 });
  session.run(ids);
  const loaded = await heapStats();
  for (let i = 0; i < 10; ++i) session.run(ids);
  assert.deepEqual(await heapStats(), loaded);  // runs: nothing allocated, the memory did not grow
  session.dispose();
  model.dispose();
  for (let i = 0; i < 1000; ++i) await cycle();
  const after = await heapStats();
  console.log(`heap in use: ${before.inUse} bytes before and after 1,000 cycles; ${loaded.inUse - before.inUse} ` +
              `with the model and a session; wasm memory ${after.memoryBytes} bytes`);
  assert.equal(after.inUse, before.inUse);
  assert.equal(after.memoryBytes, before.memoryBytes);
});

test('objects left to the garbage collector give their memory back (FinalizationRegistry)', async (t) => {
  if (typeof global.gc !== 'function') return t.skip('needs node --expose-gc');
  const bytes = fs.readFileSync(path.join(data, `${cases[0]}.f32.lfm`));
  const before = (await heapStats()).inUse;
  await (async () => {
    const model = await Model.fromBytes(bytes);
    model.createSession().run(Int32Array.of(1, 2));
    model.createSession();
  })();
  assert.ok((await heapStats()).inUse > before);
  for (let i = 0; i < 20 && (await heapStats()).inUse !== before; ++i) {
    global.gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal((await heapStats()).inUse, before);
});

// tests/embed/make_embedder.sh's models and linfer-embed's embeddings of its texts (%.9g).
const embedData = path.join(data, 'embed');
const embedTexts = fs.readFileSync(path.join(embedData, 'texts.txt'), 'utf8').replace(/\n$/, '').split('\n');
const nativeEmbeddings = (name) => fs.readFileSync(path.join(embedData, `${name}.embed.txt`), 'utf8')
  .replace(/\n$/, '').split('\n').map((line) => Float64Array.from(line.split(' '), Number));

test('model.embed: linfer-embed\'s embeddings (f32 within 1e-4, int8 by cosine 0.999), one or many texts', () => leavesHeapAsItWas(async () => {
  assert.equal(embedTexts.length, 5);
  for (const name of ['mean.f32', 'mean.int8', 'cls.f32']) {
    const model = await load(path.join(embedData, `${name}.lfm`));
    assert.equal(model.info.head, 'pooled');
    const native = nativeEmbeddings(name);
    assert.ok(model.tokenize(embedTexts.at(-1)).length > model.info.n, 'the long text is cut');
    const rows = model.embed(embedTexts);
    assert.ok(Array.isArray(rows) && rows.length === embedTexts.length);
    rows.forEach((row, i) => {
      assert.ok(row instanceof Float32Array && row.length === model.info.dim, `${name} text ${i}`);
      if (name.endsWith('int8')) {
        assert.ok(cosine(row, native[i]) >= 0.999, `${name} text ${i}: cosine ${cosine(row, native[i])}`);
      } else {
        const scale = Math.max(maxAbs(native[i]), 1e-30);
        assert.ok(maxDiff(row, native[i]) <= 1e-4 * scale, `${name} text ${i}: ${maxDiff(row, native[i]) / scale}`);
      }
      if (name.startsWith('mean')) assert.ok(Math.abs(Math.hypot(...row) - 1) < 1e-5, `${name} text ${i}: not unit length`);
    });
    const one = model.embed(embedTexts[0]);
    assert.ok(one instanceof Float32Array);
    assert.deepEqual(one, rows[0]);
    assert.deepEqual(model.embed([]), []);
    model.dispose();
  }
}));

test('model.embed refuses a model without a pooled head or a tokenizer, and what is not text', () => leavesHeapAsItWas(async () => {
  const unpooled = await load(path.join(embedData, 'unpooled.f32.lfm'));
  await rejects(() => unpooled.embed('a text'), 'UNSUPPORTED', /output is not a pooled vector/);
  unpooled.dispose();
  const noTokenizer = await load(path.join(embedData, 'notokenizer.f32.lfm'));
  assert.equal(noTokenizer.info.head, 'pooled');
  await rejects(() => noTokenizer.embed(['a text']), 'UNSUPPORTED', /carries no tokenizer/);
  noTokenizer.dispose();
  const model = await load(path.join(embedData, 'mean.f32.lfm'));
  await rejects(() => model.embed(42), 'INVALID_ARGUMENT', /a string or an array of strings, got number/);
  await rejects(() => model.embed(null), 'INVALID_ARGUMENT', /got null/);
  await rejects(() => model.embed(['a', 7]), 'INVALID_ARGUMENT', /an item of type number at 1/);
  assert.equal(model.embed('still works').length, model.info.dim);
  model.dispose();
  await rejects(() => model.embed('a'), 'INVALID_ARGUMENT', /disposed/);
}));
