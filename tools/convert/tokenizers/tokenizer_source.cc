// SPDX-License-Identifier: Apache-2.0
#include "tokenizers/tokenizer_source.h"

#include "linfer/types/strings.h"

#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

namespace linfer::convert {

TokenizerView TokenizerData::view() {
  TokenizerView v = settings;
  v.present = true;
  piece_bytes.clear();
  piece_ends.clear();
  for (const std::string& p : pieces) {
    piece_bytes += p;
    piece_ends.push_back(uint32_t(piece_bytes.size()));
  }
  v.piece_bytes = reinterpret_cast<const uint8_t*>(piece_bytes.data());
  v.piece_bytes_size = piece_bytes.size();
  v.piece_ends = piece_ends.data();
  v.num_pieces = uint32_t(pieces.size());
  v.merges = merges.data();
  v.num_merges = uint32_t(merges.size() / 2);
  v.model_ids = model_ids.empty() ? nullptr : model_ids.data();
  if (!scores.empty()) v.scores = scores.data(), v.piece_types = types.data();
  if (!charsmap.empty())
    v.charsmap = reinterpret_cast<const uint8_t*>(charsmap.data()), v.charsmap_size = charsmap.size();
  return v;
}

int32_t TokenizerData::find(const std::string& piece) const {
  for (size_t i = 0; i < pieces.size(); ++i)
    if (pieces[i] == piece) return int32_t(i);
  return -1;
}

std::optional<std::string> byte_level_bytes(const std::string& piece) {
  // GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes
  // for U+0100 onwards, in byte order.
  static const std::map<uint32_t, uint8_t> inverse = [] {
    std::map<uint32_t, uint8_t> m;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      m[printable ? uint32_t(b) : next++] = uint8_t(b);
    }
    return m;
  }();
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    const uint8_t b = uint8_t(piece[i]);
    uint32_t cp;
    size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
    if (i + len > piece.size()) return std::nullopt;
    cp = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    for (size_t k = 1; k < len; ++k) cp = cp << 6 | (uint8_t(piece[i + k]) & 0x3F);
    auto it = inverse.find(cp);
    if (it == inverse.end()) return std::nullopt;
    out.push_back(char(it->second));
    i += len;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

err::Status merges_from_strings(const std::vector<std::pair<std::string, std::string>>& pairs, TokenizerData* out) {
  std::unordered_map<std::string, uint32_t> ids;
  for (size_t i = 0; i < out->pieces.size(); ++i) ids.emplace(out->pieces[i], uint32_t(i));
  for (size_t r = 0; r < pairs.size(); ++r) {
    auto a = ids.find(pairs[r].first), b = ids.find(pairs[r].second);
    if (a == ids.end() || b == ids.end())
      return err::invalid_model("merge {} ('{} {}') names a piece outside the vocabulary", r, pairs[r].first,
                                pairs[r].second);
    if (!ids.count(pairs[r].first + pairs[r].second))
      return err::invalid_model("merge {} makes a piece outside the vocabulary", r);
    out->merges.push_back(a->second);
    out->merges.push_back(b->second);
  }
  return {};
}

namespace {

err::Result<std::string> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return err::failure(LINFER_ERROR_IO, "cannot open tokenizer file '{}'", path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A reader's failure, or its tokenizer: named by the file it read.
err::Result<TokenizerData> named(err::Result<TokenizerData> read, const std::string& path) {
  if (read.ok()) return read;
  return err::Status(read.status()).within(path + ": ");
}

}  // namespace

err::Result<TokenizerData> read_tokenizer(const std::vector<std::string>& paths) {
  std::string encoder_json, vocab_bpe, dict_txt;
  auto alone = [&](const char* what) {
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "a {} is given alone", what);
  };
  for (const std::string& p : paths) {
    err::Result<std::string> read = slurp(p);
    if (!read.ok()) return read.status();
    const std::string& text = read.value();
    if (ends_with(p, ".model")) {
      if (paths.size() != 1) return alone("SentencePiece .model");
      return named(read_sentencepiece_model(text), p);
    } else if (ends_with(p, "dict.txt")) {
      dict_txt = text;
    } else if (ends_with(p, "vocab.bpe") || ends_with(p, "merges.txt")) {
      vocab_bpe = text;
    } else if (ends_with(p, "encoder.json") || ends_with(p, "vocab.json")) {
      encoder_json = text;
    } else if (ends_with(p, ".json")) {
      if (paths.size() != 1) return alone("tokenizer.json");
      return named(read_hf_tokenizer_json(text), p);
    } else if (ends_with(p, ".txt")) {
      if (paths.size() != 1) return alone("vocab.txt");
      return named(read_bert_vocab(text), p);
    } else {
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                          "'{}' is not a tokenizer file linfer-convert reads (tokenizer.json, encoder.json + "
                          "vocab.bpe [+ fairseq dict.txt], vocab.txt, a SentencePiece .model)",
                          p);
    }
  }
  if (encoder_json.empty() || vocab_bpe.empty())
    return err::invalid_argument(
        "GPT-2's tokenizer needs encoder.json and vocab.bpe (a fairseq dict.txt goes with them)");
  err::Result<TokenizerData> gpt2 = read_gpt2_files(encoder_json, vocab_bpe);
  if (!gpt2.ok() || dict_txt.empty()) return gpt2;
  if (err::Status s = apply_fairseq_dict(dict_txt, &gpt2.value()); !s.ok()) return s;
  return gpt2;
}

}  // namespace linfer::convert
