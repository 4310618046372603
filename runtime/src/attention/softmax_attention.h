// SPDX-License-Identifier: Apache-2.0
// What the softmax kinds share: keys and values of every row (or of the k rows a sequence
// projection compresses them to) per distinct K/V head, the keys transposed per head so that
// the scores vectorise over the keys, and the f32 attention kernel over blocks
// of query rows, with a window where the kind has one. Each kind's module derives from it.
#pragma once

#include <cstddef>

#include "attention/attention_kind.h"
#include "kernels.h"

namespace linfer::rt {

class SoftmaxAttention : public AttentionModule {
 public:
  // Keys of every row (T plus the added rows) per kv head, their transposes, the scratch over
  // them; K and V dense layers with their biases. (A kind with a sequence projection plans and
  // prepares its own.)
  Status plan(AttentionPlanning& p) override;
  Status prepare_layers(const LayerContext& s) override { return prepare_kv_layers(s, true, true); }
  void bind(const Arena& arena) override;
  bool prepare_rows(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) override;
  void attend_rows(LayerContext& s, const float* q, float* attn, size_t rows, size_t first_row, size_t worker) override;
  std::string describe() const override { return bf16_ ? "bf16 values (attention_bf16_avx512)" : ""; }

 protected:
  // The keys a query row sees: every key (radius 0), or (a window) the keys within radius of the
  // row's position and the first global_keys.
  struct KeyWindow {
    size_t radius, global_keys;  // (no member initializers: `= {}` below value-initializes to 0)
  };

  // Plan: keys and values (`keys` rows per distinct head, `heads` of them), the keys transposed
  // (unless transposed is false), and the per-thread scratch of the f32 kernel over `keys` keys.
  // K, V and K^T, alive over steps [first, last] (ArenaStep; by default the whole sublayer).
  void request_keys(AttentionPlanning& p, uint64_t keys, uint64_t heads, bool transposed = true,
                    int first = kStepKeyInputs, int last = kStepAttention);
  void request_scratch(AttentionPlanning& p, size_t floats_per_thread);
  size_t scratch_floats(uint64_t keys, const EncoderConfig& c) const;

  // Keys and values into keys_ / values_ (all T rows: K and V dense layers, keys rotated), each
  // K head transposed into keys_t_. Returns the number of keys, 0 if a dense layer failed.
  virtual size_t make_keys(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T);
  // keys_ transposed per distinct head into keys_t_ (and head_keys_ready for each head).
  void prepare_keys(LayerContext& s, size_t keys);
  virtual void head_keys_ready(size_t /*s*/, size_t /*keys*/, const float* /*v*/, size_t /*v_stride*/) {}
  // Q (rotated), the keys, every head over every key, the output projection.
  bool run_softmax(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual);
  // Softmax attention of every head for query rows [row_begin, row_end) of the session's queries
  // into its attention output, (head, block of rows) items across threads.
  void attention_items(LayerContext& s, size_t keys, size_t row_begin, size_t row_end, KeyWindow window = {});
  kernels::AttentionHeadArgs attention_head_args(const LayerContext& s, size_t head, size_t keys, const float* q,
                                                 float* o) const;
  // The distinct K/V head (make_keys' s) that query head h reads.
  size_t kv_head(const EncoderConfig& c, size_t h) const;
  // Softmax attention of head h for `rows` query rows of q into o (both row stride heads x
  // head_dim, pointing at row 0 of the block) on the f32 kernel; worker: the thread's scratch. A
  // window needs the block's first row.
  virtual void attention_rows(LayerContext& s, size_t h, size_t keys, const float* q, float* o, size_t rows,
                              size_t worker, KeyWindow window = {}, size_t first_row = 0);

  // Whether this kind takes the bf16 values' kernel where it applies (bf16_attention in
  // softmax_attention.cc): the full kind's, whose rows have no window and no key spans.
  virtual bool takes_bf16() const { return false; }

  bool per_head_ = false;      // a K/V head per query head (per-head sequence projections)
  bool bf16_ = false;          // V packed as bf16 pairs, K^T padded: the bf16 values' kernel
  KeyWindow row_window_ = {};  // the row pipeline's window (a window without global rows)
  size_t scratch_stride_ = 0;  // floats of scratch per thread
  size_t row_keys_ = 0;        // the row pipeline's keys in this layer (prepare_rows)
  ArenaBuffer keys_buf_, values_buf_, keys_t_buf_, scratch_buf_;
  float* keys_ = nullptr;     // K (or K'), row stride per_head_ ? head_dim : kv_heads x head_dim
  float* values_ = nullptr;   // V (or V'), the same layout
  float* keys_t_ = nullptr;   // per distinct head, its keys transposed [head_dim x keys]
  float* scratch_ = nullptr;  // per thread, scratch_stride_ floats
  ArenaBuffer packed_buf_;
  uint32_t* packed_ = nullptr;  // bf16 values: per distinct head, packed_stride_ words
  size_t packed_stride_ = 0;    // words per head: V's bf16 pairs, then its means
};

}  // namespace linfer::rt
