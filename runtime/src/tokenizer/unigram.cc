// SPDX-License-Identifier: Apache-2.0
// Hugging Face's Unigram pipeline, as a tokenizer.json converted from SentencePiece holds it
// (XLM-RoBERTa's), reproduced as the tokenizers library runs it, which is not quite what
// sentencepiece itself does:
//   Precompiled: the character map applied per extended grapheme cluster: a cluster of fewer than
//                6 bytes is replaced by the first (shortest) rule that is a prefix of it, the rest
//                of the cluster dropped; otherwise, and for longer clusters, each character by
//                its own rule or itself;
//   Strip(right), Replace(" {2,}"): trailing whitespace dropped, runs of spaces made one;
//   Metaspace:   spaces as "▁", a "▁" put first (prepend_scheme), a word at each "▁";
//   Unigram:     per word a Viterbi in double over every piece of the vocabulary (special ones
//                included), an unknown character scoring the lowest score less 10, unknown
//                pieces in a row one [unk].
// Every step streams: the text is normalized twice (once to find where trailing whitespace
// starts), one word at a time in a bounded stack buffer.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace linfer::rt {
namespace {

// unigram_normalize's sink for a lambda f: f(bytes, length, code point).
template <class F>
void call_sink(void* f, const char* p, size_t len, uint32_t cp) {
  (*static_cast<F*>(f))(p, len, cp);
}

constexpr char kMetaspace[] = "\xE2\x96\x81";  // U+2581, Metaspace's replacement
constexpr double kUnknownScorePenalty = 10.0;

// UAX #29's Grapheme_Cluster_Break classes, with Extended_Pictographic as a class of its own.
enum Gcb : uint8_t { Other, CR, LF, Control, Extend, ZWJ, RI, Prepend, SpacingMark, L, V, T, LV, LVT, ExtPict };

#include "tokenizer/grapheme_table.inc"

Gcb grapheme_class(uint32_t cp) {
  if (cp < 0x7F) return cp == '\r' ? CR : cp == '\n' ? LF : cp < 0x20 ? Control : Other;  // (the table's first runs)
  const uint32_t* it = std::upper_bound(std::begin(kGraphemeRuns), std::end(kGraphemeRuns), cp << 4 | 0xF);
  return it == std::begin(kGraphemeRuns) ? Other : Gcb(*(it - 1) & 0xF);
}

// Where extended grapheme clusters break (UAX #29, rules GB3 to GB13), one character at a time.
struct GraphemeBreaker {
  Gcb prev = Other;
  size_t ri_run = 0;      // regional indicators in a row, ending at prev
  bool pict_ext = false;  // ExtPict Extend* ends at prev
  bool pict_zwj = false;  // ExtPict Extend* ZWJ ends at prev

  void start(Gcb c) {
    prev = c;
    ri_run = c == RI;
    pict_ext = c == ExtPict;
    pict_zwj = false;
  }
  // Whether a cluster ends before c; then takes c.
  bool breaks_before(Gcb c) {
    const Gcb p = prev;
    bool brk;
    if (p == CR && c == LF)
      brk = false;
    else if (p == CR || p == LF || p == Control || c == CR || c == LF || c == Control)
      brk = true;
    else if (p == L && (c == L || c == V || c == LV || c == LVT))
      brk = false;
    else if ((p == LV || p == V) && (c == V || c == T))
      brk = false;
    else if ((p == LVT || p == T) && c == T)
      brk = false;
    else if (c == Extend || c == ZWJ || c == SpacingMark || p == Prepend)
      brk = false;
    else if (p == ZWJ && c == ExtPict && pict_zwj)
      brk = false;
    else if (p == RI && c == RI && ri_run % 2 == 1)
      brk = false;
    else
      brk = true;
    pict_zwj = c == ZWJ && pict_ext;
    pict_ext = c == ExtPict || (c == Extend && pict_ext);
    ri_run = c == RI ? ri_run + 1 : 0;
    prev = c;
    return brk;
  }
};

}  // namespace

