// SPDX-License-Identifier: Apache-2.0
// ---- CommonJS (runtime/js/lib/tail.cjs): Node reads linfer.wasm beside this file -------------
function loadWasm(file, imports) {
  const bytes = require('fs').readFileSync(require('path').join(__dirname, file));
  return WebAssembly.instantiate(bytes, imports).then((r) => r.instance);
}

module.exports = { Model, Session, LinferError, version, heapStats, moduleInfo };
