// SPDX-License-Identifier: Apache-2.0
// Storing a description's matrices as f16 or int8 (docs/quantization.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "linfer/format/encoder.h"
#include "linfer/types/status.h"

namespace linfer::convert {

struct QuantizedStore {
  std::vector<std::unique_ptr<std::vector<uint8_t>>> data;
  std::vector<std::unique_ptr<std::vector<float>>> scales;
  std::vector<std::unique_ptr<std::vector<uint32_t>>> indices;
};

// Converts every slot that weight_may_be_quantized() in place to `dtype` (F16 or I8), keeping
// tensors that shared memory shared. int8: linfer/types/int8.h, one scale per row.
// An f32 value too large for f16 is refused, naming the tensor (LINFER_ERROR_INVALID_ARGUMENT: the
// dtype asked for cannot hold the model).
err::Status quantize_description(EncoderDescription* desc, DType dtype, QuantizedStore* store);

// Whether the dense weight `name` reads the layer-normed residual stream (Q, K, V, the global
// rows' projections, the first feed-forward layer), whose few outlier channels are what costs the
// int8 inputs their precision; the attention output and the second feed-forward layer read other
// activations, and smoothing them lost more in their weights than it won (docs/accuracy.md).
bool reads_normalized_stream(const std::string& name);

// Rewrites each f32 dense weight that reads_normalized_stream, has statistics and no other slot
// shares: with
// s_j = max|x_j|^alpha / max_n |w_nj|^(1 - alpha) (clamped to [1e-5, 1e5]), column j of the
// weight times s_j, and its input_scales 1 / s_j, which the runtime multiplies into the input
// before quantizing it. The product is the same in exact arithmetic. Returns how many weights.
size_t smooth_dense_weights(EncoderDescription* desc, const std::map<std::string, std::vector<float>>& max_abs,
                            float alpha, QuantizedStore* store);

// Whether the dense weight `name` is a second feed-forward layer (fc2), whose input (the first
// one's activation) has one or two channels far above the rest in BERT-like models.
bool is_feed_forward_output(const std::string& name);

// Keeps, in each f32 dense weight that is_feed_forward_output, has statistics and no other slot
// shares, the `count` input channels (at most Limits::kMaxF32Inputs, fewer than its columns) of
// largest calibrated |x| (times the input scales, if any) in f32: their columns copied out as its
// f32_input_weights and zeroed in the weight, which is then quantized without them, as the runtime
// quantizes the input rows without them (format version 5). Returns how many weights.
size_t keep_f32_inputs(EncoderDescription* desc, const std::map<std::string, std::vector<float>>& max_abs,
                       uint32_t count, QuantizedStore* store);

}  // namespace linfer::convert
