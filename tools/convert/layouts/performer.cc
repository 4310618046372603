// SPDX-License-Identifier: Apache-2.0
// lucidrains/performer-pytorch 1.1.4: PerformerLM and Performer (docs/converter.md, "performer")
#include <cmath>

#include <nlohmann/json.hpp>

#include "layout.h"
#include "linfer/format/kinds/performer.h"

namespace linfer::convert {
namespace {

class PerformerMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    // Options whose modules linfer does not have (each changes the forward pass).
    if (lc.present("local_attn_heads") && !(lc.values().at("local_attn_heads").is_number_integer() &&
                                            lc.values().at("local_attn_heads").get<int64_t>() == 0))
      return err::unsupported("performer-pytorch local_attn_heads (local attention heads) are not supported: refused");
    for (const char* key : {"use_scalenorm", "use_rezero", "ff_glu", "shift_tokens", "cross_attend", "no_projection",
                            "axial_position_emb"})
      if (lc.flag(key, false))
        return err::failure(LINFER_ERROR_UNSUPPORTED, "performer-pytorch {} = true is not supported: refused", key);
    if (!lc.ok()) return lc.status();

    lm_ = ck.tensors.count("token_emb.weight") > 0;
    P_ = lm_ ? "performer." : "";
    reversible_ = ck.tensors.count(net_key(ck, "blocks.0.f.net.norm.weight")) > 0;
    if (lc.present("reversible") && lc.flag("reversible", false) != reversible_)
      return err::invalid_model("--config says reversible = {} but the checkpoint's layers are {}",
                                reversible_ ? "false" : "true", reversible_ ? "reversible blocks" : "sequential");

