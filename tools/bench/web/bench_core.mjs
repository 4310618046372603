// SPDX-License-Identifier: Apache-2.0
// The timed comparison of web_bench.mjs (Node) and chromium_bench.mjs (a page in Chromium): linfer's
// JavaScript package against onnxruntime-web's wasm backend on the suite's S model, f32 and int8.
// read(name) gives a file of the work folder as a Uint8Array. Parity first, with the suite's
// bounds against PyTorch (f32: max abs error <= 1e-3 of the largest |output|; int8: mean cosine per
// row >= 0.99): a runtime that misses them is not timed. Then `rounds` rounds after 3 warm-up runs
// each: wall time of session.run() seen from JavaScript (ORT's run is a promise, linfer's a call).
// On one thread a round is one run of linfer and one of ONNX Runtime, alternating which goes
// first. On more (`threads` > 1) a round is a block of each runtime, alternating which goes first:
// a pause, one untimed run, then kBlockRuns timed runs back to back. A runtime's pool keeps its
// threads spinning for a while after a run (onnxruntime-web's for milliseconds), and runs that
// alternate one by one timed each runtime beside the other's spinning threads, on a machine with
// no core to spare: measured on 2 cores, linfer's int8 at n = 128 took 41.2 ms right after ORT's
// runs and 27.8 ms after a 100 ms pause, ORT's 30.1 and 36.9. In a block each runtime runs as an
// application calling only it would, its own threads warm from its own last run. Returns the
// table's rows (markdown) and whether every parity check passed.
function readNpy(b) {  // float32 C-order .npy
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const v1 = b[6] === 1, start = (v1 ? 10 : 12) + (v1 ? dv.getUint16(8, true) : dv.getUint32(8, true));
  return new Float32Array(Uint8Array.prototype.slice.call(b, start).buffer);  // a copy (a Buffer's slice is a view)
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
const kBlockRuns = 3;
const kBlockPauseMs = 200;  // twice the pause measured to free a run of the other pool's spinning
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

export async function compare({ linfer, ort, read, lengths, rounds, threads = 1, dtypes = ['f32', 'int8'], log = () => {} }) {
  const rows = [];
  let failed = false;
  const text = async (name) => new TextDecoder().decode(await read(name));
  for (const dtype of dtypes) {
    const model = await linfer.Model.fromBytes(await read(`S_${dtype}.lfm`));
    for (const T of lengths) {
      const ids = Int32Array.from((await text(`S_check_ids_n${T}.txt`)).trim().split(/\s+/), Number);
      const ref = readNpy(await read(`S_check_ref_n${T}.npy`));
      const session = model.createSession({ maxSeqLen: T });
      const onnx = await read(dtype === 'f32' ? `S_n${T}.onnx` : `S_n${T}_int8.onnx`);
      const ortSession = await ort.InferenceSession.create(onnx, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
      const feeds = { [ortSession.inputNames[0]]: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [T]) };
      const runLinfer = () => session.run(ids);
      const runOrt = async () => (await ortSession.run(feeds))[ortSession.outputNames[0]];
      const l = runLinfer(), o = await runOrt();
      const cols = ref.length / T;
      const pl = parity(l.data, ref, cols), po = parity(o.data, ref, cols);
      const ok = (p) => (dtype === 'f32' ? p.rel <= 1e-3 : p.cos >= 0.99);
      const said = (p) => (dtype === 'f32' ? `max err ${p.rel.toExponential(1)}` : `cosine ${p.cos.toFixed(4)}`);
      if (!ok(pl) || !ok(po)) {
        rows.push(`| ${dtype} | ${T} | - | - | - | parity failed: ${said(pl)}; ${said(po)} |`);
        log(rows[rows.length - 1]);
        failed = true;
        continue;
      }
      for (let i = 0; i < 3; ++i) { runLinfer(); await runOrt(); }
      const tl = [], to = [];
      const timeLinfer = () => { const t0 = performance.now(); runLinfer(); tl.push(performance.now() - t0); };
      const timeOrt = async () => { const t0 = performance.now(); await runOrt(); to.push(performance.now() - t0); };
      const block = async (run, time) => {
        await new Promise((resolve) => setTimeout(resolve, kBlockPauseMs));
        await run();
        for (let i = 0; i < kBlockRuns; ++i) await time();
      };
      for (let r = 0; r < rounds; ++r) {
        if (threads > 1) {
          const linferBlock = () => block(runLinfer, timeLinfer), ortBlock = () => block(runOrt, timeOrt);
          if (r % 2) { await ortBlock(); await linferBlock(); } else { await linferBlock(); await ortBlock(); }
        } else if (r % 2) { await timeOrt(); timeLinfer(); } else { timeLinfer(); await timeOrt(); }
      }
      const ml = median(tl), mo = median(to);
      rows.push(`| ${dtype} | ${T} | ${ml.toFixed(2)} | ${mo.toFixed(2)} | ${(mo / ml).toFixed(2)}x | ${said(pl)}; ${said(po)} |`);
      log(rows[rows.length - 1]);
      session.dispose();
      await ortSession.release();
    }
    model.dispose();
  }
  return { rows, failed };
}
