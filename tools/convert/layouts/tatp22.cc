// SPDX-License-Identifier: Apache-2.0
// tatp22/linformer-pytorch LinformerLM (docs/converter.md, the layout table)
#include <map>

#include "layout.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::convert {
namespace {

class Tatp22Mapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint&, LibraryConfig& lc, MappedModel* out) override {
    const std::string method = lc.text("method", "learnable");
    if (method == "convolution")
      return err::unsupported(
          "tatp22 method 'convolution' projects with a strided convolution, which a Linformer E "
          "matrix cannot represent: refused");
    if (method == "no_params")
      return err::unsupported(
          "tatp22 method 'no_params' uses random projections that are not saved in the "
          "checkpoint, so the model cannot be reproduced: refused");
    if (method != "learnable") return err::invalid_model("tatp22 method '{}' is unknown", method);
    if (lc.flag("causal", false) || lc.flag("decoder_mode", false))
      return err::unsupported(
          "a causal tatp22 Linformer masks the projected scores in a way linfer does not reproduce: refused");
    if (lc.flag("full_attention", false))
      return err::unsupported(
          "tatp22 full_attention = true is not supported yet (the E/F weights in the file are unused)");
    if (lc.u32("k_reduce_by_layer", 0) != 0) return err::unsupported("tatp22 k_reduce_by_layer != 0 is not supported");
    if (!lc.flag("include_ff", true)) return err::unsupported("tatp22 include_ff = false is not supported");
    if (lc.flag("return_emb", false)) return err::unsupported("tatp22 return_emb = true is not supported");
    for (const char* key : {"ff_intermediate", "w_o_intermediate_dim", "emb_dim"})
      if (lc.present(key))
        return err::failure(LINFER_ERROR_UNSUPPORTED, "tatp22 {} must be null (the default) for linfer", key);
    EncoderConfig& c = out->desc.config;
    c.vocab_size = lc.u32("num_tokens", 0, true);
    c.max_seq_len = lc.u32("input_size", 0, true);
    c.dim = lc.u32("channels", 0, true);
    linformer_fields(c).proj_len = lc.u32("dim_k", 64);
    c.ff_dim = lc.u32("dim_ff", 1024);
    c.num_heads = lc.u32("nhead", 4);
    c.num_layers = lc.u32("depth", 2);
    const std::string act = lc.text("activation", "gelu");
    sharing_ = lc.text("parameter_sharing", "layerwise");
    if (!lc.ok()) return lc.status();
    if (c.num_heads == 0) return err::invalid_model("--config: nhead must be at least 1");
    c.head_dim = lc.u32("dim_d", c.dim / c.num_heads);
    if (act != "gelu" && act != "relu") return err::unsupported("--config: activation must be gelu or relu");
    c.activation = act == "relu" ? Activation::Relu : Activation::GeluErf;
    c.kv_heads = c.num_heads;
    c.norm_placement = NormPlacement::Post;
    c.positions = PositionKind::Sinusoidal;
    c.sinusoidal_base = 100000.0f;
    linformer_fields(c).projection_placement = ProjectionPlacement::After;
    c.head = HeadKind::LmLogits;
    return {};
  }

  err::Status map_tensors(const Checkpoint&, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    EncoderConfig& c = d.config;
    const uint32_t D = c.dim, H = c.num_heads, dh = c.head_dim, n = c.max_seq_len, k = linformer_fields(c).proj_len;
    auto attn = [](uint32_t i) { return "linformer.seq." + str(2 * i) + "."; };
    auto ff = [](uint32_t i) { return "linformer.seq." + str(2 * i + 1) + "."; };
    auto proj = [&](uint32_t i, uint32_t h, const char* which) {
      return attn(i) + "fn.heads." + str(h) + "." + which + ".weight";
    };
    for (uint32_t i = 0; i < c.num_layers; ++i)
      for (uint32_t h = 0; h < H; ++h)
        for (const char* which : {"E", "F"})
          if (!b.has(proj(i, h, which))) return err::invalid_model("tensor '{}' is missing", proj(i, h, which));

    // Sharing shows only as storage aliasing: find which E/F weights are the same memory.
    const std::string first = b.identity(proj(0, 0, "E"));
    bool all_same = true, per_layer_shared = true, kv_same = true;
    for (uint32_t i = 0; i < c.num_layers; ++i) {
      const std::string e0 = b.identity(proj(i, 0, "E")), f0 = b.identity(proj(i, 0, "F"));
      kv_same = kv_same && e0 == f0;
      for (uint32_t h = 0; h < H; ++h) {
        const std::string e = b.identity(proj(i, h, "E")), f = b.identity(proj(i, h, "F"));
        all_same = all_same && e == first && f == first;
        per_layer_shared = per_layer_shared && e == e0 && f == f0;
      }
    }
    ProjectionSharing found = all_same            ? ProjectionSharing::Layerwise
                              : !per_layer_shared ? ProjectionSharing::None
                              : kv_same           ? ProjectionSharing::KeyValue
                                                  : ProjectionSharing::Headwise;
    const std::map<std::string, ProjectionSharing> modes = {{"none", ProjectionSharing::None},
                                                            {"headwise", ProjectionSharing::Headwise},
                                                            {"kv", ProjectionSharing::KeyValue},
                                                            {"layerwise", ProjectionSharing::Layerwise}};
    auto declared = modes.find(sharing_);
    if (declared == modes.end()) return err::invalid_model("--config: unknown parameter_sharing '{}'", sharing_);
    // Some modes cannot be told apart by aliasing: with one layer, layerwise is kv; with one head,
    // headwise is none. Then the declared mode is the same model.
    const bool equivalent =
        (c.num_layers == 1 && found == ProjectionSharing::Layerwise &&
         declared->second == ProjectionSharing::KeyValue) ||
        (H == 1 && found == ProjectionSharing::Headwise && declared->second == ProjectionSharing::None);
    if (declared->second != found && !equivalent)
      return err::invalid_model("--config says parameter_sharing '{}' but the checkpoint's storage sharing is '{}'",
                                sharing_, to_string(found));
    linformer_fields(c).projection_sharing = declared->second;
    const char* found_name = to_string(found);
    out->notes.push_back(std::string("sharing detected from storage aliasing: ") + found_name);

    d.token_embedding = b.load("to_token_emb.weight", {c.vocab_size, D});
    b.ignore("pos_emb.inv_freq");  // recomputed exactly from the formula
    d.head.out.weight = b.load("to_logits.weight", {c.vocab_size, D});
    d.head.out.bias = b.load("to_logits.bias", {c.vocab_size});
    auto bias_name = [&](uint32_t i, uint32_t h, const char* which) {
      return attn(i) + "fn.heads." + str(h) + "." + which + ".bias";
    };
    if (linformer_fields(c).projection_sharing == ProjectionSharing::Layerwise) {
      d.kind_tensors[LinformerTensors::kSharedProj] = b.load(proj(0, 0, "E"), {k, n});
      d.kind_tensors[LinformerTensors::kSharedProjBias] = b.load(bias_name(0, 0, "E"), {k});
    }
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      std::vector<std::string> q, kk, v, e, f, eb, fb;
      for (uint32_t h = 0; h < H; ++h) {
        q.push_back(attn(i) + "fn.to_q." + str(h) + ".weight");
        kk.push_back(attn(i) + "fn.to_k." + str(h) + ".weight");
        v.push_back(attn(i) + "fn.to_v." + str(h) + ".weight");
        e.push_back(proj(i, h, "E"));
        f.push_back(proj(i, h, "F"));
        eb.push_back(bias_name(i, h, "E"));
        fb.push_back(bias_name(i, h, "F"));
      }
      // Per-head [dh, C] weights stack into [H*dh, C], heads in order.
      l.q.weight = b.stack(q, {dh, D}, false);
      l.k.weight = b.stack(kk, {dh, D}, false);
      l.v.weight = b.stack(v, {dh, D}, false);
      l.out.weight = b.load(attn(i) + "fn.w_o.weight", {D, H * dh});
      l.out.bias = b.load(attn(i) + "fn.w_o.bias", {D});
      switch (linformer_fields(c).projection_sharing) {
        case ProjectionSharing::None:
          l.kind_tensors[LinformerTensors::kProjK] = b.stack(e, {k, n}, true);
          l.kind_tensors[LinformerTensors::kProjV] = b.stack(f, {k, n}, true);
          l.kind_tensors[LinformerTensors::kProjKBias] = b.stack(eb, {k}, true);
          l.kind_tensors[LinformerTensors::kProjVBias] = b.stack(fb, {k}, true);
          break;
        case ProjectionSharing::Headwise:
          l.kind_tensors[LinformerTensors::kProjK] = b.load(e[0], {k, n});
          l.kind_tensors[LinformerTensors::kProjV] = b.load(f[0], {k, n});
          l.kind_tensors[LinformerTensors::kProjKBias] = b.load(eb[0], {k});
          l.kind_tensors[LinformerTensors::kProjVBias] = b.load(fb[0], {k});
          break;
        case ProjectionSharing::KeyValue:
          l.kind_tensors[LinformerTensors::kProjK] = b.load(e[0], {k, n});
          l.kind_tensors[LinformerTensors::kProjKBias] = b.load(eb[0], {k});
          break;
        case ProjectionSharing::Layerwise:
          break;
      }
      // The other heads' E/F (and biases) are the same memory as the ones loaded above.
      if (linformer_fields(c).projection_sharing != ProjectionSharing::None)
        for (uint32_t h = 0; h < H; ++h)
          for (const std::string& name : {e[h], f[h], eb[h], fb[h]}) b.ignore(name);
      l.attention_norm.weight = b.load(attn(i) + "norm.weight", {D});
      l.attention_norm.bias = b.load(attn(i) + "norm.bias", {D});
      l.fc1.weight = b.load(ff(i) + "fn.w_1.weight", {c.ff_dim, D});
      l.fc1.bias = b.load(ff(i) + "fn.w_1.bias", {c.ff_dim});
      l.fc2.weight = b.load(ff(i) + "fn.w_2.weight", {D, c.ff_dim});
      l.fc2.bias = b.load(ff(i) + "fn.w_2.bias", {D});
      l.feed_forward_norm.weight = b.load(ff(i) + "norm.weight", {D});
      l.feed_forward_norm.bias = b.load(ff(i) + "norm.bias", {D});
    }
    out->notes.push_back(
        "tatp22: post-norm, sinusoidal positions (base 100000), E/F with bias after "
        "to_k/to_v; inputs shorter than input_size use the first T columns of E and F "
        "(upstream accepts only full-length inputs)");
    return {};
  }

 private:
  std::string sharing_;  // parameter_sharing as --config declares it
};

bool tatp22_owns_key(const std::string& name) {
  return starts_with(name, "linformer.seq.") || name == "to_token_emb.weight";
}

}  // namespace

extern const Layout kTatp22Layout = {
    "tatp22",
    tatp22_owns_key,
    false,
    ConfigUse::Library,
    "tatp22 checkpoints do not record the activation, causal or full_attention settings: "
    "pass --config CONFIG.json with the LinformerLM constructor arguments",
    {"num_tokens",
     "input_size",
     "channels",
     "dim_k",
     "dim_ff",
     "dim_d",
     "dropout_ff",
     "dropout_tokens",
     "nhead",
     "depth",
     "ff_intermediate",
     "dropout",
     "activation",
     "checkpoint_level",
     "parameter_sharing",
     "k_reduce_by_layer",
     "full_attention",
     "include_ff",
     "w_o_intermediate_dim",
     "emb_dim",
     "return_emb",
     "decoder_mode",
     "causal",
     "method"},
    make_mapper<Tatp22Mapper>};

}  // namespace linfer::convert
