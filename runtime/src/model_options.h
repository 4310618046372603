// SPDX-License-Identifier: Apache-2.0
// The model options a build may leave out (-DLINFER_MODEL_OPTIONS, CMakeLists.txt): code that only
// models with the option run. The Cortex-M build leaves out those its model does not use; a model
// that needs one left out is refused at load (model_options_built).
#pragma once

#include <cstdint>

#include "linfer/format/encoder.h"
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

// LINFER_ERROR_UNSUPPORTED naming the first option the model needs that this build left out (its
// attention kind's own first: the kind's options_built, attention_kind.h).
Status model_options_built(const EncoderDescription& d);
// The error for one option left out ("float_projections (why the model needs it)").
Status option_not_built(const char* option);

}  // namespace linfer::rt
