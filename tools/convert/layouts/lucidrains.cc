// SPDX-License-Identifier: Apache-2.0
// lucidrains/linformer: LinformerLM and Linformer (docs/converter.md, the layout table)
#include "layout.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::convert {
namespace {

class LucidrainsMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    lm_ = ck.tensors.count("token_emb.weight") > 0;
    EncoderConfig& c = out->desc.config;
    c.dim = lc.u32("dim", 0, true);
    c.max_seq_len = lc.u32("seq_len", 0, true);
    c.num_layers = lc.u32("depth", 0, true);
    linformer_fields(c).proj_len = lc.u32("k", 256);
    c.num_heads = lc.u32("heads", 8);
    c.vocab_size = lm_ ? lc.u32("num_tokens", 0, true) : 0;
    const bool one_kv_head = lc.flag("one_kv_head", false);
    share_kv_ = lc.flag("share_kv", false);
    reversible_ = lc.flag("reversible", false);
    if (!lc.ok()) return lc.status();
    if (c.num_heads == 0 || c.dim % c.num_heads != 0)
      return err::invalid_model("--config: dim must be divisible by heads (lucidrains asserts it)");
    c.head_dim = lc.u32("dim_head", c.dim / c.num_heads);
    c.kv_heads = one_kv_head ? 1 : c.num_heads;
    c.ff_dim = 4 * c.dim;
    c.norm_placement = reversible_ ? NormPlacement::Reversible : NormPlacement::Pre;
    c.positions = lm_ ? PositionKind::Learned : PositionKind::None;
    linformer_fields(c).projection_placement = ProjectionPlacement::After;
    linformer_fields(c).projection_sharing = share_kv_ ? ProjectionSharing::KeyValue : ProjectionSharing::Headwise;
    c.activation = Activation::GeluErf;
    c.head = lm_ ? HeadKind::LmLogits : HeadKind::None;
    out->notes.push_back(std::string(lm_ ? "LinformerLM" : "Linformer (takes embeddings)") +
                         (reversible_ ? ", reversible" : "") + (share_kv_ ? ", share_kv" : "") +
                         (one_kv_head ? ", one_kv_head" : ""));
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    const EncoderConfig& c = d.config;
    const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, KV = c.kv_heads * c.head_dim, n = c.max_seq_len,
                   k = linformer_fields(c).proj_len;
    const std::string root = lm_ ? "linformer.net." : "net.";
    if (lm_) {
      d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
      d.position_embedding = b.load("pos_emb.weight", {n, D});
      d.head.out.weight = b.load("to_logits.weight", {c.vocab_size, D});
      d.head.out.bias = b.load("to_logits.bias", {c.vocab_size});
    }
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      const std::string a = reversible_ ? root + "blocks." + str(i) + ".f.net." : root + "layers." + str(i) + ".0.";
      const std::string f = reversible_ ? root + "blocks." + str(i) + ".g.net." : root + "layers." + str(i) + ".1.";
      l.q.weight = b.load(a + "fn.to_q.weight", {HD, D});
      l.k.weight = b.load(a + "fn.to_k.weight", {KV, D});
      // share_kv: values are the keys themselves (to_v and proj_v do not exist).
      l.v.weight = share_kv_ ? l.k.weight : b.load(a + "fn.to_v.weight", {KV, D});
      l.out.weight = b.load(a + "fn.to_out.weight", {D, HD});
      l.out.bias = b.load(a + "fn.to_out.bias", {D});
      l.kind_tensors[LinformerTensors::kProjK] = b.transpose(a + "fn.proj_k", n, k);  // stored [n, k]; E is [k, n]
      if (!share_kv_) l.kind_tensors[LinformerTensors::kProjV] = b.transpose(a + "fn.proj_v", n, k);
      l.attention_norm.weight = b.load(a + "norm.weight", {D});
      l.attention_norm.bias = b.load(a + "norm.bias", {D});
      l.fc1.weight = b.load(f + "fn.w1.weight", {c.ff_dim, D});
      l.fc1.bias = b.load(f + "fn.w1.bias", {c.ff_dim});
      l.fc2.weight = b.load(f + "fn.w2.weight", {D, c.ff_dim});
      l.fc2.bias = b.load(f + "fn.w2.bias", {D});
      l.feed_forward_norm.weight = b.load(f + "norm.weight", {D});
      l.feed_forward_norm.bias = b.load(f + "norm.bias", {D});
    }
    return {};
  }

 private:
  bool lm_ = false, share_kv_ = false, reversible_ = false;
};

bool lucidrains_owns_key(const std::string& name) {
  return starts_with(name, "linformer.net.") || starts_with(name, "net.layers.") || starts_with(name, "net.blocks.") ||
         name == "token_emb.weight";
}

}  // namespace

extern const Layout kLucidrainsLayout = {
    "lucidrains",
    lucidrains_owns_key,
    false,
    ConfigUse::Library,
    "lucidrains checkpoints do not record the number of heads: pass --config CONFIG.json "
    "with the constructor arguments (num_tokens, dim, seq_len, depth, k, heads, ...)",
    {"num_tokens", "dim", "seq_len", "depth", "k", "heads", "dim_head", "one_kv_head", "share_kv", "reversible",
     "dropout"},
    make_mapper<LucidrainsMapper>};

}  // namespace linfer::convert
