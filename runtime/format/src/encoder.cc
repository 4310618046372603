// SPDX-License-Identifier: Apache-2.0
#include "linfer/format/encoder.h"

#include "linfer/format/panel.h"
#include "linfer/types/strings.h"
#include "message.h"

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
    case HeadKind::Pooled: return "pooled";
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

// (Numbers as uint64_t: one std::to_string, the one the messages use, on every target.)
std::string layer_name(size_t i) { return "layers." + std::to_string(uint64_t(i)); }

namespace {
void append_shape(std::string* out, const uint32_t* dims, size_t rank) {
  *out += '[';
  for (size_t i = 0; i < rank; ++i) *out += (i ? "," : "") + std::to_string(uint64_t(dims[i]));
  *out += ']';
}
}  // namespace

std::string shape_to_string(const std::vector<uint32_t>& shape) {
  std::string s;
  append_shape(&s, shape.data(), shape.size());
  return s;
}

std::string format_message(const char* text, const MessageArg* args, size_t count) {
  std::string out;
  size_t next = 0;
  for (const char* p = text; *p; ++p) {
    if (p[0] != '{' || p[1] != '}') {
      out += *p;
      continue;
    }
    ++p;
    if (LINFER_TERSE_ERRORS)  // (a terse text takes only the strings)
      while (next < count && args[next].kind != MessageArg::kText) ++next;
    if (next == count) continue;
    const MessageArg& a = args[next++];
    if (a.kind == MessageArg::kText)
      out += a.text;
    else if (LINFER_TERSE_ERRORS)
      continue;
    else if (a.kind == MessageArg::kNumber)
      out += std::to_string(a.number);
    else
      append_shape(&out, a.shape.dims, a.shape.rank);
  }
  return out;
}

