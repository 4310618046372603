// SPDX-License-Identifier: Apache-2.0
// What the tokenizers need of Unicode: UTF-8 decoding that never reads past its input, the
// character classes of their pre-tokenizers and the mappings of BERT's normalizer. Tables from
// tools/python/tables/make_unicode_tables.py (unicode_tables.inc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace linfer::rt::unicode {

constexpr uint32_t kReplacement = 0xFFFD;

// Decodes the code point at s[0] (n >= 1 bytes available) into *cp and returns its length. An
// ill-formed sequence gives U+FFFD for its maximal subpart (WHATWG's and Python's "replace"), so
// tokenizing invalid UTF-8 matches tokenizing the text a lossy decoder makes of it.
size_t decode(const uint8_t* s, size_t n, uint32_t* cp);
// Writes cp as UTF-8 into out (4 bytes room) and returns its length.
size_t encode(uint32_t cp, uint8_t* out);

bool is_letter(uint32_t cp);       // \p{L}
bool is_number(uint32_t cp);       // \p{N}
bool is_whitespace(uint32_t cp);   // White_Space (Rust's char::is_whitespace, Oniguruma's \s)
bool is_punctuation(uint32_t cp);  // \p{P}, or ASCII punctuation (BERT's split)
bool is_control(uint32_t cp);      // Cc, Cf, Co, Cs except \t \n \r (BERT's clean_text drops them)
bool is_cjk(uint32_t cp);          // BERT's "Chinese character" ranges

// Lower case of cp into out (room for 2); returns the count.
size_t to_lower(uint32_t cp, uint32_t* out);
// cp's canonical decomposition without nonspacing marks (BERT's strip_accents) into out (room
// for 4); returns the count (0 for a nonspacing mark).
size_t strip_accents(uint32_t cp, uint32_t* out);

}  // namespace linfer::rt::unicode
