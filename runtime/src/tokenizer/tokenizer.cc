// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace linfer::rt {
namespace {

uint64_t hash_bytes(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(s[i])) * 1099511628211ull;
  return h ^ h >> 29;
}
uint64_t hash_pair(uint32_t a, uint32_t b) {
  uint64_t h = (uint64_t(a) << 32 | b) * 0x9E3779B97F4A7C15ull;
  return h ^ h >> 31;
}
size_t table_size(size_t n) {  // a power of two at least twice n: probes stay short
  size_t s = 16;
  while (s < 2 * n) s *= 2;
  return s;
}

}  // namespace

Status PieceTable::build(const TokenizerView& t) {
  t_ = &t;
  const size_t size = table_size(t.num_pieces);
  if (Status s = allocating("the tokenizer's piece table", size * sizeof(uint32_t), [&] { slots_.assign(size, 0); });
      !s.ok())
    return s;
  for (uint32_t id = 0; id < t.num_pieces; ++id) {
    const std::string_view p = t.piece(id);
    if (find(p.data(), p.size()) >= 0) return invalid_model("tokenizer: piece {} repeats an earlier piece", kept(id));
    size_t i = hash_bytes(p.data(), p.size()) & (size - 1);
    while (slots_[i]) i = (i + 1) & (size - 1);
    slots_[i] = id + 1;
  }
  return {};
}

int32_t PieceTable::find(const char* s, size_t n) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash_bytes(s, n) & mask; slots_[i]; i = (i + 1) & mask) {
    const std::string_view p = t_->piece(slots_[i] - 1);
    if (p.size() == n && std::memcmp(p.data(), s, n) == 0) return int32_t(slots_[i] - 1);
  }
  return -1;
}

Status PrefixSet::build(const TokenizerView& t, bool (*wanted)(const TokenizerView&, uint32_t id)) {
  t_ = &t;
  uint64_t count = 0;
  for (uint32_t id = 0; id < t.num_pieces; ++id)
    if (wanted(t, id)) count += t.piece(id).size();
  const size_t size = table_size(size_t(count));
  if (Status s = allocating("the tokenizer's prefix table", size * sizeof(Entry),
                            [&] {
                              slots_.assign(size, Entry{0, 0});
                            });
      !s.ok())
    return s;
  for (uint32_t id = 0; id < t.num_pieces; ++id) {
    if (!wanted(t, id)) continue;
    const std::string_view p = t.piece(id);
    for (uint32_t length = 1; length < p.size(); ++length) {
      if (contains(p.data(), length)) continue;
      size_t i = hash_bytes(p.data(), length) & (size - 1);
      while (slots_[i].length) i = (i + 1) & (size - 1);
      slots_[i] = {id, length};
    }
  }
  return {};
}

bool PrefixSet::contains(const char* s, size_t n) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash_bytes(s, n) & mask; slots_[i].length; i = (i + 1) & mask)
    if (slots_[i].length == n && std::memcmp(t_->piece(slots_[i].id).data(), s, n) == 0) return true;
  return false;
}

Status MergeTable::build(const TokenizerView& t, const PieceTable& pieces) {
  const size_t size = table_size(t.num_merges);
  if (Status s = allocating("the tokenizer's merge table", size * sizeof(Merge),
                            [&] {
                              slots_.assign(size, Merge{0, 0, UINT32_MAX, 0});
                            });
      !s.ok())
    return s;
  std::string joined;
  for (uint32_t rank = 0; rank < t.num_merges; ++rank) {
    const uint32_t left = t.merges[2 * rank], right = t.merges[2 * rank + 1];
    if (Status s = allocating("a merged piece", t.piece(left).size() + t.piece(right).size(),
                              [&] {
                                joined.assign(t.piece(left));
                                joined.append(t.piece(right));
                              });
        !s.ok())
      return s;
    const int32_t result = pieces.find(joined.data(), joined.size());
    if (result < 0) return invalid_model("tokenizer: merge {} makes a piece that is not in the vocabulary", kept(rank));
    if (find(left, right)) continue;  // a repeated merge keeps its first rank
    size_t i = hash_pair(left, right) & (size - 1);
    while (slots_[i].rank != UINT32_MAX) i = (i + 1) & (size - 1);
    slots_[i] = {left, right, rank, uint32_t(result)};
  }
  return {};
}

