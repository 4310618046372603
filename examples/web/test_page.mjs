// SPDX-License-Identifier: Apache-2.0
// The language-ID page (examples/web) in headless Chromium: serves the repository's root folder,
// opens the page, types each sample sentence of examples/data/langid_samples.txt key by key and
// reads the language the page shows; the samples are in the order of the model's labels
// (examples/models/langid.labels.txt). Chromium is driven over its DevTools pipe (no packages).
// The page must download one module, the one it reports (EXPECT_MODULE, if given), and print no
// error or warning. Where the engine
// runs relaxed SIMD the package times the relaxed module's two int8 kernels to choose one;
// LINFER_WASM_TIMING in this script's environment (relaxed=US,simd128=US) is given to the page to
// decide with instead, and LINFER_WASM_MODULE to ask for a module. The page must fetch one module
// and its loader (linfer*.js), no other.
// With --threads N the page asks for N threads (/examples/web/?threads=N); with --isolated the server
// makes it cross-origin isolated (COOP and COEP headers), where it must load the threads module;
// without, a single-threaded module saying why. With --worker-missing as well the server answers 404
// for the threads module's worker script: the page must show load()'s one error, not hang.
// Usage: node examples/web/test_page.mjs [CHROMIUM [EXPECT_MODULE]] [--threads N] [--isolated] [--worker-missing]
// (scripts/test-wasm.sh runs it)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const flags = process.argv.slice(2);
const threadsAt = flags.indexOf('--threads');
const threads = threadsAt >= 0 ? Number(flags.splice(threadsAt, 2)[1]) : 0;
const isolated = flags.includes('--isolated');
const workerMissing = flags.includes('--worker-missing');
const [chromium = 'chromium', expectModule = ''] = flags.filter((f) => !f.startsWith('--'));
const wasmFetched = [];  // the .wasm files the page asked for
const loadersFetched = [];  // and the modules' loaders (the package's linfer*.js)
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.txt': 'text/plain; charset=utf-8' };

