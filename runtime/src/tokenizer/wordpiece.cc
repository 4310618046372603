// SPDX-License-Identifier: Apache-2.0
// WordPiece (BERT), as Hugging Face's BertNormalizer, BertPreTokenizer and WordPiece model do it,
// in one pass over the text: each code point is normalized (control characters dropped,
// whitespace made a space, CJK characters set apart, accents stripped, lower-cased), then split
// into words at whitespace and around punctuation, and each word matched greedily, longest piece
// first, continuations carrying the "##" prefix. The normalization is per code point, so
// streaming it equals normalizing the whole text first.
#include <cstring>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace linfer::rt {
namespace {

constexpr size_t kMaxPrefixBytes = 16;

}  // namespace

void Tokenizer::wordpiece(const uint8_t* s, size_t n, IdSink* sink) const {
  // The word being built, after room for the continuation prefix: at most max_word_chars code
  // points of 4 bytes (a longer word is [UNK] and is only counted).
  char buffer[kMaxPrefixBytes + 4 * 1024 + 4];
  char* const word = buffer + kMaxPrefixBytes;
  size_t bytes = 0, chars = 0;
  const size_t max_chars = t_.max_word_chars;
  auto end_word = [&] {
    if (chars) wordpiece_word(word, bytes, chars, sink);
    bytes = chars = 0;
  };
  auto take = [&](uint32_t cp) {  // one normalized code point into the pre-tokenizer
    if (unicode::is_whitespace(cp)) return end_word();
    if (unicode::is_punctuation(cp)) {
      end_word();
      bytes = unicode::encode(cp, reinterpret_cast<uint8_t*>(word));
      chars = 1;
      return end_word();
    }
    if (++chars <= max_chars) bytes += unicode::encode(cp, reinterpret_cast<uint8_t*>(word + bytes));
  };
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += unicode::decode(s + i, n - i, &cp);
    if (t_.clean_text) {
      if (cp == 0 || cp == unicode::kReplacement || unicode::is_control(cp)) continue;
      if (unicode::is_whitespace(cp)) cp = ' ';
    }
    // A CJK character is a word of its own, and is then normalized as any other: Hugging Face
    // sets it apart before stripping accents, whose NFD maps a compatibility ideograph
    // (U+F900-FAFF, U+2F800-2FA1F) to its unified one (U+FA0A to U+898B).
    const bool isolated = t_.split_cjk && unicode::is_cjk(cp);
    if (isolated) end_word();
    uint32_t stripped[4];
    const size_t k = t_.strip_accents ? unicode::strip_accents(cp, stripped) : (stripped[0] = cp, 1);
    for (size_t j = 0; j < k; ++j) {
      if (!t_.lowercase) {
        take(stripped[j]);
        continue;
      }
      uint32_t lower[2];
      const size_t m = unicode::to_lower(stripped[j], lower);
      for (size_t l = 0; l < m; ++l) take(lower[l]);
    }
    if (isolated) end_word();
  }
  end_word();
}

// Greedy longest match. `word` has kMaxPrefixBytes bytes of room before it: a continuation is
// looked up with the prefix written just before its first byte (over bytes already matched).
void Tokenizer::wordpiece_word(char* word, size_t bytes, size_t chars, IdSink* sink) const {
  const uint32_t unk = t_.model_id(uint32_t(t_.unk_id));
  if (chars > t_.max_word_chars) return sink->push(unk);
  uint32_t found[1024];  // one piece per character at most
  size_t pieces = 0;
  const size_t prefix = std::min(t_.continuing_prefix.size(), kMaxPrefixBytes);
  for (size_t start = 0; start < bytes;) {
    int32_t id = -1;
    size_t end = bytes;
    for (; end > start; --end) {
      if (end < bytes && (uint8_t(word[end]) & 0xC0) == 0x80) continue;  // not a character boundary
      if (start == 0) {
        id = pieces_.find(word, end);
      } else {
        std::memcpy(word + start - prefix, t_.continuing_prefix.data(), prefix);
        id = pieces_.find(word + start - prefix, end - start + prefix);
      }
      if (id >= 0) break;
    }
    if (id < 0) return sink->push(unk);
    found[pieces++] = uint32_t(id);
    start = end;
  }
  for (size_t i = 0; i < pieces; ++i) sink->push(t_.model_id(found[i]));
}

}  // namespace linfer::rt
