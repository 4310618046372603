// SPDX-License-Identifier: Apache-2.0
// Kernelized linear attention, phi(Q) (phi(K)^T V) with phi = elu + 1 (Katharopoulos et al. 2020),
// bidirectional or causal: a key state S (dh x dh) and z (dh) per kv head (key_state_attention.h).
#include <algorithm>

#include "attention/key_state_attention.h"
#include "attention/linear_attention.h"  // kernels/attention/: its kernels

namespace linfer::rt {
namespace {

struct LinearElu {
  struct Params {};
  void configure(const EncoderConfig& c) { size_ = state_floats(c); }
  static uint64_t state_floats(const EncoderConfig& c) { return uint64_t(c.head_dim) * c.head_dim + c.head_dim; }
  static size_t scratch_floats(const EncoderConfig& c) { return c.head_dim; }
  Params params(const EncoderConfig&, const LayerWeights&) const { return {}; }
  void reset(float* S) const { std::fill(S, S + size_, 0.0f); }
  Status can_step(const EncoderConfig&) const { return {}; }
  void start_causal(const Params&, float*, const float*, size_t, size_t, float*) const {}
  void add_keys(const Params&, const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows, size_t dh,
                float* S, float*) const {
    kernels::linear_attention_state_f32_hwy(k, k_stride, v, v_stride, rows, dh, S, S + dh * dh);
  }
  void apply(const Params&, const float* q, size_t q_stride, size_t rows, size_t dh, const float* S, float* o,
             size_t o_stride, float* scratch) const {
    kernels::linear_attention_apply_f32_hwy(q, q_stride, rows, dh, S, S + dh * dh, o, o_stride, scratch);
  }
  size_t size_ = 0;
};

class LinearAttention final : public KeyStateAttention<LinearElu> {};

uint64_t linear_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, dh = c.head_dim, KV = uint64_t(c.kv_heads) * dh;
  return 2 * 2 * T * D * KV + 2 * T * dh * KV + 2 * T * dh * HD;  // K, V; state; apply
}

}  // namespace

extern const AttentionKindInfo kLinearEluAttention = {
    AttentionKind::LinearElu,
    [] { return std::unique_ptr<AttentionModule>(new LinearAttention()); },
    linear_layer_flops,
    nullptr,
    nullptr,
    /*steps=*/true};

}  // namespace linfer::rt
