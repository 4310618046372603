// Dense layers with int8 weights and dynamically quantized int8 activations:
//   y[r] = s_x[r] * s_w[n] * sum_k qx[r][k] * qw[n][k] + b[n]
// Weights: symmetric int8, one fp32 scale per output channel (from the .lfm file). Activations:
// quantized per row at run time (symmetric, scale = max|x| / 127), so no calibration data is
// needed. The fast kernel uses AVX-512 VNNI (vpdpbusd: u8 x s8, so activations are stored as
// q + 128 and 128 * sum(w) is subtracted); a portable scalar reference computes the same integers.
#pragma once

#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels.h"

namespace linfer::kernels {

// True when this CPU runs the int8 fast path (AVX-512 VNNI). Elsewhere the runtime widens int8
// weights to f32 and uses the f32 path: same results within int8 rounding, no speed-up.
bool int8_fast_path_available();

// Quantizes `rows` rows of `k` floats to u8 (q + 128), rows padded with 128 (zero) to k_padded.
void quantize_rows_u8_ref(const float* x, size_t x_stride, size_t rows, size_t k, size_t k_padded,
                          uint8_t* q, float* scales);

#if defined(__x86_64__)
void quantize_rows_u8_avx512(const float* x, size_t x_stride, size_t rows, size_t k, size_t k_padded,
                             uint8_t* q, float* scales);
#endif

struct Int8Weights {
  size_t in = 0, out = 0;          // K, N
  size_t in_padded = 0;            // K rounded up to 4
  size_t out_padded = 0;           // N rounded up to 16
  std::unique_ptr<int8_t, void (*)(void*)> packed{nullptr, free};  // [Np/16][Kp/4][16][4]
  std::unique_ptr<int32_t[]> sum128;   // 128 * sum_k w[n][k], per n (Np)
  std::unique_ptr<float[]> scale;      // per n (Np), zero for padding
  std::unique_ptr<float[]> bias;       // per n (Np), zero if none
  size_t bytes() const { return out_padded * in_padded + out_padded * 12; }
};

// Packs row-major int8 weights [out x in]. Returns "" or a message.
std::string pack_int8_weights(const int8_t* w, const float* scales, const float* bias, size_t in,
                              size_t out, Int8Weights* packed);

// y[r][n] for rows [0, rows) and output channels [n_begin, n_end) (multiples of 16 except the
// last), from quantized rows qx (stride in_padded) and their scales, with the epilogue (kernels.h).
void dense_int8_f32_ref(const Int8Weights& w, const uint8_t* qx, const float* x_scales, size_t rows,
                        float* y, size_t y_stride, size_t n_begin, size_t n_end,
                        DenseEpilogue epilogue);
#if defined(__x86_64__)
void dense_int8_f32_avx512vnni(const Int8Weights& w, const uint8_t* qx, const float* x_scales,
                               size_t rows, float* y, size_t y_stride, size_t n_begin,
                               size_t n_end, DenseEpilogue epilogue);
#endif

}  // namespace linfer::kernels
