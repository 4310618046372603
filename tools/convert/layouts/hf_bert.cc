// SPDX-License-Identifier: Apache-2.0
#include "hf_bert.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace linfer::convert {

std::vector<int64_t> tensor_shape(const Checkpoint& ck, const std::string& name) {
  auto it = ck.tensors.find(name);
  return it == ck.tensors.end() ? std::vector<int64_t>() : it->second.shape;
}

err::Status hf_bert_config(const Checkpoint& ck, LibraryConfig& lc, const std::string& P, const std::string& model,
                           const char* default_act, EncoderConfig& c, HfTables* t) {
  const auto words = tensor_shape(ck, P + "embeddings.word_embeddings.weight");
  const auto positions = tensor_shape(ck, P + "embeddings.position_embeddings.weight");
  const auto types = tensor_shape(ck, P + "embeddings.token_type_embeddings.weight");
  if (words.size() != 2) return err::invalid_model("tensor '{}embeddings.word_embeddings.weight' is missing", P);
  if (positions.size() != 2)
    return err::invalid_model("tensor '{}embeddings.position_embeddings.weight' is missing", P);
  if (types.size() != 2 || types[0] < 1)
    return err::invalid_model("tensor '{}embeddings.token_type_embeddings.weight' is missing", P);
  t->positions = uint64_t(std::clamp<int64_t>(positions[0], 0, UINT32_MAX));
  t->types = uint32_t(std::clamp<int64_t>(types[0], 0, UINT32_MAX));
  c.vocab_size = uint32_t(std::clamp<int64_t>(words[0], 0, UINT32_MAX));
  c.dim = lc.u32("hidden_size", 768);
  c.num_layers = lc.u32("num_hidden_layers", 12);
  c.num_heads = lc.u32("num_attention_heads", 12);
  c.ff_dim = lc.u32("intermediate_size", 3072);
  c.positions = PositionKind::Learned;
  c.embedding_norm = true;
  c.norm_placement = NormPlacement::Post;
  c.norm_eps = float(lc.present("layer_norm_eps") && lc.values().at("layer_norm_eps").is_number()
                         ? lc.values().at("layer_norm_eps").get<double>()
                         : 1e-12);
  const std::string act = lc.text("hidden_act", default_act);
  if (act == "gelu")
    c.activation = Activation::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.activation = Activation::GeluTanh;
  else if (act == "relu")
    c.activation = Activation::Relu;
  else
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "{} hidden_act '{}' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)", model, act);
  if (!lc.ok()) return lc.status();
  if (c.num_heads == 0 || c.dim % c.num_heads)
    return err::invalid_model("--config: hidden_size must be a multiple of num_attention_heads");
  c.head_dim = c.dim / c.num_heads;
  c.kv_heads = c.num_heads;
  // Checked here too, not only after configure: the models' own checks that follow assume it.
  return check_counts(c);
}

void hf_bert_embeddings(Builder& b, const std::string& P, const HfTables& t, EncoderDescription& d) {
  const uint32_t D = d.config.dim, rows = uint32_t(t.positions);
  d.token_embedding = b.load(P + "embeddings.word_embeddings.weight", {d.config.vocab_size, D});
  WeightView pos = b.load(P + "embeddings.position_embeddings.weight", {rows, D});
  WeightView type = b.load(P + "embeddings.token_type_embeddings.weight", {t.types, D});
  if (!b.ok()) return;
  const float* p = static_cast<const float*>(pos.data);
  const float* t0 = static_cast<const float*>(type.data);
  std::vector<float> folded(p, p + size_t(rows) * D);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < D; ++i) folded[r * D + i] += t0[i];
  d.position_embedding = b.make({rows, D}, std::move(folded));
  d.embedding_norm = b.norm(P + "embeddings.LayerNorm", D);
  b.ignore(P + "embeddings.position_ids");  // buffers some versions save
  b.ignore(P + "embeddings.token_type_ids");
}

void hf_bert_layer(Builder& b, const std::string& p, uint32_t D, uint32_t F, bool qkv_bias, LayerWeights& l) {
  const std::pair<LinearWeights*, const char*> qkv[] = {{&l.q, "query"}, {&l.k, "key"}, {&l.v, "value"}};
  for (const auto& [lw, name] : qkv)
    *lw = qkv_bias ? b.linear(p + "attention.self." + name, D, D)
                   : LinearWeights{b.load(p + "attention.self." + name + ".weight", {D, D}), {}};
  l.out = b.linear(p + "attention.output.dense", D, D);
  l.attention_norm = b.norm(p + "attention.output.LayerNorm", D);
  l.fc1 = b.linear(p + "intermediate.dense", F, D);
  l.fc2 = b.linear(p + "output.dense", D, F);
  l.feed_forward_norm = b.norm(p + "output.LayerNorm", D);
}

err::Status hf_tied_decoder(Builder& b, const std::string& H, const std::string& model, EncoderDescription& d) {
  const uint32_t V = d.config.vocab_size, D = d.config.dim;
  d.head.out.weight = b.has(H + "decoder.weight") ? b.load(H + "decoder.weight", {V, D}) : d.token_embedding;
  const bool both = b.has(H + "bias") && b.has(H + "decoder.bias");
  if (both && b.identity(H + "bias") != b.identity(H + "decoder.bias"))
    return err::invalid_model("{}bias and {}decoder.bias are different tensors (they are one parameter in {})", H, H,
                              model);
  d.head.out.bias = b.load(b.has(H + "bias") ? H + "bias" : H + "decoder.bias", {V});
  if (both) b.ignore(H + "decoder.bias");
  return {};
}

}  // namespace linfer::convert
