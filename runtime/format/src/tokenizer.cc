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
  if (uint8_t(t.kind) > uint8_t(TokenizerKind::Unigram))
    return invalid_model("tokenizer: unknown kind {}", kept(int(t.kind)));
  if (vocab_size == 0) return invalid_model("tokenizer: the model takes embeddings, not token ids");
  if (t.num_pieces == 0 || t.num_pieces > kMaxTokenizerPieces)
    return invalid_model("tokenizer: {} pieces (1 to {} allowed)", kept(t.num_pieces), kept(kMaxTokenizerPieces));
  if (!t.model_ids && t.num_pieces > vocab_size)
    return invalid_model("tokenizer: {} pieces do not fit the model's vocabulary of {}", kept(t.num_pieces),
                         kept(vocab_size));
  uint32_t begin = 0;
  for (uint32_t i = 0; i < t.num_pieces; ++i) {
    const uint32_t end = t.piece_ends[i];
    if (end <= begin || end > t.piece_bytes_size)
      return invalid_model("tokenizer: piece {} is empty or ends outside the piece bytes", kept(i));
    if (t.kind != TokenizerKind::ByteLevelBpe && !valid_utf8(t.piece_bytes + begin, end - begin))
      return invalid_model("tokenizer: piece {} is not UTF-8", kept(i));
    if (t.model_ids && t.model_ids[i] >= vocab_size)
      return invalid_model("tokenizer: piece {} maps to model id {}, outside the model's vocabulary of {}", kept(i),
                           kept(t.model_ids[i]), kept(vocab_size));
    begin = end;
  }
  for (uint32_t i = 0; i < 2 * uint64_t(t.num_merges); ++i)
    if (t.merges[i] >= t.num_pieces)
      return invalid_model("tokenizer: merge {} names piece {} of {}", kept(i / 2), kept(t.merges[i]),
                           kept(t.num_pieces));
  if (t.kind != TokenizerKind::ByteLevelBpe && t.num_merges)
    return invalid_model("tokenizer: only byte-level BPE has merges");
  if (t.sentencepiece()) {
    if (!t.scores || !t.piece_types)
      return invalid_model("tokenizer: SentencePiece needs a score and a type per piece");
    for (uint32_t i = 0; i < t.num_pieces; ++i) {
      if (!std::isfinite(t.scores[i]))
        return invalid_model("tokenizer: piece {} has a score that is not finite", kept(i));
      if (t.piece_types[i] < 1 || t.piece_types[i] > 6)
        return invalid_model("tokenizer: piece {} has unknown type {}", kept(i), kept(t.piece_types[i]));
      if (t.piece_types[i] == uint8_t(PieceType::UserDefined) || t.piece_types[i] == uint8_t(PieceType::Unused))
        return invalid_model("tokenizer: piece {}: user-defined and unused pieces are not supported", kept(i));
    }
    // (unk_id is bounded here: its general check below comes after this read.)
    if (t.unk_id < 0 || t.unk_id >= int64_t(t.num_pieces) || t.piece_types[t.unk_id] != uint8_t(PieceType::Unknown))
      return invalid_model("tokenizer: SentencePiece needs its unknown piece");
  } else if (t.scores || t.piece_types || t.charsmap) {
    return invalid_model("tokenizer: scores, piece types and a character map belong to SentencePiece");
  }
  if (t.unk_id < -1 || t.unk_id >= int64_t(t.num_pieces))
    return invalid_model("tokenizer: unknown piece {} is not a piece", kept(t.unk_id));
  if (t.kind == TokenizerKind::WordPiece && t.unk_id < 0)
    return invalid_model("tokenizer: WordPiece needs an unknown piece");
  for (const auto* ids : {&t.prefix, &t.suffix})
    for (uint32_t id : *ids)
      if (id >= vocab_size)
        return invalid_model("tokenizer: template id {} is outside the model's vocabulary of {}", kept(id),
                             kept(vocab_size));
  for (uint32_t id : t.added)
    if (id >= t.num_pieces) return invalid_model("tokenizer: added piece {} is not a piece", kept(id));
  if (!t.added_flags.empty() && t.added_flags.size() != t.added.size())
    return invalid_model("tokenizer: {} flags for {} added pieces", kept(t.added_flags.size()), kept(t.added.size()));
  for (uint8_t f : t.added_flags) {
    if (f > 7) return invalid_model("tokenizer: added piece flags {} (0 to 7 allowed)", kept(f));
    if ((f & kAddedNormalized) && t.kind != TokenizerKind::Unigram)
      return invalid_model(
          "tokenizer: an added piece matched in the normalized text is supported with the Unigram kind only");
  }
  if (t.kind == TokenizerKind::Unigram && t.byte_fallback)
    return invalid_model("tokenizer: byte fallback is not supported with the Unigram kind");
  if (t.prepend_scheme > 2)
    return invalid_model("tokenizer: prepend scheme {} (0 to 2 allowed)", kept(t.prepend_scheme));
  if (t.space_runs > 2) return invalid_model("tokenizer: space runs mode {} (0 to 2 allowed)", kept(t.space_runs));
  if (t.kind != TokenizerKind::Unigram && (t.strip_right || t.space_runs || t.prepend_scheme))
    return invalid_model("tokenizer: strip_right, space_runs and prepend_scheme belong to the Unigram kind");
  if (t.continuing_prefix.size() > 16 ||
      !valid_utf8(reinterpret_cast<const uint8_t*>(t.continuing_prefix.data()), t.continuing_prefix.size()))
    return invalid_model("tokenizer: the continuing prefix is longer than 16 bytes or not UTF-8");
  if (t.max_word_chars == 0 || t.max_word_chars > 1024)
    return invalid_model("tokenizer: longest word of {} characters (1 to 1024 allowed)", kept(t.max_word_chars));
  return {};
}

}  // namespace linfer
