#include "linfer/format/encoder.h"

#include "linfer/format/panel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace linfer {

const char* to_string(DType v) {
  switch (v) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::I8: return "int8";
  }
  return "?";
}
const char* to_string(AttentionKind v) {
  switch (v) {
    case AttentionKind::Linformer: return "linformer";
    case AttentionKind::FullSoftmax: return "full softmax";
    case AttentionKind::LinearElu: return "linear (elu+1)";
    case AttentionKind::GiveTake: return "givetake";
    case AttentionKind::Performer: return "performer";
    case AttentionKind::SlidingWindow: return "sliding window";
    case AttentionKind::BlockSparse: return "block sparse";
    case AttentionKind::Lsh: return "lsh";
  }
  return "?";
}
const char* to_string(FeatureMap v) {
  return v == FeatureMap::Softmax ? "softmax" : v == FeatureMap::Relu ? "relu" : "?";
}
const char* to_string(NormPlacement v) {
  switch (v) {
    case NormPlacement::Pre: return "pre";
    case NormPlacement::Post: return "post";
    case NormPlacement::Reversible: return "reversible";
  }
  return "?";
}
const char* to_string(Rotary v) {
  return v == Rotary::None ? "none" : v == Rotary::AdjacentPairs ? "adjacent_pairs" : "?";
}
const char* to_string(ReversibleMerge v) {
  return v == ReversibleMerge::Sum ? "sum" : v == ReversibleMerge::Mean ? "mean" : "?";
}
const char* to_string(PositionKind v) {
  switch (v) {
    case PositionKind::None: return "none";
    case PositionKind::Learned: return "learned";
    case PositionKind::Sinusoidal: return "sinusoidal";
  }
  return "?";
}
const char* to_string(ProjectionPlacement v) {
  return v == ProjectionPlacement::After ? "after" : v == ProjectionPlacement::Before ? "before" : "?";
}
const char* to_string(ProjectionSharing v) {
  switch (v) {
    case ProjectionSharing::None: return "none";
    case ProjectionSharing::Headwise: return "headwise";
    case ProjectionSharing::KeyValue: return "kv";
    case ProjectionSharing::Layerwise: return "layerwise";
  }
  return "?";
}
const char* to_string(Activation v) {
  switch (v) {
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::Relu: return "relu";
    case Activation::Tanh: return "tanh";
  }
  return "?";
}
const char* to_string(HeadKind v) {
  switch (v) {
    case HeadKind::None: return "none";
    case HeadKind::LmLogits: return "lm";
    case HeadKind::Classifier: return "classifier";
  }
  return "?";
}
const char* to_string(Pooling v) {
  return v == Pooling::First ? "first" : v == Pooling::Mean ? "mean" : "?";
}

const char* to_string(Layout v) {
  return v == Layout::RowMajor ? "row-major" : v == Layout::Panel16 ? "panel16" : "?";
}

uint64_t WeightView::bytes() const {
  if (layout == Layout::Panel16 && shape.size() == 2)
    return panel_matrix_bytes(dtype, shape[0], shape[1], panel_groups);
  return elements() * dtype_size(dtype);
}

uint64_t WeightView::elements() const {
  if (shape.empty()) return 0;
  uint64_t n = 1;
  for (uint32_t s : shape) {
    if (s != 0 && n > Limits::kMaxTensorElements / s) return Limits::kMaxTensorElements + 1;
    n *= s;
  }
  return n;
}

