// SPDX-License-Identifier: Apache-2.0
// Rows of weights that stay f16 or int8 in memory (embeddings, positions, a kind's matrices),
// widened to f32 where a run uses them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels.h"
#include "linfer/format/panel.h"

namespace linfer::rt {

// An f32 weight's values.
inline const float* f32_data(const WeightView& w) { return static_cast<const float*>(w.data); }

// dst[i] = scale * w[row][i] for i < cols (cols <= the row's length), any dtype; panel layout (a
// token embedding tied to the LM head in a version 2 file) read element by element.
inline void widen_weight_row(const WeightView& w, uint32_t row, size_t cols, float scale, float* dst) {
  if (w.layout == Layout::Panel16) {
    read_row_f32(w, row, dst);
    if (scale != 1.0f) kernels::scale_f32_hwy(dst, cols, scale, dst);
    return;
  }
  const size_t offset = size_t(row) * w.shape.back();
  switch (w.dtype) {
    case DType::F32:
      kernels::scale_f32_hwy(f32_data(w) + offset, cols, scale, dst);
      break;
    case DType::F16:
      kernels::convert_f16_to_f32_hwy(static_cast<const uint16_t*>(w.data) + offset, cols, scale, dst);
      break;
    case DType::I8:
      kernels::convert_int8_to_f32_hwy(static_cast<const int8_t*>(w.data) + offset, cols, scale * w.scales[row], dst);
      break;
  }
}

}  // namespace linfer::rt
