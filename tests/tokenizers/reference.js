// SPDX-License-Identifier: Apache-2.0
// node reference.js TOKENIZER.json CORPUS: Hugging Face tokenizers' ids of each corpus line (the
// bytes decoded as UTF-8 with U+FFFD for ill-formed sequences), one line each, with special
// tokens (the template), as linfer-tokenize prints them.
const fs = require("fs");
const { Tokenizer } = require("tokenizers");
const tokenizer = Tokenizer.fromFile(process.argv[2]);
const data = fs.readFileSync(process.argv[3]);
const lines = new TextDecoder("utf-8").decode(data).split("\n");
if (lines[lines.length - 1] === "") lines.pop();
(async () => {
  const encodings = await tokenizer.encodeBatch(lines, { addSpecialTokens: true });
  process.stdout.write(encodings.map((e) => e.getIds().join(" ")).join("\n") + "\n");
})();
