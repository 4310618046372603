// SPDX-License-Identifier: Apache-2.0
#include "sentence_transformers.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "json_document.h"

namespace linfer::convert {
namespace {

using json = nlohmann::json;

// The file's JSON (an object or a list), or a null value when the file is missing.
err::Result<json> read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return json();
  std::stringstream text;
  text << f.rdbuf();
  json j = parse_json(text.str());
  if (j.is_discarded() || (!j.is_object() && !j.is_array())) return err::invalid_model("{} is not valid JSON", path);
  return j;
}

}  // namespace

err::Result<SentencePooling> read_sentence_transformers(const std::string& dir) {
  const std::string base = dir.empty() ? "" : dir + "/";
  SentencePooling out;
  err::Result<json> modules = read_json(base + "modules.json");
  if (!modules.ok()) return modules.status();
  if (modules.value().is_null()) return out;
  if (!modules.value().is_array()) return err::invalid_model("{}modules.json is not a list of modules", base);
  out.present = true;
  std::string pooling_path;
  bool transformer = false;
  for (const json& m : modules.value()) {
    const std::string type =
        m.is_object() && m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
    const std::string path =
        m.is_object() && m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
    if (type == "sentence_transformers.models.Transformer")
      transformer = true;
    else if (type == "sentence_transformers.models.Pooling")
      pooling_path = path;
    else if (type == "sentence_transformers.models.Normalize")
      out.normalize = true;
    else
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "{}modules.json: module type '{}' is not supported (Transformer, Pooling, Normalize)", base,
                          type);
  }
  if (!transformer) return err::invalid_model("{}modules.json names no sentence_transformers.models.Transformer", base);
  if (pooling_path.empty())
    return err::invalid_model("{}modules.json names no sentence_transformers.models.Pooling", base);
  const std::string pool_file = base + pooling_path + "/config.json";
  err::Result<json> read_pool = read_json(pool_file);
  if (!read_pool.ok()) return read_pool.status();
  const json& pool = read_pool.value();
  if (pool.is_null()) return err::failure(LINFER_ERROR_IO, "cannot read {}", pool_file);
  auto on = [&](const char* key) { return pool.contains(key) && pool[key].is_boolean() && pool[key].get<bool>(); };
  for (const char* key : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                          "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
    if (on(key))
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "{}: {} is not supported (pooling_mode_cls_token, pooling_mode_mean_tokens)", pool_file, key);
  if (on("pooling_mode_cls_token") == on("pooling_mode_mean_tokens"))
    return err::invalid_model("{}: exactly one of pooling_mode_cls_token and pooling_mode_mean_tokens must be true",
                              pool_file);
  out.pooling = on("pooling_mode_cls_token") ? Pooling::First : Pooling::Mean;
  err::Result<json> sbert = read_json(base + "sentence_bert_config.json");
  if (!sbert.ok()) return sbert.status();
  const json& sb = sbert.value();
  if (sb.is_object() && sb.contains("max_seq_length") && sb["max_seq_length"].is_number_integer()) {
    const int64_t n = sb["max_seq_length"].get<int64_t>();
    if (n < 1 || n > int64_t(Limits::kMaxSeqLen))
      return err::invalid_model("{}sentence_bert_config.json: max_seq_length is out of range", base);
    out.max_seq_length = uint32_t(n);
  }
  out.note = std::string("sentence-transformers: ") + (out.pooling == Pooling::First ? "first-token (CLS)" : "mean") +
             " pooling" + (out.normalize ? ", L2-normalized" : "") +
             (out.max_seq_length ? ", inputs up to " + std::to_string(out.max_seq_length) + " tokens" : "");
  return out;
}

err::Status apply_pooling(const SentencePooling& p, EncoderDescription* desc) {
  EncoderConfig& c = desc->config;
  if (c.head != HeadKind::None)
    return err::failure(LINFER_ERROR_INVALID_ARGUMENT,
                        "pooling applies to a model whose output is its hidden states; this one has a {} head",
                        to_string(c.head));
  c.head = HeadKind::Pooled;
  c.pooling = p.pooling;
  c.normalize_output = p.normalize;
  if (p.max_seq_length && p.max_seq_length < c.max_seq_len) c.max_seq_len = p.max_seq_length;
  return {};
}

}  // namespace linfer::convert
