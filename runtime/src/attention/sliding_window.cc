// SPDX-License-Identifier: Apache-2.0
// Sliding window (Longformer, HF LongformerSelfAttention): rows [g, T) attend to the keys within
// window_radius of them and to the g global rows' keys (q, k, v); the g global rows attend to
// every key, with their own projections when the model has them (q_global on the global rows,
// k_global and v_global on all rows), and their output replaces the local one. Both share the
// output layer. Each block of query rows walks only the keys of its window span and the global
// rows', the f32 kernel masked at the span's ends.
#include <algorithm>

#include "attention/softmax_attention.h"
#include "linfer/format/kinds/sliding_window.h"

namespace linfer::rt {
namespace {

class SlidingWindowAttention final : public SoftmaxAttention {
 public:
  // Without global rows every row's output needs only its own query and the keys.
  bool has_row_pipeline(const EncoderConfig& c) const override {
    return sliding_window_fields(c).global_positions == 0;
  }
  Status plan(AttentionPlanning& p) override {
    row_window_ = {sliding_window_fields(p.model.desc.config).window_radius, 0};  // row i sees keys |i - j| <= radius
    return SoftmaxAttention::plan(p);
  }
  Status prepare_layers(const LayerContext& s) override;
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override;
  size_t packed_weight_bytes() const override {
    size_t n = kv_packed_bytes();
    for (const GlobalLayers& l : global_) n += l.q.packed_bytes() + l.k.packed_bytes() + l.v.packed_bytes();
    return n;
  }

 private:
  // The global rows' own projections, per layer (absent: none).
  struct GlobalLayers {
    DenseLayer q, k, v;
  };
  std::vector<GlobalLayers> global_;
};

Status SlidingWindowAttention::prepare_layers(const LayerContext& s) {
  Status err = prepare_kv_layers(s, true, true);
  const EncoderConfig& c = s.config();
  if (err.ok())
    err = allocating(message("the global projections of {} layers", kept(c.num_layers)),
                     uint64_t(c.num_layers) * sizeof(GlobalLayers), [&] { global_.resize(c.num_layers); });
  const ExecutionPlan& plan = s.plan();
  for (uint32_t i = 0; i < c.num_layers && err.ok(); ++i) {
    const LayerWeights& w = s.model().desc.layers[i];
    using T = SlidingWindowTensors;
    const WeightView* t = w.kind_tensors;
    if (!t[T::kQGlobalWeight].present()) continue;
    struct Projection {
      DenseLayer* op;
      const WeightView &weight, &bias;
    };
    const Projection projections[3] = {{&global_[i].q, t[T::kQGlobalWeight], t[T::kQGlobalBias]},
                                       {&global_[i].k, t[T::kKGlobalWeight], t[T::kKGlobalBias]},
                                       {&global_[i].v, t[T::kVGlobalWeight], t[T::kVGlobalBias]}};
    for (const Projection& p : projections)
      if (err.ok()) err = p.op->prepare(plan, p.weight, 0, p.bias, kernels::DenseActivation::None, plan.yield_workers);
  }
  return err;
}

bool SlidingWindowAttention::run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T,
                                 float* residual) {
  const EncoderConfig& c = s.config();
  const size_t g = std::min<size_t>(sliding_window_fields(c).global_positions, T);
  if (!s.run_dense(layer.q, T, in, s.queries())) return false;
  const size_t keys = make_keys(s, layer, in, T);
  if (!keys) return false;
  auto t = s.now();
  attention_items(s, keys, g, T, {sliding_window_fields(c).window_radius, g});
  s.lap(LINFER_OP_ATTENTION, t);
  if (g > 0) {
    const bool own_projections = layer.w.kind_tensors[SlidingWindowTensors::kQGlobalWeight].present();
    if (own_projections) {  // Q of the global rows, K and V of every row, once more
      const GlobalLayers& global = global_[layer.index];
      if (!s.run_dense(global.q, g, in, s.queries()) || !s.run_dense(global.k, T, in, keys_) ||
          !s.run_dense(global.v, T, in, values_))
        return false;
      prepare_keys(s, T);
    }
    t = s.now();
    attention_items(s, keys, 0, g);
    s.lap(LINFER_OP_ATTENTION, t);
  }
  return s.run_dense(layer.out, T, s.attention_out(), residual, true);
}

uint64_t sliding_window_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, KV = uint64_t(c.kv_heads) * c.head_dim;
  // Keys a non-global row sees (its window within the input, and the global rows), summed.
  const uint64_t g = std::min<uint64_t>(sliding_window_fields(c).global_positions, T),
                 w = sliding_window_fields(c).window_radius;
  uint64_t seen = 0;
  for (uint64_t i = g; i < T; ++i) seen += std::min(T, i + w + 1) - std::max(g, i >= w ? i - w : 0) + g;
  uint64_t flops = 2 * 2 * T * D * KV + 2 * 2 * seen * HD;  // K, V; scores, P V
  flops += 2 * 2 * g * T * HD;                              // the global rows over every key
  // (with global projections, their Q on g rows and K, V on T rows once more: not counted)
  return flops;
}

}  // namespace

extern const AttentionKindInfo kSlidingWindowAttention = {
    AttentionKind::SlidingWindow, [] { return std::unique_ptr<AttentionModule>(new SlidingWindowAttention()); },
    sliding_window_layer_flops, nullptr, nullptr};

}  // namespace linfer::rt
