// SPDX-License-Identifier: Apache-2.0
// ---- CommonJS (runtime/js/lib/tail.cjs): Node reads the modules beside this file --------------
function compileWasm(file) {
  return new Promise((resolve) => resolve(require('fs').readFileSync(require('path').join(__dirname, file))))
    .then((bytes) => WebAssembly.compile(bytes));
}

// A module's loader (CommonJS, beside this file) and, for a threads module, the paths its workers load.
function loaderFiles(spec) {
  return new Promise((resolve) => {
    const path = require('path');
    const script = path.join(__dirname, spec.loader);
    resolve({ factory: require(script), script, worker: spec.worker && path.join(__dirname, spec.worker) });
  });
}

module.exports = { Model, Session, LinferError, version, heapStats, moduleInfo, load };
