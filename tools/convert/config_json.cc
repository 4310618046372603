// SPDX-License-Identifier: Apache-2.0
#include "config_json.h"

#include <nlohmann/json.hpp>

#include "json_document.h"

#include <cmath>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

namespace linfer::convert {
namespace {

using json = nlohmann::json;

// Reads the keys it is asked for into the config; the first bad one is its status (later reads do nothing).
struct Parser {
  const json& j;
  err::Status status;

  bool has(const char* key) const { return j.contains(key); }
  void u32(const char* key, uint32_t* out, bool required) {
    if (!status.ok()) return;
    if (!has(key)) {
      if (required) status = err::invalid_model("missing key '{}'", key);
      return;
    }
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t(UINT32_MAX)) {
      status = err::invalid_model("'{}' must be a non-negative integer", key);
      return;
    }
    *out = uint32_t(v.get<int64_t>());
  }
  void f32(const char* key, float* out) {
    if (!status.ok() || !has(key)) return;
    const json& v = j.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      status = err::invalid_model("'{}' must be a finite number", key);
      return;
    }
    *out = float(v.get<double>());
  }
  void boolean(const char* key, bool* out) {
    if (!status.ok() || !has(key)) return;
    if (!j.at(key).is_boolean()) {
      status = err::invalid_model("'{}' must be true or false", key);
      return;
    }
    *out = j.at(key).get<bool>();
  }
  template <class E>
  void choice(const char* key, E* out, const std::vector<std::pair<const char*, E>>& options) {
    if (!status.ok() || !has(key)) return;
    const json& v = j.at(key);
    std::string names;
    if (v.is_string())
      for (const auto& [name, value] : options)
        if (v.get<std::string>() == name) {
          *out = value;
          return;
        }
    for (const auto& [name, value] : options) names += std::string(names.empty() ? "" : ", ") + name;
    status = err::invalid_model("'{}' must be one of: {}", key, names);
  }
};

}  // namespace

