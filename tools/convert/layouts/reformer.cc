// SPDX-License-Identifier: Apache-2.0
// lucidrains/reformer-pytorch: ReformerLM and Reformer (docs/converter.md, "reformer")
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "layout.h"
#include "linfer/format/kinds/lsh.h"

namespace linfer::convert {
namespace {

// The rotations reformer-pytorch draws at every forward pass, drawn once here (docs/converter.md):
// splitmix64 from state rotation_seed * 2^32 + layer, each value sqrt(-2 ln u1) cos(2 pi u2) with
// u1 = (a + 1) 2^-53, u2 = b 2^-53 for the top 53 bits a, b of two successive outputs, rounded to
// float, in the order of [num_hashes, head_dim, half] (tools/python/reference/upstream/packages.py: the same).
std::vector<float> reformer_rotations(uint32_t seed, uint32_t layer, size_t count) {
  uint64_t state = (uint64_t(seed) << 32) + layer;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const double two_pi = 6.283185307179586, unit = 1.0 / 9007199254740992.0;  // 2^-53
  std::vector<float> out(count);
  for (float& v : out) {
    const double u1 = double((next() >> 11) + 1) * unit, u2 = double(next() >> 11) * unit;
    v = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
  }
  return out;
}

// [n, d] rows sin(t f_i) for the d/2 frequencies f, then cos, from a FixedPositionalEmbedding's
// inv_freq buffer, in float32 as upstream computes it.
std::vector<float> reformer_sinusoids(const float* inv_freq, uint32_t n, uint32_t d) {
  std::vector<float> out(size_t(n) * d);
  const uint32_t half = d / 2;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t i = 0; i < half; ++i) {
      const float a = float(t) * inv_freq[i];
      out[size_t(t) * d + i] = std::sin(a);
      out[size_t(t) * d + half + i] = std::cos(a);
    }
  return out;
}

class ReformerMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    // Options whose modules or masks linfer does not have (each changes the forward pass).
    for (const char* key :
         {"use_full_attn", "ff_glu", "use_scale_norm", "use_rezero", "axial_position_emb", "random_rotations_per_head"})
      if (lc.flag(key, false))
        return err::failure(LINFER_ERROR_UNSUPPORTED, "reformer-pytorch {} = true is not supported: refused", key);
    for (const char* key : {"lsh_attend_across_buckets", "lsh_allow_duplicate_attention"})
      if (!lc.flag(key, true))
        return err::failure(LINFER_ERROR_UNSUPPORTED, "reformer-pytorch {} = false is not supported: refused", key);
    for (const char* key : {"full_attn_thres", "num_mem_kv", "n_local_attn_heads"})
      if (lc.u32(key, 0) > 0)
        return err::failure(LINFER_ERROR_UNSUPPORTED, "reformer-pytorch {} > 0 is not supported ({}): refused", key,
                            std::string(key) == "full_attn_thres" ? "full attention for short inputs"
                            : std::string(key) == "num_mem_kv"    ? "memory key-values"
                                                                  : "local attention heads");
    if (lc.present("pkm_layers") && !(lc.values().at("pkm_layers").is_array() && lc.values().at("pkm_layers").empty()))
      return err::unsupported("reformer-pytorch pkm_layers (product-key memory layers) are not supported: refused");
    const std::string act = lc.text("ff_activation", "gelu");
    if (act != "gelu" && act != "relu")
      return err::failure(
          LINFER_ERROR_UNSUPPORTED,
          "reformer-pytorch ff_activation '{}' is not supported (null or \"gelu\" for nn.GELU, \"relu\" "
          "for nn.ReLU): refused",
          act);
    if (!lc.ok()) return lc.status();

