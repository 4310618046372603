// SPDX-License-Identifier: Apache-2.0
// Hugging Face tokenizer.json: the byte-level BPE (GPT-2, RoBERTa), WordPiece (BERT) and Unigram
// (XLM-RoBERTa and other SentencePiece models converted by transformers) pipelines linfer
// reproduces exactly. Anything else in the pipeline is refused by name.
#include <algorithm>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "json_document.h"
#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {
namespace {

using nlohmann::json;

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

// A pipeline step's type for a message ("null" when there is none).
std::string step_name(const json& j) { return j.is_null() ? std::string("null") : type_of(j); }

// A field that must be absent, null, false or "" (the options linfer does not reproduce).
err::Status must_be_off(const json& j, const char* key, const char* where) {
  if (!j.contains(key)) return {};
  const json& v = j[key];
  if (v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_string() && v.get<std::string>().empty())) return {};
  return err::failure(LINFER_ERROR_UNSUPPORTED, "{} {} = {} is not supported", where, key, v.dump());
}

// The template: the ids of the special tokens before and after the sequence.
err::Status read_template(const json& pp, TokenizerData* out) {
  const std::string type = type_of(pp);
  auto id_of = [&](const json& pair) -> int64_t {
    return pair.is_array() && pair.size() == 2 && pair[1].is_number_unsigned() ? pair[1].get<int64_t>() : -1;
  };
  if (pp.is_null()) return {};
  if (type == "ByteLevel") return {};  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const int64_t cls = id_of(pp.value("cls", json())), sep = id_of(pp.value("sep", json()));
    if (cls < 0 || sep < 0) return err::invalid_model("{} without cls and sep ids", type);
    out->settings.prefix = {uint32_t(cls)};
    out->settings.suffix = {uint32_t(sep)};
    return {};
  }
  if (type == "TemplateProcessing") {
    const json& single = pp.value("single", json::array());
    const json& tokens = pp.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const json& item : single) {
      if (item.contains("Sequence")) {
        if (seen_sequence) return err::unsupported("a TemplateProcessing template with the sequence twice");
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].value("id", "");
        if (!tokens.contains(name) || !tokens[name].contains("ids") || tokens[name]["ids"].size() != 1)
          return err::failure(LINFER_ERROR_UNSUPPORTED, "TemplateProcessing special token '{}' without one id", name);
        (seen_sequence ? out->settings.suffix : out->settings.prefix).push_back(tokens[name]["ids"][0].get<uint32_t>());
      } else {
        return err::unsupported("a TemplateProcessing item that is neither a sequence nor a special token");
      }
    }
    return {};
  }
  return err::failure(LINFER_ERROR_UNSUPPORTED, "post-processor {} is not supported", type.empty() ? pp.dump() : type);
}

// RFC 4648 base64 (with or without padding) into *out; false on any other character.
bool base64_decode(const std::string& in, std::string* out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    const char c = in[i];
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) return false;
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(char((acc >> bits) & 0xFF));
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=') return false;
  return true;
}

