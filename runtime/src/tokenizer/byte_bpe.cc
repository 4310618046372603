// SPDX-License-Identifier: Apache-2.0
// Byte-level BPE (GPT-2, RoBERTa), as Hugging Face's ByteLevel pre-tokenizer and BPE model do it:
// the text is cut by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (matched by hand below, alternative by alternative), and each piece's bytes start as one
// symbol each and are merged, lowest rank first (leftmost among equals), while a merge applies.
#include <cstring>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace linfer::rt {
namespace {

uint32_t code_point_at(const uint8_t* s, size_t n, size_t i, size_t* len) {
  uint32_t cp;
  *len = unicode::decode(s + i, n - i, &cp);
  return cp;
}

// The end of GPT-2's pattern's match at s[i] (i < n).
size_t gpt2_match(const uint8_t* s, size_t n, size_t i) {
  if (s[i] == '\'' && i + 1 < n) {
    const uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  }
  size_t len;
  const size_t j = s[i] == ' ' && i + 1 < n ? i + 1 : i;  // the optional leading space
  const uint32_t first = code_point_at(s, n, j, &len);
  // One class, a run of it: letters, numbers, or anything else but whitespace.
  auto run = [&](auto in_class) {
    size_t k = j + len;
    while (k < n) {
      size_t l;
      if (!in_class(code_point_at(s, n, k, &l))) break;
      k += l;
    }
    return k;
  };
  if (unicode::is_letter(first)) return run(unicode::is_letter);
  if (unicode::is_number(first)) return run(unicode::is_number);
  auto other = [](uint32_t cp) {
    return !unicode::is_whitespace(cp) && !unicode::is_letter(cp) && !unicode::is_number(cp);
  };
  if (other(first)) return run(other);
  // Whitespace: the run, but when something follows it, the run without its last code point
  // (\s+(?!\S)), unless that leaves nothing (\s+).
  size_t k = i, last = i;
  while (k < n) {
    size_t l;
    if (!unicode::is_whitespace(code_point_at(s, n, k, &l))) break;
    last = k;
    k += l;
  }
  if (k == n || last == i) return k;
  return last;
}

}  // namespace

Status Tokenizer::byte_bpe(const uint8_t* s, size_t n, IdSink* sink) const {
  for (size_t i = 0; i < n;) {
    const size_t end = gpt2_match(s, n, i);
    if (Status st = bpe_word(s + i, end - i, sink); !st.ok()) return st;
    i = end;
  }
  return {};
}

Status Tokenizer::bpe_word(const uint8_t* s, size_t n, IdSink* sink) const {
  // Symbols in order; rank[i] is the rank of merging symbol i with i + 1 (UINT32_MAX: none).
  uint32_t id[kMaxWordBytes], rank[kMaxWordBytes];
  size_t count = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    const size_t len = unicode::decode(s + i, n - i, &cp);
    // Ill-formed UTF-8 counts as U+FFFD, the character a lossy decoder gives the reference.
    static const uint8_t kReplacementBytes[] = {0xEF, 0xBF, 0xBD};
    const bool replaced = cp == unicode::kReplacement && (len != 3 || std::memcmp(s + i, kReplacementBytes, 3) != 0);
    const uint8_t* bytes = replaced ? kReplacementBytes : s + i;
    const size_t k = replaced ? 3 : len;
    if (count + k > kMaxWordBytes)
      return unsupported(
          "a word of more than {} bytes is longer than byte-level BPE tokenizes (no space or punctuation in it)",
          kept(kMaxWordBytes));
    for (size_t b = 0; b < k; ++b) id[count++] = uint32_t(byte_ids_[bytes[b]]);
    i += len;
  }
  auto pair_rank = [&](size_t i) {
    if (i + 1 >= count) return UINT32_MAX;
    const MergeTable::Merge* m = merges_.find(id[i], id[i + 1]);
    return m ? m->rank : UINT32_MAX;
  };
  for (size_t i = 0; i < count; ++i) rank[i] = pair_rank(i);
  while (count > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < count; ++i)
      if (rank[i] < rank[best]) best = i;
    if (rank[best] == UINT32_MAX) break;
    id[best] = merges_.find(id[best], id[best + 1])->result;
    std::memmove(id + best + 1, id + best + 2, (count - best - 2) * sizeof(uint32_t));
    std::memmove(rank + best + 1, rank + best + 2, (count - best - 2) * sizeof(uint32_t));
    --count;
    rank[best] = pair_rank(best);
    if (best > 0) rank[best - 1] = pair_rank(best - 1);
  }
  for (size_t i = 0; i < count; ++i) sink->push(t_.model_id(id[i]));
  return {};
}

}  // namespace linfer::rt
