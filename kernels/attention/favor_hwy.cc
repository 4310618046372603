// SPDX-License-Identifier: Apache-2.0
// Performer (FAVOR+) attention with Highway (favor.h): features vectorised over the m
// projections (wt is [d x m]), the state update and the output over the value channels.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/favor_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>

#include "attention/favor.h"
#include "kernels.h"  // gemm_f32_hwy

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

constexpr size_t kBlock = 16;  // rows projected at a time (favor_scratch_floats)

// a = c W x for rows [0, n) of x into a (row stride m), through the register-blocked matrix
// product; per row its max_f a_f into top and c^2 |x|^2 / 2 into half_sq.
void Project(const FavorParams& p, const float* x, size_t x_stride, size_t n, float* a, float* top, float* half_sq) {
  const D d;
  const size_t L = hn::Lanes(d), m = p.m;
  const float c = 1.0f / std::sqrt(std::sqrt(float(p.d)));
  // The columns past the last whole vector as one vector ending at m (overlapping columns come out
  // the same): the product's scalar remainder would cost as much as the rest.
  const size_t whole = m / L * L;
  gemm_f32_hwy(n, whole, p.d, x, x_stride, p.wt, m, a, m);
  if (whole < m) {
    const size_t c0 = m >= L ? m - L : whole;
    gemm_f32_hwy(n, m - c0, p.d, x, x_stride, p.wt + c0, m, a + c0, m);
  }
  const auto cv = hn::Set(d, c);
  for (size_t j = 0; j < n; ++j) {
    const float* xj = x + j * x_stride;
    float sq = 0.0f;
    for (size_t k = 0; k < p.d; ++k) sq += xj[k] * xj[k];
    half_sq[j] = c * c * sq * 0.5f;
    float* aj = a + j * m;
    auto best = hn::Set(d, -INFINITY);
    size_t f = 0;
    for (; f + L <= m; f += L) {
      const auto v = hn::Mul(hn::LoadU(d, aj + f), cv);
      best = hn::Max(best, v);
      hn::StoreU(v, d, aj + f);
    }
    float t = hn::GetLane(hn::MaxOfLanes(d, best));
    for (; f < m; ++f) {
      aj[f] *= c;
      t = std::max(t, aj[f]);
    }
    top[j] = t;
  }
}

// e = exp(a - shift) (softmax map; shift = half_sq + stabiliser) or max(a, 0), in place.
void Features(FeatureMap map, float* a, size_t m, float shift) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t f = 0;
  if (map == FeatureMap::Softmax) {
    const auto sh = hn::Set(d, shift);
    for (; f + L <= m; f += L) hn::StoreU(hn::Exp(d, hn::Sub(hn::LoadU(d, a + f), sh)), d, a + f);
    for (; f < m; ++f) a[f] = std::exp(a[f] - shift);
  } else {
    for (; f + L <= m; f += L) hn::StoreU(hn::Max(hn::LoadU(d, a + f), hn::Zero(d)), d, a + f);
    for (; f < m; ++f) a[f] = std::max(a[f], 0.0f);
  }
}

void FavorStateAdd(const FavorParams& p, const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                   size_t dv, float* state, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d), m = p.m;
  const FavorState<float> st = favor_state(state, m, dv);
  float *P = st.P, *zp = st.zp, *vsum = st.vsum, *count = st.count, *s = st.s;
  float* half_sq = scratch + kBlock * m;
  float* tops = half_sq + kBlock;
  for (size_t j0 = 0; j0 < rows; j0 += kBlock) {
    const size_t n = std::min(kBlock, rows - j0);
    Project(p, k + j0 * k_stride, k_stride, n, scratch, tops, half_sq);
    const float block_top = *std::max_element(tops, tops + n);
    // A larger stabiliser rescales what the state holds (exp(s_old - s_new) < 1).
    if (p.map == FeatureMap::Softmax && block_top > *s) {
      if (*s != -INFINITY) {
        const float shrink = std::exp(*s - block_top);
        size_t i = 0;
        for (; i + L <= m * dv + m; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, P + i), hn::Set(d, shrink)), d, P + i);
        for (; i < m * dv + m; ++i) P[i] *= shrink;
      } else {
        std::fill(P, P + m * dv + m, 0.0f);
      }
      *s = block_top;
    }
    // e [n x m], transposed to [m x n], then P += e^T V and zp += e^T 1 as matrix products.
    float* et = tops + kBlock;
    for (size_t j = 0; j < n; ++j) Features(p.map, scratch + j * m, m, half_sq[j] + *s);
    transpose_f32_hwy(scratch, m, n, m, et, kBlock);
    gemm_f32_hwy(m, dv, n, et, kBlock, v + j0 * v_stride, v_stride, P, dv, /*accumulate=*/true);
    for (size_t f = 0; f < m; ++f)
      for (size_t j = 0; j < n; ++j) zp[f] += et[f * kBlock + j];
    for (size_t j = 0; j < n; ++j) {
      const float* vj = v + (j0 + j) * v_stride;
      for (size_t b = 0; b < dv; ++b) vsum[b] += vj[b];
    }
    *count += float(n);
  }
}

