// SPDX-License-Identifier: Apache-2.0
// ---- ES module (runtime/js/lib/tail.mjs): linfer.wasm beside this file, read in Node, fetched
// (and compiled while it streams) in browsers ----------------------------------------------------
const IN_NODE = typeof process === 'object' && process.versions && process.versions.node;

async function loadWasm(file, imports) {  // { instance, module }
  const url = new URL('./' + file, import.meta.url);
  if (IN_NODE) {
    const fs = await import('node:fs');
    return WebAssembly.instantiate(fs.readFileSync(url), imports);
  }
  if (WebAssembly.instantiateStreaming) {
    try {
      return await WebAssembly.instantiateStreaming(fetch(url), imports);
    } catch (e) {  // a server without the application/wasm type: compile from the bytes instead
      if (!(e instanceof TypeError)) throw e;
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new LinferError(`cannot fetch ${url}: HTTP ${response.status}`, 2);
  return WebAssembly.instantiate(await response.arrayBuffer(), imports);
}

// The threads module's loader, a classic script beside this file that its workers load too: in
// Node required (CommonJS), in browsers imported (it names its factory on globalThis).
async function threadsFiles() {
  const url = (name) => new URL('./' + name, import.meta.url);
  if (IN_NODE) {
    const { createRequire } = await import('node:module');
    const { fileURLToPath } = await import('node:url');
    const script = fileURLToPath(url('linfer-threads.js'));
    return { factory: createRequire(import.meta.url)(script), script, worker: fileURLToPath(url('linfer-threads.worker.js')) };
  }
  const script = url('linfer-threads.js').href;
  await import(script);
  return { factory: globalThis.createLinferWasmThreads, script, worker: url('linfer-threads.worker.js').href };
}

export { Model, Session, LinferError, version, heapStats, moduleInfo, load };
export default { Model, Session, LinferError, version, heapStats, moduleInfo, load };