namespace {

// Sets *err and returns true when value is outside [lo, hi].
bool out_of_range(std::string* err, const char* what, uint32_t value, uint32_t lo, uint32_t hi) {
  if (value >= lo && value <= hi) return false;
  *err = message(LINFER_DETAILED("{} = {} is out of range [{}, {}]", "{} is out of range"), what, value, lo, hi);
  return true;
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
  if (uint8_t(c.head) > uint8_t(HeadKind::Pooled)) return "unknown head kind";
  if (uint8_t(c.pooling) > uint8_t(Pooling::Mean)) return "unknown pooling";
  if (out_of_range(&e, "dim", c.dim, 1, Limits::kMaxDim)) return e;
  if (out_of_range(&e, "num_layers", c.num_layers, 1, Limits::kMaxLayers)) return e;
  if (out_of_range(&e, "num_heads", c.num_heads, 1, Limits::kMaxHeads)) return e;
  if (out_of_range(&e, "head_dim", c.head_dim, 1, Limits::kMaxDim)) return e;
  // (At most 1024 * 65536: no overflow.)
  if (out_of_range(&e, "num_heads * head_dim", c.num_heads * c.head_dim, 1, Limits::kMaxDim)) return e;
  if (c.kv_heads != c.num_heads && c.kv_heads != 1)
    return message(LINFER_DETAILED("kv_heads = {} must be 1 or num_heads ({})", "kv_heads must be 1 or num_heads"),
                   c.kv_heads, c.num_heads);
  if (out_of_range(&e, "ff_dim", c.ff_dim, 1, Limits::kMaxFeedForward)) return e;
  if (out_of_range(&e, "max_seq_len", c.max_seq_len, 1, Limits::kMaxSeqLen)) return e;
  if (c.attention_kind == AttentionKind::Linformer) {
    if (c.proj_len == 0) return "proj_len (k) must be at least 1";
    if (c.proj_len > c.max_seq_len)
      return message(LINFER_DETAILED("proj_len k = {} exceeds max_seq_len n = {} (Linformer needs k <= n)",
                                     "proj_len k exceeds max_seq_len n (Linformer needs k <= n)"),
                     c.proj_len, c.max_seq_len);
  } else if (c.proj_len != 0) {
    return message("proj_len applies to linformer attention only, not {}", to_string(c.attention_kind));
  }
  if (c.causal != CausalMode::Bidirectional && c.attention_kind != AttentionKind::LinearElu &&
      c.attention_kind != AttentionKind::Performer && c.attention_kind != AttentionKind::Lsh)
    return message("causal mode is only defined for linear (elu+1), performer and lsh attention, not {}",
                   to_string(c.attention_kind));
  if (c.attention_kind == AttentionKind::Performer) {
    if (out_of_range(&e, "num_features", c.num_features, 1, Limits::kMaxFeatures)) return e;
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
    if (out_of_range(&e, "num_global_tokens", c.num_global_tokens, 1, Limits::kMaxGlobalTokens))
      return e;
  } else if (c.num_global_tokens != 0) {
    return "num_global_tokens applies to givetake attention only";
  }
  if (c.attention_kind == AttentionKind::SlidingWindow) {
    if (out_of_range(&e, "window_radius", c.window_radius, 1, c.max_seq_len)) return e;
    if (out_of_range(&e, "global_positions", c.global_positions, 0, c.max_seq_len)) return e;
  } else if (c.window_radius != 0 || c.global_positions != 0) {
    return "window_radius and global_positions apply to sliding window attention only";
  }
  if (c.attention_kind == AttentionKind::BlockSparse) {
    if (out_of_range(&e, "block_size", c.block_size, 1, c.max_seq_len)) return e;
    if (out_of_range(&e, "global_blocks", c.global_blocks, 0, c.max_seq_len)) return e;
    if (out_of_range(&e, "num_random_blocks", c.num_random_blocks, 0, Limits::kMaxRandomBlocks))
      return e;
  } else if (c.block_size != 0 || c.global_blocks != 0 || c.num_random_blocks != 0) {
    return "block_size, global_blocks and num_random_blocks apply to block sparse attention only";
  }
  if (c.attention_kind == AttentionKind::Lsh) {
    if (out_of_range(&e, "bucket_size", c.bucket_size, 1, Limits::kMaxBucketSize)) return e;
    if (out_of_range(&e, "num_hashes", c.num_hashes, 1, Limits::kMaxHashes)) return e;
  } else if (c.bucket_size != 0 || c.num_hashes != 0) {
    return "bucket_size and num_hashes apply to lsh attention only";
  }
  if (out_of_range(&e, "vocab_size", c.vocab_size, 0, Limits::kMaxVocab)) return e;
  if (c.head == HeadKind::LmLogits && c.vocab_size == 0) return "an LM head needs vocab_size > 0";
  if (c.head == HeadKind::Classifier &&
      out_of_range(&e, "num_classes", c.num_classes, 1, Limits::kMaxClasses))
    return e;
  if (c.head != HeadKind::Classifier && c.classifier_activation != Activation::Tanh)
    return "classifier_activation applies to classifier heads only";
  if (c.head != HeadKind::Pooled && c.normalize_output) return "normalize_output applies to pooled heads only";
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
      return message("rotary positions are defined for full, linear, performer and lsh attention, not {}",
                     to_string(c.attention_kind));
    if (c.head_dim % 2) return "rotary positions need an even head_dim";
  }
  if (uint64_t(c.position_offset) + c.max_seq_len > Limits::kMaxPositionRows)
    return "position_offset + max_seq_len is too large";
  return "";
}

}  // namespace

namespace {
// The slots' names, by Slot (a layer's after "layers.N.").
constexpr const char* kSlotNames[] = {
    "token_embedding", "position_embedding", "rotary_table", "embedding_norm.weight", "embedding_norm.bias",
    "global_tokens", "shared_proj", "shared_proj_bias",
    "attention.q.weight", "attention.q.bias", "attention.k.weight", "attention.k.bias", "attention.v.weight",
    "attention.v.bias", "attention.out.weight", "attention.out.bias", "attention.proj_k", "attention.proj_v",
    "attention.proj_k_bias", "attention.proj_v_bias", "attention.conv_weight", "attention.conv_bias",
    "attention.features", "attention.q_global.weight", "attention.q_global.bias", "attention.k_global.weight",
    "attention.k_global.bias", "attention.v_global.weight", "attention.v_global.bias", "attention.random_blocks",
    "attention.rotations", "attention_norm.weight", "attention_norm.bias", "feed_forward.fc1.weight",
    "feed_forward.fc1.bias", "feed_forward.fc2.weight", "feed_forward.fc2.bias", "feed_forward_norm.weight",
    "feed_forward_norm.bias",
    "final_norm.weight", "final_norm.bias", "head.dense.weight", "head.dense.bias", "head.norm.weight",
    "head.norm.bias", "head.out.weight", "head.out.bias"};
static_assert(sizeof kSlotNames / sizeof kSlotNames[0] == size_t(Slot::Count), "a name for every slot");
constexpr size_t kLayerSlots = size_t(Slot::FinalNormWeight) - size_t(Slot::QWeight);
}  // namespace

