// SPDX-License-Identifier: Apache-2.0
// GiveTake: p learned tokens ride as rows [T, T + p) of the session's buffers (the layer loop
// treats them as rows); the tokens take from the sequence, then the sequence takes from what the
// tokens gathered (docs/converter.md). Both streams share W_q, W_k, W_v, W_out; an optional
// depthwise convolution of the input (the locality branch) adds to the output.
#include <algorithm>
#include <cmath>

#include "attention/softmax_attention.h"
#include "linfer/format/kinds/give_take.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {

// The locality branch's depthwise convolutions per layer, taps transposed to [K x dim] so the
// kernel vectorises over channels (empty where a layer has none); made at load.
struct ConvTaps final : AttentionModelData {
  std::vector<std::vector<float>> layers;
  uint64_t bytes() const override {
    uint64_t n = 0;
    for (const std::vector<float>& taps : layers) n += taps.size() * sizeof(float);
    return n;
  }
};

class GiveTakeAttention final : public SoftmaxAttention {
 public:
  // Its p learned tokens, widened from the model's stored type.
  void write_added_rows(const LayerContext& s, float* rows) const override {
    const EncoderDescription& d = s.model().desc;
    const size_t D = d.config.dim;
    for (uint32_t i = 0; i < d.config.num_global_tokens; ++i)
      widen_weight_row(d.kind_tensors[GiveTakeTensors::kGlobalTokens], i, D, 1.0f, rows + i * D);
  }
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override;
};

bool GiveTakeAttention::run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = s.config();
  const LayerWeights& w = layer.w;
  const KvLayers& ops = kv_[layer.index];
  const size_t p = c.num_global_tokens, R = T + p, H = c.num_heads, dh = c.head_dim, HD = H * dh, kvh = c.kv_heads,
               KV = kvh * dh, D = c.dim;
  float* const q = s.queries();
  float* const attn = s.attention_out();
  if (!s.run_dense(layer.q, R, in, q) || !s.run_dense(ops.k[0], R, in, keys_) || !s.run_dense(ops.v[0], T, in, values_))
    return false;
  auto t = s.now();
  // K transposed per kv head: the sequence's [dh x T], then the tokens' [dh x p].
  float* kt_seq = keys_t_;
  float* kt_tok = keys_t_ + kvh * dh * T;
  s.workers().ranges(kvh, 1, [&](size_t b, size_t e, size_t) {
    for (size_t h = b; h < e; ++h) {
      kernels::transpose_f32_hwy(keys_ + h * dh, KV, T, dh, kt_seq + h * dh * T, T);
      kernels::transpose_f32_hwy(keys_ + T * KV + h * dh, KV, p, dh, kt_tok + h * dh * p, p);
    }
  });
  const float scale = 1.0f / std::sqrt(float(dh));
  const size_t heads_per_kv = H / kvh;
  auto run_heads = [&](size_t rows, size_t keys, auto args_for_head) {
    const size_t block = 32, blocks = (rows + block - 1) / block;
    s.workers().balanced_ranges(H * blocks, 1, 1, [&](size_t b, size_t e, size_t worker) {
      float* scratch = scratch_ + worker * scratch_stride_;
      for (size_t item = b; item < e; ++item) {
        const size_t h = item / blocks, r0 = (item % blocks) * block;
        kernels::AttentionHeadArgs a = args_for_head(h);
        a.head_dim = dh;
        a.keys = keys;
        a.scale = scale;
        kernels::attention_f32_hwy(a, r0, std::min(rows, r0 + block), scratch);
      }
    });
  };
  // Take: Y_t = softmax(Q_t K_s^T / sqrt(dh)) V_s, into rows [T, R) of attn.
  run_heads(p, T, [&](size_t h) {
    const size_t kv = h / heads_per_kv;
    return kernels::AttentionHeadArgs{
        q + T * HD + h * dh, HD, kt_seq + kv * dh * T, T, values_ + kv * dh, KV, attn + T * HD + h * dh, HD, 0, 0, 0};
  });
  // Give: Y_s = softmax(Q_s K_t^T / sqrt(dh)) Y_t (head h's own take output), into rows [0, T).
  run_heads(T, p, [&](size_t h) {
    const size_t kv = h / heads_per_kv;
    return kernels::AttentionHeadArgs{
        q + h * dh, HD, kt_tok + kv * dh * p, p, attn + T * HD + h * dh, HD, attn + h * dh, HD, 0, 0, 0};
  });
  s.lap(LINFER_OP_ATTENTION, t);
  // Into the sublayer output, not straight into the residual: the convolution below still reads
  // the input, which is the residual stream itself with post-norm.
  float* const sub = s.sublayer_out();
  if (!s.run_dense(layer.out, R, attn, sub)) return false;
  const WeightView& conv = w.kind_tensors[GiveTakeTensors::kConvWeight];
  if (conv.present()) {  // the locality branch: depthwise convolution of the input
    t = s.now();
    const size_t K = conv.shape[1];
    const float* taps = static_cast<const ConvTaps&>(*s.model().attention_data).layers[layer.index].data();
    s.workers().ranges(T, 1, [&](size_t b, size_t e, size_t) {
      kernels::conv_depthwise_add_f32_hwy(in, T, D, taps, K, f32_data(w.kind_tensors[GiveTakeTensors::kConvBias]), sub,
                                          b, e);
    });
    s.lap(LINFER_OP_ELEMENTWISE, t);
  }
  s.add_rows(residual, sub, R, D);
  return true;
}

uint64_t give_take_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, KV = uint64_t(c.kv_heads) * c.head_dim,
                 p = c.num_global_tokens, R = T + p;
  return 2 * R * D * KV + 2 * T * D * KV  // K (sequence and tokens), V
         + 2 * 2 * p * T * HD * 2;        // take and give: scores and weighted sums
}

// The convolutions' taps per layer transposed to [K x dim], at load.
Status prepare_conv_taps(LoadedModel& m) {
  const size_t layers = m.desc.layers.size();
  ConvTaps* conv = nullptr;
  Status s = allocating("the convolution taps' list", sizeof(ConvTaps) + layers * sizeof(std::vector<float>), [&] {
    m.attention_data.reset(conv = new ConvTaps());
    conv->layers.resize(layers);
  });
  if (!s.ok()) return s;
  const size_t D = m.desc.config.dim;
  for (size_t i = 0; i < layers; ++i) {
    const WeightView& cw = m.desc.layers[i].kind_tensors[GiveTakeTensors::kConvWeight];  // f32 [dim, K]
    if (!cw.present()) continue;
    const size_t K = cw.shape[1];
    const float* src = static_cast<const float*>(cw.data);
    std::vector<float>& taps = conv->layers[i];
    s = allocating(message("the convolution taps of layer {}", kept(i)), uint64_t(K) * D * sizeof(float),
                   [&] { taps.resize(K * D); });
    if (!s.ok()) return s;
    for (size_t ch = 0; ch < D; ++ch)
      for (size_t j = 0; j < K; ++j) taps[j * D + ch] = src[ch * K + j];
  }
  return {};
}

}  // namespace

extern const AttentionKindInfo kGiveTakeAttention = {
    AttentionKind::GiveTake, [] { return std::unique_ptr<AttentionModule>(new GiveTakeAttention()); },
    give_take_layer_flops, prepare_conv_taps, nullptr};

}  // namespace linfer::rt