    lm_ = ck.tensors.count("token_emb.weight") > 0;
    P_ = lm_ ? "reformer.layers." : "layers.";
    EncoderConfig& c = out->desc.config;
    set_attention_kind(c, AttentionKind::Lsh);
    c.dim = lc.u32("dim", 0, true);
    c.num_layers = lc.u32("depth", 0, true);
    c.num_heads = lc.u32("heads", 8);
    // ReformerLM's dim_head defaults to 64, Reformer's to dim / heads
    c.head_dim = lc.u32("dim_head", lm_ ? 64 : (c.num_heads ? c.dim / c.num_heads : 0));
    lsh_fields(c).bucket_size = lc.u32("bucket_size", 64);
    lsh_fields(c).num_hashes = lc.u32("n_hashes", lm_ ? 4 : 8);
    c.causal = lc.flag("causal", false) ? CausalMode::Causal : CausalMode::Bidirectional;
    c.ff_dim = c.dim * lc.u32("ff_mult", 4);
    c.max_seq_len = lc.u32("max_seq_len", 0, true);
    const bool one_value_head = lc.flag("one_value_head", false);
    c.kv_heads = one_value_head ? 1 : c.num_heads;
    c.norm_placement = NormPlacement::Reversible;
    c.reversible_merge = ReversibleMerge::Mean;  // torch.stack(x.chunk(2, dim=-1)).mean(dim=0)
    c.activation = act == "relu" ? Activation::Relu : Activation::GeluErf;
    c.positions = PositionKind::None;
    seed_ = lc.u32("rotation_seed", 0);
    if (lc.present("emb_dim") && lc.u32("emb_dim", 0) != c.dim)
      return err::unsupported(
          "reformer-pytorch emb_dim != dim (the to_model_dim projection) is not supported: refused");
    bool embeddings_out = false;
    if (lm_) {
      c.vocab_size = lc.u32("num_tokens", 0, true);
      c.final_norm = true;
      absolute_ = lc.flag("absolute_position_emb", false);
      fixed_ = !absolute_ && lc.flag("fixed_position_emb", false);
      tied_ = lc.flag("weight_tie_embedding", false);
      embeddings_out = lc.flag("return_embeddings", false);
      c.head = embeddings_out ? HeadKind::None : HeadKind::LmLogits;
      if (absolute_ || fixed_)
        c.positions = PositionKind::Learned;
      else
        c.rotary = Rotary::AdjacentPairs;  // layer_pos_emb: rotary positions on qk after hashing
    }
    if (!lc.ok()) return lc.status();
    if (c.num_heads == 0 || c.head_dim == 0) return err::invalid_model("--config: heads and dim_head must be positive");
    if (lsh_fields(c).bucket_size == 0 || lsh_fields(c).bucket_size > Limits::kMaxBucketSize ||
        lsh_fields(c).num_hashes == 0 || lsh_fields(c).num_hashes > Limits::kMaxHashes)
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "--config: bucket_size {} and n_hashes {} outside linfer's limits (1..{}, 1..{}): refused",
                          lsh_fields(c).bucket_size, lsh_fields(c).num_hashes, Limits::kMaxBucketSize,
                          Limits::kMaxHashes);
    if ((fixed_ && c.dim % 2) || (c.rotary != Rotary::None && c.head_dim % 2))
      return err::invalid_model("--config: fixed sinusoidal positions need an even dim (dim_head for the rotary ones)");
    out->notes.push_back(std::string(lm_ ? "ReformerLM" : "Reformer (takes embeddings)") +
                         (c.causal == CausalMode::Causal ? ", causal" : "") + ", bucket_size " +
                         str(lsh_fields(c).bucket_size) + ", " + str(lsh_fields(c).num_hashes) + " hashes" +
                         (one_value_head ? ", one value head" : "") +
                         (lm_ ? absolute_ ? ", absolute positions"
                                : fixed_  ? ", fixed sinusoidal positions"
                                          : ", rotary layer positions"
                              : "") +
                         (tied_ ? ", tied (normalised) embedding" : "") +
                         (embeddings_out ? ", returns embeddings" : "") + (act == "relu" ? ", relu" : ""));
    out->notes.push_back(
        "LSH rotations fixed at conversion (reformer-pytorch draws new ones at every forward "
        "pass): splitmix64 normals, rotation_seed " +
        str(seed_) + " + layer index");
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    const EncoderConfig& c = d.config;
    const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, n = c.max_seq_len, F = c.ff_dim;
    if (lm_) {
      d.token_embedding = b.load("token_emb.weight", {c.vocab_size, D});
      if (absolute_) {
        d.position_embedding = b.load("pos_emb.emb.weight", {n, D});
      } else if (fixed_) {
        WeightView f = b.load("pos_emb.inv_freq", {D / 2});
        if (b.ok()) d.position_embedding = b.make({n, D}, reformer_sinusoids(static_cast<const float*>(f.data), n, D));
      }
      if (c.rotary != Rotary::None) {
        WeightView f = b.load("layer_pos_emb.inv_freq", {c.head_dim / 2});
        if (b.ok())
          d.rotary_table =
              b.make({n, c.head_dim}, reformer_sinusoids(static_cast<const float*>(f.data), n, c.head_dim));
      }
      d.final_norm.weight = b.load("norm.weight", {D});
      d.final_norm.bias = b.load("norm.bias", {D});
      if (c.head != HeadKind::None) {
        if (tied_) {  // MatrixMultiply(token_emb.weight, transpose, normalize): rows of E / max(|row|, 1e-12)
          const float* e = static_cast<const float*>(d.token_embedding.data);
          std::vector<float> rows(e, e + (b.ok() ? size_t(c.vocab_size) * D : 0));
          for (size_t r = 0; r < rows.size() / std::max<size_t>(D, 1); ++r) {
            double s = 0.0;
            for (uint32_t j = 0; j < D; ++j) s += double(rows[r * D + j]) * rows[r * D + j];
            const float norm = std::max(float(std::sqrt(s)), 1e-12f);
            for (uint32_t j = 0; j < D; ++j) rows[r * D + j] /= norm;
          }
          if (b.ok()) d.head.out.weight = b.make({c.vocab_size, D}, std::move(rows));
          b.ignore("out.1.tensor");  // MatrixMultiply's reference to token_emb.weight (a second name)
        } else {
          d.head.out.weight = b.load("out.1.weight", {c.vocab_size, D});
          d.head.out.bias = b.load("out.1.bias", {c.vocab_size});
        }
      }
    }
    // ReversibleSequence holds every block twice: blocks.{i}.f.net.* (the Deterministic wrapper) and
    // irrev_blocks.{i}.f.* (the same modules); a file written without shared tensors may keep either.
    std::vector<std::string> twins;  // the other name of each tensor read
    auto block_key = [&](uint32_t i, const char* branch, const std::string& rest) {
      const std::string a = P_ + "blocks." + str(i) + "." + branch + ".net." + rest,
                        b = P_ + "irrev_blocks." + str(i) + "." + branch + "." + rest;
      const bool first = ck.tensors.count(a) || !ck.tensors.count(b);
      twins.push_back(first ? b : a);
      return first ? a : b;
    };
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      l.attention_norm.weight = b.load(block_key(i, "f", "norm.weight"), {D});
      l.attention_norm.bias = b.load(block_key(i, "f", "norm.bias"), {D});
      l.q.weight = b.load(block_key(i, "f", "fn.toqk.weight"), {HD, D});
      l.v.weight = b.load(block_key(i, "f", "fn.tov.weight"), {c.kv_heads * c.head_dim, D});
      l.out.weight = b.load(block_key(i, "f", "fn.to_out.weight"), {D, HD});
      l.out.bias = b.load(block_key(i, "f", "fn.to_out.bias"), {D});
      l.feed_forward_norm.weight = b.load(block_key(i, "g", "norm.weight"), {D});
      l.feed_forward_norm.bias = b.load(block_key(i, "g", "norm.bias"), {D});
      l.fc1.weight = b.load(block_key(i, "g", "fn.fn.w1.weight"), {F, D});
      l.fc1.bias = b.load(block_key(i, "g", "fn.fn.w1.bias"), {F});
      l.fc2.weight = b.load(block_key(i, "g", "fn.fn.w2.weight"), {D, F});
      l.fc2.bias = b.load(block_key(i, "g", "fn.fn.w2.bias"), {D});
      const uint32_t half = uint32_t(lsh_half_buckets(c, n));
      l.kind_tensors[LshTensors::kRotations] =
          b.make({lsh_fields(c).num_hashes, c.head_dim, half},
                 reformer_rotations(seed_, i, size_t(lsh_fields(c).num_hashes) * c.head_dim * half));
    }
    for (const std::string& name : twins) b.ignore(name);  // (absent names are harmless)
    return {};
  }

 private:
  bool lm_ = false, absolute_ = false, fixed_ = false, tied_ = false;
  uint32_t seed_ = 0;  // rotation_seed
  std::string P_;      // "reformer.layers." (ReformerLM) or "layers."
};

