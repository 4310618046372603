// SPDX-License-Identifier: Apache-2.0
// LSH attention (Reformer; lucidrains' reformer-pytorch LSHAttention in eval mode, its rotations
// fixed in the file; docs/format.md): the queries double as keys. In each hashing round every
// head's rows are hashed (argmax over [x R, -x R] with the round's first lsh_half_buckets(T)
// rotation columns, on the rows before their rotary positions, as upstream) and sorted by
// (bucket, position); each chunk of bucket_size sorted rows attends to itself and to the chunk
// before it (round r's first chunk to round r - 1's last, round 0's to the last round's), against
// the normalised keys. The rounds' outputs are merged with weights softmax(their log-sum-exps): a
// running max and sum per row and head, rounds one after the other (each row is in one chunk of a
// round, so a round's chunks run in parallel). (The format keeps lsh_half_buckets: the rotations'
// shape depends on it.)
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention/attention_kind.h"
#include "attention/lsh.h"  // kernels/attention/: its kernels
#include "linfer/format/kinds/lsh.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {

// Each round's T sorted rows are cut into lsh_chunks(T) chunks of bucket_size rows (the last one
// possibly shorter).
size_t lsh_chunks(const EncoderConfig& c, size_t T) {
  return lsh_fields(c).bucket_size ? (T + lsh_fields(c).bucket_size - 1) / lsh_fields(c).bucket_size : 0;
}
// Score of a row against itself (reformer-pytorch's TOKEN_SELF_ATTN_VALUE: a row attends to
// itself only when nothing else is left).
constexpr float kLshSelfScore = -5e4f;
// Rows per block of the hash (their rotated values in the thread's scratch).
constexpr size_t kLshHashRows = 16;
// 32-bit words of a thread's index scratch (a round's buckets of T rows and their counts, the
// positions of the two gathered chunks).
uint64_t lsh_index_words(const EncoderConfig& c, uint64_t T) {
  return T + 2 * lsh_half_buckets(c, T) + 1 + 2 * uint64_t(lsh_fields(c).bucket_size);
}
// Floats of one gathered chunk in a thread's scratch (its rows' queries [b x dh], normalised keys
// transposed [dh x b] and values [b x dh]).
uint64_t lsh_slot_floats(const EncoderConfig& c) { return 3 * uint64_t(lsh_fields(c).bucket_size) * c.head_dim; }

class LshAttention final : public AttentionModule {
 public:
  Status plan(AttentionPlanning& p) override;
  void bind(const Arena& arena) override {
    values_ = arena.at(values_buf_);
    scratch_ = arena.at(scratch_buf_);
    sorted_rows_ = arena.at<uint32_t>(sorted_rows_buf_);
    round_max_sum_ = arena.at(round_max_sum_buf_);
    bucket_index_ = arena.at<uint32_t>(bucket_index_buf_);
  }
  Status prepare_layers(const LayerContext& s) override { return prepare_kv_layers(s, false, true); }
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override;
  Status can_step(const EncoderConfig&) const override {
    return invalid_argument(
        "token-by-token runs are not defined for lsh attention: a row's buckets and chunk depend on the "
        "whole input, also when causal");
  }

 private:
  void lsh_sort(const LayerContext& s, const WeightView& rotations, size_t T, size_t h, size_t round, size_t worker);
  // The two chunks a thread's scratch holds (rows gathered), to reuse the chunk before the next.
  struct LshSlots {
    size_t head = SIZE_MAX, chunk[2] = {SIZE_MAX, SIZE_MAX};
  };
  void lsh_chunk(const LayerContext& s, size_t T, size_t h, size_t round, size_t c, size_t worker, LshSlots& slots);
  void lsh_gather(const LayerContext& s, size_t T, size_t h, size_t global_chunk, size_t worker, size_t slot);

  size_t scratch_stride_ = 0, max_len_ = 0;
  ArenaBuffer values_buf_, scratch_buf_, sorted_rows_buf_, round_max_sum_buf_, bucket_index_buf_;
  float* values_ = nullptr;           // V of every row (the queries are the keys: no K)
  float* scratch_ = nullptr;          // per thread: a hash block's rotated values, or the gathered chunks
  uint32_t* sorted_rows_ = nullptr;   // per head and round, the rows in bucket order
  float* round_max_sum_ = nullptr;    // per head, the rounds' running log-sum-exp max, then sum
  uint32_t* bucket_index_ = nullptr;  // per thread, buckets and counts, chunk positions
};