std::string shape_to_string(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

std::string check_range(const char* what, uint64_t value, uint64_t lo, uint64_t hi) {
  if (value < lo || value > hi)
    return std::string(what) + " = " + std::to_string(value) + " is out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return "";
}

std::string validate_config(const EncoderConfig& c) {
  std::string e;
  if (uint8_t(c.attention_kind) > uint8_t(AttentionKind::Lsh)) return "unknown attention kind";
  if (uint8_t(c.causal) > uint8_t(CausalMode::Causal)) return "unknown causal mode";
  if (uint8_t(c.norm_placement) > uint8_t(NormPlacement::Reversible)) return "unknown norm placement";
  if (uint8_t(c.positions) > uint8_t(PositionKind::Sinusoidal)) return "unknown position kind";
  if (uint8_t(c.rotary) > uint8_t(Rotary::AdjacentPairs)) return "unknown rotary kind";
  if (uint8_t(c.projection_placement) > uint8_t(ProjectionPlacement::Before))
    return "unknown projection placement";
  if (uint8_t(c.projection_sharing) > uint8_t(ProjectionSharing::Layerwise))
    return "unknown projection sharing mode";
  if (uint8_t(c.activation) > uint8_t(Activation::Tanh)) return "unknown activation";
  if (uint8_t(c.head_activation) > uint8_t(Activation::Tanh)) return "unknown head activation";
  if (uint8_t(c.classifier_activation) > uint8_t(Activation::Tanh)) return "unknown classifier activation";
  if (uint8_t(c.reversible_merge) > uint8_t(ReversibleMerge::Mean)) return "unknown reversible merge";
  if (uint8_t(c.head) > uint8_t(HeadKind::Classifier)) return "unknown head kind";
  if (uint8_t(c.pooling) > uint8_t(Pooling::Mean)) return "unknown pooling";
  if (!(e = check_range("dim", c.dim, 1, Limits::kMaxDim)).empty()) return e;
  if (!(e = check_range("num_layers", c.num_layers, 1, Limits::kMaxLayers)).empty()) return e;
  if (!(e = check_range("num_heads", c.num_heads, 1, Limits::kMaxHeads)).empty()) return e;
  if (!(e = check_range("head_dim", c.head_dim, 1, Limits::kMaxDim)).empty()) return e;
  if (!(e = check_range("num_heads * head_dim", uint64_t(c.num_heads) * c.head_dim, 1,
                        Limits::kMaxDim)).empty())
    return e;
  if (c.kv_heads != c.num_heads && c.kv_heads != 1)
    return "kv_heads = " + std::to_string(c.kv_heads) + " must be 1 or num_heads (" +
           std::to_string(c.num_heads) + ")";
  if (!(e = check_range("ff_dim", c.ff_dim, 1, Limits::kMaxFeedForward)).empty()) return e;
  if (!(e = check_range("max_seq_len", c.max_seq_len, 1, Limits::kMaxSeqLen)).empty()) return e;
  if (c.attention_kind == AttentionKind::Linformer) {
    if (c.proj_len == 0) return "proj_len (k) must be at least 1";
    if (c.proj_len > c.max_seq_len)
      return "proj_len k = " + std::to_string(c.proj_len) + " exceeds max_seq_len n = " +
             std::to_string(c.max_seq_len) + " (Linformer needs k <= n)";
  } else if (c.proj_len != 0) {
    return std::string("proj_len applies to linformer attention only, not ") +
           to_string(c.attention_kind);
  }
  if (c.causal != CausalMode::Bidirectional && c.attention_kind != AttentionKind::LinearElu &&
      c.attention_kind != AttentionKind::Performer && c.attention_kind != AttentionKind::Lsh)
    return std::string("causal mode is only defined for linear (elu+1), performer and lsh attention, not ") +
           to_string(c.attention_kind);
  if (c.attention_kind == AttentionKind::Performer) {
    if (!(e = check_range("num_features", c.num_features, 1, Limits::kMaxFeatures)).empty()) return e;
    if (uint8_t(c.feature_map) > uint8_t(FeatureMap::Relu)) return "unknown feature map";
    if (!std::isfinite(c.feature_eps) || c.feature_eps <= 0.0f || c.feature_eps > 1.0f)
      return "feature_eps must be in (0, 1]";
    if (uint8_t(c.key_stabiliser) > uint8_t(KeyStabiliser::Sequence)) return "unknown key stabiliser";
    if (c.key_stabiliser == KeyStabiliser::Sequence &&
        (c.causal != CausalMode::Causal || c.feature_map != FeatureMap::Softmax))
      return "key_stabiliser 'sequence' applies to causal performer attention with softmax features only";
  } else if (c.num_features != 0 || c.key_stabiliser != KeyStabiliser::Prefix) {
    return "num_features and key_stabiliser apply to performer attention only";
  }
  if (c.attention_kind == AttentionKind::GiveTake) {
    if (!(e = check_range("num_global_tokens", c.num_global_tokens, 1, Limits::kMaxGlobalTokens)).empty())
      return e;
  } else if (c.num_global_tokens != 0) {
    return "num_global_tokens applies to givetake attention only";
  }
  if (c.attention_kind == AttentionKind::SlidingWindow) {
    if (!(e = check_range("window_radius", c.window_radius, 1, c.max_seq_len)).empty()) return e;
    if (!(e = check_range("global_positions", c.global_positions, 0, c.max_seq_len)).empty()) return e;
  } else if (c.window_radius != 0 || c.global_positions != 0) {
    return "window_radius and global_positions apply to sliding window attention only";
  }
  if (c.attention_kind == AttentionKind::BlockSparse) {
    if (!(e = check_range("block_size", c.block_size, 1, c.max_seq_len)).empty()) return e;
    if (!(e = check_range("global_blocks", c.global_blocks, 0, c.max_seq_len)).empty()) return e;
    if (!(e = check_range("num_random_blocks", c.num_random_blocks, 0, Limits::kMaxRandomBlocks)).empty())
      return e;
  } else if (c.block_size != 0 || c.global_blocks != 0 || c.num_random_blocks != 0) {
    return "block_size, global_blocks and num_random_blocks apply to block sparse attention only";
  }
  if (c.attention_kind == AttentionKind::Lsh) {
    if (!(e = check_range("bucket_size", c.bucket_size, 1, Limits::kMaxBucketSize)).empty()) return e;
    if (!(e = check_range("num_hashes", c.num_hashes, 1, Limits::kMaxHashes)).empty()) return e;
  } else if (c.bucket_size != 0 || c.num_hashes != 0) {
    return "bucket_size and num_hashes apply to lsh attention only";
  }
  if (!(e = check_range("vocab_size", c.vocab_size, 0, Limits::kMaxVocab)).empty()) return e;
  if (c.head == HeadKind::LmLogits && c.vocab_size == 0) return "an LM head needs vocab_size > 0";
  if (c.head == HeadKind::Classifier &&
      !(e = check_range("num_classes", c.num_classes, 1, Limits::kMaxClasses)).empty())
    return e;
  if (c.head != HeadKind::Classifier && c.classifier_activation != Activation::Tanh)
    return "classifier_activation applies to classifier heads only";
  if (c.norm_placement != NormPlacement::Reversible && c.reversible_merge != ReversibleMerge::Sum)
    return "reversible_merge applies to reversible layers only";
  if (!std::isfinite(c.norm_eps) || c.norm_eps <= 0.0f) return "norm_eps must be positive and finite";
  if (!std::isfinite(c.embedding_scale)) return "embedding_scale must be finite";
  if (c.positions == PositionKind::Sinusoidal) {
    if (!std::isfinite(c.sinusoidal_base) || c.sinusoidal_base <= 1.0f)
      return "sinusoidal_base must be finite and greater than 1";
    if (c.dim % 2) return "sinusoidal positions need an even dim";
  }
  if (c.rotary != Rotary::None) {
    // Queries and keys of every position exist before the attention math only for these kinds.
    if (c.attention_kind != AttentionKind::FullSoftmax && c.attention_kind != AttentionKind::LinearElu &&
        c.attention_kind != AttentionKind::Performer && c.attention_kind != AttentionKind::Lsh)
      return std::string("rotary positions are defined for full, linear, performer and lsh attention, not ") +
             to_string(c.attention_kind);
    if (c.head_dim % 2) return "rotary positions need an even head_dim";
  }
  if (uint64_t(c.position_offset) + c.max_seq_len > Limits::kMaxPositionRows)
    return "position_offset + max_seq_len is too large";
  return "";
}

using Shape = std::vector<uint32_t>;

}  // namespace

