// SPDX-License-Identifier: Apache-2.0
// RAYON_NUM_THREADS=1 node bench.js TOKENIZER.json CORPUS: Hugging Face tokenizers' time for the
// corpus's lines (encodeBatch with special tokens, the best of 3), tokens per second.
const fs = require("fs");
const { Tokenizer } = require("tokenizers");
const tokenizer = Tokenizer.fromFile(process.argv[2]);
const data = fs.readFileSync(process.argv[3]);
const lines = new TextDecoder("utf-8").decode(data).split("\n");
if (lines[lines.length - 1] === "") lines.pop();
(async () => {
  let best = Infinity, tokens = 0;
  for (let run = 0; run < 3; ++run) {
    const t0 = process.hrtime.bigint();
    const encodings = await tokenizer.encodeBatch(lines, { addSpecialTokens: true });
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    tokens = encodings.reduce((n, e) => n + e.getIds().length, 0);
    best = Math.min(best, seconds);
  }
  console.error(`hf tokenizers: ${lines.length} lines, ${tokens} tokens in ${best.toFixed(3)} s: ` +
                `${Math.round(tokens / best)} tokens/s, ${(data.length / best / 1e6).toFixed(1)} MB/s`);
})();
