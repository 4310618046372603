// SPDX-License-Identifier: Apache-2.0
#include "attention/softmax_attention.h"

#include <algorithm>
#include <cmath>

namespace linfer::rt {

namespace {
// The weighted sum of the values in bf16 (kernels.h, "bf16 values"): for an int8 model (its Q, K
// and V layers int8; all-MiniLM-L6-v2's int8 embeddings stay as close to sentence-transformers'
// as with f32 attention: docs/accuracy.md) on a CPU with AVX-512 BF16 under the session's cap,
// head_dim a multiple of 32 (the kernel's tile).
bool bf16_attention(const AttentionPlanning& p) {
  const EncoderDescription& d = p.model.desc;
  if (d.config.head_dim % 32 != 0 || d.layers.empty() || !kernels::cpu_has(kernels::Isa::X86Avx512Bf16) ||
      !kernels::isa_within(kernels::Isa::X86Avx512Bf16, p.plan.max_isa))
    return false;
  for (const LayerWeights& l : d.layers)
    for (const LinearWeights* w : {&l.q, &l.k, &l.v})
      if (w->weight.dtype != DType::I8) return false;
  return true;
}
}  // namespace

Status SoftmaxAttention::plan(AttentionPlanning& p) {
  const EncoderConfig& c = p.model.desc.config;
  const uint64_t R = p.plan.max_len + c.num_global_tokens;
  bf16_ = takes_bf16() && bf16_attention(p);
  // (bf16: K^T's rows padded to the kernel's multiple of 32 keys, and V packed per head.)
  request_keys(p, bf16_ ? kernels::attention_bf16_padded_keys(R) : R, c.kv_heads);
  if (bf16_) {
    packed_stride_ = kernels::attention_bf16_value_words(R, c.head_dim) + c.head_dim;
    packed_buf_ = p.arena.floats(c.kv_heads * packed_stride_, kStepKeyInputs, kStepAttention);
  }
  request_scratch(p, bf16_ ? std::max(scratch_floats(R, c), kernels::attention_bf16_scratch_floats(R, c.head_dim))
                           : scratch_floats(R, c));
  return {};
}

void SoftmaxAttention::request_keys(AttentionPlanning& p, uint64_t keys, uint64_t heads, bool transposed, int first,
                                    int last) {
  const uint64_t dh = p.model.desc.config.head_dim;
  keys_buf_ = p.arena.floats(keys * heads * dh, first, last);
  values_buf_ = p.arena.floats(keys * heads * dh, first, last);
  if (transposed) keys_t_buf_ = p.arena.floats(heads * dh * keys, first, last);
}

size_t SoftmaxAttention::scratch_floats(uint64_t keys, const EncoderConfig& c) const {
  return kernels::attention_f32_scratch_floats(keys, c.head_dim) + 16;
}

void SoftmaxAttention::request_scratch(AttentionPlanning& p, size_t floats_per_thread) {
  scratch_stride_ = floats_per_thread;
  scratch_buf_ = p.arena.floats(p.plan.threads * scratch_stride_, kStepKeyInputs, kStepAttention);
}

void SoftmaxAttention::bind(const Arena& arena) {
  keys_ = arena.at(keys_buf_);
  values_ = arena.at(values_buf_);
  keys_t_ = arena.at(keys_t_buf_);
  packed_ = reinterpret_cast<uint32_t*>(arena.at(packed_buf_));
  scratch_ = arena.at(scratch_buf_);
}

bool SoftmaxAttention::run_softmax(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T,
                                   float* residual) {
  const EncoderConfig& c = s.config();
  if (!s.run_dense(layer.q, T, in, s.queries())) return false;
  s.rotate(s.queries(), T, c.num_heads);
  const size_t keys = make_keys(s, layer, in, T);
  if (!keys) return false;
  auto t = s.now();
  attention_items(s, keys, 0, T);
  s.lap(LINFER_OP_ATTENTION, t);
  return s.run_dense(layer.out, T, s.attention_out(), residual, true);
}

bool SoftmaxAttention::prepare_rows(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) {
  row_keys_ = make_keys(s, layer, in, T);
  return row_keys_ != 0;
}

void SoftmaxAttention::attend_rows(LayerContext& s, const float* q, float* attn, size_t rows, size_t first_row,
                                   size_t worker) {
  for (size_t h = 0; h < s.config().num_heads; ++h)
    attention_rows(s, h, row_keys_, q, attn, rows, worker, row_window_, first_row);
}

void SoftmaxAttention::attention_items(LayerContext& s, size_t keys, size_t row_begin, size_t row_end,
                                       KeyWindow window) {
  const EncoderConfig& c = s.config();
  const size_t block = kAttentionRowBlock, rows = row_end - row_begin, blocks = (rows + block - 1) / block,
               HD = size_t(c.num_heads) * c.head_dim;
  float* const q = s.queries();
  float* const attn = s.attention_out();
  s.workers().balanced_ranges(c.num_heads * blocks, 1, 1, [&](size_t b, size_t e, size_t worker) {
    for (size_t item = b; item < e; ++item) {
      const size_t h = item / blocks, r0 = row_begin + (item % blocks) * block, n = std::min(block, row_end - r0);
      attention_rows(s, h, keys, q + r0 * HD, attn + r0 * HD, n, worker, window, r0);
    }
  });
}

// Keys and values for softmax attention over all T rows, each K head transposed to
// [dh x keys] into keys_t_ so that the scores vectorise over the keys.
size_t SoftmaxAttention::make_keys(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) {
  const KvLayers& kv = kv_[layer.index];
  if (!s.run_dense(kv.k[0], T, in, keys_) || !s.run_dense(kv.v[0], T, in, values_)) return 0;
  s.rotate(keys_, T, s.config().kv_heads);
  prepare_keys(s, T);
  return T;
}

void SoftmaxAttention::prepare_keys(LayerContext& s, size_t keys) {
  const EncoderConfig& c = s.config();
  const size_t H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads;
  const bool per_head = per_head_;
  const auto t = s.now();
  const size_t S = per_head ? H : kvh;                // distinct K/V heads
  const size_t kp_stride = per_head ? dh : kvh * dh;  // row stride of K/V
  s.workers().ranges(S, 1, [&](size_t b, size_t e, size_t) {
    for (size_t h = b; h < e; ++h) {
      const size_t head_offset = per_head ? h * keys * dh : h * dh;  // of head h in K and V
#if defined(__x86_64__)
      if (bf16_) {  // K^T with zeros to the padded keys; V packed, its means after it
        const size_t padded = kernels::attention_bf16_padded_keys(keys);
        float* kt = keys_t_ + h * dh * padded;
        kernels::transpose_f32_hwy(keys_ + head_offset, kp_stride, keys, dh, kt, padded);
        for (size_t t = 0; t < dh; ++t) std::fill(kt + t * padded + keys, kt + (t + 1) * padded, 0.0f);
        uint32_t* vp = packed_ + h * packed_stride_;
        kernels::attention_bf16_pack_values(values_ + head_offset, kp_stride, keys, dh, vp,
                                            reinterpret_cast<float*>(vp + packed_stride_ - dh));
        continue;
      }
#endif
      kernels::transpose_f32_hwy(keys_ + head_offset, kp_stride, keys, dh, keys_t_ + h * dh * keys, keys);
      head_keys_ready(h, keys, values_ + head_offset, kp_stride);
    }
  });
  s.lap(LINFER_OP_ATTENTION, t);
}

size_t SoftmaxAttention::kv_head(const EncoderConfig& c, size_t h) const {
  return per_head_ || c.kv_heads > 1 ? h : 0;  // kv_heads is 1 or num_heads here
}

// Softmax attention of head h over `keys` keys (see make_keys) for query rows q (row stride
// heads * head_dim) into o (same layout).
kernels::AttentionHeadArgs SoftmaxAttention::attention_head_args(const LayerContext& s, size_t h, size_t keys,
                                                                 const float* q, float* o) const {
  const EncoderConfig& c = s.config();
  const size_t dh = c.head_dim, HD = c.num_heads * dh, kvh = c.kv_heads;
  const bool per_head = per_head_;
  const size_t kv = kv_head(c, h);
  kernels::AttentionHeadArgs a;
  a.q = q + h * dh;
  a.q_stride = HD;
  a.kt = keys_t_ + kv * dh * keys;
  a.kt_stride = keys;
  a.v = values_ + (per_head ? kv * keys * dh : kv * dh);
  a.v_stride = per_head ? dh : kvh * dh;
  a.o = o + h * dh;
  a.o_stride = HD;
  a.head_dim = dh;
  a.keys = keys;
  a.scale = 1.0f / std::sqrt(float(dh));
  return a;
}

void SoftmaxAttention::attention_rows(LayerContext& s, size_t h, size_t keys, const float* q, float* o, size_t rows,
                                      size_t worker, KeyWindow window, size_t first_row) {
#if defined(__x86_64__)
  if (bf16_ && window.radius == 0) {  // (a kind that takes bf16 has no key spans)
    const EncoderConfig& c = s.config();
    const size_t dh = c.head_dim, HD = c.num_heads * dh, kv = kv_head(c, h),
                 padded = kernels::attention_bf16_padded_keys(keys);
    const uint32_t* vp = packed_ + kv * packed_stride_;
    const kernels::AttentionBf16Args a{q + h * dh,
                                       HD,
                                       keys_t_ + kv * dh * padded,
                                       padded,
                                       vp,
                                       reinterpret_cast<const float*>(vp + packed_stride_ - dh),
                                       o + h * dh,
                                       HD,
                                       dh,
                                       keys,
                                       1.0f / std::sqrt(float(dh))};
    kernels::attention_bf16_avx512(a, 0, rows, scratch_ + worker * scratch_stride_);
    return;
  }
#endif
  kernels::AttentionHeadArgs a = attention_head_args(s, h, keys, q, o);
  a.windowed = window.radius > 0;
  a.window_radius = window.radius;
  a.global_keys = window.global_keys;
  a.first_row = first_row;
  kernels::attention_f32_hwy(a, 0, rows, scratch_ + worker * scratch_stride_);
}

}  // namespace linfer::rt
