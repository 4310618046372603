// SPDX-License-Identifier: Apache-2.0
// A model's tokenizer (docs/tokenizers.md): built once at load from the file's Tokenizer table
// (linfer/format/tokenizer.h), whose pieces stay in the file; only the lookup tables below are
// allocated, each bounded by the file's size. Immutable after load, shared by every thread.
//
// tokenize() allocates nothing: ids go to the caller's buffer, and its scratch is on the stack,
// one word at a time, bounded by kMaxWordBytes (a byte-level BPE word, a SentencePiece "▁word")
// and max_word_chars (a WordPiece word; longer ones are [UNK] as in Hugging Face's WordPiece).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "linfer/format/tokenizer.h"
#include "status.h"

namespace linfer::rt {

// Piece bytes -> tokenizer id: open addressing over ids, read against the file's piece bytes.
class PieceTable {
 public:
  Status build(const TokenizerView& t);
  int32_t find(const char* s, size_t n) const;  // -1 when absent
 private:
  const TokenizerView* t_ = nullptr;
  std::vector<uint32_t> slots_;  // id + 1, 0 = empty; size a power of two
};

// The proper prefixes of a set of pieces (id, length into the file's piece bytes): lets a
// longest-match walk stop as soon as no piece can follow, as a trie's would.
class PrefixSet {
 public:
  Status build(const TokenizerView& t, bool (*wanted)(const TokenizerView&, uint32_t id));
  bool contains(const char* s, size_t n) const;

 private:
  struct Entry {
    uint32_t id, length;  // length 0 = empty slot
  };
  const TokenizerView* t_ = nullptr;
  std::vector<Entry> slots_;  // a power of two
};

// (left, right) piece ids -> the merge's rank and the merged piece's id.
class MergeTable {
 public:
  struct Merge {
    uint32_t left, right, rank, result;
  };
  Status build(const TokenizerView& t, const PieceTable& pieces);
  const Merge* find(uint32_t left, uint32_t right) const;

 private:
  std::vector<Merge> slots_;  // rank UINT32_MAX = empty; size a power of two
};

// Where tokenize() puts ids: the caller's buffer while it lasts, and the count always, so that a
// too-small buffer (or none) still learns the size it needs.
struct IdSink {
  int32_t* ids;
  size_t capacity;
  size_t count = 0;
  void push(uint32_t model_id) {
    if (count < capacity) ids[count] = int32_t(model_id);
    ++count;
  }
};

class Tokenizer {
 public:
  // Longest byte-level BPE word (a pre-tokenizer match) or SentencePiece word tokenize() takes:
  // its scratch lives on the stack (about 8 bytes a byte for BPE, 16 for SentencePiece).
  static constexpr size_t kMaxWordBytes = 4096;
  // Unigram: the longest added piece matched in the normalized text, and the most whitespace
  // held before one that may take it (lstrip).
  static constexpr size_t kMaxNormalizedAdded = 256, kMaxHeldWhitespace = 1024;

  static Result<std::unique_ptr<Tokenizer>> build(const TokenizerView& view);

  // The model ids of utf8[0, length), with the template around them, into sink.
  Status tokenize(const char* utf8, size_t length, IdSink* sink) const;
  // The text of model ids (special ones left out) into out[0, capacity); *length gets the size
  // it needs.
  Status detokenize(const int32_t* ids, size_t count, char* out, size_t capacity, size_t* length) const;

  const TokenizerView& view() const { return t_; }

 private:
  // A word built a piece at a time (SentencePiece's and Unigram's "▁word"), at most
  // kMaxWordBytes: a piece past that is dropped and sets *status once, "a word of more than N
  // bytes is longer than <what> (no space in it)".
  struct WordBuffer {
    char bytes[kMaxWordBytes];
    size_t length = 0;
    void put(const char* p, size_t k, Status* status, const char* what);
  };
  Status tokenize_segment(const uint8_t* s, size_t n, bool at_text_start, IdSink* sink) const;
  // wordpiece.cc
  void wordpiece(const uint8_t* s, size_t n, IdSink* sink) const;
  void wordpiece_word(char* word, size_t bytes, size_t chars, IdSink* sink) const;
  // byte_bpe.cc
  Status byte_bpe(const uint8_t* s, size_t n, IdSink* sink) const;
  Status bpe_word(const uint8_t* s, size_t n, IdSink* sink) const;
  // sentencepiece.cc
  struct SpState {
    float path_score = 0;       // the unigram path's score so far
    bool prev_unknown = false;  // the last piece was [unk] (a run gives one)
  };
  Status sentencepiece(const uint8_t* s, size_t n, IdSink* sink) const;
  size_t sp_longest_rule(const uint8_t* s, size_t n, uint32_t* value) const;
  size_t sp_normalize_prefix(const uint8_t* s, size_t n, const char** out, size_t* out_len) const;
  void sp_word(const char* w, size_t n, SpState* st, IdSink* sink) const;
  void sp_emit(int32_t id, const char* text, size_t len, SpState* st, IdSink* sink) const;
  int32_t sp_normal_piece(const char* s, size_t n) const;
  Status build_sentencepiece();
  // unigram.cc (Hugging Face's Unigram pipeline)
  Status unigram(const uint8_t* s, size_t n, bool at_text_start, IdSink* sink) const;
  using CharSink = void (*)(void* context, const char* bytes, size_t length, uint32_t code_point);
  void unigram_normalize(const uint8_t* s, size_t n, CharSink emit, void* context) const;
  size_t sp_shortest_rule(const uint8_t* s, size_t n, uint32_t* value) const;
  void unigram_word(const char* w, size_t n, IdSink* sink) const;
  bool unigram_keeps(std::string_view piece) const;

  TokenizerView t_;
  PieceTable pieces_;
  PrefixSet sp_prefixes_;  // SentencePiece: prefixes of the normal pieces (Unigram: of every piece)
  MergeTable merges_;
  int32_t byte_ids_[256];  // byte-level BPE: the piece of each single byte
  // SentencePiece: the character map's trie (4-byte units) and strings, the lowest normal score,
  // the <0xXX> pieces, the longest normal piece.
  const uint8_t* trie_units_ = nullptr;
  size_t trie_size_ = 0;
  const char* normalized_ = nullptr;
  size_t normalized_size_ = 0;
  float min_score_ = 0;
  int32_t sp_byte_ids_[256];
  size_t max_piece_bytes_ = 0;
  std::vector<int32_t> tokenizer_id_;  // model id -> tokenizer id when model_ids remap them, else empty
  std::vector<uint8_t> special_;       // model id -> 1 for template and added pieces (left out by detokenize)
};

}  // namespace linfer::rt