err::Result<EncoderConfig> parse_linfer_config(const std::string& text) {
  json j = parse_json(text);
  if (j.is_discarded()) return err::invalid_model("the configuration is not valid JSON");
  if (!j.is_object()) return err::invalid_model("the configuration must be a JSON object");
  // Keys the reference writes that only decide which tensors exist (presence is read from the
  // checkpoint itself).
  static const std::set<std::string> kInformational = {"qkv_bias",    "proj_bias",      "head_transform",
                                                       "ff_bias",     "conv_kernel",    "global_projections",
                                                       "random_seed", "random_pattern", "rotation_seed"};
  static const std::set<std::string> kKnown = {"vocab_size",
                                               "dim",
                                               "num_layers",
                                               "num_heads",
                                               "head_dim",
                                               "kv_heads",
                                               "ff_dim",
                                               "max_seq_len",
                                               "attention_kind",
                                               "norm_placement",
                                               "embedding_norm",
                                               "final_norm",
                                               "norm_eps",
                                               "positions",
                                               "position_offset",
                                               "sinusoidal_base",
                                               "embedding_scale",
                                               "activation",
                                               "head",
                                               "head_activation",
                                               "pooling",
                                               "num_classes",
                                               "causal",
                                               "rotary",
                                               "classifier_activation",
                                               "reversible_merge",
                                               "normalize_output"};
  // The attention kinds' own fields: their format files' (kind_field_infos).
  std::vector<std::pair<AttentionKind, std::vector<KindFieldInfo>>> kind_fields;
  std::set<std::string> kind_keys;
  for (size_t i = 0; i < kAttentionKindCount; ++i) {
    kind_fields.push_back({kAttentionKindNames[i].kind, kind_field_infos(kAttentionKindNames[i].kind)});
    for (const KindFieldInfo& f : kind_fields.back().second) kind_keys.insert(f.name);
  }
  for (const auto& item : j.items())
    if (!kKnown.count(item.key()) && !kInformational.count(item.key()) && !kind_keys.count(item.key()))
      return err::invalid_model("unknown configuration key '{}'", item.key());

  EncoderConfig c;
  Parser p{j, {}};
  p.u32("vocab_size", &c.vocab_size, true);
  p.u32("dim", &c.dim, true);
  p.u32("num_layers", &c.num_layers, true);
  p.u32("num_heads", &c.num_heads, true);
  p.u32("head_dim", &c.head_dim, true);
  c.kv_heads = c.num_heads;
  p.u32("kv_heads", &c.kv_heads, false);
  p.u32("ff_dim", &c.ff_dim, true);
  p.u32("max_seq_len", &c.max_seq_len, true);
  std::vector<std::pair<const char*, AttentionKind>> kinds;  // the table of kinds' names
  for (size_t i = 0; i < kAttentionKindCount; ++i)
    kinds.push_back({kAttentionKindNames[i].name, kAttentionKindNames[i].kind});
  AttentionKind kind = c.attention_kind;
  p.choice("attention_kind", &kind, kinds);
  set_attention_kind(c, kind);
  // Each kind's fields given: the model's kind's set (bit i of `given`: its field i), another
  // kind's refused unless its default (or, one of EncoderConfig's own, refused by the validation).
  uint32_t given = 0;
  for (const auto& [of, fields] : kind_fields)
    for (size_t i = 0; i < fields.size() && p.status.ok(); ++i) {
      const KindFieldInfo& f = fields[i];
      if (!p.has(f.name)) continue;
      uint32_t value = 0;
      if (f.type == KindFieldInfo::kNumber) {
        p.u32(f.name, &value, false);
      } else if (f.type == KindFieldInfo::kFloat) {
        float v = 0.0f;
        p.f32(f.name, &v);
        std::memcpy(&value, &v, 4);
      } else if (f.type == KindFieldInfo::kBool) {
        bool v = false;
        p.boolean(f.name, &v);
        value = v;
      } else {
        std::vector<std::pair<const char*, uint32_t>> options;
        for (uint32_t n = 0; f.choices[n]; ++n) options.push_back({f.choices[n], n});
        p.choice(f.name, &value, options);
      }
      if (!p.status.ok()) break;
      if (of == c.attention_kind) given |= 1u << i;
      p.status = set_kind_field(c, of, i, value);
    }
  apply_converter_defaults(c, given);
  p.choice("norm_placement", &c.norm_placement,
           {{"pre", NormPlacement::Pre}, {"post", NormPlacement::Post}, {"reversible", NormPlacement::Reversible}});
  p.boolean("embedding_norm", &c.embedding_norm);
  p.boolean("final_norm", &c.final_norm);
  p.f32("norm_eps", &c.norm_eps);
  p.choice(
      "positions", &c.positions,
      {{"none", PositionKind::None}, {"learned", PositionKind::Learned}, {"sinusoidal", PositionKind::Sinusoidal}});
  p.u32("position_offset", &c.position_offset, false);
  p.f32("sinusoidal_base", &c.sinusoidal_base);
  p.f32("embedding_scale", &c.embedding_scale);
  const std::vector<std::pair<const char*, Activation>> activations = {{"gelu", Activation::GeluErf},
                                                                       {"gelu_tanh", Activation::GeluTanh},
                                                                       {"relu", Activation::Relu},
                                                                       {"tanh", Activation::Tanh}};
  p.choice("activation", &c.activation, activations);
  p.choice("head", &c.head,
           {{"none", HeadKind::None},
            {"lm", HeadKind::LmLogits},
            {"classifier", HeadKind::Classifier},
            {"pooled", HeadKind::Pooled}});
  p.choice("head_activation", &c.head_activation, activations);
  p.choice("classifier_activation", &c.classifier_activation, activations);
  p.choice("reversible_merge", &c.reversible_merge, {{"sum", ReversibleMerge::Sum}, {"mean", ReversibleMerge::Mean}});
  p.choice("pooling", &c.pooling, {{"first", Pooling::First}, {"mean", Pooling::Mean}});
  p.boolean("normalize_output", &c.normalize_output);
  p.u32("num_classes", &c.num_classes, false);
  p.choice("rotary", &c.rotary, {{"none", Rotary::None}, {"adjacent_pairs", Rotary::AdjacentPairs}});
  bool causal = false;
  p.boolean("causal", &causal);
  c.causal = causal ? CausalMode::Causal : CausalMode::Bidirectional;
  if (!p.status.ok()) return p.status;
  return c;
}

}  // namespace linfer::convert
