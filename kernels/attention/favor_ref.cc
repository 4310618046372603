// SPDX-License-Identifier: Apache-2.0
// Performer (FAVOR+) attention: the state layout and the scalar references (favor.h).
// The references follow the formula key by key (a running stabiliser, rescaling the state when it
// grows), accumulating the projections and the output sums in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/favor.h"

namespace linfer::kernels {

void favor_state_reset(float* state, size_t m, size_t dv) {
  std::fill(state, state + favor_state_floats(m, dv), 0.0f);
  *favor_state(state, m, dv).s = -INFINITY;  // no key yet
}

// 16 rows' projections and the same transposed, their maxima and halved squared norms, and the
// denominator's key sum (favor_hwy.cc's blocks).
size_t favor_scratch_floats(size_t m) { return 32 * m + 32 + m; }

// a = c W x and c^2 |x|^2 / 2.
static void project(const FavorParams& p, const float* x, std::vector<double>& a, double* half_sq) {
  const double c = std::pow(double(p.d), -0.25);
  double sq = 0;
  for (size_t k = 0; k < p.d; ++k) sq += double(x[k]) * x[k];
  *half_sq = c * c * sq / 2;
  for (size_t f = 0; f < p.m; ++f) {
    double s = 0;
    for (size_t k = 0; k < p.d; ++k) s += double(x[k]) * p.wt[k * p.m + f];
    a[f] = c * s;
  }
}

void favor_state_add_f32_ref(const FavorParams& p, const float* k, size_t k_stride, const float* v, size_t v_stride,
                             size_t rows, size_t dv, float* state, float*) {
  const size_t m = p.m;
  const FavorState<float> st = favor_state(state, m, dv);
  float *P = st.P, *zp = st.zp, *vsum = st.vsum, *count = st.count, *s = st.s;
  std::vector<double> a(m);
  for (size_t j = 0; j < rows; ++j) {
    double half_sq;
    project(p, k + j * k_stride, a, &half_sq);
    const float* vj = v + j * v_stride;
    if (p.map == FeatureMap::Softmax) {
      const double top = *std::max_element(a.begin(), a.end());
      if (top > *s) {
        const double shrink = *s == -INFINITY ? 0.0 : std::exp(*s - top);
        for (size_t i = 0; i < m * dv + m; ++i) P[i] = float(P[i] * shrink);
        *s = float(top);
      }
    }
    for (size_t f = 0; f < m; ++f) {
      const double e = p.map == FeatureMap::Softmax ? std::exp(a[f] - half_sq - *s) : std::max(a[f], 0.0);
      zp[f] = float(zp[f] + e);
      for (size_t b = 0; b < dv; ++b) P[f * dv + b] = float(P[f * dv + b] + e * vj[b]);
    }
    for (size_t b = 0; b < dv; ++b) vsum[b] += vj[b];
    *count += 1.0f;
  }
}

float favor_key_max_f32_ref(const FavorParams& p, const float* k, size_t k_stride, size_t rows) {
  std::vector<double> a(p.m);
  float top = -INFINITY;
  for (size_t j = 0; j < rows; ++j) {
    double half_sq;
    project(p, k + j * k_stride, a, &half_sq);
    top = std::max(top, float(*std::max_element(a.begin(), a.end())));
  }
  return top;
}

void favor_apply_f32_ref(const FavorParams& p, const float* q, size_t q_stride, size_t rows, size_t dv,
                         const float* state, float* o, size_t o_stride, float*) {
  const size_t m = p.m;
  const FavorState<const float> st = favor_state(state, m, dv);
  const float *P = st.P, *zp = st.zp, *vsum = st.vsum, *count = st.count;
  const double r = p.map == FeatureMap::Softmax ? 1.0 / std::sqrt(double(m)) : 1.0;
  std::vector<double> a(m), phi(m);
  for (size_t i = 0; i < rows; ++i) {
    double half_sq;
    project(p, q + i * q_stride, a, &half_sq);
    const double top = *std::max_element(a.begin(), a.end());
    double phi_sum = 0, den = 0;
    for (size_t f = 0; f < m; ++f) {
      phi[f] =
          p.map == FeatureMap::Softmax ? r * (std::exp(a[f] - half_sq - top) + p.eps) : std::max(a[f], 0.0) + p.eps;
      phi_sum += phi[f];
      den += phi[f] * (r * (zp[f] + double(p.eps) * *count) + p.den_eps);
    }
    for (size_t b = 0; b < dv; ++b) {
      double num = 0;
      for (size_t f = 0; f < m; ++f) num += phi[f] * P[f * dv + b];
      o[i * o_stride + b] = float(r * (num + p.eps * vsum[b] * phi_sum) / den);
    }
  }
}

}  // namespace linfer::kernels
