// SPDX-License-Identifier: Apache-2.0
// The kernels of linear attention with phi = elu + 1 (the linear_elu kind's; built with it,
// schema/attention_kinds.txt): linear_attention_ref.cc, linear_attention_hwy.cc. Their pair test:
// tests/unit/kernels/test_linear_attention_kernels.cc.
#pragma once

#include <cstddef>

namespace linfer::kernels {

// Linear attention with phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), one head of head_dim d.
// State: S = sum_j phi(k_j) v_j^T ([d x d], row-major) and z = sum_j phi(k_j) ([d]).
// state: adds rows [0, rows) of k and v to (S, z).
void linear_attention_state_f32_ref(const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                                    size_t d, float* S, float* z);
void linear_attention_state_f32_hwy(const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                                    size_t d, float* S, float* z);
// apply: o_i = phi(q_i)^T S / (phi(q_i) . z) for rows [0, rows). scratch: d floats.
void linear_attention_apply_f32_ref(const float* q, size_t q_stride, size_t rows, size_t d, const float* S,
                                    const float* z, float* o, size_t o_stride, float* scratch);
void linear_attention_apply_f32_hwy(const float* q, size_t q_stride, size_t rows, size_t d, const float* S,
                                    const float* z, float* o, size_t o_stride, float* scratch);

}  // namespace linfer::kernels