Status LshAttention::plan(AttentionPlanning& p) {
  const EncoderConfig& c = p.model.desc.config;
  const uint64_t T = p.plan.max_len, R = T + c.num_global_tokens, threads = p.plan.threads;
  max_len_ = p.plan.max_len;
  // The larger of a hash block's rotated values and the chunk attention's: two gathered chunks
  // (a chunk and the one before it), o [b x dh], lse, and the kernel's scores.
  const uint64_t b = lsh_fields(c).bucket_size, dh = c.head_dim;
  const uint64_t hash = kLshHashRows * lsh_half_buckets(c, T);
  const uint64_t chunk = 2 * lsh_slot_floats(c) + b * dh + b + kernels::lsh_chunk_scratch_floats(b, 2 * b);
  scratch_stride_ = std::max(hash, chunk) + 16;
  const int at = kStepKeyInputs, last = kStepAttention;  // the whole sublayer
  values_buf_ = p.arena.floats(R * c.kv_heads * dh, at, last);
  scratch_buf_ = p.arena.floats(threads * scratch_stride_, at, last);
  // Per head and round the sorted rows; per head and row the rounds' running max and sum.
  sorted_rows_buf_ = p.arena.request(uint64_t(c.num_heads) * lsh_fields(c).num_hashes * T * 4, at, last);
  round_max_sum_buf_ = p.arena.floats(2 * uint64_t(c.num_heads) * T, at, last);
  bucket_index_buf_ = p.arena.request(threads * lsh_index_words(c, T) * 4, at, last);
  return {};
}

bool LshAttention::run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = s.config();
  const size_t H = c.num_heads, dh = c.head_dim, HD = H * dh, rounds = lsh_fields(c).num_hashes,
               chunks = lsh_chunks(c, T);
  if (!s.run_dense(layer.q, T, in, s.queries()) || !s.run_dense(kv_[layer.index].v[0], T, in, values_)) return false;
  auto t = s.now();
  s.workers().balanced_ranges(H * rounds, 1, 1, [&](size_t b, size_t e, size_t worker) {
    for (size_t item = b; item < e; ++item)
      lsh_sort(s, layer.w.kind_tensors[LshTensors::kRotations], T, item / rounds, item % rounds, worker);
  });
  s.lap(LINFER_OP_ATTENTION, t);
  s.rotate(s.queries(), T, H);
  t = s.now();
  for (size_t r = 0; r < rounds; ++r)
    // A range's items are consecutive chunks: each one's rows serve the next (so two at least).
    s.workers().balanced_ranges(H * chunks, 1, 2, [&](size_t b, size_t e, size_t worker) {
      LshSlots slots;
      for (size_t item = b; item < e; ++item) lsh_chunk(s, T, item / chunks, r, item % chunks, worker, slots);
    });
  const float* sum = round_max_sum_ + H * max_len_;
  float* const attn = s.attention_out();
  s.workers().ranges(T, 16, [&](size_t b, size_t e, size_t) {
    for (size_t i = b; i < e; ++i)
      for (size_t h = 0; h < H; ++h) {
        const float inv = 1.0f / sum[h * max_len_ + i];
        for (size_t j = 0; j < dh; ++j) attn[i * HD + h * dh + j] *= inv;
      }
  });
  s.lap(LINFER_OP_ATTENTION, t);
  return s.run_dense(layer.out, T, s.attention_out(), residual, true);
}

