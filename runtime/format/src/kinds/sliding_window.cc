// SPDX-License-Identifier: Apache-2.0
// The sliding window's (Longformer's) part of the format: the window's radius, the global
// positions, and each layer's optional projections of the global rows.
#include "format_kind.h"
#include "linfer/format/kinds/sliding_window.h"

namespace linfer {
namespace {

Status check_config(const EncoderConfig& c, bool own) {
  const SlidingWindowFields& f = sliding_window_fields(c);
  if (!own)
    return f.window_radius == 0 && f.global_positions == 0
               ? Status()
               : invalid_model("window_radius and global_positions apply to sliding window attention only");
  Status e;
  if (out_of_range(&e, "window_radius", f.window_radius, 1, c.max_seq_len)) return e;
  out_of_range(&e, "global_positions", f.global_positions, 0, c.max_seq_len);
  return e;
}

constexpr SlidingWindowFields kDefaults;
const ConfigField kFields[] = {
    LINFER_KIND_FIELD(SlidingWindowKind, SlidingWindowFields, window_radius, VT_WINDOW_RADIUS, nullptr),
    LINFER_KIND_FIELD(SlidingWindowKind, SlidingWindowFields, global_positions, VT_GLOBAL_POSITIONS, nullptr),
};

using T = SlidingWindowTensors;
constexpr KindSlot kSlots[] = {
    LINFER_LAYER_SLOT("q_global.weight", T::kQGlobalWeight, SlidingWindowLayer, VT_Q_GLOBAL, kWeight, kDense),
    LINFER_LAYER_SLOT("q_global.bias", T::kQGlobalBias, SlidingWindowLayer, VT_Q_GLOBAL, kBias, kF32),
    LINFER_LAYER_SLOT("k_global.weight", T::kKGlobalWeight, SlidingWindowLayer, VT_K_GLOBAL, kWeight, kDense),
    LINFER_LAYER_SLOT("k_global.bias", T::kKGlobalBias, SlidingWindowLayer, VT_K_GLOBAL, kBias, kF32),
    LINFER_LAYER_SLOT("v_global.weight", T::kVGlobalWeight, SlidingWindowLayer, VT_V_GLOBAL, kWeight, kDense),
    LINFER_LAYER_SLOT("v_global.bias", T::kVGlobalBias, SlidingWindowLayer, VT_V_GLOBAL, kBias, kF32),
};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

// Q, K and V of the global rows, like the layer's own; all three or none (check_layers), and
// without them a lone global bias is a tensor the configuration does not use.
Expect expected(const EncoderConfig& c, const LayerWeights* l, const KindSlot& slot) {
  Expect e;
  if (!l || !l->kind_tensors[T::kQGlobalWeight].present()) return e;
  const bool query = slot.index == T::kQGlobalWeight || slot.index == T::kQGlobalBias;
  const bool bias = slot.part == KindSlot::kBias;
  e.dims[e.rank++] = (query ? c.num_heads : c.kv_heads) * c.head_dim;
  if (!bias) e.dims[e.rank++] = c.dim;
  e.optional = bias;
  return e;
}

Status check_layers(const EncoderDescription& d) {
  for (size_t i = 0; i < d.layers.size(); ++i) {
    const LayerWeights& l = d.layers[i];
    const int globals = l.kind_tensors[T::kQGlobalWeight].present() + l.kind_tensors[T::kKGlobalWeight].present() +
                        l.kind_tensors[T::kVGlobalWeight].present();
    if (globals != 0 && globals != 3)
      return invalid_model("{}.attention has some of q_global, k_global and v_global: a model has all three or none",
                           layer_name(i));
  }
  return {};
}

}  // namespace

extern const FormatKind kSlidingWindowFormat = {
    AttentionKind::SlidingWindow,
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
    /*check_layers=*/check_layers,
    /*check_values=*/nullptr,
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(nullptr),
};

}  // namespace linfer
