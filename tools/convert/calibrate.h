// SPDX-License-Identifier: Apache-2.0
// Activation smoothing for int8 models (linfer-convert --calibrate FILE; docs/quantization.md):
// linfer's own f32 inference on calibration text measures each dense layer's inputs, and
// SmoothQuant's per-input-channel factors move the outlier channels' range into the weights.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "linfer/format/encoder.h"
#include "linfer/types/status.h"
#include "quantize.h"

namespace linfer::convert {

// Per dense weight (slot name), the largest |x| of each input channel over the lines of text,
// each tokenized by the description's tokenizer (cut to max_seq_len as linfer-embed cuts it) and
// run through the f32 model by the runtime (a one-thread session per core, each on its share of
// the lines: the maxima do not depend on how they are shared). desc: f32 weights and a tokenizer.
// A failure's message starts "--calibrate: " (but for a missing tokenizer).
using InputMaxima = std::map<std::string, std::vector<float>>;
err::Result<InputMaxima> calibrate_dense_inputs(const EncoderDescription& desc, const std::vector<std::string>& lines);

}  // namespace linfer::convert