// The character map's first (shortest) rule that is a prefix of s (the tokenizers library's
// Precompiled::transform): its length (0: none) and *value. A NUL byte ends the search, as there.
size_t Tokenizer::sp_shortest_rule(const uint8_t* s, size_t n, uint32_t* value) const {
  if (!trie_units_) return 0;
  size_t node = 0;
  auto unit_at = [&](size_t i) {
    uint32_t u;
    std::memcpy(&u, trie_units_ + 4 * i, 4);
    return u;
  };
  uint32_t unit = unit_at(0);
  node ^= (unit >> 10) << ((unit & (1u << 9)) >> 6);
  for (size_t i = 0; i < n && s[i]; ++i) {
    node ^= s[i];
    if (node >= trie_size_) break;
    unit = unit_at(node);
    if ((unit & ((1u << 31) | 0xFF)) != s[i]) break;
    node ^= (unit >> 10) << ((unit & (1u << 9)) >> 6);
    if (node >= trie_size_) break;
    if ((unit >> 8) & 1) {
      const uint32_t v = unit_at(node) & ((1u << 31) - 1);
      if (v < normalized_size_) {
        *value = v;
        return i + 1;
      }
    }
  }
  return 0;
}

// Precompiled over s[0, n): calls emit(bytes, length, code point) for each character of the
// normalized text. Ill-formed UTF-8 is U+FFFD per maximal subpart, as a lossy decoder gives it.
void Tokenizer::unigram_normalize(const uint8_t* s, size_t n, CharSink emit, void* context) const {
  auto emit_string = [&](const char* p, size_t k) {
    for (size_t i = 0; i < k;) {
      uint32_t cp;
      const size_t len = unicode::decode(reinterpret_cast<const uint8_t*>(p + i), k - i, &cp);
      emit(context, p + i, len, cp);
      i += len;
    }
  };
  auto rule_string = [&](uint32_t value, const char** out, size_t* len) {
    *out = normalized_ + value;
    const void* end = std::memchr(*out, 0, normalized_size_ - value);
    *len = end ? size_t(static_cast<const char*>(end) - *out) : normalized_size_ - value;
  };
  for (size_t i = 0; i < n;) {
    // The cluster starting at i: its end j and, while under 6 bytes, its well-formed bytes.
    uint8_t cluster[8];
    uint32_t cp;
    size_t j = i + unicode::decode(s + i, n - i, &cp);
    size_t bytes = unicode::encode(cp, cluster);
    GraphemeBreaker breaker;
    breaker.start(grapheme_class(cp));
    while (j < n) {
      const size_t len = unicode::decode(s + j, n - j, &cp);
      if (breaker.breaks_before(grapheme_class(cp))) break;
      uint8_t c[4];
      const size_t k = unicode::encode(cp, c);
      if (bytes + k < 6) std::memcpy(cluster + bytes, c, k);
      bytes += k;
      j += len;
    }
    uint32_t value;
    if (bytes < 6 && sp_shortest_rule(cluster, bytes, &value)) {
      const char* out;
      size_t len;
      rule_string(value, &out, &len);
      emit_string(out, len);
      i = j;
      continue;
    }
    while (i < j) {
      i += unicode::decode(s + i, j - i, &cp);
      uint8_t c[4];
      const size_t k = unicode::encode(cp, c);
      const char* out = reinterpret_cast<const char*>(c);
      size_t len = k;
      if (sp_shortest_rule(c, k, &value)) rule_string(value, &out, &len);
      emit_string(out, len);
    }
  }
}

