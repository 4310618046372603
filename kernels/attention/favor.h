// SPDX-License-Identifier: Apache-2.0
// The kernels of FAVOR+ attention (the performer kind's; built with it,
// schema/attention_kinds.txt): favor_ref.cc, favor_hwy.cc. Their pair test:
// tests/unit/kernels/test_favor_kernels.cc.
#pragma once

#include <cstddef>

#include "linfer/types/enums.h"  // FeatureMap

namespace linfer::kernels {

// Performer attention (FAVOR+, Choromanski et al. 2021, computed as lucidrains' performer-pytorch
// does), one head. m random features of a d-vector x from the projection W ([m x d], stored
// transposed: wt = [d x m], so that the features vectorise), a = c W x with c = d^-1/4:
//   positive (softmax) features: phi(x)_f = r (exp(a_f - c^2 |x|^2 / 2 - s) + eps), r = m^-1/2, s
//     the stabiliser: a query's own max_f a_f; for keys the largest a_f of all keys taken so far
//     (bidirectional: every key; causal row i: keys 0..i);
//   relu features: phi(x)_f = max(a_f, 0) + eps.
// o_i = sum_j (phi(q_i) . phi(k_j)) v_j / (phi(q_i) . (sum_j phi(k_j) + den_eps)).
// Because phi(k) = r (e + eps) is affine in e = exp(a - s) (or relu(a)), the key state keeps the
// e-part and the eps-part apart: P = sum_j e_j v_j^T, zp = sum_j e_j, vsum = sum_j v_j, count, s.
// A larger s found later rescales P and zp by exp(s_old - s_new), so keys are added in any number
// of calls (row blocks, or one token at a time) and give what one pass with the final s gives.
struct FavorParams {
  const float* wt;  // [d x m]
  size_t d;         // head_dim
  size_t m;         // features
  FeatureMap map;
  float eps;      // added to every feature
  float den_eps;  // added to each feature of the key sum in the denominator (lucidrains causal: 1e-6)
};
// The key state: P [m x dv], zp [m] (right after P: rescaled together), vsum [dv], count, s;
// favor_state is the one layout expression (float* and const float* states).
template <class T>
struct FavorState {
  T *P, *zp, *vsum, *count, *s;
};
template <class T>
FavorState<T> favor_state(T* state, size_t m, size_t dv) {
  T* zp = state + m * dv;
  return {state, zp, zp + m, zp + m + dv, zp + m + dv + 1};
}
inline size_t favor_state_floats(size_t m, size_t dv) { return m * dv + m + dv + 2; }  // through s
void favor_state_reset(float* state, size_t m, size_t dv);
// Scratch floats the fast kernels need per call (the references allocate their own).
size_t favor_scratch_floats(size_t m);
// Adds keys k and values v (rows [0, rows), row strides k_stride / v_stride; dv values) to state.
void favor_state_add_f32_ref(const FavorParams& p, const float* k, size_t k_stride, const float* v, size_t v_stride,
                             size_t rows, size_t dv, float* state, float* scratch);
void favor_state_add_f32_hwy(const FavorParams& p, const float* k, size_t k_stride, const float* v, size_t v_stride,
                             size_t rows, size_t dv, float* state, float* scratch);
// The largest projection c w_f . k over rows [0, rows) of k and every feature f: a causal
// state preset to it (FavorState::s) never rescales, so that every row sees the stabiliser of the
// whole input (KeyStabiliser::Sequence).
float favor_key_max_f32_ref(const FavorParams& p, const float* k, size_t k_stride, size_t rows);
float favor_key_max_f32_hwy(const FavorParams& p, const float* k, size_t k_stride, size_t rows, float* scratch);
// o_i for query rows [0, rows) against the keys in state.
void favor_apply_f32_ref(const FavorParams& p, const float* q, size_t q_stride, size_t rows, size_t dv,
                         const float* state, float* o, size_t o_stride, float* scratch);
void favor_apply_f32_hwy(const FavorParams& p, const float* q, size_t q_stride, size_t rows, size_t dv,
                         const float* state, float* o, size_t o_stride, float* scratch);

}  // namespace linfer::kernels
