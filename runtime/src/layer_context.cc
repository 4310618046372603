// SPDX-License-Identifier: Apache-2.0
// The services of layer_context.h: dense layers, residual adds, rotary positions, the profile.
#include "layer_context.h"

#include "kernels.h"
#include "model_options.h"
#include "weight_rows.h"

namespace linfer::rt {

bool LayerContext::run_dense(const DenseLayer& op, size_t rows, const float* x, float* y, bool accumulate) {
  const auto t0 = now();
  const bool ok = op.run(workers_, sub_.quantized, rows, x, y, accumulate, sub_.sublayer_out);
  lap(LINFER_OP_DENSE, t0);
  return ok;
}

void LayerContext::add_rows(float* y, const float* x, size_t rows, size_t cols) {
  const auto t0 = now();
  workers_.light_ranges(rows, cols, [&](size_t b, size_t e, size_t) {
    kernels::add_f32_hwy(y + b * cols, x + b * cols, (e - b) * cols);
  });
  lap(LINFER_OP_ELEMENTWISE, t0);
}

// Rows [0, T) are positions [first, first + T) of the sequence (first > 0 when stepping).
void LayerContext::rotate(float* x, size_t T, size_t heads) {
  if (!rotary_positions(cfg_)) return;
  const auto t = now();
  workers_.ranges(T, 16,
                  [&](size_t b, size_t e, size_t) { rotate_rows(x + b * heads * cfg_.head_dim, b, e - b, heads); });
  lap(LINFER_OP_ELEMENTWISE, t);
}

// `rows` rows at x (`heads` heads each) that are rows [row, row + rows) of the run.
void LayerContext::rotate_rows(float* x, size_t row, size_t rows, size_t heads) const {
  if (!rotary_positions(cfg_)) return;
  const size_t dh = cfg_.head_dim, first = first_position() + row;
  kernels::rotate_pairs_f32(x, heads * dh, rows, heads, dh, f32_data(model_->desc.rotary_table) + first * dh, dh);
}

std::chrono::steady_clock::time_point LayerContext::lap(linfer_op_kind kind,
                                                        std::chrono::steady_clock::time_point start) {
  if (!plan_.profiling) return start;
  const auto t = std::chrono::steady_clock::now();
  profile_time_[kind] += t - start;
  return t;
}

}  // namespace linfer::rt