const MergeTable::Merge* MergeTable::find(uint32_t left, uint32_t right) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash_pair(left, right) & mask; slots_[i].rank != UINT32_MAX; i = (i + 1) & mask)
    if (slots_[i].left == left && slots_[i].right == right) return &slots_[i];
  return nullptr;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::build(const TokenizerView& view) {
  std::unique_ptr<Tokenizer> t(new (std::nothrow) Tokenizer());
  if (!t) return out_of_memory("the tokenizer", sizeof(Tokenizer));
  t->t_ = view;
  if (Status s = t->pieces_.build(t->t_); !s.ok()) return s;
  if (view.kind == TokenizerKind::ByteLevelBpe) {
    if (Status s = t->merges_.build(t->t_, t->pieces_); !s.ok()) return s;
    for (int b = 0; b < 256; ++b) {
      const char c = char(b);
      t->byte_ids_[b] = t->pieces_.find(&c, 1);
      if (t->byte_ids_[b] < 0) return invalid_model("tokenizer: byte-level BPE has no piece for byte {}", kept(b));
    }
  }
  if (view.sentencepiece())
    if (Status s = t->build_sentencepiece(); !s.ok()) return s;
  // Model ids of the pieces: the inverse of model_ids for detokenize, and which are special.
  uint32_t model_vocab = 0;
  for (uint32_t id = 0; id < view.num_pieces; ++id) model_vocab = std::max(model_vocab, view.model_id(id) + 1);
  for (const auto* ids : {&view.prefix, &view.suffix})
    for (uint32_t id : *ids) model_vocab = std::max(model_vocab, id + 1);
  if (Status s = allocating("the tokenizer's special ids", model_vocab, [&] { t->special_.assign(model_vocab, 0); });
      !s.ok())
    return s;
  for (const auto* ids : {&view.prefix, &view.suffix})
    for (uint32_t id : *ids) t->special_[id] = 1;
  for (uint32_t id : view.added) t->special_[view.model_id(id)] = 1;
  if (view.model_ids) {
    if (Status s = allocating("the tokenizer's id map", uint64_t(model_vocab) * sizeof(int32_t),
                              [&] { t->tokenizer_id_.assign(model_vocab, -1); });
        !s.ok())
      return s;
    for (uint32_t id = 0; id < view.num_pieces; ++id)
      if (t->tokenizer_id_[view.model_ids[id]] < 0) t->tokenizer_id_[view.model_ids[id]] = int32_t(id);
  }
  return t;
}