// Head h, round `round`: buckets of the T rows, then the rows sorted by (bucket, position) into
// sorted_rows_ (a counting sort: ascending positions within a bucket).
void LshAttention::lsh_sort(const LayerContext& s, const WeightView& rotations, size_t T, size_t h, size_t round,
                            size_t worker) {
  const EncoderConfig& c = s.config();
  const size_t dh = c.head_dim, HD = size_t(c.num_heads) * dh, half = lsh_half_buckets(c, T),
               table_half = lsh_half_buckets(c, c.max_seq_len), n = max_len_;
  float* rotated = scratch_ + worker * scratch_stride_;  // [kLshHashRows x half]
  uint32_t* bucket = bucket_index_ + worker * lsh_index_words(c, n);
  uint32_t* start = bucket + n;                                    // 2 half + 1 bucket starts
  const float* R = f32_data(rotations) + round * dh * table_half;  // [dh x table_half]
  const float* q = s.queries();
  for (size_t i0 = 0; i0 < T; i0 += kLshHashRows) {
    const size_t rows = std::min(kLshHashRows, T - i0);
    kernels::gemm_f32_hwy(rows, half, dh, q + i0 * HD + h * dh, HD, R, table_half, rotated, half);
    for (size_t i = 0; i < rows; ++i) {  // argmax over [y, -y], the first of equal maxima
      const float* y = rotated + i * half;
      float best = y[0];
      uint32_t arg = 0;
      for (size_t j = 1; j < half; ++j)
        if (y[j] > best) best = y[j], arg = uint32_t(j);
      for (size_t j = 0; j < half; ++j)
        if (-y[j] > best) best = -y[j], arg = uint32_t(half + j);
      bucket[i0 + i] = arg;
    }
  }
  std::fill(start, start + 2 * half + 1, 0u);
  for (size_t i = 0; i < T; ++i) ++start[bucket[i] + 1];
  for (size_t k = 1; k <= 2 * half; ++k) start[k] += start[k - 1];
  uint32_t* sorted = sorted_rows_ + (h * lsh_fields(c).num_hashes + round) * n;
  for (size_t i = 0; i < T; ++i) sorted[start[bucket[i]]++] = uint32_t(i);
}

// Gathers the rows of global chunk g (round g / chunks) of head h into slot `slot` of worker
// `worker`'s scratch: their queries, keys normalised as F.normalize does (x / max(|x|, 1e-12))
// and transposed, values, positions.
void LshAttention::lsh_gather(const LayerContext& s, size_t T, size_t h, size_t g, size_t worker, size_t slot) {
  const EncoderConfig& c = s.config();
  const size_t dh = c.head_dim, HD = size_t(c.num_heads) * dh, n = max_len_, b = lsh_fields(c).bucket_size,
               chunks = lsh_chunks(c, T), first = (g % chunks) * b, rows = std::min(b, T - first),
               vh = c.kv_heads == 1 ? 0 : h, v_stride = size_t(c.kv_heads) * dh;
  const uint32_t* sorted = sorted_rows_ + (h * lsh_fields(c).num_hashes + g / chunks) * n + first;
  float* q = scratch_ + worker * scratch_stride_ + slot * lsh_slot_floats(c);
  float* kt = q + b * dh;  // [dh x rows]
  float* v = kt + b * dh;
  uint32_t* pos = bucket_index_ + worker * lsh_index_words(c, n) + n + 2 * lsh_half_buckets(c, n) + 1 + slot * b;
  const float* queries = s.queries();
  for (size_t i = 0; i < rows; ++i) {
    const uint32_t p = sorted[i];
    pos[i] = p;
    const float* x = queries + p * HD + h * dh;
    std::memcpy(q + i * dh, x, dh * sizeof(float));
    std::memcpy(v + i * dh, values_ + p * v_stride + vh * dh, dh * sizeof(float));
    float sq = 0.0f;
    for (size_t j = 0; j < dh; ++j) sq += x[j] * x[j];
    const float inv = 1.0f / std::max(std::sqrt(sq), 1e-12f);
    for (size_t j = 0; j < dh; ++j) kt[j * rows + i] = x[j] * inv;
  }
}

