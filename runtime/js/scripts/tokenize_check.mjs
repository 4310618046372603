// SPDX-License-Identifier: Apache-2.0
// node tokenize_check.mjs PACKAGE MODEL.lfm CORPUS NATIVE_IDS (scripts/test-wasm.sh): the package's
// Model.tokenize gives the native tokenizer's ids (linfer-tokenize's output, one line of ids per
// corpus line) on every line of the tokenizer corpus (tests/tokenizers/make_corpus.py: many
// scripts, emoji, control characters, ill-formed UTF-8, the special tokens); Session.runText gives
// run() of those ids; a model without a tokenizer refuses with a LinferError.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkg, modelFile, corpusFile, idsFile] = process.argv.slice(2);
const linfer = await import(pathToFileURL(path.join(pkg, 'index.mjs')));
// The corpus's bytes line by line as linfer-tokenize reads them; ill-formed UTF-8 becomes U+FFFD
// per maximal subpart in TextDecoder as in linfer, so the string's UTF-8 tokenizes the same.
const bytes = fs.readFileSync(corpusFile);
const lines = [];
for (let start = 0; start < bytes.length;) {
  let end = bytes.indexOf(10, start);
  if (end < 0) end = bytes.length;
  lines.push(new TextDecoder('utf-8').decode(bytes.subarray(start, end)));
  start = end + 1;
}
const native = fs.readFileSync(idsFile, 'utf8').split('\n');
const model = await linfer.Model.fromBytes(fs.readFileSync(modelFile));
assert.ok(model.hasTokenizer);
let bad = 0, ids = 0;
for (let i = 0; i < lines.length; ++i) {
  const got = Array.from(model.tokenize(lines[i])).join(' ');
  if (got !== native[i]) {
    if (++bad <= 3) console.log(`line ${i + 1}: ${JSON.stringify(lines[i].slice(0, 80))}\n  wasm:   ${got}\n  native: ${native[i]}`);
  }
  ids += got ? got.split(' ').length : 0;
}
assert.equal(bad, 0, `${bad} of ${lines.length} lines differ`);
const session = model.createSession();
const text = lines.find((l) => { const n = model.tokenize(l).length; return n > 1 && n <= session.maxSeqLen; });
assert.deepEqual(session.runText(text).data, session.run(model.tokenize(text)).data);
assert.throws(() => model.tokenize(42), linfer.LinferError);
const plain = await linfer.Model.fromBytes(fs.readFileSync(new URL('../../../examples/models/langid.int8.lfm', import.meta.url)));
assert.equal(plain.hasTokenizer, false);
assert.throws(() => plain.tokenize('abc'), (e) => e instanceof linfer.LinferError && e.statusName === 'UNSUPPORTED');
session.dispose(); model.dispose(); plain.dispose();
const m = await linfer.moduleInfo();
console.log(`tokenize_check: ${path.basename(modelFile)}: ${lines.length} of ${lines.length} lines as the native ` +
  `tokenizer (${ids} ids), runText = run(tokenize); ${m.file}, node ${process.version}`);
