// SPDX-License-Identifier: Apache-2.0
// Performer's (FAVOR+) configuration fields (docs/format.md; where a file holds them and their
// checks: runtime/format/src/kinds/performer.cc).
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

// Causal Performer, softmax features: keys 0..i stabilise row i, or all keys of the input (format.md).
enum class KeyStabiliser : uint8_t { Prefix = 0, Sequence = 1 };

struct PerformerFields {
  static constexpr AttentionKind kKind = AttentionKind::Performer;
  uint32_t num_features = 0;  // m
  float feature_eps = 1e-4f;
  FeatureMap feature_map = FeatureMap::Softmax;
  KeyStabiliser key_stabiliser = KeyStabiliser::Prefix;
};
inline PerformerFields& performer_fields(EncoderConfig& c) { return kind_fields<PerformerFields>(c); }
inline const PerformerFields& performer_fields(const EncoderConfig& c) { return kind_fields<PerformerFields>(c); }
// Performer's tensor of a layer, its index in LayerWeights::kind_tensors: the random features
// [head_dim, num_features] (kinds/performer.cc).
struct PerformerTensors {
  enum Layer : uint8_t { kFeatures };
};

}  // namespace linfer
