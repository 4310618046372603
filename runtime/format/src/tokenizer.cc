// SPDX-License-Identifier: Apache-2.0
// Validation of the tokenizer table (linfer/format/tokenizer.h).
#include "linfer/format/tokenizer.h"

#include <cmath>

#include "message.h"

namespace linfer {

bool valid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t b = s[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((b & 0xE0) == 0xC0)
      len = 2, cp = b & 0x1F, min = 0x80;
    else if ((b & 0xF0) == 0xE0)
      len = 3, cp = b & 0x0F, min = 0x800;
    else if ((b & 0xF8) == 0xF0)
      len = 4, cp = b & 0x07, min = 0x10000;
    else
      return false;
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Status validate_tokenizer(const TokenizerView& t, uint32_t vocab_size) {
  if (!t.present) return {};
  const std::string p = "tokenizer: ";
  if (uint8_t(t.kind) > uint8_t(TokenizerKind::Unigram))
    return invalid_model(p + "unknown kind " + decimal(int(t.kind)));
  if (vocab_size == 0) return invalid_model(p + "the model takes embeddings, not token ids");
  if (t.num_pieces == 0 || t.num_pieces > kMaxTokenizerPieces)
    return invalid_model(p + decimal(t.num_pieces) + " pieces (1 to " + decimal(kMaxTokenizerPieces) + " allowed)");
  if (!t.model_ids && t.num_pieces > vocab_size)
    return invalid_model(p + decimal(t.num_pieces) + " pieces do not fit the model's vocabulary of " +
                         decimal(vocab_size));
  uint32_t begin = 0;
  for (uint32_t i = 0; i < t.num_pieces; ++i) {
    const uint32_t end = t.piece_ends[i];
    if (end <= begin || end > t.piece_bytes_size)
      return invalid_model(p + "piece " + decimal(i) + " is empty or ends outside the piece bytes");
    if (t.kind != TokenizerKind::ByteLevelBpe && !valid_utf8(t.piece_bytes + begin, end - begin))
      return invalid_model(p + "piece " + decimal(i) + " is not UTF-8");
    if (t.model_ids && t.model_ids[i] >= vocab_size)
      return invalid_model(p + "piece " + decimal(i) + " maps to model id " + decimal(t.model_ids[i]) +
                           ", outside the model's vocabulary of " + decimal(vocab_size));
    begin = end;
  }
  for (uint32_t i = 0; i < 2 * uint64_t(t.num_merges); ++i)
    if (t.merges[i] >= t.num_pieces)
      return invalid_model(p + "merge " + decimal(i / 2) + " names piece " + decimal(t.merges[i]) + " of " +
                           decimal(t.num_pieces));
  if (t.kind != TokenizerKind::ByteLevelBpe && t.num_merges) return invalid_model(p + "only byte-level BPE has merges");
  if (t.sentencepiece()) {
    if (!t.scores || !t.piece_types) return invalid_model(p + "SentencePiece needs a score and a type per piece");
    for (uint32_t i = 0; i < t.num_pieces; ++i) {
      if (!std::isfinite(t.scores[i]))
        return invalid_model(p + "piece " + decimal(i) + " has a score that is not finite");
      if (t.piece_types[i] < 1 || t.piece_types[i] > 6)
        return invalid_model(p + "piece " + decimal(i) + " has unknown type " + decimal(t.piece_types[i]));
      if (t.piece_types[i] == uint8_t(PieceType::UserDefined) || t.piece_types[i] == uint8_t(PieceType::Unused))
        return invalid_model(p + "piece " + decimal(i) + ": user-defined and unused pieces are not supported");
    }
    // (unk_id is bounded here: its general check below comes after this read.)
    if (t.unk_id < 0 || t.unk_id >= int64_t(t.num_pieces) || t.piece_types[t.unk_id] != uint8_t(PieceType::Unknown))
      return invalid_model(p + "SentencePiece needs its unknown piece");
  } else if (t.scores || t.piece_types || t.charsmap) {
    return invalid_model(p + "scores, piece types and a character map belong to SentencePiece");
  }
  if (t.unk_id < -1 || t.unk_id >= int64_t(t.num_pieces))
    return invalid_model(p + "unknown piece " + decimal(t.unk_id) + " is not a piece");
  if (t.kind == TokenizerKind::WordPiece && t.unk_id < 0) return invalid_model(p + "WordPiece needs an unknown piece");
  for (const auto* ids : {&t.prefix, &t.suffix})
    for (uint32_t id : *ids)
      if (id >= vocab_size)
        return invalid_model(p + "template id " + decimal(id) + " is outside the model's vocabulary of " +
                             decimal(vocab_size));
  for (uint32_t id : t.added)
    if (id >= t.num_pieces) return invalid_model(p + "added piece " + decimal(id) + " is not a piece");
  if (!t.added_flags.empty() && t.added_flags.size() != t.added.size())
    return invalid_model(p + decimal(t.added_flags.size()) + " flags for " + decimal(t.added.size()) + " added pieces");
  for (uint8_t f : t.added_flags) {
    if (f > 7) return invalid_model(p + "added piece flags " + decimal(f) + " (0 to 7 allowed)");
    if ((f & kAddedNormalized) && t.kind != TokenizerKind::Unigram)
      return invalid_model(p + "an added piece matched in the normalized text is supported with the Unigram kind only");
  }
  if (t.kind == TokenizerKind::Unigram && t.byte_fallback)
    return invalid_model(p + "byte fallback is not supported with the Unigram kind");
  if (t.prepend_scheme > 2)
    return invalid_model(p + "prepend scheme " + decimal(t.prepend_scheme) + " (0 to 2 allowed)");
  if (t.space_runs > 2) return invalid_model(p + "space runs mode " + decimal(t.space_runs) + " (0 to 2 allowed)");
  if (t.kind != TokenizerKind::Unigram && (t.strip_right || t.space_runs || t.prepend_scheme))
    return invalid_model(p + "strip_right, space_runs and prepend_scheme belong to the Unigram kind");
  if (t.continuing_prefix.size() > 16 ||
      !valid_utf8(reinterpret_cast<const uint8_t*>(t.continuing_prefix.data()), t.continuing_prefix.size()))
    return invalid_model(p + "the continuing prefix is longer than 16 bytes or not UTF-8");
  if (t.max_word_chars == 0 || t.max_word_chars > 1024)
    return invalid_model(p + "longest word of " + decimal(t.max_word_chars) + " characters (1 to 1024 allowed)");
  return {};
}

}  // namespace linfer
