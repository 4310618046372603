// SPDX-License-Identifier: Apache-2.0
// The sliding window's (Longformer's) configuration fields (docs/format.md; where a file holds
// them and their checks: runtime/format/src/kinds/sliding_window.cc).
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

struct SlidingWindowFields {
  static constexpr AttentionKind kKind = AttentionKind::SlidingWindow;
  uint32_t window_radius = 0;     // row i sees keys |i - j| <= window_radius
  uint32_t global_positions = 0;  // rows [0, global_positions) are global
};
inline SlidingWindowFields& sliding_window_fields(EncoderConfig& c) { return kind_fields<SlidingWindowFields>(c); }
inline const SlidingWindowFields& sliding_window_fields(const EncoderConfig& c) {
  return kind_fields<SlidingWindowFields>(c);
}

// The sliding window's tensors of a layer, by their index in LayerWeights::kind_tensors
// (kinds/sliding_window.cc): the global rows' own projections, optional (all three or none).
struct SlidingWindowTensors {
  enum Layer : uint8_t { kQGlobalWeight, kQGlobalBias, kKGlobalWeight, kKGlobalBias, kVGlobalWeight, kVGlobalBias };
};

}  // namespace linfer
