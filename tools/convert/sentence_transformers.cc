// SPDX-License-Identifier: Apache-2.0
#include "sentence_transformers.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "json_document.h"

namespace linfer::convert {
namespace {

using json = nlohmann::json;

// The file's JSON, or a message; missing: *found = false and no message.
std::string read_json(const std::string& path, json* j, bool* found) {
  std::ifstream f(path, std::ios::binary);
  *found = bool(f);
  if (!f) return "";
  std::stringstream text;
  text << f.rdbuf();
  *j = parse_json(text.str());
  if (j->is_discarded() || (!j->is_object() && !j->is_array())) return path + " is not valid JSON";
  return "";
}

}  // namespace

std::string read_sentence_transformers(const std::string& dir, SentencePooling* out) {
  const std::string base = dir.empty() ? "" : dir + "/";
  json modules;
  bool found = false;
  if (std::string e = read_json(base + "modules.json", &modules, &found); !e.empty()) return e;
  if (!found) return "";
  if (!modules.is_array()) return base + "modules.json is not a list of modules";
  out->present = true;
  std::string pooling_path;
  bool transformer = false;
  for (const json& m : modules) {
    const std::string type =
        m.is_object() && m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
    const std::string path =
        m.is_object() && m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
    if (type == "sentence_transformers.models.Transformer")
      transformer = true;
    else if (type == "sentence_transformers.models.Pooling")
      pooling_path = path;
    else if (type == "sentence_transformers.models.Normalize")
      out->normalize = true;
    else
      return base + "modules.json: module type '" + type + "' is not supported (Transformer, Pooling, Normalize)";
  }
  if (!transformer) return base + "modules.json names no sentence_transformers.models.Transformer";
  if (pooling_path.empty()) return base + "modules.json names no sentence_transformers.models.Pooling";
  json pool;
  const std::string pool_file = base + pooling_path + "/config.json";
  if (std::string e = read_json(pool_file, &pool, &found); !e.empty()) return e;
  if (!found) return "cannot read " + pool_file;
  auto on = [&](const char* key) { return pool.contains(key) && pool[key].is_boolean() && pool[key].get<bool>(); };
  for (const char* key : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                          "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
    if (on(key)) return pool_file + ": " + key + " is not supported (pooling_mode_cls_token, pooling_mode_mean_tokens)";
  if (on("pooling_mode_cls_token") == on("pooling_mode_mean_tokens"))
    return pool_file + ": exactly one of pooling_mode_cls_token and pooling_mode_mean_tokens must be true";
  out->pooling = on("pooling_mode_cls_token") ? Pooling::First : Pooling::Mean;
  json sbert;
  if (std::string e = read_json(base + "sentence_bert_config.json", &sbert, &found); !e.empty()) return e;
  if (found && sbert.contains("max_seq_length") && sbert["max_seq_length"].is_number_integer()) {
    const int64_t n = sbert["max_seq_length"].get<int64_t>();
    if (n < 1 || n > int64_t(Limits::kMaxSeqLen))
      return base + "sentence_bert_config.json: max_seq_length is out of range";
    out->max_seq_length = uint32_t(n);
  }
  out->note = std::string("sentence-transformers: ") + (out->pooling == Pooling::First ? "first-token (CLS)" : "mean") +
              " pooling" + (out->normalize ? ", L2-normalized" : "") +
              (out->max_seq_length ? ", inputs up to " + std::to_string(out->max_seq_length) + " tokens" : "");
  return "";
}

std::string apply_pooling(const SentencePooling& p, EncoderDescription* desc) {
  EncoderConfig& c = desc->config;
  if (c.head != HeadKind::None)
    return std::string("pooling applies to a model whose output is its hidden states; this one has a ") +
           to_string(c.head) + " head";
  c.head = HeadKind::Pooled;
  c.pooling = p.pooling;
  c.normalize_output = p.normalize;
  if (p.max_seq_length && p.max_seq_length < c.max_seq_len) c.max_seq_len = p.max_seq_length;
  return "";
}

}  // namespace linfer::convert
