// SPDX-License-Identifier: Apache-2.0
// SentencePiece (unigram and BPE models), as sentencepiece's SentencePieceProcessor::Encode does
// it: the normalizer (the .model's precompiled character map: longest match in a Darts
// double-array trie, else the character itself; leading, repeated and trailing whitespace
// removed; a space put before the text; spaces written as U+2581 "▁"), then
//   unigram: Viterbi over the pieces' scores (a piece's candidate summed in double against the
//            float stored, an unknown character's in float, as EncodeOptimized does),
//   BPE:     the adjacent pair whose joined piece scores highest merged first (leftmost among equals),
// then unknown pieces as <0xXX> byte pieces (byte fallback) or one [unk] per run of them.
// Pieces never hold "▁" after their first character (checked at load), so no piece crosses the
// start of a word: the text is tokenized one "▁word" at a time, in a bounded stack buffer, with the
// path score carried from word to word so that the arithmetic is the reference's.
#include <cstring>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace linfer::rt {
namespace {

constexpr char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's whitespace
constexpr float kUnknownPenalty = 10.0f;

uint32_t unit_at(const uint8_t* units, size_t i) {
  uint32_t u;
  std::memcpy(&u, units + 4 * i, 4);  // the file's bytes need not be 4-byte aligned
  return u;
}

}  // namespace

// The character map's longest rule for a prefix of s (a Darts double-array common prefix search):
// its length (0: none) and *value, the offset of what it maps to.
size_t Tokenizer::sp_longest_rule(const uint8_t* s, size_t n, uint32_t* value) const {
  size_t longest = 0;
  if (!trie_units_) return 0;
  size_t node = 0;
  uint32_t unit = unit_at(trie_units_, 0);
  node ^= (unit >> 10) << ((unit & (1u << 9)) >> 6);
  for (size_t i = 0; i < n; ++i) {
    node ^= s[i];
    if (node >= trie_size_) break;
    unit = unit_at(trie_units_, node);
    if ((unit & ((1u << 31) | 0xFF)) != s[i]) break;
    node ^= (unit >> 10) << ((unit & (1u << 9)) >> 6);
    if (node >= trie_size_) break;
    if ((unit >> 8) & 1) {
      const uint32_t v = unit_at(trie_units_, node) & ((1u << 31) - 1);
      if (v < normalized_size_) longest = i + 1, *value = v;
    }
  }
  return longest;
}

// What SentencePiece's normalizer makes of the text at s (n > 0 bytes): *out and *out_len, the
// normalized string; returns the bytes consumed. Ill-formed UTF-8 is U+FFFD (per maximal
// subpart), mapped as the reference maps the U+FFFD a lossy decoder gives it.
size_t Tokenizer::sp_normalize_prefix(const uint8_t* s, size_t n, const char** out, size_t* out_len) const {
  static const uint8_t kReplacementBytes[] = {0xEF, 0xBF, 0xBD};
  uint32_t value = 0, cp;
  size_t used = sp_longest_rule(s, n, &value), rule = used;
  if (!used) {
    used = unicode::decode(s, n, &cp);
    if (cp == unicode::kReplacement && (used != 3 || std::memcmp(s, kReplacementBytes, 3) != 0)) {
      s = kReplacementBytes;
      if (sp_longest_rule(s, 3, &value) != 3) {
        *out = reinterpret_cast<const char*>(kReplacementBytes), *out_len = 3;
        return used;
      }
      rule = 3;
    }
  }
  if (!rule) {
    *out = reinterpret_cast<const char*>(s), *out_len = used;
    return used;
  }
  *out = normalized_ + value;
  const void* end = std::memchr(*out, 0, normalized_size_ - value);
  *out_len = end ? size_t(static_cast<const char*>(end) - *out) : normalized_size_ - value;
  return used;
}

Status Tokenizer::sentencepiece(const uint8_t* s, size_t n, IdSink* sink) const {
  SpState st;
  // The word being built: "▁" and what follows it up to the next "▁".
  WordBuffer word;
  size_t pending_spaces = 0;
  Status status;
  auto end_word = [&] {
    if (word.length && status.ok()) sp_word(word.bytes, word.length, &st, sink);
    word.length = 0;
  };
  auto put = [&](const char* p, size_t k) { word.put(p, k, &status, "SentencePiece tokenizes"); };
  auto flush_spaces = [&] {
    for (; pending_spaces; --pending_spaces) {
      end_word();
      put(kSpace, 3);
    }
  };
  // One character of normalized text: spaces wait, so that trailing ones can be dropped.
  auto take = [&](const char* p, size_t k) {
    if (k == 3 && std::memcmp(p, kSpace, 3) == 0) {
      ++pending_spaces;
      return;
    }
    flush_spaces();
    put(p, k);
  };
  const bool squeeze = t_.remove_extra_whitespaces;
  size_t i = 0;
  const char* out;
  size_t out_len;
  if (squeeze)  // leading whitespace
    while (i < n) {
      const size_t used = sp_normalize_prefix(s + i, n - i, &out, &out_len);
      if (out_len != 1 || out[0] != ' ') break;
      i += used;
    }
  if (i == n) return {};
  if (t_.add_dummy_prefix) take(kSpace, 3);
  bool prev_space = squeeze;
  while (i < n) {
    i += sp_normalize_prefix(s + i, n - i, &out, &out_len);
    while (prev_space && out_len && out[0] == ' ') ++out, --out_len;
    if (out_len) {
      prev_space = out[out_len - 1] == ' ';
      for (size_t k = 0; k < out_len;) {
        if (out[k] == ' ') {
          take(kSpace, 3);
          ++k;
          continue;
        }
        uint32_t cp;
        const size_t len = unicode::decode(reinterpret_cast<const uint8_t*>(out + k), out_len - k, &cp);
        take(out + k, len);
        k += len;
      }
    }
    prev_space = prev_space && squeeze;
  }
  if (!squeeze) flush_spaces();
  end_word();
  return status;
}

