// SPDX-License-Identifier: Apache-2.0
// The converter's tokenizer readers (--tokenizer FILE, repeatable): each turns its upstream files
// into a TokenizerData, whose view() is what the .lfm stores (linfer/format/tokenizer.h).
// One file per source: hf_tokenizer_json.cc (Hugging Face tokenizer.json), gpt2_files.cc
// (GPT-2's encoder.json + vocab.bpe), bert_vocab.cc (BERT's vocab.txt), fairseq_dict.cc (fairseq's
// dict.txt, mapping GPT-2's ids to the model's), sentencepiece_model.cc (a SentencePiece .model).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "linfer/format/tokenizer.h"
#include "linfer/types/status.h"

namespace linfer::convert {

struct TokenizerData {
  TokenizerView settings;           // kind, unk, template, normalizer flags (no pointers)
  std::vector<std::string> pieces;  // by tokenizer id
  std::vector<uint32_t> merges;     // (left, right) ids by rank
  std::vector<uint32_t> model_ids;  // tokenizer id -> model id, or empty (the same)
  std::vector<float> scores;        // SentencePiece: per piece
  std::vector<uint8_t> types;       // SentencePiece: per piece (PieceType)
  std::string charsmap;             // SentencePiece: the precompiled character map
  // What view() points into.
  std::string piece_bytes;
  std::vector<uint32_t> piece_ends;

  // Lays the pieces out and returns the view the writer stores (valid while this object is).
  TokenizerView view();
  // The id of a piece, or -1.
  int32_t find(const std::string& piece) const;
};

// Reads the files (their kinds told apart by name and content), or fails naming what cannot be
// reproduced exactly (LINFER_ERROR_UNSUPPORTED), what is malformed (LINFER_ERROR_INVALID_MODEL),
// a file that cannot be read (LINFER_ERROR_IO) or files that do not go together
// (LINFER_ERROR_INVALID_ARGUMENT).
err::Result<TokenizerData> read_tokenizer(const std::vector<std::string>& paths);

// Per source; `text` is the file's contents.
err::Result<TokenizerData> read_hf_tokenizer_json(const std::string& text);
err::Result<TokenizerData> read_gpt2_files(const std::string& encoder_json, const std::string& vocab_bpe);
err::Result<TokenizerData> read_bert_vocab(const std::string& vocab_txt);
err::Result<TokenizerData> read_sentencepiece_model(const std::string& data);
// Maps the pieces read so far (GPT-2's) to the model's ids through fairseq's dict.txt.
err::Status apply_fairseq_dict(const std::string& dict_txt, TokenizerData* out);

// GPT-2's byte-to-unicode map undone: the bytes a byte-level piece stands for, or none when the
// piece is empty or has a character outside the map.
std::optional<std::string> byte_level_bytes(const std::string& piece);
// The ids of the pieces by their text (merges "a b" -> ids) appended to out->merges, for the BPE
// readers.
err::Status merges_from_strings(const std::vector<std::pair<std::string, std::string>>& pairs, TokenizerData* out);

}  // namespace linfer::convert
