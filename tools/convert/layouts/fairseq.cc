// SPDX-License-Identifier: Apache-2.0
// fairseq linformer_roberta (docs/converter.md, the layout table): the hyperparameters from the
// checkpoint's own args or cfg.
#include <cmath>
#include <cstring>

#include "layout.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::convert {
namespace {

// Hyperparameters from "args" (argparse.Namespace) or "cfg"["model"] (dict or Namespace).
const Value* fairseq_args(const Checkpoint& ck) {
  if (!ck.root || !ck.root->is_dict()) return nullptr;
  const Value* args = ck.root->get("args");
  if (args && !args->is_none()) return args;
  const Value* cfg = ck.root->get("cfg");
  if (cfg && !cfg->is_none()) {
    const Value* model = cfg->get("model");
    if (model && !model->is_none()) return model;
  }
  return nullptr;
}

class FairseqMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig&, MappedModel* out) override {
    const Value* args = fairseq_args(ck);
    if (!args) return err::invalid_model("the fairseq checkpoint has neither 'args' nor 'cfg.model'");
    err::Status bad;  // the first bad argument read
    auto number = [&](const char* key, double fallback, bool required) {
      const Value* v = args->get(key);
      double x = fallback;
      if (!v || v->is_none()) {
        if (required && bad.ok()) bad = err::invalid_model("fairseq args: missing '{}'", key);
        return fallback;
      }
      if (!v->as_number(&x) && bad.ok()) bad = err::invalid_model("fairseq args: '{}' is not a number", key);
      return x;
    };
    auto text = [&](const char* key, const char* fallback) {
      const std::string* s = args->get_string(key);
      return s ? *s : std::string(fallback);
    };
    auto u32 = [&](const char* key, double fallback, bool required) {
      const double x = number(key, fallback, required);
      if ((x < 0 || x > 1e9 || x != std::floor(x)) && bad.ok())
        bad = err::invalid_model("fairseq args: '{}' is not a size", key);
      return uint32_t(x >= 0 && x <= 1e9 ? x : 0);
    };
    EncoderConfig& c = out->desc.config;
    c.num_layers = u32("encoder_layers", 12, true);
    c.dim = u32("encoder_embed_dim", 768, true);
    c.ff_dim = u32("encoder_ffn_embed_dim", 3072, true);
    c.num_heads = u32("encoder_attention_heads", 12, true);
    c.max_seq_len = u32("max_positions", 512, true);
    const uint32_t compressed = u32("compressed", 4, false);
    shared_kv_ = number("shared_kv_compressed", 0, false) != 0;
    layerwise_ = number("shared_layer_kv_compressed", 0, false) != 0;
    const bool normalize_before = number("encoder_normalize_before", 0, false) != 0;
    const bool no_scale = number("no_scale_embedding", 1, false) != 0;
    const std::string act = text("activation_fn", "gelu");
    if (!bad.ok()) return bad;
    if (compressed == 0) return err::invalid_model("fairseq args: 'compressed' must be at least 1");
    if (normalize_before)
      return err::unsupported(
          "fairseq args: encoder_normalize_before = True (a pre-norm Linformer) is not supported; "
          "linformer_roberta is post-norm");
    if (c.num_heads == 0 || c.dim % c.num_heads)
      return err::invalid_model("fairseq args: embed dim not divisible by heads");
    if (act != "gelu" && act != "relu" && act != "gelu_accurate")
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "fairseq args: activation_fn '{}' is not supported (gelu, gelu_accurate, relu)", act);
    c.head_dim = c.dim / c.num_heads;
    c.kv_heads = c.num_heads;
    linformer_fields(c).proj_len = c.max_seq_len / compressed;
    c.activation = act == "relu" ? Activation::Relu : act == "gelu" ? Activation::GeluErf : Activation::GeluTanh;
    c.head_activation = c.activation;
    c.norm_placement = NormPlacement::Post;
    c.positions = PositionKind::Learned;
    c.position_offset = 2;  // make_positions: padding_idx (1) + 1, for inputs without padding
    c.embedding_scale = no_scale ? 1.0f : std::sqrt(float(c.dim));
    linformer_fields(c).projection_placement = ProjectionPlacement::Before;
    linformer_fields(c).projection_sharing = layerwise_   ? ProjectionSharing::Layerwise
                                             : shared_kv_ ? ProjectionSharing::KeyValue
                                                          : ProjectionSharing::Headwise;

    // Older checkpoints say decoder./emb_layer_norm (RobertaModel.upgrade_state_dict_named).
    P_ = "encoder.sentence_encoder.";
    if (!ck.tensors.count(P_ + "embed_tokens.weight") &&
        ck.tensors.count("decoder.sentence_encoder.embed_tokens.weight"))
      P_ = "decoder.sentence_encoder.";
    E_ = P_.substr(0, P_.find('.') + 1);  // "encoder." or "decoder."
    auto tok = ck.tensors.find(P_ + "embed_tokens.weight");
    if (tok == ck.tensors.end() || tok->second.shape.size() != 2)
      return err::invalid_model("tensor '{}embed_tokens.weight' is missing", P_);
    c.vocab_size = uint32_t(std::max<int64_t>(0, tok->second.shape[0]));

    // The head: a classification head if there is exactly one, else the LM head.
    std::set<std::string> heads;
    for (const auto& [name, t] : ck.tensors)
      if (starts_with(name, "classification_heads.")) {
        const std::string rest = name.substr(strlen("classification_heads."));
        heads.insert(rest.substr(0, rest.find('.')));
      }
    if (heads.size() > 1) {
      std::string list;
      for (const std::string& h : heads) list += (list.empty() ? "" : ", ") + h;
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "the checkpoint has several classification heads ({}); linfer models have one", list);
    }
    cls_ = heads.empty() ? "" : "classification_heads." + *heads.begin() + ".";
    c.head = cls_.empty() ? HeadKind::LmLogits : HeadKind::Classifier;
    if (!cls_.empty()) {
      auto w = ck.tensors.find(cls_ + "out_proj.weight");
      if (w == ck.tensors.end() || w->second.shape.size() != 2)
        return err::invalid_model("tensor '{}out_proj.weight' is missing", cls_);
      c.num_classes = uint32_t(std::max<int64_t>(0, w->second.shape[0]));
      c.pooling = Pooling::First;
      out->notes.push_back("classification head '" + *heads.begin() + "' (the LM head is dropped)");
    }
    c.embedding_norm =
        ck.tensors.count(P_ + "layernorm_embedding.weight") || ck.tensors.count(P_ + "emb_layer_norm.weight");
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    const EncoderConfig& c = d.config;
    const std::string& P = P_;
    const std::string& E = E_;
    const uint32_t D = c.dim, n = c.max_seq_len, k = linformer_fields(c).proj_len, F = c.ff_dim;
    d.token_embedding = b.load(P + "embed_tokens.weight", {c.vocab_size, D});
    {
      auto pos = ck.tensors.find(P + "embed_positions.weight");
      const uint32_t rows = pos != ck.tensors.end() && pos->second.shape.size() == 2
                                ? uint32_t(std::max<int64_t>(0, pos->second.shape[0]))
                                : 0;
      if (rows < n + 2)
        return err::invalid_model("tensor '{}embed_positions.weight' needs at least max_positions + 2 rows", P);
      d.position_embedding = b.load(P + "embed_positions.weight", {rows, D});
    }
    if (c.embedding_norm) {
      const std::string ln =
          ck.tensors.count(P + "layernorm_embedding.weight") ? "layernorm_embedding" : "emb_layer_norm";
      d.embedding_norm.weight = b.load(P + ln + ".weight", {D});
      d.embedding_norm.bias = b.load(P + ln + ".bias", {D});
    }
    if (layerwise_) {
      d.kind_tensors[LinformerTensors::kSharedProj] = b.load(P + "compress_layer.weight", {k, n});
      b.ignore(P + "compress_layer.bias");  // fairseq applies the weight only (F.linear, no bias)
    }
    b.ignore(E + "version");
    b.ignore(P + "version");
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      const std::string p = P + "layers." + str(i) + ".";
      b.ignore(p + "version");
      auto linear = [&](LinearWeights& lw, const std::string& name, uint32_t o, uint32_t in) {
        lw = b.linear(p + name, o, in);
      };
      linear(l.q, "self_attn.q_proj", D, D);
      linear(l.k, "self_attn.k_proj", D, D);
      linear(l.v, "self_attn.v_proj", D, D);
      linear(l.out, "self_attn.out_proj", D, D);
      if (layerwise_) {
        // Every layer's compress_k (and compress_v) is the shared layer: same storage.
        for (const char* which : {"self_attn.compress_k", "self_attn.compress_v"}) {
          const std::string name = p + which + ".weight";
          if (!b.has(name)) continue;
          if (b.identity(name) != b.identity(P + "compress_layer.weight"))
            return err::invalid_model(
                "'{}' is not the shared compress_layer although shared_layer_kv_compressed is set", name);
          b.ignore(name);
          b.ignore(p + which + ".bias");
        }
      } else {
        l.kind_tensors[LinformerTensors::kProjK] = b.load(p + "self_attn.compress_k.weight", {k, n});
        if (!shared_kv_) l.kind_tensors[LinformerTensors::kProjV] = b.load(p + "self_attn.compress_v.weight", {k, n});
      }
      l.attention_norm = b.norm(p + "self_attn_layer_norm", D);
      linear(l.fc1, "fc1", F, D);
      linear(l.fc2, "fc2", D, F);
      l.feed_forward_norm = b.norm(p + "final_layer_norm", D);
    }
    if (cls_.empty()) {
      d.head.dense.weight = b.load(E + "lm_head.dense.weight", {D, D});
      d.head.dense.bias = b.load(E + "lm_head.dense.bias", {D});
      d.head.norm.weight = b.load(E + "lm_head.layer_norm.weight", {D});
      d.head.norm.bias = b.load(E + "lm_head.layer_norm.bias", {D});
      d.head.out.weight = b.load(E + "lm_head.weight", {c.vocab_size, D});
      d.head.out.bias = b.load(E + "lm_head.bias", {c.vocab_size});
    } else {
      d.head.dense.weight = b.load(cls_ + "dense.weight", {D, D});
      d.head.dense.bias = b.load(cls_ + "dense.bias", {D});
      d.head.out.weight = b.load(cls_ + "out_proj.weight", {c.num_classes, D});
      d.head.out.bias = b.load(cls_ + "out_proj.bias", {c.num_classes});
      for (const char* name : {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight",
                               "lm_head.layer_norm.bias", "lm_head.weight", "lm_head.bias"})
        b.ignore(E + name);
    }
    out->notes.push_back(
        "fairseq linformer_roberta: post-norm, positions offset 2 (inputs without padding), "
        "compression before k_proj/v_proj, k = " +
        str(k));
    return {};
  }

 private:
  std::string P_, E_;  // "encoder.sentence_encoder." (or "decoder."'s) and "encoder." (or "decoder.")
  std::string cls_;    // "classification_heads.NAME." or "" (the LM head)
  bool shared_kv_ = false, layerwise_ = false;
};

bool fairseq_owns_key(const std::string& name) {
  return starts_with(name, "encoder.sentence_encoder.") || starts_with(name, "decoder.sentence_encoder.");
}

}  // namespace

extern const Layout kFairseqLayout = {
    "fairseq",
    fairseq_owns_key,
    false,
    ConfigUse::Refused,
    "fairseq checkpoints carry their own hyperparameters (args or cfg); --config is not used",
    {},
    make_mapper<FairseqMapper>};

}  // namespace linfer::convert