namespace {
bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}
}  // namespace

void visit_weights(EncoderDescription& desc, WeightVisitor visit, void* fn) {
  // A linear layer's or a norm's weight and bias: the slots NAME.weight and NAME.bias.
  auto pair = [&](const std::string& name, auto& weights) {
    visit(fn, name + ".weight", weights.weight);
    visit(fn, name + ".bias", weights.bias);
  };
  visit(fn, "token_embedding", desc.token_embedding);
  visit(fn, "position_embedding", desc.position_embedding);
  visit(fn, "rotary_table", desc.rotary_table);
  pair("embedding_norm", desc.embedding_norm);
  visit(fn, "global_tokens", desc.global_tokens);
  visit(fn, "shared_proj", desc.shared_proj);
  visit(fn, "shared_proj_bias", desc.shared_proj_bias);
  for (size_t i = 0; i < desc.layers.size(); ++i) {
    LayerWeights& l = desc.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    pair(p + "attention.q", l.q);
    pair(p + "attention.k", l.k);
    pair(p + "attention.v", l.v);
    pair(p + "attention.out", l.out);
    visit(fn, p + "attention.proj_k", l.proj_k);
    visit(fn, p + "attention.proj_v", l.proj_v);
    visit(fn, p + "attention.proj_k_bias", l.proj_k_bias);
    visit(fn, p + "attention.proj_v_bias", l.proj_v_bias);
    visit(fn, p + "attention.conv_weight", l.conv_weight);
    visit(fn, p + "attention.conv_bias", l.conv_bias);
    visit(fn, p + "attention.features", l.features);
    pair(p + "attention.q_global", l.q_global);
    pair(p + "attention.k_global", l.k_global);
    pair(p + "attention.v_global", l.v_global);
    visit(fn, p + "attention.random_blocks", l.random_blocks);
    visit(fn, p + "attention.rotations", l.rotations);
    pair(p + "attention_norm", l.attention_norm);
    pair(p + "feed_forward.fc1", l.fc1);
    pair(p + "feed_forward.fc2", l.fc2);
    pair(p + "feed_forward_norm", l.feed_forward_norm);
  }
  pair("final_norm", desc.final_norm);
  pair("head.dense", desc.head.dense);
  pair("head.norm", desc.head.norm);
  pair("head.out", desc.head.out);
}

