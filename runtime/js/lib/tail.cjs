// SPDX-License-Identifier: Apache-2.0
// ---- CommonJS (runtime/js/lib/tail.cjs): Node reads linfer.wasm beside this file -------------
function loadWasm(file, imports) {
  const bytes = require('fs').readFileSync(require('path').join(__dirname, file));
  return WebAssembly.instantiate(bytes, imports);  // { instance, module }
}

// The threads module's loader (CommonJS, beside this file) and the paths its workers load.
function threadsFiles() {
  return new Promise((resolve) => {
    const path = require('path');
    const script = path.join(__dirname, 'linfer-threads.js');
    resolve({ factory: require(script), script, worker: path.join(__dirname, 'linfer-threads.worker.js') });
  });
}

module.exports = { Model, Session, LinferError, version, heapStats, moduleInfo, load };
