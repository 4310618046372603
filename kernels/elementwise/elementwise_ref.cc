// SPDX-License-Identifier: Apache-2.0
// Layer norm, activations, add, sum.
// Portable scalar reference kernels: the oracles of the tests. Written for clarity; they
// accumulate in double where that makes the oracle tighter than the code under test.
#include <algorithm>
#include <cmath>

#include "kernels.h"
#include "linfer/types/half.h"

namespace linfer::kernels {

void layernorm_f32_ref(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows, size_t dim,
                       const float* gamma, const float* beta, float eps) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    double mean = 0;
    for (size_t i = 0; i < dim; ++i) mean += xr[i];
    mean /= double(dim);
    double var = 0;
    for (size_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(dim);
    const double inv = 1.0 / std::sqrt(var + double(eps));
    for (size_t i = 0; i < dim; ++i) yr[i] = float((xr[i] - mean) * inv * gamma[i] + beta[i]);
  }
}

void sinusoids_f32_ref(float* out, size_t rows, size_t dim, double first, double base) {
  const size_t half = dim / 2;
  for (size_t t = 0; t < rows; ++t) {
    const double pos = double(t) + first;
    float* row = out + t * dim;
    for (size_t i = 0; i < half; ++i) {
      const double angle = pos * std::pow(base, -2.0 * double(i) / double(dim));
      row[i] = float(std::sin(angle));
      row[half + i] = float(std::cos(angle));
    }
  }
}

void gelu_erf_f32_ref(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = float(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
}

void gelu_tanh_f32_ref(float* x, size_t n) {
  constexpr double kPi = 3.14159265358979323846;  // M_PI is POSIX, not C++ (newlib hides it)
  const double c = std::sqrt(2.0 / kPi);
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = float(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

void relu_f32_ref(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void activation_f32_ref(float* x, size_t n, DenseActivation act) {
  switch (act) {
    case DenseActivation::None:
      break;
    case DenseActivation::Relu:
      relu_f32_ref(x, n);
      break;
    case DenseActivation::GeluErf:
      gelu_erf_f32_ref(x, n);
      break;
    case DenseActivation::GeluTanh:
      gelu_tanh_f32_ref(x, n);
      break;
    case DenseActivation::Tanh:
      for (size_t i = 0; i < n; ++i) x[i] = float(std::tanh(double(x[i])));
      break;
  }
}

float sum_f32_ref(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return float(s);
}

void add_f32_ref(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

void mul_channels_f32_ref(const float* x, size_t x_stride, size_t rows, size_t cols, const float* s, float* y,
                          size_t y_stride) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) y[r * y_stride + c] = x[r * x_stride + c] * s[c];
}

void mean_rows_f32_ref(const float* x, size_t rows, size_t cols, size_t stride, float* out) {
  for (size_t c = 0; c < cols; ++c) {
    double sum = 0;
    for (size_t r = 0; r < rows; ++r) sum += x[r * stride + c];
    out[c] = float(sum / double(rows));
  }
}

void add_rank1_f32_ref(float* y, size_t y_stride, size_t rows, size_t cols, const float* s, const float* b,
                       const float* p) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      y[r * y_stride + c] += float((s && b ? double(s[r]) * b[c] : 0.0) + (p ? p[r] : 0.0f));
}

void scale_f32_ref(const float* x, size_t n, float scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = scale * x[i];
}

void convert_f16_to_f32_ref(const uint16_t* x, size_t n, float scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = scale * half_to_float(x[i]);
}

void convert_int8_to_f32_ref(const int8_t* x, size_t n, float scale, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = scale * float(x[i]);
}

void transpose_f32_ref(const float* src, size_t src_stride, size_t rows, size_t cols, float* dst, size_t dst_stride) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

void rotate_pairs_f32(float* x, size_t x_stride, size_t rows, size_t heads, size_t head_dim, const float* table,
                      size_t table_stride) {
  const size_t half = head_dim / 2;
  for (size_t r = 0; r < rows; ++r) {
    const float* sin = table + r * table_stride;
    const float* cos = sin + half;
    for (size_t h = 0; h < heads; ++h) {
      float* p = x + r * x_stride + h * head_dim;
      for (size_t i = 0; i < half; ++i) {
        const float a = p[2 * i], b = p[2 * i + 1];
        p[2 * i] = a * cos[i] - b * sin[i];
        p[2 * i + 1] = b * cos[i] + a * sin[i];
      }
    }
  }
}

}  // namespace linfer::kernels