// Hugging Face's Unigram pipeline: Precompiled [+ Strip(right)] [+ Replace(" {2,}")], Metaspace.
err::Status read_unigram_pipeline(const json& j, TokenizerData* out) {
  TokenizerView& s = out->settings;
  const json& normalizer = j.value("normalizer", json());
  std::vector<json> steps;
  if (type_of(normalizer) == "Sequence") {
    for (const json& n : normalizer.value("normalizers", json::array())) steps.push_back(n);
  } else if (!normalizer.is_null()) {
    steps.push_back(normalizer);
  }
  size_t k = 0;
  if (k < steps.size() && type_of(steps[k]) == "Precompiled") {
    const json& map = steps[k].value("precompiled_charsmap", json());
    std::string bytes;
    if (!map.is_null()) {
      if (!map.is_string() || !base64_decode(map.get<std::string>(), &bytes))
        return err::invalid_model("normalizer Precompiled: precompiled_charsmap is not base64");
      // A little-endian uint32 trie size, the Darts trie's 4-byte units, the NUL-ended strings.
      uint32_t trie = 0;
      if (bytes.size() >= 4) std::memcpy(&trie, bytes.data(), 4);
      if (!bytes.empty() && (bytes.size() < 4 || trie < 4 || trie % 4 || trie > bytes.size() - 4))
        return err::invalid_model(
            "normalizer Precompiled: precompiled_charsmap is malformed (its trie of {} bytes does not fit its {} bytes)",
            trie, bytes.size());
    }
    out->charsmap = bytes;
    ++k;
  }
  if (k < steps.size() && type_of(steps[k]) == "Strip") {
    if (steps[k].value("strip_left", false) || !steps[k].value("strip_right", true))
      return err::unsupported("normalizer Strip other than right-only is not supported");
    s.strip_right = true;
    ++k;
  }
  if (k < steps.size() && type_of(steps[k]) == "Replace") {
    const json& pattern = steps[k].value("pattern", json());
    const std::string content = steps[k].value("content", "");
    if (!pattern.is_object() || pattern.value("Regex", "") != " {2,}" || (content != " " && content != "\xE2\x96\x81"))
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "normalizer Replace {} -> {} is not supported (Replace(\" {2,}\", \" \" or \"\u2581\"))",
                          pattern.dump(), json(content).dump());
    s.space_runs = content == " " ? 1 : 2;
    ++k;
  }
  if (k < steps.size())
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "normalizer {} is not supported with Unigram (Precompiled, Strip right, Replace \" {2,}\", in "
                        "that order)",
                        type_of(steps[k]).empty() ? steps[k].dump() : type_of(steps[k]));
  const json& pre = j.value("pre_tokenizer", json());
  if (type_of(pre) != "Metaspace")
    return err::failure(LINFER_ERROR_UNSUPPORTED, "pre-tokenizer {} is not supported with Unigram (Metaspace)",
                        step_name(pre));
  if (pre.value("replacement", "\xE2\x96\x81") != "\xE2\x96\x81")
    return err::unsupported("Metaspace replacement other than U+2581 is not supported");
  if (!pre.value("split", true)) return err::unsupported("Metaspace split = false is not supported");
  std::string scheme = pre.contains("prepend_scheme")        ? pre.value("prepend_scheme", "")
                       : pre.value("add_prefix_space", true) ? "always"
                                                             : "never";
  if (scheme == "always")
    s.prepend_scheme = 0;
  else if (scheme == "first")
    s.prepend_scheme = 1;
  else if (scheme == "never")
    s.prepend_scheme = 2;
  else
    return err::failure(LINFER_ERROR_UNSUPPORTED, "Metaspace prepend_scheme '{}' is not supported", scheme);
  const json& model = j["model"];
  if (model.value("byte_fallback", false)) return err::unsupported("Unigram byte_fallback = true is not supported");
  const json& vocab = model.value("vocab", json());
  if (!vocab.is_array() || vocab.empty()) return err::invalid_model("the Unigram model has no vocabulary");
  for (const json& entry : vocab) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
      return err::invalid_model("a Unigram vocabulary entry is not [piece, score]");
    const std::string piece = entry[0].get<std::string>();
    const double score = entry[1].get<double>();
    // The reference sums scores in double; linfer stores floats, so each must be one exactly (as
    // every score converted from a SentencePiece model is).
    if (double(float(score)) != score)
      return err::failure(LINFER_ERROR_UNSUPPORTED, "Unigram piece '{}' has score {}, not a float32 value", piece,
                          entry[1].dump());
    if (piece.empty()) return err::invalid_model("a Unigram piece is empty");
    out->pieces.push_back(piece);
    out->scores.push_back(float(score));
    out->types.push_back(uint8_t(PieceType::Normal));
  }
  const json& unk = model.value("unk_id", json());
  if (!unk.is_number_unsigned() || unk.get<uint64_t>() >= out->pieces.size())
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "Unigram unk_id {} is not a piece (a Unigram without an unknown piece is not supported)",
                        unk.dump());
  s.unk_id = int32_t(unk.get<uint64_t>());
  out->types[size_t(s.unk_id)] = uint8_t(PieceType::Unknown);
  s.add_dummy_prefix = s.prepend_scheme != 2,
  s.remove_extra_whitespaces = false;  // (detokenize: the first "▁" no space)
  return {};
}

}  // namespace

