// SPDX-License-Identifier: Apache-2.0
// ---- ES module (runtime/js/lib/tail.mjs): linfer.wasm beside this file, read in Node, fetched
// (and compiled while it streams) in browsers ----------------------------------------------------
async function loadWasm(file, imports) {
  const url = new URL('./' + file, import.meta.url);
  if (typeof process === 'object' && process.versions && process.versions.node) {
    const fs = await import('node:fs');
    return (await WebAssembly.instantiate(fs.readFileSync(url), imports)).instance;
  }
  if (WebAssembly.instantiateStreaming) {
    try {
      return (await WebAssembly.instantiateStreaming(fetch(url), imports)).instance;
    } catch (e) {  // a server without the application/wasm type: compile from the bytes instead
      if (!(e instanceof TypeError)) throw e;
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new LinferError(`cannot fetch ${url}: HTTP ${response.status}`, 2);
  return (await WebAssembly.instantiate(await response.arrayBuffer(), imports)).instance;
}

export { Model, Session, LinferError, version, heapStats, moduleInfo };
export default { Model, Session, LinferError, version, heapStats, moduleInfo };