Status Tokenizer::unigram(const uint8_t* s, size_t n, bool at_text_start, IdSink* sink) const {
  // Strip(right): the normalized text's length up to the end of its last non-whitespace character.
  size_t keep = SIZE_MAX;
  if (t_.strip_right) {
    size_t produced = 0;
    keep = 0;
    auto count = [&](const char*, size_t len, uint32_t cp) {
      produced += len;
      if (!unicode::is_whitespace(cp)) keep = produced;
    };
    unigram_normalize(s, n, call_sink<decltype(count)>, &count);
  }
  Status status;
  // Metaspace: a "▁" first (prepend_scheme), spaces as "▁", a word at each "▁".
  WordBuffer word;
  bool started = false, first_split = at_text_start;
  auto end_word = [&] {
    if (word.length && status.ok()) unigram_word(word.bytes, word.length, sink);
    word.length = 0;
  };
  auto put = [&](const char* p, size_t k) { word.put(p, k, &status, "the Unigram tokenizer takes"); };
  auto meta = [&](const char* p, size_t len, uint32_t cp) {
    const bool space = cp == ' ' || cp == 0x2581;
    if (!started) {
      started = true;
      const bool prepend = t_.prepend_scheme == 0 || (t_.prepend_scheme == 1 && first_split);
      if (prepend && !space) put(kMetaspace, 3);
    }
    if (space) {
      end_word();
      put(kMetaspace, 3);
    } else {
      put(p, len);
    }
  };
  // Added pieces matched in the normalized text (leftmost, then longest), each ending a split:
  // the text before and after it are pre-tokenized apart. Whitespace waits in `held` until the
  // next character shows whether an lstrip piece takes it; `rest` holds what may start a piece.
  size_t max_piece = 0;
  for (size_t k = 0; k < t_.added_flags.size(); ++k)
    if (t_.added_flags[k] & kAddedNormalized) max_piece = std::max(max_piece, t_.piece(t_.added[k]).size());
  char held[kMaxHeldWhitespace], rest[kMaxNormalizedAdded + 8];
  size_t held_len = 0, rest_len = 0;
  bool held_overflow = false, skip_whitespace = false;
  auto emit_all = [&](const char* p, size_t k) {
    for (size_t i = 0; i < k;) {
      uint32_t cp;
      const size_t len = unicode::decode(reinterpret_cast<const uint8_t*>(p + i), k - i, &cp);
      meta(p + i, len, cp);
      i += len;
    }
  };
  auto flush_held = [&] {
    emit_all(held, held_len);
    held_len = 0;
    held_overflow = false;
  };
  auto hold = [&](const char* p, size_t len) {
    if (held_len + len > sizeof held) {
      flush_held();
      held_overflow = true;
    }
    std::memcpy(held + held_len, p, len);
    held_len += len;
  };
  auto drop_front = [&](size_t k) {
    std::memmove(rest, rest + k, rest_len - k);
    rest_len -= k;
    // Whitespace at the front of what is left waits (or goes, after an rstrip piece).
    while (rest_len) {
      uint32_t cp;
      const size_t len = unicode::decode(reinterpret_cast<const uint8_t*>(rest), rest_len, &cp);
      if (!unicode::is_whitespace(cp)) {
        skip_whitespace = false;
        break;
      }
      if (!skip_whitespace) hold(rest, len);
      std::memmove(rest, rest + len, rest_len - len);
      rest_len -= len;
    }
  };
  auto settle = [&](bool ended) {
    while (rest_len && (rest_len >= max_piece || ended)) {
      int32_t best = -1;
      size_t best_len = 0, best_k = 0;
      for (size_t k = 0; k < t_.added_flags.size(); ++k) {
        if (!(t_.added_flags[k] & kAddedNormalized)) continue;
        const std::string_view p = t_.piece(t_.added[k]);
        if (p.size() > best_len && p.size() <= rest_len && std::memcmp(p.data(), rest, p.size()) == 0)
          best = int32_t(t_.added[k]), best_len = p.size(), best_k = k;
      }
      if (best < 0) {
        flush_held();
        uint32_t cp;
        const size_t len = unicode::decode(reinterpret_cast<const uint8_t*>(rest), rest_len, &cp);
        meta(rest, len, cp);
        drop_front(len);
        continue;
      }
      const uint8_t flags = t_.added_flags[best_k];
      if (flags & kAddedLstrip) {
        if (held_overflow && status.ok())
          status = unsupported("more than {} bytes of whitespace before an added piece that takes them (lstrip)",
                               kept(sizeof held));
        held_len = 0;
        held_overflow = false;
      } else {
        flush_held();
      }
      end_word();
      if (status.ok()) sink->push(t_.model_id(uint32_t(best)));
      started = false, first_split = false;
      skip_whitespace = flags & kAddedRstrip;
      drop_front(best_len);
    }
  };
  auto forward = [&](const char* p, size_t len, uint32_t cp) {
    if (!max_piece) return meta(p, len, cp);
    if (!rest_len && unicode::is_whitespace(cp)) {
      if (!skip_whitespace) hold(p, len);
      return;
    }
    skip_whitespace = false;
    std::memcpy(rest + rest_len, p, len);
    rest_len += len;
    settle(false);
  };
  size_t produced = 0, spaces = 0;
  auto flush_spaces = [&] {  // Replace(" {2,}"): a run of spaces as one " " or "▁"
    if (spaces > 1 && t_.space_runs == 2)
      forward(kMetaspace, 3, 0x2581);
    else if (spaces)
      forward(" ", 1, ' ');
    spaces = 0;
  };
  auto take = [&](const char* p, size_t len, uint32_t cp) {
    const size_t at = produced;
    produced += len;
    if (at >= keep) return;  // Strip(right)
    if (t_.space_runs && cp == ' ') {
      ++spaces;
      return;
    }
    flush_spaces();
    forward(p, len, cp);
  };
  unigram_normalize(s, n, call_sink<decltype(take)>, &take);
  flush_spaces();
  settle(true);
  flush_held();
  end_word();
  return status;
}