void visit_weights(EncoderDescription& d, WeightVisitor visit, void* fn) {
  // Slots first .. first + count - 1, their views in `views`.
  auto run = [&](const std::string& prefix, Slot first, WeightView* const* views, size_t count, uint32_t layer) {
    for (size_t i = 0; i < count; ++i) {
      const Slot slot = Slot(size_t(first) + i);
      visit(fn, slot, layer, prefix + kSlotNames[size_t(slot)], *views[i]);
    }
  };
  WeightView* const before[] = {&d.token_embedding, &d.position_embedding, &d.rotary_table,
                                &d.embedding_norm.weight, &d.embedding_norm.bias, &d.global_tokens,
                                &d.shared_proj, &d.shared_proj_bias};
  static_assert(sizeof before / sizeof before[0] == size_t(Slot::QWeight), "the slots before the layers");
  run("", Slot::TokenEmbedding, before, size_t(Slot::QWeight), 0);
  for (uint32_t i = 0; i < d.layers.size(); ++i) {
    LayerWeights& l = d.layers[i];
    WeightView* const layer[] = {
        &l.q.weight, &l.q.bias, &l.k.weight, &l.k.bias, &l.v.weight, &l.v.bias, &l.out.weight, &l.out.bias,
        &l.proj_k, &l.proj_v, &l.proj_k_bias, &l.proj_v_bias, &l.conv_weight, &l.conv_bias, &l.features,
        &l.q_global.weight, &l.q_global.bias, &l.k_global.weight, &l.k_global.bias, &l.v_global.weight,
        &l.v_global.bias, &l.random_blocks, &l.rotations, &l.attention_norm.weight, &l.attention_norm.bias,
        &l.fc1.weight, &l.fc1.bias, &l.fc2.weight, &l.fc2.bias, &l.feed_forward_norm.weight,
        &l.feed_forward_norm.bias};
    static_assert(sizeof layer / sizeof layer[0] == kLayerSlots, "a layer's slots");
    run(layer_name(i) + ".", Slot::QWeight, layer, kLayerSlots, i);
  }
  WeightView* const after[] = {&d.final_norm.weight, &d.final_norm.bias, &d.head.dense.weight, &d.head.dense.bias,
                               &d.head.norm.weight, &d.head.norm.bias, &d.head.out.weight, &d.head.out.bias};
  static_assert(sizeof after / sizeof after[0] == size_t(Slot::Count) - size_t(Slot::FinalNormWeight),
                "the slots after the layers");
  run("", Slot::FinalNormWeight, after, sizeof after / sizeof after[0], 0);
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
      return message("{} cannot be stored in panel layout (only dense layer weights can)", name);
    if (w.panel_groups != groups)
      return message(LINFER_DETAILED("{} is packed in {} panel groups, expected {}",
                                     "{} is packed in the wrong panel groups"),
                     name, w.panel_groups, groups);
    if (w.dtype == DType::I8 && !w.channel_sums)
      return message("{} is int8 in panel layout but has no channel sums", name);
    return "";
  }
  if (w.layout != Layout::RowMajor) return message("{} has an unknown layout", name);
  if (w.panel_groups != 1 || w.channel_sums)
    return message("{} is row-major but carries panel groups or channel sums", name);
  return "";
}
}  // namespace

