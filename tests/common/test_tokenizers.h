// SPDX-License-Identifier: Apache-2.0
// Small tokenizers for the unit tests, built with the converter's TokenizerData: a WordPiece one
// (BERT's normalizer, [CLS] ... [SEP]) and a byte-level BPE one (the 256 bytes and five merges).
#pragma once

#include <string>

#include "test_models.h"
#include "tokenizers/tokenizer_source.h"

namespace linfer::testing {

inline convert::TokenizerData wordpiece_tokenizer() {
  convert::TokenizerData t;
  t.pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",       "un",  "##aff", "##able",
              "hello", ",",     "!",     "cafe",  "\xE4\xB8\xAD", "##s", "a"};
  TokenizerView& s = t.settings;
  s.kind = TokenizerKind::WordPiece;
  s.lowercase = s.strip_accents = true;
  s.continuing_prefix = "##";
  s.unk_id = 1;
  s.prefix = {2};
  s.suffix = {3};
  s.added = {0, 1, 2, 3, 4};
  return t;
}

// Ids 0-255 the bytes, then he (256), ll, hell, hello, " w" (260) and <|endoftext|> (261).
inline convert::TokenizerData byte_bpe_tokenizer() {
  convert::TokenizerData t;
  for (int b = 0; b < 256; ++b) t.pieces.push_back(std::string(1, char(b)));
  for (const char* p : {"he", "ll", "hell", "hello", " w", "<|endoftext|>"}) t.pieces.push_back(p);
  t.merges = {'h', 'e', 'l', 'l', 256, 257, 258, 'o', ' ', 'w'};
  t.settings.kind = TokenizerKind::ByteLevelBpe;
  t.settings.added = {261};
  return t;
}

// SentencePiece unigram without a character map: <unk>, <s>, </s>, then ▁ (3), a, b, ▁ab (6), ▁c.
inline convert::TokenizerData sentencepiece_tokenizer() {
  convert::TokenizerData t;
  t.pieces = {"<unk>",
              "<s>",
              "</s>",
              "\xE2\x96\x81",
              "a",
              "b",
              "\xE2\x96\x81"
              "ab",
              "\xE2\x96\x81"
              "c"};
  t.scores = {0, 0, 0, -2, -3, -3, -1, -4};
  t.types = {2, 3, 3, 1, 1, 1, 1, 1};
  t.settings.kind = TokenizerKind::SentencePieceUnigram;
  t.settings.unk_id = 0;
  return t;
}

// Hugging Face's Unigram as XLM-RoBERTa's tokenizer.json has it (no character map): specials
// first, <mask> last, matched in the normalized text and taking the whitespace before it.
inline convert::TokenizerData unigram_tokenizer() {
  convert::TokenizerData t;
  t.pieces = {"<s>",
              "<pad>",
              "</s>",
              "<unk>",
              "\xE2\x96\x81",
              "a",
              "b",
              "\xE2\x96\x81"
              "ab",
              "\xE2\x96\x81"
              "c",
              "<mask>"};
  t.scores = {0, 0, 0, 0, -2, -3, -3, -1, -4, 0};
  t.types = {3, 3, 3, 2, 1, 1, 1, 1, 1, 3};
  t.settings.kind = TokenizerKind::Unigram;
  t.settings.unk_id = 3;
  t.settings.prefix = {0};
  t.settings.suffix = {2};
  t.settings.added = {0, 1, 2, 3, 9};
  t.settings.added_flags = {0, 0, 0, 0, kAddedLstrip | kAddedNormalized};
  t.settings.strip_right = true;
  t.settings.space_runs = 2;
  return t;
}

// A small model with the tokenizer (its vocabulary widened to fit), as file bytes.
inline std::vector<uint8_t> model_with_tokenizer(convert::TokenizerData& t, bool validate = true) {
  EncoderConfig c = small_config();
  c.vocab_size = 300;
  OwnedDescription o = make_model(c);
  o.desc.tokenizer = t.view();
  return model_bytes(o.desc, validate);
}

}  // namespace linfer::testing
