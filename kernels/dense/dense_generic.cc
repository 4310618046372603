// SPDX-License-Identifier: Apache-2.0
// Portable dense kernels, for CPUs below the instruction sets that have their own kernels (x86
// without AVX2, such as Atom and Celeron edge boxes): register tiles of 4 rows x one panel of 16
// channels in plain C++, which the compiler vectorises for the build's baseline (SSE2 on x86-64,
// NEON on arm64). Same panels, same epilogue, same int8 arithmetic as the fast kernels.
#include <cmath>
#include <cstring>

#include "dense/dense_internal.h"
#include "linfer/types/half.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 4;

// f32 and f16 weights: Widen(panel, k, out) writes the panel's 16 weights of input k as floats.
template <class Widen>
LINFER_PORTABLE_SIZE void run_float(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride,
                                    size_t n_begin, size_t n_end, DenseEpilogue e, Widen widen) {
  const uint8_t* panels = static_cast<const uint8_t*>(w.panels);
  const size_t panel_size = panel_bytes(w.dtype, uint32_t(w.in));
  for (size_t n = n_begin; n < n_end; n += kPanelRows) {
    const uint8_t* panel = panels + (n / kPanelRows) * panel_size;
    float bias_tail[kPanelRows];
    const float* bias = channel_block(w.bias, n, w.out, bias_tail);
    const size_t n_stop = std::min<size_t>(n_end, n + kPanelRows);
    for (size_t r0 = 0; r0 < rows; r0 += kRows) {
      const size_t R = std::min(kRows, rows - r0);
      float acc[kRows][kPanelRows] = {};
      for (size_t k = 0; k < w.in; ++k) {
        float wk[kPanelRows];
        widen(panel, k, wk);
        for (size_t r = 0; r < R; ++r) {
          const float a = in.x[(r0 + r) * in.x_stride + k];
          for (size_t j = 0; j < kPanelRows; ++j) acc[r][j] += a * wk[j];
        }
      }
      store_tile(acc, R, n, n_stop, bias, y + r0 * y_stride, y_stride, e);
    }
  }
  gelu_rows(rows, y, y_stride, n_begin, n_end, e);
}

}  // namespace

LINFER_PORTABLE_SIZE LINFER_DENSE_RUN(run_f32_generic) {
  run_float(w, in, rows, y, y_stride, n_begin, n_end, e, [](const uint8_t* panel, size_t k, float* out) {
    std::memcpy(out, panel + k * kPanelRows * 4, kPanelRows * 4);
  });
}

// IEEE half to float without branches, so that the compiler vectorises 16 at a time: the half's
// exponent and mantissa shifted into a float's place are the value times 2^-112 (subnormal
// halves too, exactly), then infinities and NaNs get the float's all-ones exponent.
inline float widen_half(uint16_t h) {
  const uint32_t magnitude = uint32_t(h & 0x7fff) << 13, sign = uint32_t(h & 0x8000) << 16;
  float scaled;
  std::memcpy(&scaled, &magnitude, 4);
  scaled *= 5.192296858534828e+33f;  // 2^112
  uint32_t bits;
  std::memcpy(&bits, &scaled, 4);
  bits = (h & 0x7c00) == 0x7c00 ? magnitude | 0x7f800000u : bits;
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

LINFER_PORTABLE_SIZE LINFER_DENSE_RUN(run_f16_generic) {
  run_float(w, in, rows, y, y_stride, n_begin, n_end, e, [](const uint8_t* panel, size_t k, float* out) {
    uint16_t h[kPanelRows];
    std::memcpy(h, panel + k * kPanelRows * 2, kPanelRows * 2);
    for (size_t j = 0; j < kPanelRows; ++j) out[j] = widen_half(h[j]);
  });
}

LINFER_PORTABLE_SIZE LINFER_DENSE_RUN(run_int8_generic) {
  const int8_t* panels = static_cast<const int8_t*>(w.panels);
  const size_t groups = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const size_t panel_size = panel_bytes(DType::I8, uint32_t(w.in));
  for (size_t n = n_begin; n < n_end; n += kPanelRows) {
    const int8_t* panel = panels + (n / kPanelRows) * panel_size;
    float bias_tail[kPanelRows], scale_tail[kPanelRows];
    const float* bias = channel_block(w.bias, n, w.out, bias_tail);
    const float* scale = channel_block(w.scales, n, w.out, scale_tail);
    const size_t n_stop = std::min<size_t>(n_end, n + kPanelRows);
    for (size_t r0 = 0; r0 < rows; r0 += kRows) {
      const size_t R = std::min(kRows, rows - r0);
      int32_t acc[kRows][kPanelRows] = {};
      for (size_t g = 0; g < groups; ++g) {
        const int8_t* wg = panel + g * kPanelRows * kInt8GroupInputs;
        for (size_t r = 0; r < R; ++r) {
          const int8_t* a = in.q + (r0 + r) * in.q_stride + g * kInt8GroupInputs;
          for (size_t j = 0; j < kPanelRows; ++j)
            for (size_t t = 0; t < kInt8GroupInputs; ++t)
              acc[r][j] += int32_t(a[t]) * int32_t(wg[j * kInt8GroupInputs + t]);
        }
      }
      float out[kRows][kPanelRows];
      for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < kPanelRows; ++j)
          out[r][j] = std::fma(float(acc[r][j]), in.q_scales[r0 + r] * scale[j], bias[j]);
      store_tile(out, R, n, n_stop, nullptr, y + r0 * y_stride, y_stride, e);
    }
  }
  gelu_rows(rows, y, y_stride, n_begin, n_end, e);
}

}  // namespace linfer::kernels::dense