// Added pieces ([MASK], <|endoftext|>) are found in the raw input first, as Hugging Face does
// (leftmost, then longest), taking the whitespace before (lstrip) or after (rstrip) them where
// their flags say so; the text between them is tokenized on its own.
Status Tokenizer::tokenize(const char* utf8, size_t length, IdSink* sink) const {
  for (uint32_t id : t_.prefix) sink->push(id);
  const uint8_t* s = reinterpret_cast<const uint8_t*>(utf8);
  size_t start = 0;
  for (size_t i = 0; i < length && !t_.added.empty();) {
    int32_t best = -1;
    size_t best_len = 0, best_k = 0;
    for (size_t k = 0; k < t_.added.size(); ++k) {
      if (!t_.added_flags.empty() && (t_.added_flags[k] & kAddedNormalized)) continue;  // (unigram.cc)
      const std::string_view p = t_.piece(t_.added[k]);
      if (p.size() > best_len && p.size() <= length - i && std::memcmp(p.data(), s + i, p.size()) == 0)
        best = int32_t(t_.added[k]), best_len = p.size(), best_k = k;
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const uint8_t strip = t_.added_flags.empty() ? 0 : t_.added_flags[best_k];
    size_t begin = i, end = i + best_len;
    uint32_t cp;
    if (strip & kAddedLstrip)  // lstrip: back over whitespace characters, not past the previous match
      for (size_t back = 1; back <= 4 && back <= begin - start;) {
        if (unicode::decode(s + begin - back, back, &cp) == back && unicode::is_whitespace(cp)) {
          begin -= back;
          back = 1;
        } else {
          ++back;
        }
      }
    if (strip & kAddedRstrip)  // rstrip
      while (end < length) {
        const size_t len = unicode::decode(s + end, length - end, &cp);
        if (!unicode::is_whitespace(cp)) break;
        end += len;
      }
    if (Status st = tokenize_segment(s + start, begin - start, start == 0, sink); !st.ok()) return st;
    sink->push(t_.model_id(uint32_t(best)));
    i = end;
    start = i;
  }
  if (Status st = tokenize_segment(s + start, length - start, start == 0, sink); !st.ok()) return st;
  for (uint32_t id : t_.suffix) sink->push(id);
  return {};
}

Status Tokenizer::build_sentencepiece() {
  // precompiled_charsmap: a little-endian uint32 trie size, the trie's units, the strings.
  if (t_.charsmap && t_.charsmap_size) {
    uint32_t trie_bytes;
    if (t_.charsmap_size < 4) return invalid_model("tokenizer: the character map is shorter than its header");
    std::memcpy(&trie_bytes, t_.charsmap, 4);
    if (trie_bytes < 4 || trie_bytes % 4 || trie_bytes > t_.charsmap_size - 4)
      return invalid_model("tokenizer: the character map's trie of {} bytes does not fit its {} bytes",
                           kept(trie_bytes), kept(t_.charsmap_size));
    trie_units_ = t_.charsmap + 4;
    trie_size_ = trie_bytes / 4;
    normalized_ = reinterpret_cast<const char*>(t_.charsmap + 4 + trie_bytes);
    normalized_size_ = t_.charsmap_size - 4 - trie_bytes;
  }
  // Hugging Face's Unigram matches every piece of its vocabulary, special ones included, and
  // Metaspace cuts words at every "▁", so a piece with one inside is never matched.
  const bool every_piece = t_.kind == TokenizerKind::Unigram;
  bool any = false;
  for (uint32_t id = 0; id < t_.num_pieces; ++id) {
    if (every_piece) {
      min_score_ = any ? std::min(min_score_, t_.scores[id]) : t_.scores[id];
      max_piece_bytes_ = std::max(max_piece_bytes_, t_.piece(id).size());
      any = true;
      continue;
    }
    if (t_.piece_types[id] != uint8_t(PieceType::Normal)) continue;
    const std::string_view p = t_.piece(id);
    if (p.find("\xE2\x96\x81", 1) != std::string_view::npos)
      return invalid_model(
          "tokenizer: piece {} has U+2581 after its first character (linfer cuts SentencePiece text at whitespace)",
          kept(id));
    min_score_ = any ? std::min(min_score_, t_.scores[id]) : t_.scores[id];
    max_piece_bytes_ = std::max(max_piece_bytes_, p.size());
    any = true;
  }
  if (Status s = sp_prefixes_.build(t_,
                                    [](const TokenizerView& t, uint32_t id) {
                                      return t.kind == TokenizerKind::Unigram ||
                                             t.piece_types[id] == uint8_t(PieceType::Normal);
                                    });
      !s.ok())
    return s;
  for (size_t k = 0; k < t_.added_flags.size(); ++k) {
    if (!(t_.added_flags[k] & kAddedNormalized)) continue;
    const std::string_view p = t_.piece(t_.added[k]);
    uint32_t cp;
    unicode::decode(reinterpret_cast<const uint8_t*>(p.data()), p.size(), &cp);
    if (p.size() > kMaxNormalizedAdded || unicode::is_whitespace(cp) || p.find(' ') != std::string_view::npos ||
        !unigram_keeps(p))
      return invalid_model(
          "tokenizer: added piece {} is matched in the normalized text but is longer than {} bytes, holds a space or is "
          "changed by the normalizer",
          kept(t_.added[k]), kept(kMaxNormalizedAdded));
  }
  if (t_.byte_fallback)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      sp_byte_ids_[b] = pieces_.find(name, 6);
      if (sp_byte_ids_[b] < 0 || t_.piece_types[sp_byte_ids_[b]] != uint8_t(PieceType::Byte))
        return invalid_model(std::string("tokenizer: byte fallback without the byte piece ") + name);
    }
  return {};
}