// Head h, round `round`, chunk c of it: the chunk's rows against its own and the previous chunk's
// keys (lsh_chunk_f32_hwy), merged into the attention output and the head's running max and sum.
void LshAttention::lsh_chunk(const LayerContext& s, size_t T, size_t h, size_t round, size_t c, size_t worker,
                             LshSlots& slots) {
  const EncoderConfig& cfg = s.config();
  const size_t dh = cfg.head_dim, HD = size_t(cfg.num_heads) * dh, n = max_len_, b = lsh_fields(cfg).bucket_size,
               chunks = lsh_chunks(cfg, T), all = lsh_fields(cfg).num_hashes * chunks, own = round * chunks + c,
               prev = (own + all - 1) % all;
  if (slots.head != h) slots = LshSlots{h, {SIZE_MAX, SIZE_MAX}};
  // The slot of each chunk: kept when a slot holds it, else gathered into one the other does not use.
  size_t own_slot = slots.chunk[0] == own ? 0 : slots.chunk[1] == own ? 1 : SIZE_MAX;
  if (own_slot == SIZE_MAX) {
    own_slot = slots.chunk[0] == prev ? 1 : 0;
    lsh_gather(s, T, h, own, worker, own_slot);
    slots.chunk[own_slot] = own;
  }
  size_t prev_slot = slots.chunk[0] == prev ? 0 : slots.chunk[1] == prev ? 1 : SIZE_MAX;
  if (prev_slot == SIZE_MAX) {
    prev_slot = 1 - own_slot;
    lsh_gather(s, T, h, prev, worker, prev_slot);
    slots.chunk[prev_slot] = prev;
  }
  float* scratch = scratch_ + worker * scratch_stride_;
  const uint32_t* positions = bucket_index_ + worker * lsh_index_words(cfg, n) + n + 2 * lsh_half_buckets(cfg, n) + 1;
  auto keys_of = [&](size_t slot, size_t g) {
    const float* q = scratch + slot * lsh_slot_floats(cfg);
    return kernels::LshKeys{q + b * dh, q + 2 * b * dh, positions + slot * b, std::min(b, T - (g % chunks) * b)};
  };
  const kernels::LshKeys own_keys = keys_of(own_slot, own), prev_keys = keys_of(prev_slot, prev);
  const size_t rows = own_keys.count;
  float* o = scratch + 2 * lsh_slot_floats(cfg);
  float* lse = o + b * dh;
  float* scores = lse + b;
  const kernels::LshChunkArgs args{scratch + own_slot * lsh_slot_floats(cfg),
                                   own_keys.pos,
                                   {own_keys, prev_keys},
                                   rows,
                                   dh,
                                   1.0f / std::sqrt(float(dh)),
                                   kLshSelfScore,
                                   cfg.causal == CausalMode::Causal,
                                   o,
                                   lse};
  kernels::lsh_chunk_f32_hwy(args, scores);
  float* max = round_max_sum_ + h * n;
  float* sum = round_max_sum_ + (cfg.num_heads + h) * n;
  float* const attn = s.attention_out();
  for (size_t i = 0; i < rows; ++i) {
    const size_t p = own_keys.pos[i];
    float* acc = attn + p * HD + h * dh;
    const float* oi = o + i * dh;
    if (round == 0) {
      std::memcpy(acc, oi, dh * sizeof(float));
      max[p] = lse[i];
      sum[p] = 1.0f;
      continue;
    }
    const float m = std::max(max[p], lse[i]), keep = std::exp(max[p] - m), add = std::exp(lse[i] - m);
    for (size_t t = 0; t < dh; ++t) acc[t] = acc[t] * keep + oi[t] * add;
    sum[p] = sum[p] * keep + add;
    max[p] = m;
  }
}

uint64_t lsh_layer_flops(const EncoderConfig& c, uint64_t T) {
  // V (the queries are the keys); per round the hash (T rows against the half-bucket rotation
  // columns: y = x R, -y is free) and each row against its chunk and the one before (scores, P V).
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, dh = c.head_dim, KV = uint64_t(c.kv_heads) * dh;
  const uint64_t half = lsh_half_buckets(c, T), b = lsh_fields(c).bucket_size, rounds = lsh_fields(c).num_hashes;
  uint64_t flops = 2 * T * D * KV;
  flops += rounds * (2 * T * dh * half * c.num_heads + 2 * 2 * T * std::min<uint64_t>(2 * b, 2 * T) * HD);
  return flops;
}

}  // namespace

extern const AttentionKindInfo kLshAttention = {AttentionKind::Lsh,
                                                [] { return std::unique_ptr<AttentionModule>(new LshAttention()); },
                                                lsh_layer_flops, nullptr, nullptr};

}  // namespace linfer::rt
