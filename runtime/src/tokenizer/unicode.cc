// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/unicode.h"

#include <algorithm>
#include <iterator>

namespace linfer::rt::unicode {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};
struct LowerRun {
  uint32_t run;   // first << 8 | (step - 1) << 7 | count: the code points first, first + step, ...
  int32_t delta;  // each one's lower case minus itself
};
struct StripEntry {
  uint32_t cp, kept;  // kept: length << 24 | (the one code point kept, or the offset in kStrippedData)
};

#include "tokenizer/unicode_tables.inc"

template <size_t N>
bool in(const CodeRange (&table)[N], uint32_t cp) {
  const CodeRange* it = std::upper_bound(table, table + N, cp, [](uint32_t c, const CodeRange& r) { return c < r.lo; });
  return it != table && cp <= (it - 1)->hi;
}

}  // namespace

size_t decode(const uint8_t* s, size_t n, uint32_t* cp) {
  const uint8_t b = s[0];
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  size_t len;
  uint32_t c;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode table 3-7)
  if (b >= 0xC2 && b <= 0xDF)
    len = 2, c = b & 0x1F;
  else if (b >= 0xE0 && b <= 0xEF) {
    len = 3, c = b & 0x0F;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4, c = b & 0x07;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    *cp = kReplacement;
    return 1;
  }
  for (size_t k = 1; k < len; ++k) {
    if (k >= n || s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xBF)) {
      *cp = kReplacement;  // the maximal subpart: the bytes that were a valid prefix
      return k;
    }
    c = c << 6 | (s[k] & 0x3F);
  }
  *cp = c;
  return len;
}

size_t encode(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = uint8_t(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = uint8_t(0xC0 | cp >> 6), out[1] = uint8_t(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = uint8_t(0xE0 | cp >> 12), out[1] = uint8_t(0x80 | (cp >> 6 & 0x3F)), out[2] = uint8_t(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = uint8_t(0xF0 | cp >> 18), out[1] = uint8_t(0x80 | (cp >> 12 & 0x3F)),
  out[2] = uint8_t(0x80 | (cp >> 6 & 0x3F)), out[3] = uint8_t(0x80 | (cp & 0x3F));
  return 4;
}

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in(kLetters, cp);
}
bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in(kNumbers, cp);
}
bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}
bool is_punctuation(uint32_t cp) {
  if (cp < 0x80)
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  return in(kPunctuation, cp);
}
bool is_control(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return in(kControls, cp);
}
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

size_t to_lower(uint32_t cp, uint32_t* out) {
  if (cp < 0x80) {
    out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    return 1;
  }
  if (cp == 0x130) {  // İ: i and a combining dot above
    out[0] = 'i', out[1] = 0x307;
    return 2;
  }
  const LowerRun* it = std::upper_bound(std::begin(kLower), std::end(kLower), cp,
                                        [](uint32_t c, const LowerRun& r) { return c < r.run >> 8; });
  out[0] = cp;
  if (it == std::begin(kLower)) return 1;
  --it;
  const uint32_t offset = cp - (it->run >> 8), step = (it->run >> 7 & 1) + 1;
  if (offset % step == 0 && offset / step < (it->run & 0x7F)) out[0] = uint32_t(int32_t(cp) + it->delta);
  return 1;
}

size_t strip_accents(uint32_t cp, uint32_t* out) {
  if (cp < 0x80) {
    out[0] = cp;
    return 1;
  }
  if (cp >= 0xAC00 && cp <= 0xD7A3) {  // Hangul syllable: leading, vowel and optional trailing jamo
    const uint32_t s = cp - 0xAC00;
    out[0] = 0x1100 + s / 588, out[1] = 0x1161 + s % 588 / 28;
    if (s % 28 == 0) return 2;
    out[2] = 0x11A7 + s % 28;
    return 3;
  }
  if (in(kNonspacingMarks, cp)) return 0;  // nothing is left of a nonspacing mark
  const StripEntry* it = std::lower_bound(std::begin(kStripped), std::end(kStripped), cp,
                                          [](const StripEntry& e, uint32_t c) { return e.cp < c; });
  if (it == std::end(kStripped) || it->cp != cp) {
    out[0] = cp;
    return 1;
  }
  const uint32_t length = it->kept >> 24, value = it->kept & 0xFFFFFF;
  if (length == 1) {
    out[0] = value;
    return 1;
  }
  std::copy(kStrippedData + value, kStrippedData + value + length, out);
  return length;
}

}  // namespace linfer::rt::unicode