bool reformer_owns_key(const std::string& name) {
  return name.find(".fn.toqk.weight") != std::string::npos;  // LSHSelfAttention's shared qk
}

}  // namespace

extern const Layout kReformerLayout = {
    "reformer",
    reformer_owns_key,
    true,
    ConfigUse::Library,
    "reformer-pytorch checkpoints do not record bucket_size, n_hashes or causal: pass --config "
    "CONFIG.json with the ReformerLM or Reformer constructor arguments",
    {"num_tokens",
     "dim",
     "depth",
     "max_seq_len",
     "heads",
     "dim_head",
     "bucket_size",
     "n_hashes",
     "ff_chunks",
     "attn_chunks",
     "causal",
     "weight_tie",
     "lsh_dropout",
     "ff_dropout",
     "ff_mult",
     "ff_activation",
     "ff_glu",
     "post_attn_dropout",
     "layer_dropout",
     "random_rotations_per_head",
     "use_scale_norm",
     "use_rezero",
     "use_full_attn",
     "full_attn_thres",
     "reverse_thres",
     "num_mem_kv",
     "one_value_head",
     "emb_dim",
     "return_embeddings",
     "weight_tie_embedding",
     "fixed_position_emb",
     "absolute_position_emb",
     "axial_position_emb",
     "axial_position_shape",
     "n_local_attn_heads",
     "pkm_layers",
     "pkm_num_keys",
     "lsh_attend_across_buckets",
     "lsh_allow_duplicate_attention",
     "rotation_seed"},
    make_mapper<ReformerMapper>};

}  // namespace linfer::convert