// One piece of the result: unknown ones as their bytes' pieces, or one [unk] per run.
void Tokenizer::sp_emit(int32_t id, const char* text, size_t len, SpState* st, IdSink* sink) const {
  const bool unknown = id == t_.unk_id;
  if (unknown && t_.byte_fallback) {
    for (size_t i = 0; i < len; ++i) sink->push(t_.model_id(uint32_t(sp_byte_ids_[uint8_t(text[i])])));
    st->prev_unknown = false;
    return;
  }
  if (!(unknown && st->prev_unknown)) sink->push(t_.model_id(uint32_t(id)));
  st->prev_unknown = unknown;
}

int32_t Tokenizer::sp_normal_piece(const char* s, size_t n) const {
  const int32_t id = pieces_.find(s, n);
  return id >= 0 && t_.piece_types[id] == uint8_t(PieceType::Normal) ? id : -1;
}

void Tokenizer::sp_word(const char* w, size_t n, SpState* st, IdSink* sink) const {
  auto boundary = [&](size_t i) { return i == n || (uint8_t(w[i]) & 0xC0) != 0x80; };
  if (t_.kind == TokenizerKind::SentencePieceUnigram) {
    struct Node {
      float score;
      int32_t start, id;
    };
    Node best[kMaxWordBytes + 1];
    for (size_t i = 1; i <= n; ++i) best[i].start = -1;
    best[0] = {st->path_score, 0, -1};
    const float unknown_score = min_score_ - kUnknownPenalty;
    for (size_t start = 0; start < n;) {
      uint32_t cp;
      const size_t char_len = unicode::decode(reinterpret_cast<const uint8_t*>(w + start), n - start, &cp);
      const float here = best[start].score;
      bool single = false;
      for (size_t end = start + 1; end <= n && end - start <= max_piece_bytes_; ++end) {
        if (!boundary(end)) continue;
        const int32_t id = sp_normal_piece(w + start, end - start);
        if (id < 0) {
          if (!sp_prefixes_.contains(w + start, end - start)) break;  // no longer piece starts so
          continue;
        }
        const double candidate = double(t_.scores[id]) + double(here);
        if (best[end].start == -1 || candidate > double(best[end].score))
          best[end] = {float(candidate), int32_t(start), id};
        if (end - start == char_len) single = true;
      }
      if (!single) {
        Node& target = best[start + char_len];
        const float candidate = unknown_score + here;
        if (target.start == -1 || candidate > target.score) target = {candidate, int32_t(start), t_.unk_id};
      }
      start += char_len;
    }
    st->path_score = best[n].score;
    // The path, back to front, then emitted front to back.
    uint16_t ends[kMaxWordBytes];
    size_t count = 0;
    for (size_t end = n; end > 0; end = size_t(best[end].start)) ends[count++] = uint16_t(end);
    for (size_t k = count; k-- > 0;) {
      const size_t end = ends[k], start = size_t(best[end].start);
      sp_emit(best[end].id, w + start, end - start, st, sink);
    }
    return;
  }
  // BPE: symbols are characters; score[i] is what merging symbol i with i + 1 scores.
  uint16_t begin[kMaxWordBytes + 1];
  float score[kMaxWordBytes];
  size_t count = 0;
  for (size_t i = 0; i < n; ++i)
    if (boundary(i)) begin[count++] = uint16_t(i);
  begin[count] = uint16_t(n);
  auto pair_score = [&](size_t i, float* out) {
    if (i + 1 >= count) return false;
    const int32_t id = sp_normal_piece(w + begin[i], begin[i + 2] - begin[i]);
    if (id < 0) return false;
    *out = t_.scores[id];
    return true;
  };
  bool can[kMaxWordBytes];
  for (size_t i = 0; i < count; ++i) can[i] = pair_score(i, &score[i]);
  while (count > 1) {
    size_t best = count;
    for (size_t i = 0; i + 1 < count; ++i)
      if (can[i] && (best == count || score[i] > score[best])) best = i;
    if (best == count) break;
    std::memmove(begin + best + 1, begin + best + 2, (count - best - 1) * sizeof(uint16_t));
    std::memmove(score + best + 1, score + best + 2, (count - best - 2) * sizeof(float));
    std::memmove(can + best + 1, can + best + 2, (count - best - 2) * sizeof(bool));
    --count;
    can[best] = pair_score(best, &score[best]);
    if (best > 0) can[best - 1] = pair_score(best - 1, &score[best - 1]);
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t len = begin[i + 1] - begin[i];
    const int32_t id = pieces_.find(w + begin[i], len);
    sp_emit(id >= 0 ? id : t_.unk_id, w + begin[i], len, st, sink);
  }
}

}  // namespace linfer::rt
