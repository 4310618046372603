// SPDX-License-Identifier: Apache-2.0
// GiveTake's tensors (docs/format.md; where a file holds them and their checks:
// runtime/format/src/kinds/give_take.cc). Its one field, num_global_tokens, is EncoderConfig's:
// the session plans the rows it adds.
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

// By their index in kind_tensors: a layer's optional depthwise convolution ([dim, odd kernel] and
// [dim], f32), and the model's global tokens [num_global_tokens, dim].
struct GiveTakeTensors {
  enum Layer : uint8_t { kConvWeight, kConvBias };  // LayerWeights::kind_tensors
  enum Model : uint8_t { kGlobalTokens };           // EncoderDescription::kind_tensors
};

}  // namespace linfer
