// SPDX-License-Identifier: Apache-2.0
// Performer's (FAVOR+) part of the format: the features' count, map and epsilon, the causal key
// stabiliser, and each layer's random features.
#include <cmath>

#include "format_kind.h"

namespace linfer {
namespace {

std::string check_config(const EncoderConfig& c, bool own) {
  if (!own)
    return c.num_features == 0 && c.key_stabiliser == KeyStabiliser::Prefix
               ? ""
               : "num_features and key_stabiliser apply to performer attention only";
  std::string e;
  if (out_of_range(&e, "num_features", c.num_features, 1, Limits::kMaxFeatures)) return e;
  if (uint8_t(c.feature_map) > uint8_t(FeatureMap::Relu)) return "unknown feature map";
  if (!std::isfinite(c.feature_eps) || c.feature_eps <= 0.0f || c.feature_eps > 1.0f)
    return "feature_eps must be in (0, 1]";
  if (uint8_t(c.key_stabiliser) > uint8_t(KeyStabiliser::Sequence)) return "unknown key stabiliser";
  if (c.key_stabiliser == KeyStabiliser::Sequence &&
      (c.causal != CausalMode::Causal || c.feature_map != FeatureMap::Softmax))
    return "key_stabiliser 'sequence' applies to causal performer attention with softmax features only";
  return "";
}

const ConfigField kFields[] = {
    LINFER_CONFIG_FIELD_OF(PerformerKind, num_features, VT_NUM_FEATURES),
    LINFER_CONFIG_FIELD_OF(PerformerKind, feature_map, VT_FEATURE_MAP),
    LINFER_CONFIG_FIELD_OF(PerformerKind, feature_eps, VT_FEATURE_EPS),
    LINFER_CONFIG_FIELD_OF(PerformerKind, key_stabiliser, VT_KEY_STABILISER),
};

const KindSlot kSlots[] = {LINFER_LAYER_SLOT(Slot::Features, PerformerLayer, VT_FEATURES, kTensor)};

Expect expected(const EncoderConfig& c, const LayerWeights*, Slot) {
  Expect e;
  e.dims[0] = c.head_dim;
  e.dims[1] = c.num_features;
  e.rank = 2;
  return e;
}

}  // namespace

extern const FormatKind kPerformerFormat = {
    AttentionKind::Performer,
    /*causal=*/true,
    /*rotary=*/true,
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