bool is_dense_weight(const std::string& slot) {
  for (const char* layer : {".attention.q.weight", ".attention.k.weight", ".attention.v.weight",
                            ".attention.out.weight", ".feed_forward.fc1.weight", ".feed_forward.fc2.weight",
                            ".attention.q_global.weight", ".attention.k_global.weight",
                            ".attention.v_global.weight"})
    if (ends_with(slot, layer)) return true;
  return slot == "head.dense.weight" || slot == "head.out.weight";
}

uint32_t dense_panel_groups(const EncoderConfig& c, const std::string& slot) {
  const bool per_head_kv = c.attention_kind == AttentionKind::Linformer &&
                           c.projection_sharing == ProjectionSharing::None && c.kv_heads > 1;
  return per_head_kv && (ends_with(slot, ".attention.k.weight") || ends_with(slot, ".attention.v.weight"))
             ? c.kv_heads
             : 1;
}

bool weight_may_be_quantized(const std::string& slot) {
  return is_dense_weight(slot) || slot == "token_embedding" || slot == "position_embedding" ||
         slot == "global_tokens" || slot == "shared_proj" || ends_with(slot, ".attention.proj_k") ||
         ends_with(slot, ".attention.proj_v");
}

namespace {
// The panel layout is for dense weights, and for a token embedding tied to the LM head (stored
// once); everything else is row-major.
std::string check_layout(const EncoderConfig& c, const std::string& name, const WeightView& w) {
  if (w.layout == Layout::Panel16) {
    const uint32_t groups = name == "token_embedding" ? 1 : dense_panel_groups(c, name);
    if (!is_dense_weight(name) && name != "token_embedding")
      return name + " cannot be stored in panel layout (only dense layer weights can)";
    if (w.panel_groups != groups)
      return name + " is packed in " + std::to_string(w.panel_groups) + " panel groups, expected " +
             std::to_string(groups);
    if (w.dtype == DType::I8 && !w.channel_sums)
      return name + " is int8 in panel layout but has no channel sums";
    return "";
  }
  if (w.layout != Layout::RowMajor) return name + " has an unknown layout";
  if (w.panel_groups != 1 || w.channel_sums) return name + " is row-major but carries panel groups or channel sums";
  return "";
}
}  // namespace

