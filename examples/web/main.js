// SPDX-License-Identifier: Apache-2.0
// Language identification as you type (examples/web/index.html): the shipped int8 model, the
// bytes of the text as its token ids (a byte-level model), the softmax of its logits. The
// package is the wasm build's (build-wasm/js/linfer); serve the repository's root folder with
// any static file server and open /examples/web/ (docs/web.md). /examples/web/?threads=2 asks for
// the threads module, which a cross-origin-isolated page gets (COOP and COEP headers).
import * as linfer from '../../build-wasm/js/linfer/index.mjs';

const MODEL = '../models/langid.int8.lfm';
const LABELS = '../models/langid.labels.txt';
const NAMES = { en: 'English', cs: 'Czech', de: 'German', es: 'Spanish', fr: 'French', it: 'Italian',
  nl: 'Dutch', pl: 'Polish', pt_BR: 'Portuguese', ru: 'Russian' };

const text = document.getElementById('text');
const answer = document.getElementById('answer');
const scores = document.getElementById('scores');
const status = document.getElementById('status');

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  return response;
}

function softmax(logits) {
  const top = Math.max(...logits);
  const e = Array.from(logits, (x) => Math.exp(x - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

async function main() {
  const threads = new URLSearchParams(location.search).get('threads');
  if (threads !== null) await linfer.load({ threads: Number(threads) });
  const [bytes, labels] = await Promise.all([
    fetchOk(MODEL).then((r) => r.arrayBuffer()),
    fetchOk(LABELS).then((r) => r.text()).then((t) => t.trim().split('\n')),
  ]);
  const model = await linfer.Model.fromBytes(new Uint8Array(bytes));
  const maxSeqLen = Math.min(model.info.n, 512);
  const session = model.createSession({ maxSeqLen });
  const wasm = await linfer.moduleInfo();  // relaxed SIMD where this engine runs it right, else SIMD128
  status.dataset.module = wasm.file;
  status.textContent = `${model.info.attention_kind}, ${model.info.num_layers} layers, ` +
    `${model.info.weight_dtype} weights; ${wasm.file} (${wasm.simd}); ${session.describe()}` +
    (wasm.threadsReason ? `; one thread: ${wasm.threadsReason}` : '');

  const classify = () => {
    // The first maxSeqLen bytes decide; a cut inside a character is harmless for a byte model.
    const ids = Int32Array.from(new TextEncoder().encode(text.value.trim()).subarray(0, maxSeqLen));
    if (ids.length === 0) {
      answer.textContent = '…';
      answer.dataset.state = 'empty';
      scores.replaceChildren();
      return;
    }
    const t0 = performance.now();
    const p = softmax(session.run(ids).data);
    const ms = performance.now() - t0;
    const order = p.map((_, i) => i).sort((a, b) => p[b] - p[a]);
    const best = labels[order[0]];
    answer.textContent = `${NAMES[best] || best} (${(100 * p[order[0]]).toFixed(1)} %)`;
    answer.dataset.state = 'answered';
    answer.dataset.label = best;
    scores.replaceChildren(...order.slice(0, 4).map((i) => {
      const row = document.createElement('tr');
      row.innerHTML = `<td>${NAMES[labels[i]] || labels[i]}</td><td>${(100 * p[i]).toFixed(1)} %</td>` +
        `<td><span class="bar" style="width:${Math.round(200 * p[i])}px"></span></td>`;
      return row;
    }));
    status.dataset.ms = ms.toFixed(2);
  };
  text.addEventListener('input', classify);
  text.disabled = false;
  answer.textContent = 'type something';
  answer.dataset.state = 'ready';
  text.focus();
}

main().catch((e) => {
  answer.textContent = `error: ${e.message}`;
  answer.dataset.state = 'error';
});
