// SPDX-License-Identifier: Apache-2.0
// Linformer's part of the format: the projection length k, the projections' placement and
// sharing, and the sequence projections E and F (per layer, or one shared by every layer).
#include "format_kind.h"

namespace linfer {
namespace {

std::string check_config(const EncoderConfig& c, bool own) {
  // (Placement and sharing have defaults every model carries: checked whatever the kind.)
  if (uint8_t(c.projection_placement) > uint8_t(ProjectionPlacement::Before)) return "unknown projection placement";
  if (uint8_t(c.projection_sharing) > uint8_t(ProjectionSharing::Layerwise)) return "unknown projection sharing mode";
  if (!own)
    return c.proj_len == 0
               ? ""
               : message("proj_len applies to linformer attention only, not {}", to_string(c.attention_kind));
  if (c.proj_len == 0) return "proj_len (k) must be at least 1";
  if (c.proj_len > c.max_seq_len)
    return message(LINFER_DETAILED("proj_len k = {} exceeds max_seq_len n = {} (Linformer needs k <= n)",
                                   "proj_len k exceeds max_seq_len n (Linformer needs k <= n)"),
                   c.proj_len, c.max_seq_len);
  return "";
}

const ConfigField kFields[] = {
    LINFER_CONFIG_FIELD_OF(LinformerKind, proj_len, VT_PROJ_LEN),
    LINFER_CONFIG_FIELD_OF(LinformerKind, projection_placement, VT_PROJECTION_PLACEMENT),
    LINFER_CONFIG_FIELD_OF(LinformerKind, projection_sharing, VT_PROJECTION_SHARING),
};

const KindSlot kSlots[] = {
    LINFER_MODEL_SLOT(Slot::SharedProj, LinformerKind, VT_SHARED_PROJ),
    LINFER_MODEL_SLOT(Slot::SharedProjBias, LinformerKind, VT_SHARED_PROJ_BIAS),
    LINFER_LAYER_SLOT(Slot::ProjK, LinformerLayer, VT_PROJ_K, kTensor),
    LINFER_LAYER_SLOT(Slot::ProjV, LinformerLayer, VT_PROJ_V, kTensor),
    LINFER_LAYER_SLOT(Slot::ProjKBias, LinformerLayer, VT_PROJ_K_BIAS, kTensor),
    LINFER_LAYER_SLOT(Slot::ProjVBias, LinformerLayer, VT_PROJ_V_BIAS, kTensor),
};

// E and F: [k, n] shared by every layer (sharing layerwise), else per layer [k, n], or [heads, k,
// n] with per-head projections (sharing none); F only when it is not E (sharing kv); their
// optional biases without the last dimension.
Expect expected(const EncoderConfig& c, const LayerWeights*, Slot slot) {
  const bool layerwise = c.projection_sharing == ProjectionSharing::Layerwise;
  const bool shared = slot == Slot::SharedProj || slot == Slot::SharedProjBias;
  const bool bias = slot == Slot::SharedProjBias || slot == Slot::ProjKBias || slot == Slot::ProjVBias;
  const bool is_v = slot == Slot::ProjV || slot == Slot::ProjVBias;
  Expect e;
  if (shared != layerwise || (is_v && !c.has_separate_proj_v())) return e;
  if (!shared && c.projection_sharing == ProjectionSharing::None) e.dims[e.rank++] = c.num_heads;
  e.dims[e.rank++] = c.proj_len;
  if (!bias) e.dims[e.rank++] = c.max_seq_len;
  e.optional = bias;
  return e;
}

}  // namespace

extern const FormatKind kLinformerFormat = {
    AttentionKind::Linformer,
    /*causal=*/false,
    /*rotary=*/false,
    /*queries_are_keys=*/false,
    /*fields=*/kFields,
    /*field_count=*/sizeof kFields / sizeof kFields[0],
    /*check_config=*/check_config,
    /*slots=*/kSlots,
    /*slot_count=*/sizeof kSlots / sizeof kSlots[0],
    /*expected=*/expected,
    /*check_slot=*/nullptr,
    /*check_layers=*/nullptr,
    /*check_values=*/nullptr,
};

}  // namespace linfer
