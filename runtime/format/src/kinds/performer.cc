// SPDX-License-Identifier: Apache-2.0
// Performer's (FAVOR+) part of the format: the features' count, map and epsilon, the causal key
// stabiliser, and each layer's random features.
#include <cmath>

#include "format_kind.h"
#include "linfer/format/kinds/performer.h"

namespace linfer {
namespace {

Status check_config(const EncoderConfig& c, bool own) {
  const PerformerFields& f = performer_fields(c);
  if (!own)
    return f.num_features == 0 && f.key_stabiliser == KeyStabiliser::Prefix
               ? Status()
               : invalid_model("num_features and key_stabiliser apply to performer attention only");
  Status e;
  if (out_of_range(&e, "num_features", f.num_features, 1, Limits::kMaxFeatures)) return e;
  if (uint8_t(f.feature_map) > uint8_t(FeatureMap::Relu)) return invalid_model("unknown feature map");
  if (!std::isfinite(f.feature_eps) || f.feature_eps <= 0.0f || f.feature_eps > 1.0f)
    return invalid_model("feature_eps must be in (0, 1]");
  if (uint8_t(f.key_stabiliser) > uint8_t(KeyStabiliser::Sequence)) return invalid_model("unknown key stabiliser");
  if (f.key_stabiliser == KeyStabiliser::Sequence &&
      (c.causal != CausalMode::Causal || f.feature_map != FeatureMap::Softmax))
    return invalid_model("key_stabiliser 'sequence' applies to causal performer attention with softmax features only");
  return {};
}

constexpr PerformerFields kDefaults;
#if !LINFER_BARE_METAL
constexpr const char* kFeatureMaps[] = {"softmax", "relu", nullptr};
constexpr const char* kKeyStabilisers[] = {"prefix", "sequence", nullptr};
#endif
const ConfigField kFields[] = {
    LINFER_KIND_FIELD(PerformerKind, PerformerFields, num_features, VT_NUM_FEATURES, nullptr),
    LINFER_KIND_FIELD(PerformerKind, PerformerFields, feature_map, VT_FEATURE_MAP, kFeatureMaps),
    LINFER_KIND_FIELD(PerformerKind, PerformerFields, feature_eps, VT_FEATURE_EPS, nullptr),
    LINFER_KIND_FIELD(PerformerKind, PerformerFields, key_stabiliser, VT_KEY_STABILISER, kKeyStabilisers),
};

constexpr KindSlot kSlots[] = {
    LINFER_LAYER_SLOT("features", PerformerTensors::kFeatures, PerformerLayer, VT_FEATURES, kTensor, kF32)};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

Expect expected(const EncoderConfig& c, const LayerWeights*, const KindSlot&) {
  Expect e;
  e.dims[0] = c.head_dim;
  e.dims[1] = performer_fields(c).num_features;
  e.rank = 2;
  return e;
}

#if !LINFER_BARE_METAL
// lucidrains' constants: 1e-4 for the softmax features, 1e-3 (kernel_epsilon) for relu (bit 2:
// feature_eps).
void converter_defaults(EncoderConfig& c, uint32_t given) {
  PerformerFields& f = performer_fields(c);
  if (!(given & 4)) f.feature_eps = f.feature_map == FeatureMap::Relu ? 1e-3f : 1e-4f;
}
#endif

}  // namespace

extern const FormatKind kPerformerFormat = {
    AttentionKind::Performer,
    /*causal=*/true,
    /*rotary=*/true,
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
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(converter_defaults),
};

}  // namespace linfer
