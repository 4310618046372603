// SPDX-License-Identifier: Apache-2.0
// The tokenizer a .lfm file may carry (schema/linfer.fbs, table Tokenizer; docs/tokenizers.md):
// views into the file when read, into the converter's vectors when written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "linfer/types/status.h"

namespace linfer {

enum class TokenizerKind : uint8_t {
  WordPiece = 0,
  ByteLevelBpe = 1,
  SentencePieceUnigram = 2,
  SentencePieceBpe = 3,
  Unigram = 4
};

// SentencePiece's piece types (sentencepiece_model.proto).
enum class PieceType : uint8_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct TokenizerView {
  bool present = false;
  TokenizerKind kind = TokenizerKind::WordPiece;
  const uint8_t* piece_bytes = nullptr;
  size_t piece_bytes_size = 0;
  const uint32_t* piece_ends = nullptr;  // num_pieces entries
  uint32_t num_pieces = 0;
  const uint32_t* model_ids = nullptr;  // num_pieces entries, or null: tokenizer id = model id
  const uint32_t* merges = nullptr;     // 2 * num_merges entries
  uint32_t num_merges = 0;
  int32_t unk_id = -1;
  std::vector<uint32_t> prefix, suffix;  // model ids (a handful)
  std::vector<uint32_t> added;           // tokenizer ids matched literally in the input
  bool clean_text = true, split_cjk = true, strip_accents = false, lowercase = false;
  std::string continuing_prefix;
  uint32_t max_word_chars = 100;
  // SentencePiece
  const float* scores = nullptr;         // num_pieces entries
  const uint8_t* piece_types = nullptr;  // num_pieces entries (PieceType)
  const uint8_t* charsmap = nullptr;     // precompiled_charsmap, or null (identity)
  size_t charsmap_size = 0;
  bool add_dummy_prefix = true, remove_extra_whitespaces = true, byte_fallback = false;
  // Added pieces' flags (parallel to added; empty: none): bit 0 lstrip, bit 1 rstrip, bit 2
  // matched in the normalized text (kAddedLstrip, ...).
  std::vector<uint8_t> added_flags;
  // Unigram (Hugging Face's tokenizer.json pipeline)
  bool strip_right = false;
  uint8_t space_runs = 0;      // Replace(" {2,}"): 0 none, 1 by " ", 2 by U+2581
  uint8_t prepend_scheme = 0;  // Metaspace: 0 always, 1 first, 2 never

  bool sentencepiece() const {
    return kind == TokenizerKind::SentencePieceUnigram || kind == TokenizerKind::SentencePieceBpe ||
           kind == TokenizerKind::Unigram;
  }

  std::string_view piece(uint32_t id) const {
    const uint32_t begin = id ? piece_ends[id - 1] : 0;
    return {reinterpret_cast<const char*>(piece_bytes) + begin, size_t(piece_ends[id] - begin)};
  }
  uint32_t model_id(uint32_t id) const { return model_ids ? model_ids[id] : id; }
};

constexpr uint8_t kAddedLstrip = 1, kAddedRstrip = 2, kAddedNormalized = 4;

// Largest tokenizer a file may declare (pieces and merges; each also bounded by the file's size).
constexpr uint32_t kMaxTokenizerPieces = 1u << 24;

// Checks a tokenizer against the model's vocabulary: offsets inside the blob, pieces non-empty
// (and UTF-8 for WordPiece), every id in range (merges and unk below num_pieces; model ids, the
// prefix and the suffix below vocab_size). A failure is LINFER_ERROR_INVALID_MODEL, its message one
// line.
err::Status validate_tokenizer(const TokenizerView& t, uint32_t vocab_size);

// Whether [s, s + n) is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(const uint8_t* s, size_t n);

}  // namespace linfer
