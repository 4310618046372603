// SPDX-License-Identifier: Apache-2.0
// Linformer's configuration fields (docs/format.md; where a file holds them and their checks:
// runtime/format/src/kinds/linformer.cc).
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

struct LinformerFields {
  static constexpr AttentionKind kKind = AttentionKind::Linformer;
  uint32_t proj_len = 0;  // k: the rows E and F compress the keys and values to
  ProjectionPlacement projection_placement = ProjectionPlacement::After;
  ProjectionSharing projection_sharing = ProjectionSharing::Headwise;
};
inline LinformerFields& linformer_fields(EncoderConfig& c) { return kind_fields<LinformerFields>(c); }
inline const LinformerFields& linformer_fields(const EncoderConfig& c) { return kind_fields<LinformerFields>(c); }

// Linformer's tensors, by their index in kind_tensors (kinds/linformer.cc lists them): a layer's E
// and F and their optional biases, and (sharing layerwise) the one E of every layer.
struct LinformerTensors {
  enum Layer : uint8_t { kProjK, kProjV, kProjKBias, kProjVBias };  // LayerWeights::kind_tensors
  enum Model : uint8_t { kSharedProj, kSharedProjBias };            // EncoderDescription::kind_tensors
};

// Number of distinct E (and F) matrices per layer of a Linformer model: heads for sharing none,
// else 1 (and 1 for a model of another kind).
inline uint32_t linformer_projection_groups(const EncoderConfig& c) {
  return c.attention_kind == AttentionKind::Linformer &&
                 linformer_fields(c).projection_sharing == ProjectionSharing::None
             ? c.num_heads
             : 1;
}
// F is not E: sharing none or headwise.
inline bool linformer_has_separate_proj_v(const EncoderConfig& c) {
  const ProjectionSharing s = linformer_fields(c).projection_sharing;
  return s == ProjectionSharing::None || s == ProjectionSharing::Headwise;
}

}  // namespace linfer
