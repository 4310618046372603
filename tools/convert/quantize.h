// Storing a description's matrices as f16 or int8 (docs/quantization.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encoder.h"

namespace linfer::convert {

struct QuantizedStore {
  std::vector<std::unique_ptr<std::vector<uint8_t>>> data;
  std::vector<std::unique_ptr<std::vector<float>>> scales;
};

// Converts every slot that weight_may_be_quantized() in place to `dtype` (F16 or I8), keeping
// tensors that shared memory shared. int8 is symmetric, one scale per row (max |w| / 127).
// Returns "" or a message (an f32 value too large for f16 is refused, naming the tensor).
std::string quantize_description(EncoderDescription* desc, DType dtype, QuantizedStore* store);

// One row of int8 quantization, exposed for tests: returns the scale.
float quantize_row_int8(const float* w, size_t n, int8_t* q);

}  // namespace linfer::convert