// A static file server for the repository's folder (any would do: the page needs no server code).
function serve() {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = path.join(root, rel);
    if (!file.startsWith(root + path.sep)) { res.writeHead(403).end(); return; }
    if (rel.endsWith('/')) file = path.join(file, 'index.html');
    if (rel.endsWith('.wasm')) wasmFetched.push(path.basename(rel));
    if (/\/js\/linfer\/linfer[a-z-]*\.js$/.test(rel) && !rel.endsWith('.worker.js')) loadersFetched.push(path.basename(rel));
    if (workerMissing && /\/linfer(-relaxed)?-threads\.worker\.js$/.test(rel)) { res.writeHead(404).end(); return; }
    fs.readFile(file, (err, body) => {
      if (err) { res.writeHead(404).end(); return; }
      const headers = { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' };
      if (isolated) Object.assign(headers, { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
      res.writeHead(200, headers).end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Chromium with its DevTools protocol on file descriptors 3 (commands) and 4 (replies, events):
// JSON messages ended by a NUL byte.
function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'linfer-chromium-'));
  const child = spawn(chromium, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank'],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const pending = new Map();
  const events = [];
  let nextId = 1, buffer = '';
  child.stdio[4].on('data', (chunk) => {
    buffer += chunk.toString('utf8');
    let end;
    while ((end = buffer.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (message.id && pending.has(message.id)) {
        const { resolve, reject } = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message} (${JSON.stringify(message.error)})`));
        else resolve(message.result);
      } else {
        events.push(message);
      }
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const send = (method, params = {}, sessionId = undefined) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    child.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  });
  const close = async () => {
    try { await Promise.race([send('Browser.close'), exited]); } catch { child.kill(); }
    await exited;
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { send, events, close, stderr: () => stderr, exited };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const samples = fs.readFileSync(path.join(root, 'examples/data/langid_samples.txt'), 'utf8').split('\n').filter(Boolean);
  const labels = fs.readFileSync(path.join(root, 'examples/models/langid.labels.txt'), 'utf8').trim().split('\n');
  const server = await serve();
  const url = `http://127.0.0.1:${server.address().port}/examples/web/${threads ? `?threads=${threads}` : ''}`;
  const browser = launch();
  let failures = 0;
  try {
    const { targetId } = await browser.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: true });
    const page = (method, params) => browser.send(method, params, sessionId);
    const evaluate = async (expression) => (await page('Runtime.evaluate', { expression, returnByValue: true })).result.value;
    await page('Runtime.enable');
    for (const name of ['LINFER_WASM_TIMING', 'LINFER_WASM_MODULE']) {
      if (!process.env[name]) continue;
      await page('Page.enable');
      await page('Page.addScriptToEvaluateOnNewDocument',
        { source: `globalThis.${name} = ${JSON.stringify(process.env[name])};` });
    }
    await page('Page.navigate', { url });
    let state = '';
    for (let i = 0; i < 300 && state !== 'ready' && state !== 'error'; ++i) {
      await sleep(100);
      state = await evaluate("document.getElementById('answer')?.dataset.state || ''");
    }
    if (workerMissing) {  // load() must reject with its one error, and the page say it
      const shown = await evaluate("document.getElementById('answer').textContent");
      const ok = state === 'error' && /^error: a worker of the threads module failed \(.*linfer(-relaxed)?-threads\.worker\.js\)/.test(shown);
      console.log(`${ok ? 'ok  ' : 'FAIL'} worker script missing: the page says "${shown}" (state ${state || 'none'})`);
      console.log(ok ? 'test_page: the missing worker script is one error' : 'test_page: 1 failed');
      process.exitCode = ok ? 0 : 1;
      return;
    }
    if (state !== 'ready') throw new Error(`the page did not get ready: ${state} ${await evaluate("document.getElementById('answer')?.textContent")}`);
    console.log(`page: ${await evaluate("document.getElementById('status').textContent")}`);
    const shownModule = await evaluate("document.getElementById('status').dataset.module");
    const choice = await page('Runtime.evaluate', { expression: "import('/build-wasm/js/linfer/index.mjs').then((l) => l.moduleInfo())",
      awaitPromise: true, returnByValue: true }).then((r) => r.result.value);
    console.log(`page: moduleInfo() ${JSON.stringify(choice)}`);
    const moduleOk = wasmFetched.length === 1 && wasmFetched[0] === shownModule && (!expectModule || shownModule === expectModule) &&
      new Set(loadersFetched).size === 1 && loadersFetched[0] === shownModule.replace(/\.wasm$/, '.js');  // (workers load it too)
    if (!moduleOk) ++failures;
    console.log(`${moduleOk ? 'ok  ' : 'FAIL'} module: the page runs ${shownModule}, fetched ${wasmFetched.join(', ') || 'none'}` +
      ` and the loader ${loadersFetched.join(', ') || 'none'}` + (expectModule ? `, expected ${expectModule}` : ''));
    if (threads) {  // isolated: the threads module with its threads; else one thread and the reason
      const status = await evaluate("document.getElementById('status').textContent");
      const threadsOk = isolated
        ? choice.reason === 'threads' && choice.threads === threads && choice.threadsReason === null && status.includes(`threads: ${threads}`)
        : choice.threads === 1 && choice.threadsAsked === threads && /not cross-origin isolated/.test(choice.threadsReason || '') &&
          status.includes('threads: 1');
      if (!threadsOk) ++failures;
      console.log(`${threadsOk ? 'ok  ' : 'FAIL'} threads: asked for ${threads}, ${isolated ? 'cross-origin isolated' : 'not isolated'}: ` +
        `sessions run on ${choice.threads}${choice.threadsReason ? ` (${choice.threadsReason})` : ''}`);
    }
    for (let i = 0; i < samples.length; ++i) {
      await evaluate("(() => { const t = document.getElementById('text'); t.value = ''; t.focus(); })()");
      for (const ch of samples[i]) {  // one key at a time, as typed
        await page('Input.dispatchKeyEvent', { type: 'keyDown', text: ch, unmodifiedText: ch, key: ch });
        await page('Input.dispatchKeyEvent', { type: 'keyUp', key: ch });
      }
      const typed = await evaluate("document.getElementById('text').value");
      const label = await evaluate("document.getElementById('answer').dataset.label");
      const shown = await evaluate("document.getElementById('answer').textContent");
      const ok = typed === samples[i] && label === labels[i];
      if (!ok) ++failures;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${labels[i]}: page says "${shown}" for "${samples[i].slice(0, 40)}..."`);
    }
    const errors = browser.events.filter((e) => e.method === 'Runtime.exceptionThrown' ||
      (e.method === 'Runtime.consoleAPICalled' && (e.params.type === 'error' || e.params.type === 'warning')));
    for (const e of errors) { console.log(`FAIL page error: ${JSON.stringify(e.params).slice(0, 300)}`); ++failures; }
  } finally {
    await browser.close();
    server.close();
  }
  console.log(failures ? `test_page: ${failures} failed` : `test_page: ${samples.length} sentences typed, all answered right`);
  process.exitCode = failures ? 1 : 0;
}

main().catch((e) => { console.error(`test_page: ${e.stack || e}`); process.exitCode = 1; });
