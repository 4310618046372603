// SPDX-License-Identifier: Apache-2.0
// Performer (FAVOR+, Choromanski et al. 2021, as performer-pytorch computes it): random features of
// Q and K (kernels/attention/favor.h) in place of the softmax, a favor state per kv head
// (key_state_attention.h), bidirectional or causal.
#include "attention/favor.h"  // kernels/attention/: its kernels
#include "attention/key_state_attention.h"
#include "linfer/format/kinds/performer.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {

// Causal Performer: added to each feature of the key sum in the denominator, as lucidrains'
// causal_linear_attention does (favor.h FavorParams::den_eps).
constexpr float kFavorCausalDenEps = 1e-6f;

struct Favor {
  using Params = kernels::FavorParams;
  void configure(const EncoderConfig& c) {
    features_ = performer_fields(c).num_features;
    head_dim_ = c.head_dim;
    sequence_stabiliser_ = performer_fields(c).key_stabiliser == KeyStabiliser::Sequence;
  }
  static uint64_t state_floats(const EncoderConfig& c) {
    return kernels::favor_state_floats(performer_fields(c).num_features, c.head_dim);
  }
  static size_t scratch_floats(const EncoderConfig& c) {
    return kernels::favor_scratch_floats(performer_fields(c).num_features);
  }
  Params params(const EncoderConfig& c, const LayerWeights& w) const {
    return {f32_data(w.kind_tensors[PerformerTensors::kFeatures]),
            c.head_dim,
            performer_fields(c).num_features,
            performer_fields(c).feature_map,
            performer_fields(c).feature_eps,
            c.causal == CausalMode::Causal ? kFavorCausalDenEps : 0.0f};
  }
  void reset(float* S) const { kernels::favor_state_reset(S, features_, head_dim_); }
  Status can_step(const EncoderConfig& c) const {
    if (performer_fields(c).key_stabiliser == KeyStabiliser::Sequence)
      return invalid_argument(
          "token-by-token runs need rows that do not depend on later tokens; this performer model's "
          "key stabiliser spans the whole input (key_stabiliser 'sequence', performer-pytorch's semantics)");
    return {};
  }
  // Every row sees the stabiliser of all T keys (a preset s never grows).
  void start_causal(const Params& p, float* S, const float* k, size_t k_stride, size_t T, float* scratch) const {
    if (sequence_stabiliser_)
      *kernels::favor_state(S, features_, head_dim_).s = kernels::favor_key_max_f32_hwy(p, k, k_stride, T, scratch);
  }
  void add_keys(const Params& p, const float* k, size_t k_stride, const float* v, size_t v_stride, size_t rows,
                size_t dh, float* S, float* scratch) const {
    kernels::favor_state_add_f32_hwy(p, k, k_stride, v, v_stride, rows, dh, S, scratch);
  }
  void apply(const Params& p, const float* q, size_t q_stride, size_t rows, size_t dh, const float* S, float* o,
             size_t o_stride, float* scratch) const {
    kernels::favor_apply_f32_hwy(p, q, q_stride, rows, dh, S, o, o_stride, scratch);
  }
  size_t features_ = 0, head_dim_ = 0;
  bool sequence_stabiliser_ = false;
};

class PerformerAttention final : public KeyStateAttention<Favor> {};

uint64_t performer_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, KV = uint64_t(c.kv_heads) * c.head_dim;
  const uint64_t m = performer_fields(c).num_features;  // features of K and Q, state, apply
  return 2 * 2 * T * D * KV + 2 * T * m * KV + 2 * T * m * HD + 2 * T * m * KV + 2 * T * m * HD;
}

}  // namespace

extern const AttentionKindInfo kPerformerAttention = {
    AttentionKind::Performer,
    [] { return std::unique_ptr<AttentionModule>(new PerformerAttention()); },
    performer_layer_flops,
    nullptr,
    nullptr,
    /*steps=*/true};

}  // namespace linfer::rt
