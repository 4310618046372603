// SPDX-License-Identifier: Apache-2.0
// linfer's one int8 convention, for weights (the converter) and activations (the dense kernels):
// symmetric, no zero point, one scale per row: scale = max |x| / 127, q = x * (1 / scale) rounded
// to nearest, ties to even, in [-127, 127] (never -128, so that two products of int8 values fit
// an int16: the Arm kernels without the dot-product extension rely on it). value = scale * q.
// A row of zeros has scale 0. Every fast quantizer must give exactly these bytes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace linfer {

// One value: x * inv (inv = 1 / scale, 0 for a row of zeros) rounded to nearest, ties to even,
// clamped to [-127, 127]; a NaN gives 0. The fast quantizers' scalar remainders use it too.
inline int8_t quantize_int8(float x, float inv) {
  const float v = std::nearbyint(x * inv);
  return v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? int8_t(v) : 0;
}

// The scale of n values x[0], x[stride], ... (NaNs skipped), and in *inv the inverse that
// quantize_int8 takes for them.
inline float int8_row_scale(const float* x, size_t n, size_t stride, float* inv) {
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i) amax = std::fabs(x[i * stride]) > amax ? std::fabs(x[i * stride]) : amax;
  const float scale = amax / 127.0f;
  *inv = amax > 0.0f ? 1.0f / scale : 0.0f;
  return amax > 0.0f ? scale : 0.0f;
}

// Quantizes n values into q and returns their scale. Non-finite values give q = 0 (no undefined
// float-to-integer conversion).
inline float quantize_row_int8(const float* x, size_t n, int8_t* q) {
  float inv;
  const float scale = int8_row_scale(x, n, 1, &inv);
  for (size_t i = 0; i < n; ++i) q[i] = quantize_int8(x[i], inv);
  return scale;
}

}  // namespace linfer
