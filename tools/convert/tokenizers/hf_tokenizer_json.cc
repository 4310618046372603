// SPDX-License-Identifier: Apache-2.0
// Hugging Face tokenizer.json: the byte-level BPE (GPT-2, RoBERTa) and WordPiece (BERT) pipelines
// linfer reproduces exactly. Anything else in the pipeline is refused by name.
#include <map>

#include <nlohmann/json.hpp>

#include "tokenizers/tokenizer_source.h"

namespace linfer::convert {
namespace {

using nlohmann::json;

std::string type_of(const json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : ""; }

// A field that must be absent, null, false or "" (the options linfer does not reproduce).
std::string must_be_off(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return "";
  const json& v = j[key];
  if (v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_string() && v.get<std::string>().empty())) return "";
  return where + " " + key + " = " + v.dump() + " is not supported";
}

// The template: the ids of the special tokens before and after the sequence.
std::string read_template(const json& pp, TokenizerData* out) {
  const std::string type = type_of(pp);
  auto id_of = [&](const json& pair) -> int64_t { return pair.is_array() && pair.size() == 2 && pair[1].is_number_unsigned() ? pair[1].get<int64_t>() : -1; };
  if (pp.is_null()) return "";
  if (type == "ByteLevel") return "";  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const int64_t cls = id_of(pp.value("cls", json())), sep = id_of(pp.value("sep", json()));
    if (cls < 0 || sep < 0) return type + " without cls and sep ids";
    out->settings.prefix = {uint32_t(cls)};
    out->settings.suffix = {uint32_t(sep)};
    return "";
  }
  if (type == "TemplateProcessing") {
    const json& single = pp.value("single", json::array());
    const json& tokens = pp.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const json& item : single) {
      if (item.contains("Sequence")) {
        if (seen_sequence) return "a TemplateProcessing template with the sequence twice";
        seen_sequence = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].value("id", "");
        if (!tokens.contains(name) || !tokens[name].contains("ids") || tokens[name]["ids"].size() != 1)
          return "TemplateProcessing special token '" + name + "' without one id";
        (seen_sequence ? out->settings.suffix : out->settings.prefix).push_back(tokens[name]["ids"][0].get<uint32_t>());
      } else {
        return "a TemplateProcessing item that is neither a sequence nor a special token";
      }
    }
    return "";
  }
  return "post-processor " + (type.empty() ? pp.dump() : type) + " is not supported";
}

}  // namespace

