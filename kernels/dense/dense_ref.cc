// SPDX-License-Identifier: Apache-2.0
// Scalar references of the dense kernels, the oracles of the tests: element by element from the
// panel layout, f32/f16 accumulated in double, int8 as exact integer sums dequantized the way
// every int8 kernel does.
#include <cmath>
#include <cstring>

#include "dense/dense_internal.h"
#include "linfer/types/half.h"
#include "linfer/types/int8.h"

namespace linfer::kernels::dense {
namespace {

// Weight (n, k) of one group in panel layout (linfer/types/panel_layout.h), widened.
float weight_at(const DenseWeights& w, size_t n, size_t k) {
  const size_t panel = n / kPanelRows, lane = n % kPanelRows;
  const uint8_t* base = static_cast<const uint8_t*>(w.panels) + panel * panel_bytes(w.dtype, uint32_t(w.in));
  switch (w.dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, base + (k * kPanelRows + lane) * 4, 4);
      return v;
    }
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, base + (k * kPanelRows + lane) * 2, 2);
      return half_to_float(h);
    }
    case DType::I8:
      return float(int8_t(base[(k / kInt8GroupInputs) * kPanelRows * kInt8GroupInputs + lane * kInt8GroupInputs +
                               k % kInt8GroupInputs]));
  }
  return 0.0f;
}

void store(float v, DenseEpilogue e, float* dst) {
  activation_f32_ref(&v, 1, e.activation);
  *dst = e.accumulate ? *dst + v : v;
}

void run_float(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
               size_t n_end, DenseEpilogue e) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t n = n_begin; n < n_end; ++n) {
      double acc = w.bias ? w.bias[n] : 0.0;
      for (size_t k = 0; k < w.in; ++k) acc += double(in.x[r * in.x_stride + k]) * weight_at(w, n, k);
      store(float(acc), e, y + r * y_stride + n);
    }
}

}  // namespace

LINFER_DENSE_RUN(run_f32_ref) { run_float(w, in, rows, y, y_stride, n_begin, n_end, e); }
LINFER_DENSE_RUN(run_f16_ref) { run_float(w, in, rows, y, y_stride, n_begin, n_end, e); }

LINFER_DENSE_RUN(run_int8_ref) {
  for (size_t r = 0; r < rows; ++r) {
    const int8_t* q = in.q + r * in.q_stride;
    for (size_t n = n_begin; n < n_end; ++n) {
      int32_t acc = 0;
      for (size_t k = 0; k < w.in; ++k) acc += int32_t(q[k]) * int32_t(weight_at(w, n, k));
      const float v = std::fma(float(acc), in.q_scales[r] * w.scales[n], w.bias ? w.bias[n] : 0.0f);
      store(v, e, y + r * y_stride + n);
    }
  }
}

LINFER_DENSE_QUANTIZE(quantize_s8_ref) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  for (size_t r = 0; r < rows; ++r) {
    int8_t* qr = q + r * q_stride;
    scales[r] = quantize_row_int8(x + r * x_stride, k, qr);
    std::memset(qr + k, 0, padded - k);
  }
}

}  // namespace linfer::kernels::dense