std::string validate_description(const EncoderDescription& d) {
  const EncoderConfig& c = d.config;
  std::string err = validate_config(c);
  if (!err.empty()) return "invalid configuration: " + err;
  if (d.layers.size() != c.num_layers)
    return "the model has " + std::to_string(d.layers.size()) + " layers, the configuration says " +
           std::to_string(c.num_layers);

  const uint32_t D = c.dim, H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads, F = c.ff_dim,
                 n = c.max_seq_len, k = c.proj_len;
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  const bool per_head = c.projection_sharing == ProjectionSharing::None;

  // Expected shape of every slot; an empty shape means the slot must be absent, and `optional`
  // slots may be absent.
  struct Expect {
    Shape shape;
    bool optional = false;
  };
  std::map<std::string, Expect> expect;
  auto need = [&](const std::string& name, Shape s) {
    expect[name] = {std::move(s), false};
  };
  auto maybe = [&](const std::string& name, Shape s) {
    expect[name] = {std::move(s), true};
  };
  auto norm = [&](const std::string& name, bool present) {
    if (present) {
      need(name + ".weight", {D});
      need(name + ".bias", {D});
    }
  };
  if (c.vocab_size > 0) need("token_embedding", {c.vocab_size, D});
  if (c.positions == PositionKind::Learned) {
    // rows are checked below: at least position_offset + n
  }
  norm("embedding_norm", c.embedding_norm);
  if (c.rotary != Rotary::None) need("rotary_table", {n, dh});
  if (linformer && c.projection_sharing == ProjectionSharing::Layerwise) {
    need("shared_proj", {k, n});
    maybe("shared_proj_bias", {k});
  }
  const Shape proj = per_head ? Shape{H, k, n} : Shape{k, n};
  const Shape proj_bias = per_head ? Shape{H, k} : Shape{k};
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    need(p + "attention.q.weight", {H * dh, D});
    maybe(p + "attention.q.bias", {H * dh});
    if (c.attention_kind != AttentionKind::Lsh) {  // (Lsh: the queries are the keys)
      need(p + "attention.k.weight", {kvh * dh, D});
      maybe(p + "attention.k.bias", {kvh * dh});
    }
    need(p + "attention.v.weight", {kvh * dh, D});
    maybe(p + "attention.v.bias", {kvh * dh});
    need(p + "attention.out.weight", {D, H * dh});
    maybe(p + "attention.out.bias", {D});
    if (linformer && c.projection_sharing != ProjectionSharing::Layerwise) {
      need(p + "attention.proj_k", proj);
      maybe(p + "attention.proj_k_bias", proj_bias);
      if (c.has_separate_proj_v()) {
        need(p + "attention.proj_v", proj);
        maybe(p + "attention.proj_v_bias", proj_bias);
      }
    }
    if (c.attention_kind == AttentionKind::Performer) need(p + "attention.features", {dh, c.num_features});
    if (c.attention_kind == AttentionKind::SlidingWindow) {
      const LayerWeights& l = d.layers[i];
      const bool any = l.q_global.weight.present() || l.k_global.weight.present() || l.v_global.weight.present();
      if (any && !(l.q_global.weight.present() && l.k_global.weight.present() && l.v_global.weight.present()))
        return p + "attention has some of q_global, k_global and v_global: a model has all three or none";
      if (any) {  // (without them, a lone global bias is a tensor the configuration does not use)
        need(p + "attention.q_global.weight", {H * dh, D});
        need(p + "attention.k_global.weight", {kvh * dh, D});
        need(p + "attention.v_global.weight", {kvh * dh, D});
        maybe(p + "attention.q_global.bias", {H * dh});
        maybe(p + "attention.k_global.bias", {kvh * dh});
        maybe(p + "attention.v_global.bias", {kvh * dh});
      }
    }
    if (c.attention_kind == AttentionKind::BlockSparse && c.num_random_blocks > 0)
      need(p + "attention.random_blocks",
           {H, uint32_t(block_sparse_blocks(c, n)), c.num_random_blocks});
    if (c.attention_kind == AttentionKind::Lsh)
      need(p + "attention.rotations", {c.num_hashes, dh, uint32_t(lsh_half_buckets(c, n))});
    norm(p + "attention_norm", true);
    need(p + "feed_forward.fc1.weight", {F, D});
    maybe(p + "feed_forward.fc1.bias", {F});
    need(p + "feed_forward.fc2.weight", {D, F});
    maybe(p + "feed_forward.fc2.bias", {D});
    norm(p + "feed_forward_norm", true);
  }
  norm("final_norm", c.final_norm);
  if (c.attention_kind == AttentionKind::GiveTake) need("global_tokens", {c.num_global_tokens, D});
  if (c.head != HeadKind::None) {
    const uint32_t out = c.output_channels();
    maybe("head.dense.weight", {D, D});
    maybe("head.dense.bias", {D});
    if (c.head == HeadKind::LmLogits) {
      maybe("head.norm.weight", {D});
      maybe("head.norm.bias", {D});
    }
    need("head.out.weight", {out, D});
    maybe("head.out.bias", {out});
  }

  for_each_weight(d, [&](const std::string& name, const WeightView& w) {
    if (!err.empty()) return;
    if (w.present() && !(err = check_layout(c, name, w)).empty()) return;
    const size_t dot = name.rfind('.');
    const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
    if (leaf == "conv_weight" || leaf == "conv_bias") {
      // GiveTake's optional depthwise convolution: [dim, kernel] (odd kernel) and [dim].
      if (!w.present()) return;
      if (c.attention_kind != AttentionKind::GiveTake)
        err = name + " is present but only givetake attention has a convolution";
      else if (leaf == "conv_weight" && (w.shape.size() != 2 || w.shape[0] != D ||
                                         w.shape[1] % 2 == 0 || w.shape[1] > Limits::kMaxConvKernel))
        err = name + " has shape " + shape_to_string(w.shape) + ", expected [" + std::to_string(D) +
              ", odd kernel <= " + std::to_string(Limits::kMaxConvKernel) + "]";
      else if (leaf == "conv_bias" && w.shape != Shape{D})
        err = name + " has shape " + shape_to_string(w.shape) + ", expected [" + std::to_string(D) + "]";
      else if (w.dtype != DType::F32)
        err = name + " must be f32";
      return;
    }
    if (name == "position_embedding") {
      if (c.positions != PositionKind::Learned) {
        if (w.present()) err = "position_embedding is present but positions are " +
                               std::string(to_string(c.positions));
        return;
      }
      const uint64_t rows_needed = uint64_t(c.position_offset) + n;
      if (!w.present()) err = "position_embedding is missing (positions are learned)";
      else if (w.shape.size() != 2 || w.shape[1] != D || w.shape[0] < rows_needed)
        err = "position_embedding has shape " + shape_to_string(w.shape) + ", expected [>= " +
              std::to_string(rows_needed) + "," + std::to_string(D) + "]";
      else if (w.shape[0] > Limits::kMaxPositionRows)
        err = "position_embedding has too many rows";
      return;
    }
    auto it = expect.find(name);
    if (it == expect.end()) {
      if (w.present()) err = name + " is present but the configuration does not use it";
      return;
    }
    const Expect& e = it->second;
    if (!w.present()) {
      if (!e.optional) err = name + " is missing";
      return;
    }
    if (w.shape != e.shape) {
      err = name + " has shape " + shape_to_string(w.shape) + ", the configuration needs " +
            shape_to_string(e.shape);
      return;
    }
    if (uint8_t(w.dtype) > uint8_t(DType::I8)) {
      err = name + " has an unknown dtype";
      return;
    }
    if (!weight_may_be_quantized(name) && w.dtype != DType::F32) {
      err = name + " must be f32 (only matrices may be f16 or int8)";
      return;
    }
    if (w.dtype == DType::I8 && !w.scales) err = name + " is int8 but has no scales";
  });
  if (!err.empty()) return err;
  // A layer norm needs both its weight and its bias (a missing pair is caught above).
  // BlockSparse: the random key blocks are block indices of the longest input (shape and f32
  // checked above).
  for (size_t i = 0; i < d.layers.size(); ++i) {
    // Lsh: a non-finite rotation would hash every row into one bucket by NaN comparisons.
    const WeightView& rot = d.layers[i].rotations;
    for (uint64_t j = 0; rot.present() && j < rot.elements(); ++j)
      if (!std::isfinite(static_cast<const float*>(rot.data)[j]))
        return "layers." + std::to_string(i) + ".attention.rotations holds a non-finite value at element " +
               std::to_string(j);
    const WeightView& w = d.layers[i].random_blocks;
    if (!w.present()) continue;
    const float* v = static_cast<const float*>(w.data);
    const float blocks = float(block_sparse_blocks(c, n));
    for (uint64_t j = 0; j < w.elements(); ++j)
      if (!(v[j] >= 0.0f && v[j] < blocks && v[j] == float(uint32_t(v[j]))))
        return "layers." + std::to_string(i) + ".attention.random_blocks holds " +
#if LINFER_BARE_METAL  // (no floating point in messages: newlib-nano's printf has none)
               "a value" +
#else
               std::to_string(v[j]) +
#endif
               " at element " + std::to_string(j) + ", not a block index in [0, " +
               std::to_string(uint32_t(blocks)) + ")";
  }
#if LINFER_BARE_METAL && !LINFER_TOKENIZERS
  return "";  // (the tokenizer is not read: parse_lfm)
#else
  return validate_tokenizer(d.tokenizer, c.vocab_size);
#endif
}

size_t block_sparse_blocks(const EncoderConfig& c, size_t T) {
  return c.block_size ? (T + c.block_size - 1) / c.block_size : 0;
}

size_t lsh_half_buckets(const EncoderConfig& c, size_t T) {
  return c.bucket_size ? (T + 2 * size_t(c.bucket_size) - 1) / (2 * size_t(c.bucket_size)) : 0;
}

}  // namespace linfer
