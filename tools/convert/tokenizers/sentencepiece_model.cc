// SPDX-License-Identifier: Apache-2.0
// A SentencePiece .model: a protobuf ModelProto (sentencepiece_model.proto), read by hand with
// every length checked against what is left: pieces (text, score, type), the trainer's model type
// and byte fallback, the normalizer's precompiled character map and switches. What linfer does not
// reproduce is refused by name.
#include <cstring>

#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {
namespace {

// One protobuf message's fields, in order; each call to next() reads one, until the end or the
// first malformed field (its status).
struct Fields {
  const uint8_t* p;
  const uint8_t* end;
  err::Status status;
  uint32_t field = 0, wire = 0;
  uint64_t number = 0;             // varint, or the 32/64 bits of a fixed field
  const uint8_t* bytes = nullptr;  // a length-delimited field
  size_t size = 0;

  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return malformed("truncated varint");
      const uint8_t b = *p++;
      *v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return malformed("varint longer than 10 bytes");
  }
  bool next() {
    if (p == end || !status.ok()) return false;
    uint64_t key;
    if (!varint(&key)) return false;
    field = uint32_t(key >> 3), wire = uint32_t(key & 7);
    switch (wire) {
      case 0:
        return varint(&number);
      case 1:
      case 5: {
        const size_t k = wire == 1 ? 8 : 4;
        if (size_t(end - p) < k) return malformed("truncated fixed field");
        number = 0;
        std::memcpy(&number, p, k);
        p += k;
        return true;
      }
      case 2: {
        uint64_t n;
        if (!varint(&n)) return false;
        if (n > uint64_t(end - p)) return malformed("a field's length runs past the end");
        bytes = p, size = size_t(n);
        p += n;
        return true;
      }
      default:
        status = err::invalid_model("unknown wire type {}", wire);
        return false;
    }
  }
  bool malformed(const char* what) {
    status = err::invalid_model(what);
    return false;
  }
  std::string text() const { return std::string(reinterpret_cast<const char*>(bytes), size); }
};

}  // namespace

err::Result<TokenizerData> read_sentencepiece_model(const std::string& data) {
  const uint8_t* begin = reinterpret_cast<const uint8_t*>(data.data());
  Fields model{begin, begin + data.size(), {}};
  TokenizerData out;
  uint64_t model_type = 1;  // UNIGRAM
  bool byte_fallback = false, escape_whitespaces = true, split_by_whitespace = true, suffix = false;
  std::string normalizer_name;
  TokenizerView& s = out.settings;
  while (model.next()) {
    if (model.wire != 2) continue;
    if (model.field == 1) {  // SentencePiece
      Fields piece{model.bytes, model.bytes + model.size, {}};
      std::string text;
      float score = 0;
      uint64_t type = 1;
      while (piece.next()) {
        if (piece.field == 1 && piece.wire == 2)
          text = piece.text();
        else if (piece.field == 2 && piece.wire == 5)
          std::memcpy(&score, &piece.number, 4);
        else if (piece.field == 3 && piece.wire == 0)
          type = piece.number;
      }
      if (!piece.status.ok()) return std::move(piece.status).within(err::message("piece {}: ", out.pieces.size()));
      if (type < 1 || type > 6) return err::invalid_model("piece '{}' has unknown type {}", text, type);
      if (type == 4 || type == 5)
        return err::failure(LINFER_ERROR_UNSUPPORTED, "{} piece '{}' is not supported",
                            type == 4 ? "user-defined" : "unused", text);
      if (type == 2) {
        if (s.unk_id >= 0) return err::invalid_model("two unknown pieces");
        s.unk_id = int32_t(out.pieces.size());
      }
      out.pieces.push_back(text);
      out.scores.push_back(score);
      out.types.push_back(uint8_t(type));
    } else if (model.field == 2) {  // TrainerSpec
      Fields spec{model.bytes, model.bytes + model.size, {}};
      while (spec.next()) {
        if (spec.wire != 0) continue;
        if (spec.field == 3)
          model_type = spec.number;
        else if (spec.field == 22)
          split_by_whitespace = spec.number != 0;
        else if (spec.field == 24)
          suffix = spec.number != 0;
        else if (spec.field == 35)
          byte_fallback = spec.number != 0;
      }
      if (!spec.status.ok()) return std::move(spec.status).within("trainer spec: ");
    } else if (model.field == 3) {  // NormalizerSpec
      Fields spec{model.bytes, model.bytes + model.size, {}};
      while (spec.next()) {
        if (spec.field == 1 && spec.wire == 2)
          normalizer_name = spec.text();
        else if (spec.field == 2 && spec.wire == 2)
          out.charsmap = spec.text();
        else if (spec.wire == 0 && spec.field == 3)
          s.add_dummy_prefix = spec.number != 0;
        else if (spec.wire == 0 && spec.field == 4)
          s.remove_extra_whitespaces = spec.number != 0;
        else if (spec.wire == 0 && spec.field == 5)
          escape_whitespaces = spec.number != 0;
      }
      if (!spec.status.ok()) return std::move(spec.status).within("normalizer spec: ");
    }
  }
  if (!model.status.ok()) return std::move(model.status).within("not a SentencePiece model: ");
  if (out.pieces.empty()) return err::invalid_model("not a SentencePiece model: no pieces");
  if (model_type == 1)
    s.kind = TokenizerKind::SentencePieceUnigram;
  else if (model_type == 2)
    s.kind = TokenizerKind::SentencePieceBpe;
  else
    return err::failure(LINFER_ERROR_UNSUPPORTED, "model type {} is not supported",
                        model_type == 3   ? "WORD"
                        : model_type == 4 ? "CHAR"
                                          : "?");
  if (s.unk_id < 0) return err::unsupported("no unknown piece");
  if (!escape_whitespaces) return err::unsupported("escape_whitespaces = false is not supported");
  if (suffix) return err::unsupported("treat_whitespace_as_suffix = true is not supported");
  if (!split_by_whitespace)
    return err::unsupported("split_by_whitespace = false is not supported (pieces may span words)");
  if (normalizer_name.rfind("nmt_", 0) != 0 && normalizer_name != "nfkc" && normalizer_name != "identity" &&
      !normalizer_name.empty() && out.charsmap.empty())
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "normalizer '{}' without a precompiled character map is not supported", normalizer_name);
  s.byte_fallback = byte_fallback;
  return out;
}

}  // namespace linfer::convert
