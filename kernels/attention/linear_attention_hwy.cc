// SPDX-License-Identifier: Apache-2.0
// Linear attention with phi = elu + 1, with Highway (linear_attention.h): the state update and the
// output vectorised over the value channels.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/linear_attention_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>

#include "attention/linear_attention.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

// phi(x) = elu(x) + 1 = x + 1 for x > 0, exp(x) otherwise; into dst[0, d).
void Phi(const float* x, size_t d_len, float* dst) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= d_len; i += L) {
    const auto v = hn::LoadU(d, x + i);
    const auto pos = hn::Add(v, hn::Set(d, 1.0f));
    const auto neg = hn::Exp(d, hn::Min(v, hn::Zero(d)));
    hn::StoreU(hn::IfThenElse(hn::Gt(v, hn::Zero(d)), pos, neg), d, dst + i);
  }
  for (; i < d_len; ++i) dst[i] = x[i] > 0.0f ? x[i] + 1.0f : std::exp(x[i]);
}

// S[a][:] += phi(k_j)[a] * v_j[:], z += phi(k_j); vectorised over the columns of S.
void LinearAttentionState(const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows, size_t dd,
                          float* S, float* z) {
  const D d;
  const size_t L = hn::Lanes(d);
  float pk[1024];
  for (size_t j = 0; j < rows; ++j) {
    const float* vj = v + j * v_stride;
    for (size_t a0 = 0; a0 < dd; a0 += 1024) {
      const size_t na = std::min<size_t>(1024, dd - a0);
      Phi(k + j * k_stride + a0, na, pk);
      for (size_t a = 0; a < na; ++a) {
        z[a0 + a] += pk[a];
        float* row = S + (a0 + a) * dd;
        const auto p = hn::Set(d, pk[a]);
        size_t b = 0;
        for (; b + L <= dd; b += L) hn::StoreU(hn::MulAdd(p, hn::LoadU(d, vj + b), hn::LoadU(d, row + b)), d, row + b);
        for (; b < dd; ++b) row[b] += pk[a] * vj[b];
      }
    }
  }
}

// o_i = phi(q_i)^T S / (phi(q_i) . z): rows of S weighted by phi(q_i), vectorised over columns.
void LinearAttentionApply(const float* q, size_t q_stride, size_t rows, size_t dd, const float* S, const float* z,
                          float* o, size_t o_stride, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t i = 0; i < rows; ++i) {
    float* pq = scratch;
    Phi(q + i * q_stride, dd, pq);
    float den = 0.0f;
    for (size_t a = 0; a < dd; ++a) den += pq[a] * z[a];
    const float inv = 1.0f / den;
    float* oi = o + i * o_stride;
    size_t b = 0;
    for (; b + L <= dd; b += L) {
      auto acc = hn::Zero(d);
      for (size_t a = 0; a < dd; ++a) acc = hn::MulAdd(hn::Set(d, pq[a]), hn::LoadU(d, S + a * dd + b), acc);
      hn::StoreU(hn::Mul(acc, hn::Set(d, inv)), d, oi + b);
    }
    for (; b < dd; ++b) {
      float acc = 0.0f;
      for (size_t a = 0; a < dd; ++a) acc += pq[a] * S[a * dd + b];
      oi[b] = acc * inv;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(LinearAttentionState);
HWY_EXPORT(LinearAttentionApply);

void linear_attention_state_f32_hwy(const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                                    size_t d, float* S, float* z) {
  HWY_DYNAMIC_DISPATCH(LinearAttentionState)(k, k_stride, v, v_stride, rows, d, S, z);
}
void linear_attention_apply_f32_hwy(const float* q, size_t q_stride, size_t rows, size_t d, const float* S,
                                    const float* z, float* o, size_t o_stride, float* scratch) {
  HWY_DYNAMIC_DISPATCH(LinearAttentionApply)(q, q_stride, rows, d, S, z, o, o_stride, scratch);
}
}  // namespace linfer::kernels
#endif
