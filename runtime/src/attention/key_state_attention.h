// SPDX-License-Identifier: Apache-2.0
// What the kinds with a key state share (softmax's exp replaced by a feature map, so that the
// keys sum into a state): Q, K and V of every row, a key state per kv head built from the keys
// and values, each query row read against it. Bidirectional: the
// state of all T keys, then (head, block of rows) items across threads. Causal: row i adds its
// key to the state and then reads it, so it sees rows j <= i only; the state is kept per layer so
// that token-by-token runs continue where the last call stopped. Kind supplies the state's size,
// its reset, add_keys and apply (each such kind's module), chosen at compile time.
#pragma once

#include <algorithm>

#include "attention/attention_kind.h"

namespace linfer::rt {

template <class Kind>
class KeyStateAttention : public AttentionModule {
 public:
  Status plan(AttentionPlanning& p) override {
    const EncoderConfig& c = p.model.desc.config;
    const uint64_t R = p.plan.max_len + c.num_global_tokens, S = c.kv_heads, dh = c.head_dim;
    kind_.configure(c);
    state_floats_ = kind_.state_floats(c);
    scratch_stride_ = kind_.scratch_floats(c) + 16;
    const int at = kStepKeyInputs, last = kStepAttention;  // the whole sublayer
    keys_buf_ = p.arena.floats(R * S * dh, at, last);
    values_buf_ = p.arena.floats(R * S * dh, at, last);
    scratch_buf_ = p.arena.floats(p.plan.threads * scratch_stride_, at, last);
    key_state_buf_ = p.arena.floats(S * state_floats_, at, last);  // per kv head
    if (c.causal == CausalMode::Causal)                            // kept from run to run (token-by-token)
      carried_state_buf_ = p.arena.floats(uint64_t(c.num_layers) * S * state_floats_, kStepEmbed, kStepHead);
    num_layers_ = c.num_layers;
    kv_heads_ = c.kv_heads;
    return {};
  }
  void bind(const Arena& arena) override {
    keys_ = arena.at(keys_buf_);
    values_ = arena.at(values_buf_);
    scratch_ = arena.at(scratch_buf_);
    key_state_ = arena.at(key_state_buf_);
    carried_state_ = arena.at(carried_state_buf_);
  }
  Status prepare_layers(const LayerContext& s) override { return prepare_kv_layers(s, true, true); }

  Status can_step(const EncoderConfig& c) const override {
    if (c.causal != CausalMode::Causal) return AttentionModule::can_step(c);
    return kind_.can_step(c);
  }
  void start_sequence() override {  // a fresh sequence: the carried state starts empty
    for (size_t i = 0; i < size_t(num_layers_) * kv_heads_; ++i) kind_.reset(carried_state_ + i * state_floats_);
  }

  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override {
    const EncoderConfig& c = s.config();
    if (!s.run_dense(layer.q, T, in, s.queries())) return false;
    s.rotate(s.queries(), T, c.num_heads);
    const KvLayers& kv = kv_[layer.index];
    if (!s.run_dense(kv.k[0], T, in, keys_) || !s.run_dense(kv.v[0], T, in, values_)) return false;
    s.rotate(keys_, T, c.kv_heads);
    const auto t = s.now();
    attend(s, layer.w, T, layer.index);
    s.lap(LINFER_OP_ATTENTION, t);
    return s.run_dense(layer.out, T, s.attention_out(), residual, true);
  }

 private:
  // Over the session's queries, keys_ and values_ (T rows) into its attention output.
  void attend(LayerContext& s, const LayerWeights& w, size_t T, size_t layer) {
    const EncoderConfig& c = s.config();
    const size_t H = c.num_heads, dh = c.head_dim, HD = H * dh, kvh = c.kv_heads, KV = kvh * dh;
    const size_t heads_per_kv = H / kvh, state_floats = state_floats_;
    const typename Kind::Params params = kind_.params(c, w);
    float* const queries = s.queries();
    float* const attn = s.attention_out();
    auto add_keys = [&](float* S, size_t r0, size_t rows, size_t h, float* scratch) {
      kind_.add_keys(params, keys_ + r0 * KV + h * dh, KV, values_ + r0 * KV + h * dh, KV, rows, dh, S, scratch);
    };
    auto apply = [&](const float* S, size_t r0, size_t rows, size_t h, float* scratch) {
      kind_.apply(params, queries + r0 * HD + h * dh, HD, rows, dh, S, attn + r0 * HD + h * dh, HD, scratch);
    };
    if (c.causal == CausalMode::Causal) {
      // The state is kept per layer so that step() can continue where the last call stopped.
      float* carried = carried_state_ + layer * kvh * state_floats;
      const bool stepping = s.stepping();
      s.workers().balanced_ranges(kvh, 1, 1, [&](size_t b, size_t e, size_t worker) {
        float* scratch = scratch_ + worker * scratch_stride_;
        for (size_t h = b; h < e; ++h) {
          float* S = carried + h * state_floats;
          if (!stepping) kind_.reset(S);
          kind_.start_causal(params, S, keys_ + h * dh, KV, T, scratch);
          for (size_t i = 0; i < T; ++i) {
            add_keys(S, i, 1, h, scratch);
            for (size_t q = h * heads_per_kv; q < (h + 1) * heads_per_kv; ++q) apply(S, i, 1, q, scratch);
          }
        }
      });
      return;
    }
    s.workers().balanced_ranges(kvh, 1, 1, [&](size_t b, size_t e, size_t worker) {
      for (size_t h = b; h < e; ++h) {
        float* S = key_state_ + h * state_floats;
        kind_.reset(S);
        add_keys(S, 0, T, h, scratch_ + worker * scratch_stride_);
      }
    });
    const size_t block = 32, blocks = (T + block - 1) / block;
    s.workers().balanced_ranges(H * blocks, 1, 1, [&](size_t b, size_t e, size_t worker) {
      float* scratch = scratch_ + worker * scratch_stride_;
      for (size_t item = b; item < e; ++item) {
        const size_t h = item / blocks, r0 = (item % blocks) * block;
        apply(key_state_ + (h / heads_per_kv) * state_floats, r0, std::min(block, T - r0), h, scratch);
      }
    });
  }

  Kind kind_;
  size_t state_floats_ = 0, scratch_stride_ = 0;
  uint32_t num_layers_ = 0, kv_heads_ = 0;
  ArenaBuffer keys_buf_, values_buf_, scratch_buf_, key_state_buf_, carried_state_buf_;
  float* keys_ = nullptr;           // K of every row
  float* values_ = nullptr;         // V of every row
  float* scratch_ = nullptr;        // per thread, scratch_stride_ floats
  float* key_state_ = nullptr;      // bidirectional: the state per kv head
  float* carried_state_ = nullptr;  // causal: the state per layer and kv head, kept between runs
};

}  // namespace linfer::rt
