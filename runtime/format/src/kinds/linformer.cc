// SPDX-License-Identifier: Apache-2.0
// Linformer's part of the format: the projection length k, the projections' placement and
// sharing, and the sequence projections E and F (per layer, or one shared by every layer).
#include "format_kind.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer {
namespace {

// (`own` false: a file of versions 1 to 3, whose Config held these fields whatever the kind; its
// placement and sharing have defaults every such file carries, so they are checked then too.)
Status check_config(const EncoderConfig& c, bool own) {
  const LinformerFields& f = linformer_fields(c);
  if (uint8_t(f.projection_placement) > uint8_t(ProjectionPlacement::Before))
    return invalid_model("unknown projection placement");
  if (uint8_t(f.projection_sharing) > uint8_t(ProjectionSharing::Layerwise))
    return invalid_model("unknown projection sharing mode");
  if (!own)
    return f.proj_len == 0
               ? Status()
               : invalid_model("proj_len applies to linformer attention only, not {}", to_string(c.attention_kind));
  if (f.proj_len == 0) return invalid_model("proj_len (k) must be at least 1");
  if (f.proj_len > c.max_seq_len)
    return invalid_model(LINFER_DETAILED("proj_len k = {} exceeds max_seq_len n = {} (Linformer needs k <= n)",
                                         "proj_len k exceeds max_seq_len n (Linformer needs k <= n)"),
                         f.proj_len, c.max_seq_len);
  return {};
}

constexpr LinformerFields kDefaults;

#if !LINFER_BARE_METAL
constexpr const char* kPlacements[] = {"after", "before", nullptr};
constexpr const char* kSharings[] = {"none", "headwise", "kv", "layerwise", nullptr};
#endif
const ConfigField kFields[] = {
    LINFER_KIND_FIELD(LinformerKind, LinformerFields, proj_len, VT_PROJ_LEN, nullptr),
    LINFER_KIND_FIELD(LinformerKind, LinformerFields, projection_placement, VT_PROJECTION_PLACEMENT, kPlacements),
    LINFER_KIND_FIELD(LinformerKind, LinformerFields, projection_sharing, VT_PROJECTION_SHARING, kSharings),
};

using T = LinformerTensors;
constexpr KindSlot kSlots[] = {
    LINFER_MODEL_SLOT("shared_proj", T::kSharedProj, LinformerKind, VT_SHARED_PROJ, kMatrix),
    LINFER_MODEL_SLOT("shared_proj_bias", T::kSharedProjBias, LinformerKind, VT_SHARED_PROJ_BIAS, kF32),
    LINFER_LAYER_SLOT("proj_k", T::kProjK, LinformerLayer, VT_PROJ_K, kTensor, kMatrix),
    LINFER_LAYER_SLOT("proj_v", T::kProjV, LinformerLayer, VT_PROJ_V, kTensor, kMatrix),
    LINFER_LAYER_SLOT("proj_k_bias", T::kProjKBias, LinformerLayer, VT_PROJ_K_BIAS, kTensor, kF32),
    LINFER_LAYER_SLOT("proj_v_bias", T::kProjVBias, LinformerLayer, VT_PROJ_V_BIAS, kTensor, kF32),
};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

// E and F: [k, n] shared by every layer (sharing layerwise), else per layer [k, n], or [heads, k,
// n] with per-head projections (sharing none); F only when it is not E (sharing kv); their
// optional biases without the last dimension.
Expect expected(const EncoderConfig& c, const LayerWeights*, const KindSlot& slot) {
  const LinformerFields& f = linformer_fields(c);
  const bool layerwise = f.projection_sharing == ProjectionSharing::Layerwise;
  const bool shared = !slot.in_layer;
  const bool bias =
      shared ? slot.index == T::kSharedProjBias : slot.index == T::kProjKBias || slot.index == T::kProjVBias;
  const bool is_v = !shared && (slot.index == T::kProjV || slot.index == T::kProjVBias);
  Expect e;
  if (shared != layerwise || (is_v && !linformer_has_separate_proj_v(c))) return e;
  if (!shared && f.projection_sharing == ProjectionSharing::None) e.dims[e.rank++] = c.num_heads;
  e.dims[e.rank++] = f.proj_len;
  if (!bias) e.dims[e.rank++] = c.max_seq_len;
  e.optional = bias;
  return e;
}

// Per-head projections (sharing none) with per-head keys and values: each head's K and V rows
// are read, so packed, as a group of their own.
uint32_t kv_panel_groups(const EncoderConfig& c) {
  return linformer_projection_groups(c) > 1 && c.kv_heads > 1 ? c.kv_heads : 1;
}

}  // namespace

extern const FormatKind kLinformerFormat = {
    AttentionKind::Linformer,
    /*causal=*/false,
    /*rotary=*/false,
    /*queries_are_keys=*/false,
    /*fields=*/kFields,
    /*field_count=*/sizeof kFields / sizeof kFields[0],
    /*defaults=*/&kDefaults,
    /*defaults_size=*/sizeof kDefaults,
    /*check_config=*/check_config,
    /*slots=*/kSlots,
    /*slot_count=*/sizeof kSlots / sizeof kSlots[0],
    /*expected=*/expected,
    /*check_slot=*/nullptr,
    /*check_layers=*/nullptr,
    /*check_values=*/nullptr,
    /*kv_panel_groups=*/kv_panel_groups LINFER_CONVERTER_DEFAULTS(nullptr),
    /*projected_keys=*/[](const EncoderConfig& c) { return linformer_fields(c).proj_len; },
};

}  // namespace linfer