    EncoderConfig& c = out->desc.config;
    set_attention_kind(c, AttentionKind::Performer);
    c.dim = lc.u32("dim", 0, true);
    c.num_layers = lc.u32("depth", 0, true);
    c.num_heads = lc.u32("heads", 0, true);
    c.head_dim = lc.u32("dim_head", lm_ ? 64 : 0, !lm_);  // Performer's dim_head is positional
    c.causal = lc.flag("causal", false) ? CausalMode::Causal : CausalMode::Bidirectional;
    c.ff_dim = c.dim * lc.u32("ff_mult", 4);
    const bool relu = lc.flag("generalized_attention", false);
    performer_fields(c).feature_map = relu ? FeatureMap::Relu : FeatureMap::Softmax;
    performer_fields(c).feature_eps = relu ? 1e-3f : 1e-4f;  // kernel_epsilon; softmax_kernel's eps
    // nb_features default: int(dim_head * ln(dim_head)), as FastAttention computes it
    // (bounded first: the product of an absurd dim_head would not fit the cast; validation refuses it)
    const bool sane_head = c.head_dim > 1 && c.head_dim <= Limits::kMaxDim;
    performer_fields(c).num_features =
        lc.u32("nb_features", sane_head ? uint32_t(c.head_dim * std::log(double(c.head_dim))) : 0);
    c.kv_heads = c.num_heads;
    c.max_seq_len = lc.u32("max_seq_len", 0, true);
    c.norm_placement = reversible_ ? NormPlacement::Reversible : NormPlacement::Pre;
    c.activation = Activation::GeluErf;
    qkv_bias_ = lc.flag("qkv_bias", !lm_);
    out_bias_ = lc.flag("attn_out_bias", !lm_);
    if (lm_) {
      c.vocab_size = lc.u32("num_tokens", 0, true);
      c.head = HeadKind::LmLogits;
      c.final_norm = true;
      rotary_ = lc.flag("rotary_position_emb", true);
      tied_ = lc.flag("tie_embed", false);
      c.positions = PositionKind::Learned;
      c.rotary = rotary_ ? Rotary::AdjacentPairs : Rotary::None;
    } else {
      c.positions = PositionKind::None;  // Performer takes embeddings; positions are the caller's
    }
    if (!lc.ok()) return lc.status();
    if (c.num_heads == 0 || c.head_dim == 0) return err::invalid_model("--config: heads and dim_head must be positive");
    out->notes.push_back(
        std::string(lm_ ? "PerformerLM" : "Performer (takes embeddings)") +
        (c.causal == CausalMode::Causal ? ", causal" : "") + (relu ? ", relu features" : ", softmax features") +
        " (m = " + str(performer_fields(c).num_features) + ")" + (reversible_ ? ", reversible" : "") +
        (lm_ ? rotary_ ? ", rotary positions" : ", learned positions" : "") + (tied_ ? ", tied embedding" : ""));
    if (c.causal == CausalMode::Causal && !relu) {
      // Upstream subtracts the maximum over all keys of the input, so with softmax features its rows
      // depend on later tokens (through the eps term): reproduced exactly, without token-by-token runs.
      performer_fields(c).key_stabiliser = KeyStabiliser::Sequence;
      out->notes.push_back(
          "causal softmax features: keys stabilised by the maximum over the whole input, as "
          "upstream (key_stabiliser 'sequence'); whole-input runs only, no token-by-token runs");
    }
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    const EncoderConfig& c = d.config;
    const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, n = c.max_seq_len, F = c.ff_dim;
    if (lm_) {
      d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
      if (rotary_) {
        d.position_embedding = b.load("pos_emb.emb", {n, D});  // fixed sinusoids, added like a table
        d.rotary_table = b.load("layer_pos_emb.emb", {n, c.head_dim});
      } else {
        d.position_embedding = b.load(b.has("pos_emb.weight") ? "pos_emb.weight" : "pos_emb.emb.weight", {n, D});
      }
      d.final_norm.weight = b.load("norm.weight", {D});
      d.final_norm.bias = b.load("norm.bias", {D});
      if (tied_) {
        d.head.out.weight = d.token_embedding;  // logits = x E^T, no bias
      } else {
        d.head.out.weight = b.load("to_out.weight", {c.vocab_size, D});
        d.head.out.bias = b.load("to_out.bias", {c.vocab_size});
      }
    }
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      const std::string a = reversible_ ? "blocks." + str(i) + ".f.net." : "layers." + str(i) + ".0.";
      const std::string f = reversible_ ? "blocks." + str(i) + ".g.net." : "layers." + str(i) + ".1.";
      l.attention_norm.weight = b.load(net_key(ck, a + "norm.weight"), {D});
      l.attention_norm.bias = b.load(net_key(ck, a + "norm.bias"), {D});
      LinearWeights* qkv[3] = {&l.q, &l.k, &l.v};
      const char* names[3] = {"to_q", "to_k", "to_v"};
      for (int j = 0; j < 3; ++j) {
        qkv[j]->weight = b.load(net_key(ck, a + "fn." + names[j] + ".weight"), {HD, D});
        if (qkv_bias_) qkv[j]->bias = b.load(net_key(ck, a + "fn." + names[j] + ".bias"), {HD});
      }
      l.out.weight = b.load(net_key(ck, a + "fn.to_out.weight"), {D, HD});
      if (out_bias_) l.out.bias = b.load(net_key(ck, a + "fn.to_out.bias"), {D});
      // projection_matrix [m, dim_head] (rows are the random directions); features = its transpose
      l.kind_tensors[PerformerTensors::kFeatures] = b.transpose(net_key(ck, a + "fn.fast_attention.projection_matrix"),
                                                                performer_fields(c).num_features, c.head_dim);
      l.feed_forward_norm.weight = b.load(net_key(ck, f + "norm.weight"), {D});
      l.feed_forward_norm.bias = b.load(net_key(ck, f + "norm.bias"), {D});
      l.fc1.weight = b.load(net_key(ck, f + "fn.fn.w1.weight"), {F, D});
      l.fc1.bias = b.load(net_key(ck, f + "fn.fn.w1.bias"), {F});
      l.fc2.weight = b.load(net_key(ck, f + "fn.fn.w2.weight"), {D, F});
      l.fc2.bias = b.load(net_key(ck, f + "fn.fn.w2.bias"), {D});
    }
    // The second name of every layer tensor, and the redraw counter (no redraw at inference).
    for (const auto& [name, t] : ck.tensors)
      if (starts_with(name, P_ + "proj_updater.")) b.ignore(name);
    return {};
  }

 private:
  // The projection updater holds the same module as net, so every layer tensor has two names;
  // a file written without shared tensors (safetensors' save_model) may keep either one.
  std::string net_key(const Checkpoint& ck, const std::string& rest) const {
    const std::string a = P_ + "net." + rest, b = P_ + "proj_updater.instance." + rest;
    return ck.tensors.count(a) || !ck.tensors.count(b) ? a : b;
  }

  bool lm_ = false, reversible_ = false, qkv_bias_ = false, out_bias_ = false, rotary_ = false, tied_ = false;
  std::string P_;  // "performer." (PerformerLM) or ""
};

bool performer_owns_key(const std::string& name) {
  return name.find("fast_attention.projection_matrix") != std::string::npos || starts_with(name, "performer.net.") ||
         starts_with(name, "performer.proj_updater.");
}

}  // namespace

extern const Layout kPerformerLayout = {
    "performer",
    performer_owns_key,
    true,
    ConfigUse::Library,
    "performer-pytorch checkpoints do not record causal or generalized_attention: pass "
    "--config CONFIG.json with the PerformerLM or Performer constructor arguments",
    {"num_tokens",
     "max_seq_len",
     "dim",
     "depth",
     "heads",
     "dim_head",
     "causal",
     "ff_mult",
     "nb_features",
     "reversible",
     "generalized_attention",
     "tie_embed",
     "rotary_position_emb",
     "axial_position_emb",
     "axial_position_shape",
     "qkv_bias",
     "attn_out_bias",
     "local_attn_heads",
     "local_window_size",
     "use_scalenorm",
     "use_rezero",
     "ff_glu",
     "shift_tokens",
     "cross_attend",
     "no_projection",
     "feature_redraw_interval",
     "ff_chunks",
     "emb_dropout",
     "ff_dropout",
     "attn_dropout",
     "auto_check_redraw"},
    make_mapper<PerformerMapper>};

}  // namespace linfer::convert