namespace {
// The shape the configuration gives a slot; rank 0: the slot must be absent. `optional` slots may
// be absent.
struct Expect {
  uint32_t dims[3] = {};
  uint32_t rank = 0;
  bool optional = false;
};

// The rule of each slot's shape: when the configuration uses the slot, whether it may be absent
// then, and the sizes its dimensions are.
enum Use : uint8_t {
  kAlways, kNever, kVocabSize, kRotaryTable, kEmbeddingNorm, kGiveTake, kSharedProj, kKeys, kLayerProj,
  kLayerProjV, kPerformer, kGlobalProj, kRandomBlocks, kLsh, kFinalNorm, kHead, kLmHead, kUses
};
enum Size : uint8_t {
  kNoDim, kDim, kQueryWidth, kKeyWidth, kFeedForward, kSeqLen, kProjLen, kHeads, kHeadDim, kVocab,
  kGlobalTokens, kFeatures, kBlocks, kRandomPerBlock, kHashes, kHalfBuckets, kOutput,
  kProjHeads,  // num_heads with per-head projections (sharing none), else no dimension
  kSizes
};
struct ShapeRule {
  Use use;
  bool optional;
  Size dims[3];
};
constexpr bool kOptional = true, kRequired = false;
// By Slot. (The convolution's and the position embedding's shapes are bounds: check_slot's own.)
constexpr ShapeRule kShapeRules[] = {
    {kVocabSize, kRequired, {kVocab, kDim}},                 // token_embedding
    {kNever, kRequired, {}},                                  // position_embedding
    {kRotaryTable, kRequired, {kSeqLen, kHeadDim}},          // rotary_table
    {kEmbeddingNorm, kRequired, {kDim}},                     // embedding_norm.weight
    {kEmbeddingNorm, kRequired, {kDim}},                     // embedding_norm.bias
    {kGiveTake, kRequired, {kGlobalTokens, kDim}},           // global_tokens
    {kSharedProj, kRequired, {kProjLen, kSeqLen}},           // shared_proj
    {kSharedProj, kOptional, {kProjLen}},                    // shared_proj_bias
    {kAlways, kRequired, {kQueryWidth, kDim}},               // attention.q.weight
    {kAlways, kOptional, {kQueryWidth}},                     // attention.q.bias
    {kKeys, kRequired, {kKeyWidth, kDim}},                   // attention.k.weight
    {kKeys, kOptional, {kKeyWidth}},                         // attention.k.bias
    {kAlways, kRequired, {kKeyWidth, kDim}},                 // attention.v.weight
    {kAlways, kOptional, {kKeyWidth}},                       // attention.v.bias
    {kAlways, kRequired, {kDim, kQueryWidth}},               // attention.out.weight
    {kAlways, kOptional, {kDim}},                            // attention.out.bias
    {kLayerProj, kRequired, {kProjHeads, kProjLen, kSeqLen}},  // attention.proj_k
    {kLayerProjV, kRequired, {kProjHeads, kProjLen, kSeqLen}},  // attention.proj_v
    {kLayerProj, kOptional, {kProjHeads, kProjLen}},         // attention.proj_k_bias
    {kLayerProjV, kOptional, {kProjHeads, kProjLen}},        // attention.proj_v_bias
    {kNever, kRequired, {}},                                  // attention.conv_weight
    {kNever, kRequired, {}},                                  // attention.conv_bias
    {kPerformer, kRequired, {kHeadDim, kFeatures}},          // attention.features
    {kGlobalProj, kRequired, {kQueryWidth, kDim}},           // attention.q_global.weight
    {kGlobalProj, kOptional, {kQueryWidth}},                 // attention.q_global.bias
    {kGlobalProj, kRequired, {kKeyWidth, kDim}},             // attention.k_global.weight
    {kGlobalProj, kOptional, {kKeyWidth}},                   // attention.k_global.bias
    {kGlobalProj, kRequired, {kKeyWidth, kDim}},             // attention.v_global.weight
    {kGlobalProj, kOptional, {kKeyWidth}},                   // attention.v_global.bias
    {kRandomBlocks, kRequired, {kHeads, kBlocks, kRandomPerBlock}},  // attention.random_blocks
    {kLsh, kRequired, {kHashes, kHeadDim, kHalfBuckets}},    // attention.rotations
    {kAlways, kRequired, {kDim}},                            // attention_norm.weight
    {kAlways, kRequired, {kDim}},                            // attention_norm.bias
    {kAlways, kRequired, {kFeedForward, kDim}},              // feed_forward.fc1.weight
    {kAlways, kOptional, {kFeedForward}},                    // feed_forward.fc1.bias
    {kAlways, kRequired, {kDim, kFeedForward}},              // feed_forward.fc2.weight
    {kAlways, kOptional, {kDim}},                            // feed_forward.fc2.bias
    {kAlways, kRequired, {kDim}},                            // feed_forward_norm.weight
    {kAlways, kRequired, {kDim}},                            // feed_forward_norm.bias
    {kFinalNorm, kRequired, {kDim}},                         // final_norm.weight
    {kFinalNorm, kRequired, {kDim}},                         // final_norm.bias
    {kHead, kOptional, {kDim, kDim}},                        // head.dense.weight
    {kHead, kOptional, {kDim}},                              // head.dense.bias
    {kLmHead, kOptional, {kDim}},                            // head.norm.weight
    {kLmHead, kOptional, {kDim}},                            // head.norm.bias
    {kHead, kRequired, {kOutput, kDim}},                     // head.out.weight
    {kHead, kOptional, {kOutput}},                           // head.out.bias
};
static_assert(sizeof kShapeRules / sizeof kShapeRules[0] == size_t(Slot::Count), "a rule for every slot");

Expect expected_shape(const EncoderConfig& c, const LayerWeights* l, Slot slot) {
  const AttentionKind kind = c.attention_kind;
  const bool linformer = kind == AttentionKind::Linformer;
  const bool layerwise = c.projection_sharing == ProjectionSharing::Layerwise;
  bool used[kUses] = {};
  used[kAlways] = true;
  used[kVocabSize] = c.vocab_size > 0;
  used[kRotaryTable] = c.rotary != Rotary::None;
  used[kEmbeddingNorm] = c.embedding_norm;
  used[kGiveTake] = kind == AttentionKind::GiveTake;
  used[kSharedProj] = linformer && layerwise;
  used[kKeys] = kind != AttentionKind::Lsh;  // (Lsh: the queries are the keys)
  used[kLayerProj] = linformer && !layerwise;
  used[kLayerProjV] = linformer && !layerwise && c.has_separate_proj_v();
  used[kPerformer] = kind == AttentionKind::Performer;
  // SlidingWindow's global projections: all three or none (checked before), and without them a
  // lone global bias is a tensor the configuration does not use.
  used[kGlobalProj] = kind == AttentionKind::SlidingWindow && l && l->q_global.weight.present();
  used[kRandomBlocks] = kind == AttentionKind::BlockSparse && c.num_random_blocks > 0;
  used[kLsh] = kind == AttentionKind::Lsh;
  used[kFinalNorm] = c.final_norm;
  used[kHead] = c.head == HeadKind::LmLogits || c.head == HeadKind::Classifier;
  used[kLmHead] = c.head == HeadKind::LmLogits;
  uint32_t size[kSizes] = {};
  size[kDim] = c.dim;
  size[kQueryWidth] = c.num_heads * c.head_dim;
  size[kKeyWidth] = c.kv_heads * c.head_dim;
  size[kFeedForward] = c.ff_dim;
  size[kSeqLen] = c.max_seq_len;
  size[kProjLen] = c.proj_len;
  size[kHeads] = size[kProjHeads] = c.num_heads;
  size[kHeadDim] = c.head_dim;
  size[kVocab] = c.vocab_size;
  size[kGlobalTokens] = c.num_global_tokens;
  size[kFeatures] = c.num_features;
  size[kBlocks] = uint32_t(block_sparse_blocks(c, c.max_seq_len));
  size[kRandomPerBlock] = c.num_random_blocks;
  size[kHashes] = c.num_hashes;
  size[kHalfBuckets] = uint32_t(lsh_half_buckets(c, c.max_seq_len));
  size[kOutput] = c.output_channels();
  const bool per_head = c.projection_sharing == ProjectionSharing::None;

  const ShapeRule& rule = kShapeRules[size_t(slot)];
  Expect e;
  if (!used[rule.use]) return e;
  e.optional = rule.optional;
  for (Size dim : rule.dims)
    if (dim != kNoDim && (dim != kProjHeads || per_head)) e.dims[e.rank++] = size[dim];
  return e;
}

bool same_shape(const std::vector<uint32_t>& shape, const Expect& e) {
  return shape.size() == e.rank && std::equal(shape.begin(), shape.end(), e.dims);
}

// The checks of one slot (after the configuration's): "" or what is wrong.
std::string check_slot(const EncoderDescription& d, Slot slot, uint32_t layer, const std::string& name,
                       const WeightView& w) {
  const EncoderConfig& c = d.config;
  const uint32_t D = c.dim;
  std::string err;
  if (w.present() && !(err = check_layout(c, name, w)).empty()) return err;
  if (slot == Slot::ConvWeight || slot == Slot::ConvBias) {
    // GiveTake's optional depthwise convolution: [dim, kernel] (odd kernel) and [dim].
    if (!w.present()) return "";
    if (c.attention_kind != AttentionKind::GiveTake)
      return message("{} is present but only givetake attention has a convolution", name);
    if (slot == Slot::ConvWeight && (w.shape.size() != 2 || w.shape[0] != D || w.shape[1] % 2 == 0 ||
                                     w.shape[1] > Limits::kMaxConvKernel))
      return message(LINFER_DETAILED("{} has shape {}, expected [{}, odd kernel <= {}]",
                                     "{} is not [dim, odd kernel <= 1023]"),
                     name, w.shape, D, Limits::kMaxConvKernel);
    if (slot == Slot::ConvBias && (w.shape.size() != 1 || w.shape[0] != D))
      return message(LINFER_DETAILED("{} has shape {}, expected [{}]", "{} is not [dim]"), name, w.shape, D);
    if (w.dtype != DType::F32) return message("{} must be f32", name);
    return "";
  }
  if (slot == Slot::PositionEmbedding) {
    if (c.positions != PositionKind::Learned)
      return w.present() ? message("position_embedding is present but positions are {}", to_string(c.positions))
                         : "";
    const uint64_t rows_needed = uint64_t(c.position_offset) + c.max_seq_len;
    if (!w.present()) return "position_embedding is missing (positions are learned)";
    if (w.shape.size() != 2 || w.shape[1] != D || w.shape[0] < rows_needed)
      return message(LINFER_DETAILED("position_embedding has shape {}, expected [>= {},{}]",
                                     "position_embedding is not [>= position_offset + max_seq_len, dim]"),
                     w.shape, rows_needed, D);
    if (w.shape[0] > Limits::kMaxPositionRows) return "position_embedding has too many rows";
    return "";
  }
  const bool in_layer = slot >= Slot::QWeight && slot < Slot::FinalNormWeight;
  const Expect e = expected_shape(c, in_layer ? &d.layers[layer] : nullptr, slot);
  if (e.rank == 0) return w.present() ? message("{} is present but the configuration does not use it", name) : "";
  if (!w.present()) return e.optional ? "" : message("{} is missing", name);
  if (!same_shape(w.shape, e))
    return message(LINFER_DETAILED("{} has shape {}, the configuration needs {}",
                                   "{} has a shape the configuration does not give it"),
                   name, w.shape, MessageArg(e.dims, e.rank));
  if (uint8_t(w.dtype) > uint8_t(DType::I8)) return message("{} has an unknown dtype", name);
  if (!weight_may_be_quantized(name) && w.dtype != DType::F32)
    return message("{} must be f32 (only matrices may be f16 or int8)", name);
  if (w.dtype == DType::I8 && !w.scales) return message("{} is int8 but has no scales", name);
  // (Only the dense layers multiply their inputs by them; a bare-metal reader refuses them.)
  if (!LINFER_BARE_METAL && w.input_scales && (!is_dense_weight(name) || w.dtype != DType::I8))
    return message("{} carries input scales, which only int8 dense layer weights may", name);
  return "";
}
}  // namespace

