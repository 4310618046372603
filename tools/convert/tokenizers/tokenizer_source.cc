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

std::string byte_level_bytes(const std::string& piece) {
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
    if (i + len > piece.size()) return "";
    cp = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    for (size_t k = 1; k < len; ++k) cp = cp << 6 | (uint8_t(piece[i + k]) & 0x3F);
    auto it = inverse.find(cp);
    if (it == inverse.end()) return "";
    out.push_back(char(it->second));
    i += len;
  }
  return out;
}

std::string merges_from_strings(const std::vector<std::pair<std::string, std::string>>& pairs, TokenizerData* out) {
  std::unordered_map<std::string, uint32_t> ids;
  for (size_t i = 0; i < out->pieces.size(); ++i) ids.emplace(out->pieces[i], uint32_t(i));
  for (size_t r = 0; r < pairs.size(); ++r) {
    auto a = ids.find(pairs[r].first), b = ids.find(pairs[r].second);
    if (a == ids.end() || b == ids.end())
      return "merge " + std::to_string(r) + " ('" + pairs[r].first + " " + pairs[r].second +
             "') names a piece outside the vocabulary";
    if (!ids.count(pairs[r].first + pairs[r].second))
      return "merge " + std::to_string(r) + " makes a piece outside the vocabulary";
    out->merges.push_back(a->second);
    out->merges.push_back(b->second);
  }
  return "";
}

namespace {

std::string slurp(const std::string& path, std::string* text) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open tokenizer file '" + path + "'";
  std::ostringstream s;
  s << f.rdbuf();
  *text = s.str();
  return "";
}

}  // namespace

std::string read_tokenizer(const std::vector<std::string>& paths, TokenizerData* out) {
  std::string encoder_json, vocab_bpe, dict_txt, err;
  for (const std::string& p : paths) {
    std::string text;
    if (!(err = slurp(p, &text)).empty()) return err;
    if (ends_with(p, ".model")) {
      if (paths.size() != 1) return "a SentencePiece .model is given alone";
      err = read_sentencepiece_model(text, out);
      return err.empty() ? "" : p + ": " + err;
    } else if (ends_with(p, "dict.txt")) {
      dict_txt = text;
    } else if (ends_with(p, "vocab.bpe") || ends_with(p, "merges.txt")) {
      vocab_bpe = text;
    } else if (ends_with(p, "encoder.json") || ends_with(p, "vocab.json")) {
      encoder_json = text;
    } else if (ends_with(p, ".json")) {
      if (paths.size() != 1) return "a tokenizer.json is given alone";
      err = read_hf_tokenizer_json(text, out);
      return err.empty() ? "" : p + ": " + err;
    } else if (ends_with(p, ".txt")) {
      if (paths.size() != 1) return "a vocab.txt is given alone";
      err = read_bert_vocab(text, out);
      return err.empty() ? "" : p + ": " + err;
    } else {
      return "'" + p +
             "' is not a tokenizer file linfer-convert reads (tokenizer.json, encoder.json + "
             "vocab.bpe [+ fairseq dict.txt], vocab.txt, a SentencePiece .model)";
    }
  }
  if (encoder_json.empty() || vocab_bpe.empty())
    return "GPT-2's tokenizer needs encoder.json and vocab.bpe (a fairseq dict.txt goes with them)";
  if (!(err = read_gpt2_files(encoder_json, vocab_bpe, out)).empty()) return err;
  return dict_txt.empty() ? "" : apply_fairseq_dict(dict_txt, out);
}

}  // namespace linfer::convert
