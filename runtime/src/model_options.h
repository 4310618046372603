// SPDX-License-Identifier: Apache-2.0
// The model options a build may leave out (-DLINFER_MODEL_OPTIONS, CMakeLists.txt): code that only
// models with the option run. The Cortex-M build leaves out those its model does not use; a model
// that needs one left out is refused at load (model_options_built).
#pragma once

#include <cstdint>

#include "linfer/format/encoder.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/types/model_options.h"  // LINFER_OPTION_*
#include "status.h"

namespace linfer::rt {

// Whether each option is built: `if (kRotaryBuilt && ...)` leaves the code out where it is not.
constexpr bool kFloatProjectionsBuilt = LINFER_OPTION_FLOAT_PROJECTIONS;
constexpr bool kPerHeadProjectionsBuilt = LINFER_OPTION_PER_HEAD_PROJECTIONS;
constexpr bool kSinusoidalBuilt = LINFER_OPTION_SINUSOIDAL;
constexpr bool kRotaryBuilt = LINFER_OPTION_ROTARY;
constexpr bool kPostNormBuilt = LINFER_OPTION_POST_NORM;
constexpr bool kReversibleBuilt = LINFER_OPTION_REVERSIBLE;
constexpr bool kGeluTanhBuilt = LINFER_OPTION_GELU_TANH;
constexpr bool kTanhBuilt = LINFER_OPTION_TANH;

// Whether any Linformer projection E / F has this dtype.
bool projections_of(const EncoderDescription& d, DType dtype);

// A config's options as this build runs them: an option left out cannot occur (such a model is
// refused at load), so its code folds away.
inline bool sinusoidal_positions(const EncoderConfig& c) {
  return kSinusoidalBuilt && c.positions == PositionKind::Sinusoidal;
}
inline bool rotary_positions(const EncoderConfig& c) { return kRotaryBuilt && c.rotary != Rotary::None; }
inline NormPlacement norm_placement(const EncoderConfig& c) {
  if (kPostNormBuilt && c.norm_placement == NormPlacement::Post) return NormPlacement::Post;
  if (kReversibleBuilt && c.norm_placement == NormPlacement::Reversible) return NormPlacement::Reversible;
  return NormPlacement::Pre;
}
// The Linformer's distinct E (and F) per layer (linformer_projection_groups).
inline uint32_t projection_groups(const EncoderConfig& c) {
  return kPerHeadProjectionsBuilt ? linformer_projection_groups(c) : 1;
}

// Whether a Linformer's sequence compression runs on the int8 dense kernel for inputs of up to
// max_len rows: every projection E / F int8 (a file from the converter), at most 65,536 positions
// (the x86 kernels' int32 sums of (q + 128) * w stay below 2^31) and int8 kernels built. Else the
// projections are widened to f32 (float_projections).
bool int8_compression(const EncoderDescription& d, uint64_t max_len);

// LINFER_ERROR_UNSUPPORTED naming the first option the model needs that this build left out.
Status model_options_built(const EncoderDescription& d);

}  // namespace linfer::rt