float FavorKeyMax(const FavorParams& p, const float* k, size_t k_stride, size_t rows, float* scratch) {
  float* half_sq = scratch + kBlock * p.m;
  float* tops = half_sq + kBlock;
  float top = -INFINITY;
  for (size_t j0 = 0; j0 < rows; j0 += kBlock) {
    const size_t n = std::min(kBlock, rows - j0);
    Project(p, k + j0 * k_stride, k_stride, n, scratch, tops, half_sq);  // as FavorStateAdd does
    top = std::max(top, *std::max_element(tops, tops + n));
  }
  return top;
}

// Per block of rows: features phi [n x m] (scratch), then phi P through the matrix product
// straight into o, then each row's eps term and 1 / denominator.
void FavorApply(const FavorParams& p, const float* q, size_t q_stride, size_t rows, size_t dv, const float* state,
                float* o, size_t o_stride, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d), m = p.m;
  const FavorState<const float> st = favor_state(state, m, dv);
  const float *P = st.P, *zp = st.zp, *vsum = st.vsum, *count = st.count;
  const bool softmax = p.map == FeatureMap::Softmax;
  const float r = softmax ? 1.0f / std::sqrt(float(m)) : 1.0f;
  float* phi = scratch;
  float* half_sq = scratch + kBlock * m;
  float* tops = half_sq + kBlock;
  float* zden = tops + kBlock;  // the key sum as the denominator reads it: r (zp + eps count) + den_eps
  for (size_t f = 0; f < m; ++f) zden[f] = r * (zp[f] + p.eps * *count) + p.den_eps;
  for (size_t i0 = 0; i0 < rows; i0 += kBlock) {
    const size_t n = std::min(kBlock, rows - i0);
    Project(p, q + i0 * q_stride, q_stride, n, phi, tops, half_sq);
    float scale[kBlock], eps_sum[kBlock];
    for (size_t i = 0; i < n; ++i) {
      float* pi = phi + i * m;
      Features(p.map, pi, m, half_sq[i] + tops[i]);
      // phi_f = r (e_f + eps) (relu: e_f + eps); the key sums are r (zp + eps count) and r (P + eps vsum).
      const auto rv = hn::Set(d, r), ev = hn::Set(d, p.eps);
      auto sum = hn::Zero(d), den = hn::Zero(d);
      size_t f = 0;
      for (; f + L <= m; f += L) {
        const auto x = hn::Mul(rv, hn::Add(hn::LoadU(d, pi + f), ev));
        hn::StoreU(x, d, pi + f);
        sum = hn::Add(sum, x);
        den = hn::MulAdd(x, hn::LoadU(d, zden + f), den);
      }
      float sum_s = hn::GetLane(hn::SumOfLanes(d, sum)), den_s = hn::GetLane(hn::SumOfLanes(d, den));
      for (; f < m; ++f) {
        pi[f] = r * (pi[f] + p.eps);
        sum_s += pi[f];
        den_s += pi[f] * zden[f];
      }
      scale[i] = r / den_s;
      eps_sum[i] = p.eps * sum_s;
    }
    float* ob = o + i0 * o_stride;
    gemm_f32_hwy(n, dv, m, phi, m, P, dv, ob, o_stride);
    for (size_t i = 0; i < n; ++i) {
      float* oi = ob + i * o_stride;
      const auto es = hn::Set(d, eps_sum[i]), sc = hn::Set(d, scale[i]);
      size_t b = 0;
      for (; b + L <= dv; b += L)
        hn::StoreU(hn::Mul(hn::MulAdd(es, hn::LoadU(d, vsum + b), hn::LoadU(d, oi + b)), sc), d, oi + b);
      for (; b < dv; ++b) oi[b] = (oi[b] + eps_sum[i] * vsum[b]) * scale[i];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(FavorStateAdd);
HWY_EXPORT(FavorApply);
HWY_EXPORT(FavorKeyMax);

float favor_key_max_f32_hwy(const FavorParams& p, const float* k, size_t k_stride, size_t rows, float* scratch) {
  return HWY_DYNAMIC_DISPATCH(FavorKeyMax)(p, k, k_stride, rows, scratch);
}

void favor_state_add_f32_hwy(const FavorParams& p, const float* k, size_t k_stride, const float* v, size_t v_stride,
                             size_t rows, size_t dv, float* state, float* scratch) {
  HWY_DYNAMIC_DISPATCH(FavorStateAdd)(p, k, k_stride, v, v_stride, rows, dv, state, scratch);
}
void favor_apply_f32_hwy(const FavorParams& p, const float* q, size_t q_stride, size_t rows, size_t dv,
                         const float* state, float* o, size_t o_stride, float* scratch) {
  HWY_DYNAMIC_DISPATCH(FavorApply)(p, q, q_stride, rows, dv, state, o, o_stride, scratch);
}
}  // namespace linfer::kernels
#endif