Status Tokenizer::tokenize_segment(const uint8_t* s, size_t n, bool at_text_start, IdSink* sink) const {
  if (n == 0) return {};
  if (t_.kind == TokenizerKind::Unigram) return unigram(s, n, at_text_start, sink);
  if (t_.kind == TokenizerKind::ByteLevelBpe) return byte_bpe(s, n, sink);
  if (t_.sentencepiece()) return sentencepiece(s, n, sink);
  wordpiece(s, n, sink);
  return {};
}

Status Tokenizer::detokenize(const int32_t* ids, size_t count, char* out, size_t capacity, size_t* length) const {
  size_t n = 0;
  auto put = [&](const char* p, size_t k) {
    for (size_t i = 0; i < k; ++i, ++n)
      if (n < capacity) out[n] = p[i];
  };
  const std::string_view cont = t_.continuing_prefix;
  bool first = true;
  for (size_t i = 0; i < count; ++i) {
    const int32_t model_id = ids[i];
    const bool in_model = model_id >= 0 && size_t(model_id) < special_.size();
    if (in_model && special_[model_id]) continue;
    const int32_t id = !in_model ? -1 : tokenizer_id_.empty() ? model_id : tokenizer_id_[model_id];
    if (id < 0 || uint32_t(id) >= t_.num_pieces)
      return invalid_argument("id {} at position {} is not a piece of the tokenizer", kept(model_id), kept(i));
    std::string_view p = t_.piece(uint32_t(id));
    if (t_.sentencepiece()) {
      // SentencePiece's decoder: "▁" is a space (the text's first one left out), byte pieces
      // their byte, [unk] " ⁇ ", control pieces nothing.
      const auto type = PieceType(t_.piece_types[id]);
      if (type == PieceType::Control) continue;
      if (type == PieceType::Byte) {
        const char byte = char(std::strtol(std::string(p.substr(3, 2)).c_str(), nullptr, 16));
        put(&byte, 1);
      } else if (type == PieceType::Unknown) {
        put(" \xE2\x81\x87 ", 5);
      } else {
        for (size_t k = 0; k < p.size();) {
          if (p.substr(k, 3) == "\xE2\x96\x81") {
            if (n || !t_.add_dummy_prefix) put(" ", 1);
            k += 3;
          } else {
            put(p.data() + k++, 1);
          }
        }
      }
      continue;
    }
    if (t_.kind == TokenizerKind::WordPiece) {
      // Hugging Face's WordPiece decoder: words joined by spaces, continuations glued on.
      if (!cont.empty() && p.size() > cont.size() && p.substr(0, cont.size()) == cont)
        p.remove_prefix(cont.size());
      else if (!first)
        put(" ", 1);
    }
    put(p.data(), p.size());
    first = false;
  }
  *length = n;
  return {};
}

void Tokenizer::WordBuffer::put(const char* p, size_t k, Status* status, const char* what) {
  if (length + k > kMaxWordBytes) {
    if (status->ok())
      *status =
          unsupported("a word of more than {} bytes is longer than {} (no space in it)", kept(kMaxWordBytes), what);
    return;
  }
  std::memcpy(bytes + length, p, k);
  length += k;
}

}  // namespace linfer::rt
