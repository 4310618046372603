// SPDX-License-Identifier: Apache-2.0
// Linear attention with phi = elu + 1: the scalar references (linear_attention.h), in double.
#include <cmath>

#include "attention/linear_attention.h"

namespace linfer::kernels {

static double phi(double x) { return x > 0 ? x + 1.0 : std::exp(x); }

void linear_attention_state_f32_ref(const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                                    size_t d, float* S, float* z) {
  for (size_t j = 0; j < rows; ++j)
    for (size_t a = 0; a < d; ++a) {
      const double pk = phi(k[j * k_stride + a]);
      z[a] = float(z[a] + pk);
      for (size_t b = 0; b < d; ++b) S[a * d + b] = float(S[a * d + b] + pk * v[j * v_stride + b]);
    }
}

void linear_attention_apply_f32_ref(const float* q, size_t q_stride, size_t rows, size_t d, const float* S,
                                    const float* z, float* o, size_t o_stride, float*) {
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