err::Result<TokenizerData> read_hf_tokenizer_json(const std::string& text) {
  json j = parse_json(text);
  if (j.is_discarded() || !j.is_object()) return err::invalid_model("not JSON");
  TokenizerData out;
  const json& model = j.value("model", json());
  const std::string kind = type_of(model);
  TokenizerView& s = out.settings;
  if (kind == "WordPiece") {
    s.kind = TokenizerKind::WordPiece;
  } else if (kind == "BPE") {
    s.kind = TokenizerKind::ByteLevelBpe;
  } else if (kind == "Unigram") {
    s.kind = TokenizerKind::Unigram;
  } else {
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "model type '{}' is not supported (BPE with byte-level pre-tokenization, WordPiece, Unigram)",
                        kind);
  }
  // Truncation and padding are settings of a call, not of the algorithm: sentence-transformers and
  // transformers replace them on every call, and linfer runs one sequence without padding, cut to
  // the model's n by its callers (linfer-embed keeps the closing token, as right truncation does).
  const json& truncation = j.value("truncation", json());
  if (!truncation.is_null() && truncation.value("direction", std::string("Right")) != "Right")
    return err::failure(LINFER_ERROR_UNSUPPORTED, "truncation direction '{}' is not supported (Right)",
                        truncation.value("direction", std::string()));
  const json& normalizer = j.value("normalizer", json());
  const json& pre = j.value("pre_tokenizer", json());
  if (s.kind == TokenizerKind::Unigram) {
    if (err::Status st = read_unigram_pipeline(j, &out); !st.ok()) return st;
  } else if (s.kind == TokenizerKind::WordPiece) {
    if (type_of(normalizer) != "BertNormalizer")
      return err::failure(LINFER_ERROR_UNSUPPORTED, "normalizer {} is not supported with WordPiece (BertNormalizer)",
                          step_name(normalizer));
    s.clean_text = normalizer.value("clean_text", true);
    s.split_cjk = normalizer.value("handle_chinese_chars", true);
    s.lowercase = normalizer.value("lowercase", true);
    const json& strip = normalizer.value("strip_accents", json());
    s.strip_accents = strip.is_boolean() ? strip.get<bool>() : s.lowercase;  // null: as lowercase
    if (type_of(pre) != "BertPreTokenizer")
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "pre-tokenizer {} is not supported with WordPiece (BertPreTokenizer)", step_name(pre));
    s.continuing_prefix = model.value("continuing_subword_prefix", "##");
    s.max_word_chars = model.value("max_input_chars_per_word", 100u);
  } else {
    if (!normalizer.is_null())
      return err::failure(LINFER_ERROR_UNSUPPORTED, "normalizer {} is not supported with BPE", type_of(normalizer));
    if (type_of(pre) != "ByteLevel")
      return err::failure(LINFER_ERROR_UNSUPPORTED, "pre-tokenizer {} is not supported with BPE (ByteLevel)",
                          step_name(pre));
    if (err::Status st = must_be_off(pre, "add_prefix_space", "ByteLevel"); !st.ok()) return st;
    if (pre.contains("use_regex") && !pre["use_regex"].get<bool>())
      return err::unsupported("ByteLevel use_regex = false is not supported");
    for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                            "byte_fallback", "ignore_merges"})
      if (err::Status st = must_be_off(model, key, "BPE"); !st.ok()) return st;
  }
  // Pieces by id: the vocabulary and the added tokens, which must number them 0..N-1.
  std::map<uint32_t, std::string> by_id;
  const json& vocab = model.value("vocab", json());
  if (s.kind == TokenizerKind::Unigram) {
    for (size_t id = 0; id < out.pieces.size(); ++id) by_id.emplace(uint32_t(id), out.pieces[id]);
    out.pieces.clear();
  } else if (!vocab.is_object()) {
    return err::invalid_model("the model has no vocabulary");
  }
  for (auto it = vocab.begin(); s.kind != TokenizerKind::Unigram && it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned()) return err::invalid_model("vocabulary entry '{}' has no id", it.key());
    std::optional<std::string> piece = it.key();
    if (s.kind == TokenizerKind::ByteLevelBpe && !(piece = byte_level_bytes(it.key())))
      return err::invalid_model("piece '{}' is not in GPT-2's byte-to-unicode map", it.key());
    if (!by_id.emplace(it.value().get<uint32_t>(), *piece).second)
      return err::invalid_model("id {} names two pieces", it.value().get<uint32_t>());
  }
  std::vector<std::pair<uint32_t, std::string>> added;
  for (const json& a : j.value("added_tokens", json::array())) {
    const std::string content = a.value("content", "");
    const uint32_t id = a.value("id", 0u);
    if (a.value("single_word", false))
      return err::failure(LINFER_ERROR_UNSUPPORTED, "added token '{}' with single_word = true is not supported",
                          content);
    uint8_t strip =
        uint8_t((a.value("lstrip", false) ? kAddedLstrip : 0) | (a.value("rstrip", false) ? kAddedRstrip : 0));
    // normalized: matched in the normalized text rather than the raw one, the same text when there
    // is no normalizer (GPT-2's own tokenizer.json marks <|endoftext|> so).
    // (Unigram: matched in the normalized text, which linfer does.)
    if (a.value("normalized", false) && !normalizer.is_null()) {
      if (s.kind != TokenizerKind::Unigram)
        return err::failure(LINFER_ERROR_UNSUPPORTED,
                            "added token '{}' with normalized = true is not supported (with a normalizer)", content);
      strip |= kAddedNormalized;
    }
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      if (s.kind == TokenizerKind::Unigram)
        return err::invalid_model("added token '{}' (id {}) is not in the Unigram vocabulary", content, id);
      by_id.emplace(id, content);
    } else if (it->second != content) {
      return err::invalid_model("added token '{}' has the id of piece '{}'", content, it->second);
    }
    added.emplace_back(id, content);
    s.added_flags.push_back(strip);
  }
  if (std::all_of(s.added_flags.begin(), s.added_flags.end(), [](uint8_t f) { return f == 0; })) s.added_flags.clear();
  uint32_t expect = 0;
  for (const auto& [id, piece] : by_id) {
    if (id != expect) return err::invalid_model("the vocabulary's ids are not 0 to {}", by_id.size() - 1);
    out.pieces.push_back(piece);
    ++expect;
  }
  for (const auto& [id, content] : added) {
    s.added.push_back(id);
    if (s.kind == TokenizerKind::Unigram) out.types[id] = uint8_t(PieceType::Control);
  }
  if (s.kind == TokenizerKind::Unigram) {
    // (the unknown piece keeps its type when it is also an added token: detokenize's " ⁇ ")
    out.types[size_t(s.unk_id)] = uint8_t(PieceType::Unknown);
  } else if (s.kind == TokenizerKind::WordPiece) {
    const int32_t unk = out.find(model.value("unk_token", "[UNK]"));
    if (unk < 0)
      return err::invalid_model("the unknown token '{}' is not in the vocabulary", model.value("unk_token", "[UNK]"));
    s.unk_id = unk;
  } else {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const json& m : model.value("merges", json::array())) {
      std::string a, b;
      if (m.is_string()) {
        const std::string t = m.get<std::string>();
        const size_t space = t.find(' ');
        if (space == std::string::npos || t.find(' ', space + 1) != std::string::npos)
          return err::invalid_model("merge '{}' is not two pieces", t);
        a = t.substr(0, space), b = t.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>(), b = m[1].get<std::string>();
      } else {
        return err::invalid_model("a merge that is neither \"a b\" nor [a, b]");
      }
      const std::optional<std::string> a_bytes = byte_level_bytes(a), b_bytes = byte_level_bytes(b);
      if (!a_bytes || !b_bytes) return err::invalid_model("a merge's piece is not in GPT-2's byte-to-unicode map");
      pairs.emplace_back(*a_bytes, *b_bytes);
    }
    if (err::Status st = merges_from_strings(pairs, &out); !st.ok()) return st;
  }
  if (err::Status st = read_template(j.value("post_processor", json()), &out); !st.ok()) return st;
  return out;
}

}  // namespace linfer::convert
