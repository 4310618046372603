// SPDX-License-Identifier: Apache-2.0
// Linformer's part of the format: the projection length k, the projections' placement and
// sharing, and the sequence projections E and F (per layer, or one shared by every layer).
#include "format_kind.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer {
namespace {

// (`own` false: a file of versions 1 to 3, whose Config held these fields whatever the kind; its
// placement and sharing have defaults every such file carries, so they are checked then too.)
std::string check_config(const EncoderConfig& c, bool own) {
  const LinformerFields& f = linformer_fields(c);
  if (uint8_t(f.projection_placement) > uint8_t(ProjectionPlacement::Before)) return "unknown projection placement";
  if (uint8_t(f.projection_sharing) > uint8_t(ProjectionSharing::Layerwise)) return "unknown projection sharing mode";
  if (!own)
    return f.proj_len == 0
               ? ""
               : message("proj_len applies to linformer attention only, not {}", to_string(c.attention_kind));
  if (f.proj_len == 0) return "proj_len (k) must be at least 1";
  if (f.proj_len > c.max_seq_len)
    return message(LINFER_DETAILED("proj_len k = {} exceeds max_seq_len n = {} (Linformer needs k <= n)",
                                   "proj_len k exceeds max_seq_len n (Linformer needs k <= n)"),
                   f.proj_len, c.max_seq_len);
  return "";
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
  const LinformerFields& f = linformer_fields(c);
  const bool layerwise = f.projection_sharing == ProjectionSharing::Layerwise;
  const bool shared = slot == Slot::SharedProj || slot == Slot::SharedProjBias;
  const bool bias = slot == Slot::SharedProjBias || slot == Slot::ProjKBias || slot == Slot::ProjVBias;
  const bool is_v = slot == Slot::ProjV || slot == Slot::ProjVBias;
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
};

}  // namespace linfer