std::string read_hf_tokenizer_json(const std::string& text, TokenizerData* out) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return "not JSON";
  const json& model = j.value("model", json());
  const std::string kind = type_of(model);
  TokenizerView& s = out->settings;
  if (kind == "WordPiece") {
    s.kind = TokenizerKind::WordPiece;
  } else if (kind == "BPE") {
    s.kind = TokenizerKind::ByteLevelBpe;
  } else {
    return "model type '" + kind + "' is not supported (BPE with byte-level pre-tokenization, WordPiece)";
  }
  // Truncation and padding are settings of a call, not of the algorithm: sentence-transformers and
  // transformers replace them on every call, and linfer runs one sequence without padding, cut to
  // the model's n by its callers (linfer-embed keeps the closing token, as right truncation does).
  const json& truncation = j.value("truncation", json());
  if (!truncation.is_null() && truncation.value("direction", std::string("Right")) != "Right")
    return "truncation direction '" + truncation.value("direction", std::string()) + "' is not supported (Right)";
  const json& normalizer = j.value("normalizer", json());
  const json& pre = j.value("pre_tokenizer", json());
  std::string err;
  if (s.kind == TokenizerKind::WordPiece) {
    if (type_of(normalizer) != "BertNormalizer")
      return "normalizer " + (normalizer.is_null() ? std::string("null") : type_of(normalizer)) +
             " is not supported with WordPiece (BertNormalizer)";
    s.clean_text = normalizer.value("clean_text", true);
    s.split_cjk = normalizer.value("handle_chinese_chars", true);
    s.lowercase = normalizer.value("lowercase", true);
    const json& strip = normalizer.value("strip_accents", json());
    s.strip_accents = strip.is_boolean() ? strip.get<bool>() : s.lowercase;  // null: as lowercase
    if (type_of(pre) != "BertPreTokenizer")
      return "pre-tokenizer " + (pre.is_null() ? std::string("null") : type_of(pre)) +
             " is not supported with WordPiece (BertPreTokenizer)";
    s.continuing_prefix = model.value("continuing_subword_prefix", "##");
    s.max_word_chars = model.value("max_input_chars_per_word", 100u);
  } else {
    if (!normalizer.is_null()) return "normalizer " + type_of(normalizer) + " is not supported with BPE";
    if (type_of(pre) != "ByteLevel") return "pre-tokenizer " + (pre.is_null() ? std::string("null") : type_of(pre)) +
                                            " is not supported with BPE (ByteLevel)";
    if (!(err = must_be_off(pre, "add_prefix_space", "ByteLevel")).empty()) return err;
    if (pre.contains("use_regex") && !pre["use_regex"].get<bool>()) return "ByteLevel use_regex = false is not supported";
    for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                            "byte_fallback", "ignore_merges"})
      if (!(err = must_be_off(model, key, "BPE")).empty()) return err;
  }
  // Pieces by id: the vocabulary and the added tokens, which must number them 0..N-1.
  std::map<uint32_t, std::string> by_id;
  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object()) return "the model has no vocabulary";
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned()) return "vocabulary entry '" + it.key() + "' has no id";
    std::string piece = it.key();
    if (s.kind == TokenizerKind::ByteLevelBpe && (piece = byte_level_bytes(it.key())).empty())
      return "piece '" + it.key() + "' is not in GPT-2's byte-to-unicode map";
    if (!by_id.emplace(it.value().get<uint32_t>(), piece).second)
      return "id " + std::to_string(it.value().get<uint32_t>()) + " names two pieces";
  }
  std::vector<std::pair<uint32_t, std::string>> added;
  for (const json& a : j.value("added_tokens", json::array())) {
    const std::string content = a.value("content", "");
    const uint32_t id = a.value("id", 0u);
    for (const char* key : {"single_word", "lstrip", "rstrip"})
      if (a.value(key, false)) return "added token '" + content + "' with " + key + " = true is not supported";
    // normalized: matched in the normalized text rather than the raw one, the same text when there
    // is no normalizer (GPT-2's own tokenizer.json marks <|endoftext|> so).
    if (a.value("normalized", false) && !normalizer.is_null())
      return "added token '" + content + "' with normalized = true is not supported (with a normalizer)";
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      by_id.emplace(id, content);
    } else if (it->second != content) {
      return "added token '" + content + "' has the id of piece '" + it->second + "'";
    }
    added.emplace_back(id, content);
  }
  uint32_t expect = 0;
  for (const auto& [id, piece] : by_id) {
    if (id != expect) return "the vocabulary's ids are not 0 to " + std::to_string(by_id.size() - 1);
    out->pieces.push_back(piece);
    ++expect;
  }
  for (const auto& [id, content] : added) s.added.push_back(id);
  if (s.kind == TokenizerKind::WordPiece) {
    const int32_t unk = out->find(model.value("unk_token", "[UNK]"));
    if (unk < 0) return "the unknown token '" + model.value("unk_token", "[UNK]") + "' is not in the vocabulary";
    s.unk_id = unk;
  } else {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const json& m : model.value("merges", json::array())) {
      std::string a, b;
      if (m.is_string()) {
        const std::string t = m.get<std::string>();
        const size_t space = t.find(' ');
        if (space == std::string::npos || t.find(' ', space + 1) != std::string::npos) return "merge '" + t + "' is not two pieces";
        a = t.substr(0, space), b = t.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>(), b = m[1].get<std::string>();
      } else {
        return "a merge that is neither \"a b\" nor [a, b]";
      }
      a = byte_level_bytes(a), b = byte_level_bytes(b);
      if (a.empty() || b.empty()) return "a merge's piece is not in GPT-2's byte-to-unicode map";
      pairs.emplace_back(a, b);
    }
    if (!(err = merges_from_strings(pairs, out)).empty()) return err;
  }
  return read_template(j.value("post_processor", json()), out);
}

}  // namespace linfer::convert