// Whether the normalizer leaves p as it is (an added piece matched in the normalized text is
// matched as the normalizer makes it; linfer takes those it leaves alone).
bool Tokenizer::unigram_keeps(std::string_view p) const {
  size_t at = 0;
  bool same = true;
  auto compare = [&](const char* c, size_t len, uint32_t) {
    same = same && at + len <= p.size() && std::memcmp(p.data() + at, c, len) == 0;
    at += len;
  };
  unigram_normalize(reinterpret_cast<const uint8_t*>(p.data()), p.size(), call_sink<decltype(compare)>, &compare);
  return same && at == p.size();
}

// One Metaspace word: the tokenizers library's Unigram::encode_optimized, its path starting at 0.
void Tokenizer::unigram_word(const char* w, size_t n, IdSink* sink) const {
  struct Node {
    double score;
    int32_t start, id;
  };
  Node best[kMaxWordBytes + 1];
  for (size_t i = 1; i <= n; ++i) best[i].start = -1;
  best[0] = {0.0, 0, -1};
  const double unknown_score = double(min_score_) - kUnknownScorePenalty;
  for (size_t start = 0; start < n;) {
    uint32_t cp;
    const size_t char_len = unicode::decode(reinterpret_cast<const uint8_t*>(w + start), n - start, &cp);
    const double here = best[start].score;
    bool single = false;
    for (size_t end = start + 1; end <= n && end - start <= max_piece_bytes_; ++end) {
      if (end < n && (uint8_t(w[end]) & 0xC0) == 0x80) continue;  // not a character's end
      const int32_t id = pieces_.find(w + start, end - start);
      if (id < 0) {
        if (!sp_prefixes_.contains(w + start, end - start)) break;
        continue;
      }
      const double candidate = double(t_.scores[id]) + here;
      if (best[end].start == -1 || candidate > best[end].score) best[end] = {candidate, int32_t(start), id};
      if (end - start == char_len) single = true;
    }
    if (!single) {
      Node& target = best[start + char_len];
      const double candidate = unknown_score + here;
      if (target.start == -1 || candidate > target.score) target = {candidate, int32_t(start), t_.unk_id};
    }
    start += char_len;
  }
  uint16_t ends[kMaxWordBytes];
  size_t count = 0;
  for (size_t end = n; end > 0; end = size_t(best[end].start)) ends[count++] = uint16_t(end);
  bool prev_unknown = false;
  for (size_t k = count; k-- > 0;) {
    const int32_t id = best[ends[k]].id;
    const bool unknown = id == t_.unk_id;
    if (!(unknown && prev_unknown)) sink->push(t_.model_id(uint32_t(id)));
    prev_unknown = unknown;
  }
}

}  // namespace linfer::rt
