// Portable scalar reference kernels: the oracle for the fast kernels. Written for clarity and
// accumulate in double where that makes the oracle tighter than the code under test.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels.h"

namespace linfer::kernels {

void layernorm_f32_ref(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows,
                       size_t dim, const float* gamma, const float* beta, float eps) {
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
    for (size_t i = 0; i < dim; ++i)
      yr[i] = float((xr[i] - mean) * inv * gamma[i] + beta[i]);
  }
}

void gelu_erf_f32_ref(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = float(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
}

void gelu_tanh_f32_ref(float* x, size_t n) {
  const double c = std::sqrt(2.0 / M_PI);
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
    case DenseActivation::None: break;
    case DenseActivation::Relu: relu_f32_ref(x, n); break;
    case DenseActivation::GeluErf: gelu_erf_f32_ref(x, n); break;
    case DenseActivation::GeluTanh: gelu_tanh_f32_ref(x, n); break;
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

void gemm_f32_ref(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                  size_t ldb, float* C, size_t ldc) {
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double acc = 0;
      for (size_t t = 0; t < K; ++t) acc += double(A[i * lda + t]) * B[t * ldb + j];
      C[i * ldc + j] = float(acc);
    }
}

size_t attention_f32_scratch_floats(size_t keys, size_t head_dim) {
  return kAttentionMaxRows * (std::min(keys, kAttentionKeyBlock) + 16 + head_dim + 16);
}

// Two passes over all keys at once (softmax, then the weighted sum): the plain formula.
void attention_f32_ref(const AttentionHeadArgs& a, size_t row_begin, size_t row_end, float*) {
  std::vector<float> scores(a.keys);
  float* p = scores.data();
  for (size_t r = row_begin; r < row_end; ++r) {
    const float* q = a.q + r * a.q_stride;
    float max_score = -INFINITY;
    for (size_t j = 0; j < a.keys; ++j) {
      double s = 0;
      for (size_t d = 0; d < a.head_dim; ++d) s += double(q[d]) * a.kt[d * a.kt_stride + j];
      p[j] = float(s * a.scale);
      max_score = std::max(max_score, p[j]);
    }
    double sum = 0;
    for (size_t j = 0; j < a.keys; ++j) {
      p[j] = std::exp(p[j] - max_score);
      sum += p[j];
    }
    float* o = a.o + r * a.o_stride;
    for (size_t d = 0; d < a.head_dim; ++d) {
      double acc = 0;
      for (size_t j = 0; j < a.keys; ++j) acc += double(p[j]) * a.v[j * a.v_stride + d];
      o[d] = float(acc / sum);
    }
  }
}

void conv_depthwise_add_f32_ref(const float* x, size_t T, size_t channels, const float* w, size_t K,
                                const float* bias, float* y, size_t row_begin, size_t row_end) {
  const long half = long(K - 1) / 2;
  for (size_t t = row_begin; t < row_end; ++t)
    for (size_t c = 0; c < channels; ++c) {
      double acc = bias ? bias[c] : 0.0;
      for (size_t j = 0; j < K; ++j) {
        const long src = long(t) + long(j) - half;
        if (src >= 0 && src < long(T)) acc += double(w[j * channels + c]) * x[size_t(src) * channels + c];
      }
      y[t * channels + c] += float(acc);
    }
}

static double phi(double x) { return x > 0 ? x + 1.0 : std::exp(x); }

void linear_attention_state_f32_ref(const float* k, size_t k_stride, const float* v,
                                    size_t v_stride, size_t rows, size_t d, float* S, float* z) {
  for (size_t j = 0; j < rows; ++j)
    for (size_t a = 0; a < d; ++a) {
      const double pk = phi(k[j * k_stride + a]);
      z[a] = float(z[a] + pk);
      for (size_t b = 0; b < d; ++b) S[a * d + b] = float(S[a * d + b] + pk * v[j * v_stride + b]);
    }
}

void linear_attention_apply_f32_ref(const float* q, size_t q_stride, size_t rows, size_t d,
                                    const float* S, const float* z, float* o, size_t o_stride,
                                    float*) {
  for (size_t i = 0; i < rows; ++i) {
    double den = 0;
    for (size_t a = 0; a < d; ++a) den += phi(q[i * q_stride + a]) * z[a];
    for (size_t b = 0; b < d; ++b) {
      double num = 0;
      for (size_t a = 0; a < d; ++a) num += phi(q[i * q_stride + a]) * S[a * d + b];
      o[i * o_stride + b] = float(num / den);
    }
  }
}

}  // namespace linfer::kernels
