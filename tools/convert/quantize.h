// SPDX-License-Identifier: Apache-2.0
// Storing a description's matrices as f16 or int8 (docs/quantization.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "linfer/format/encoder.h"

namespace linfer::convert {

struct QuantizedStore {
  std::vector<std::unique_ptr<std::vector<uint8_t>>> data;
  std::vector<std::unique_ptr<std::vector<float>>> scales;
};

// Converts every slot that weight_may_be_quantized() in place to `dtype` (F16 or I8), keeping
// tensors that shared memory shared. int8: linfer/types/int8.h, one scale per row.
// Returns "" or a message (an f32 value too large for f16 is refused, naming the tensor).
std::string quantize_description(EncoderDescription* desc, DType dtype, QuantizedStore* store);

}  // namespace linfer::convert
