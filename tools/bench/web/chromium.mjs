// SPDX-License-Identifier: Apache-2.0
// Headless Chromium for the web benchmarks: a static file server for the repository's folder and
// the browser driven over its DevTools pipe (no packages), as examples/web/test_page.mjs does.
// evaluateInPage(url, expression): opens url, awaits the expression's promise, returns its value;
// the page's console output is printed. With { isolated: true } every response carries the
// headers that make the page cross-origin isolated (SharedArrayBuffer, wasm threads).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.txt': 'text/plain; charset=utf-8' };

export function serve(root, { isolated = false } = {}) {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.join(root, rel);
    if (!file.startsWith(root + path.sep)) { res.writeHead(403).end(); return; }
    fs.readFile(file, (err, body) => {
      if (err) { res.writeHead(404).end(); return; }
      const headers = { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' };
      if (isolated) Object.assign(headers, { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
      res.writeHead(200, headers).end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export function launch(chromium) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'linfer-chromium-'));
  const child = spawn(chromium, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank'],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const pending = new Map();
  const listeners = [];
  let nextId = 1, buffer = '';
  child.stderr.on('data', () => {});
  child.stdio[4].on('data', (chunk) => {
    buffer += chunk.toString('utf8');
    let end;
    while ((end = buffer.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (message.id && pending.has(message.id)) {
        const { resolve, reject } = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message}`));
        else resolve(message.result);
      } else {
        for (const l of listeners) l(message);
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
  return { send, close, listeners, version: () => send('Browser.getVersion') };
}

export async function evaluateInPage(chromium, root, urlPath, expression, options = {}) {
  const server = await serve(root, options);
  const browser = launch(chromium);
  try {
    const { product } = await browser.version();
    const { targetId } = await browser.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await browser.send('Target.attachToTarget', { targetId, flatten: true });
    browser.listeners.push((m) => {
      if (m.method === 'Runtime.consoleAPICalled') console.log(m.params.args.map((a) => a.value).join(' '));
      if (m.method === 'Runtime.exceptionThrown') console.log(`page error: ${JSON.stringify(m.params.exceptionDetails).slice(0, 400)}`);
    });
    await browser.send('Runtime.enable', {}, sessionId);
    await browser.send('Page.enable', {}, sessionId);
    await browser.send('Page.navigate', { url: `http://127.0.0.1:${server.address().port}${urlPath}` }, sessionId);
    await new Promise((r) => setTimeout(r, 500));
    const r = await browser.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }, sessionId);
    if (r.exceptionDetails) throw new Error(`in the page: ${JSON.stringify(r.exceptionDetails).slice(0, 600)}`);
    return { product, value: r.result.value };
  } finally {
    await browser.close();
    server.close();
  }
}
