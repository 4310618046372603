// SPDX-License-Identifier: Apache-2.0
// Full softmax attention: every row over every key (the baseline every benchmark compares against).
#include "attention/softmax_attention.h"

namespace linfer::rt {
namespace {

class FullAttention final : public SoftmaxAttention {
 public:
  bool has_row_pipeline(const EncoderConfig&) const override { return true; }
  bool takes_bf16() const override { return true; }
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override {
    return run_softmax(s, layer, in, T, residual);
  }
};

uint64_t full_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, KV = uint64_t(c.kv_heads) * c.head_dim;
  return 2 * 2 * T * D * KV + 2 * 2 * T * T * HD;  // K, V; scores, P V
}

}  // namespace

extern const AttentionKindInfo kFullSoftmaxAttention = {
    AttentionKind::FullSoftmax, [] { return std::unique_ptr<AttentionModule>(new FullAttention()); }, full_layer_flops,
    nullptr, nullptr};

}  // namespace linfer::rt