std::string validate_description(const EncoderDescription& d) {
  const EncoderConfig& c = d.config;
  std::string err = validate_config(c);
  if (!err.empty()) return "invalid configuration: " + err;
  if (d.layers.size() != c.num_layers)
    return message(LINFER_DETAILED("the model has {} layers, the configuration says {}",
                                   "the model's layers are not as many as the configuration says"),
                   d.layers.size(), c.num_layers);
  if (c.attention_kind == AttentionKind::SlidingWindow)
    for (size_t i = 0; i < d.layers.size(); ++i) {
      const LayerWeights& l = d.layers[i];
      const int globals = l.q_global.weight.present() + l.k_global.weight.present() + l.v_global.weight.present();
      if (globals != 0 && globals != 3)
        return message("{}.attention has some of q_global, k_global and v_global: a model has all three or none",
                       layer_name(i));
    }

  for_each_slot(d, [&](Slot slot, uint32_t layer, const std::string& name, const WeightView& w) {
    if (err.empty()) err = check_slot(d, slot, layer, name, w);
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
        return message(LINFER_DETAILED("{}.attention.rotations holds a non-finite value at element {}",
                                       "{}.attention.rotations holds a non-finite value"),
                       layer_name(i), j);
    const WeightView& w = d.layers[i].random_blocks;
    if (!w.present()) continue;
    const float* v = static_cast<const float*>(w.data);
    const float blocks = float(block_sparse_blocks(c, c.max_seq_len));
    for (uint64_t j = 0; j < w.elements(); ++j)
      if (!(v[j] >= 0.0f && v[j] < blocks && v[j] == float(uint32_t(v[j]))))
        // (No floating point on bare metal: newlib-nano's printf has none.)
        return message(LINFER_DETAILED("{}.attention.random_blocks holds {} at element {}, not a block index in "
                                       "[0, {})",
                                       "{}.attention.random_blocks holds a value that is not a block index"),
                       layer_name(i), LINFER_DETAILED(std::to_string(v[j]), ""), j, uint32_t(blocks));
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
