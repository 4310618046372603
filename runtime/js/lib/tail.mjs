// SPDX-License-Identifier: Apache-2.0
// ---- ES module (runtime/js/lib/tail.mjs): the modules beside this file, read in Node, fetched
// (and compiled while they stream) in browsers ---------------------------------------------------
const IN_NODE = typeof process === 'object' && process.versions && process.versions.node;

async function compileWasm(file) {
  const url = new URL('./' + file, import.meta.url);
  if (IN_NODE) {
    const fs = await import('node:fs');
    return WebAssembly.compile(fs.readFileSync(url));
  }
  if (WebAssembly.compileStreaming) {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch (e) {  // a server without the application/wasm type: compile from the bytes instead
      if (!(e instanceof TypeError)) throw e;
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new LinferError(`cannot fetch ${url}: HTTP ${response.status}`, 2);
  return WebAssembly.compile(await response.arrayBuffer());
}

// A module's loader, a classic script beside this file (a threads module's workers load it too):
// in Node required (CommonJS), in browsers imported (it names its factory on globalThis).
async function loaderFiles(spec) {
  const url = (name) => new URL('./' + name, import.meta.url);
  if (IN_NODE) {
    const { createRequire } = await import('node:module');
    const { fileURLToPath } = await import('node:url');
    const script = fileURLToPath(url(spec.loader));
    return { factory: createRequire(import.meta.url)(script), script, worker: spec.worker && fileURLToPath(url(spec.worker)) };
  }
  const script = url(spec.loader).href;
  await import(script);
  return { factory: globalThis[spec.factory], script, worker: spec.worker && url(spec.worker).href };
}

export { Model, Session, LinferError, version, heapStats, moduleInfo, load };
export default { Model, Session, LinferError, version, heapStats, moduleInfo, load };
