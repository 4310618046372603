// The attention kinds: Linformer (compressed keys), full softmax, linear (elu+1, bidirectional
// or causal), GiveTake (learned tokens), Performer, sliding window (Longformer), block sparse
// (BigBird) and LSH (Reformer).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "session.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {
const float* f32(const WeightView& w) { return static_cast<const float*>(w.data); }
}  // namespace

// comp rows [row_begin, row_end) = E[rows, :T] X, for rows of the stacked [G*k x n] projection E
// (rowsum: their sums over the first T columns, when asked). An f32 E is read in place; f16 and
// int8 rows are widened kProjRowsPerStep at a time into the thread's scratch (chunk), a cost of
// one conversion per multiply-add row of D.
void Session::compress(const WeightView& E, const float* in, size_t T, float* comp, size_t row_begin,
                       size_t row_end, float* rowsum, size_t chunk) {
  const size_t D = cfg_.dim, n = cfg_.max_seq_len;
  if (E.dtype == DType::F32) {
    kernels::gemm_f32_hwy(row_end - row_begin, D, T, f32(E) + row_begin * n, n, in, D, comp + row_begin * D, D);
    if (rowsum)
      for (size_t r = row_begin; r < row_end; ++r) rowsum[r] = kernels::sum_f32_hwy(f32(E) + r * n, T);
    return;
  }
  float* rows = buf_.proj_rows + chunk * kProjRowsPerStep * n;
  for (size_t r0 = row_begin; r0 < row_end; r0 += kProjRowsPerStep) {
    const size_t m = std::min(kProjRowsPerStep, row_end - r0);
    for (size_t i = 0; i < m; ++i) widen_weight_row(E, uint32_t(r0 + i), T, 1.0f, rows + i * T);
    kernels::gemm_f32_hwy(m, D, T, rows, T, in, D, comp + r0 * D, D);
    if (rowsum)
      for (size_t i = 0; i < m; ++i) rowsum[r0 + i] = kernels::sum_f32_hwy(rows + i * T, T);
  }
}

// The same products for int8 projections, on the int8 dense kernel: comp = E X is a dense layer
// whose input rows are E's (int8 already: only copied into the kernel's form) and whose weights
// are X's columns, quantized one scale per column (the activations' per-channel ranges) and
// packed into panels per run. Two parallel regions: the packing and the copies (items of 16
// columns or 16 rows), then the products (rows split at kRowQuantum, as every dense layer).
void Session::compress_int8(const WeightView* const E[2], size_t projections, const float* in, size_t T,
                            float* const comp[2], float* const rowsum[2]) {
  const size_t D = cfg_.dim, rows = cfg_.projection_groups() * cfg_.proj_len, stride = plan_.comp_q_stride;
  const kernels::DenseKernel& kernel = plan_.kernel_for(DType::I8);
  const size_t panels = panel_count(uint32_t(D)), row_items = (projections * rows + 15) / 16;
  auto prepare = [&](size_t item) {
    if (item < panels) {
      kernels::pack_columns_int8_hwy(in, D, T, D, item * 16, std::min(D, item * 16 + 16), buf_.comp_panels,
                                     buf_.comp_scales, buf_.comp_sums);
      return;
    }
    for (size_t r = (item - panels) * 16; r < std::min(projections * rows, (item - panels + 1) * 16); ++r) {
      const WeightView& w = *E[r / rows];
      const size_t row = r % rows;
      int32_t sum = 0;
      float* s = rowsum[r / rows];
      kernels::int8_rows_to_input(kernel, static_cast<const int8_t*>(w.data) + row * w.shape.back(), 0, 1, T,
                                  buf_.comp_rows + r * stride, stride, s ? &sum : nullptr);
      if (s) s[row] = float(sum) * w.scales[row];
    }
  };
  workers_.chunks(panels + row_items, prepare);
  const kernels::DenseWeights x_columns{DType::I8, T, D, buf_.comp_panels, buf_.comp_scales, buf_.comp_sums, nullptr};
  workers_.ranges(projections * rows, kRowQuantum, [&](size_t b, size_t e, size_t) {
    for (size_t kv = 0; kv < projections; ++kv) {
      const size_t lo = std::max(b, kv * rows), hi = std::min(e, (kv + 1) * rows);
      if (lo >= hi) continue;
      const kernels::DenseInput input{nullptr, 0, buf_.comp_rows + lo * stride, stride,
                                      E[kv]->scales + (lo - kv * rows)};
      kernel.run(x_columns, input, hi - lo, comp[kv] + (lo - kv * rows) * D, D, 0, D, {});
    }
  });
}

// Linformer keys and values: K' = E X W_k^T (+ biases), V' likewise, k rows per group.
bool Session::linformer_kv(const LayerWeights& w, LayerOps& ops, const float* in, size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads, k = c.proj_len,
               G = c.projection_groups();
  const bool per_head = G > 1;

  // Compress the input along the sequence first: comp = E[:, :T] X (k x D per group). K and V
  // are then projected on k rows instead of T (the reassociation E (X W) = (E X) W).
  const bool layerwise = c.projection_sharing == ProjectionSharing::Layerwise;
  const WeightView& E = layerwise ? model_->desc.shared_proj : w.proj_k;
  const WeightView& Eb = layerwise ? model_->desc.shared_proj_bias : w.proj_k_bias;
  const bool separate_v = c.has_separate_proj_v();
  const WeightView& Fv = separate_v ? w.proj_v : E;
  const WeightView& Fb = separate_v ? w.proj_v_bias : Eb;
  // With placement "after", a K/V bias b reaches the compressed rows as rowsum(E)[r] * b.
  const bool after = c.projection_placement == ProjectionPlacement::After;
  const bool bias_through[2] = {after && w.k.bias.present(), after && w.v.bias.present()};
  auto t = now();
  const size_t rows = G * k;  // all groups' compressed rows
  // E's rows, then F's when separate, as one range split across threads (one parallel region).
  // Row r of group g is row (g*k + r) of the stacked [G*k x n] projection.
  auto need_sum = [&](int kv) { return bias_through[kv] || (!separate_v && bias_through[1]); };
  if (plan_.int8_compression) {
    const WeightView* const proj[2] = {&E, &Fv};
    float* const comp[2] = {buf_.comp_k, buf_.comp_v};
    float* const sums[2] = {need_sum(0) ? buf_.rowsum : nullptr, need_sum(1) ? buf_.rowsum + rows : nullptr};
    compress_int8(proj, separate_v ? 2 : 1, in, T, comp, sums);
  } else {
    workers_.ranges((separate_v ? 2 : 1) * rows, kProjRowsPerStep, [&](size_t b, size_t e, size_t chunk) {
      for (int kv = 0; kv < 2; ++kv) {
        const size_t lo = std::max(b, kv * rows), hi = std::min(e, (kv + 1) * rows);
        if (lo >= hi) continue;
        compress(kv == 0 ? E : Fv, in, T, kv == 0 ? buf_.comp_k : buf_.comp_v, lo - kv * rows, hi - kv * rows,
                 need_sum(kv) ? buf_.rowsum + kv * rows : nullptr, chunk);
      }
    });
  }
  lap(LINFER_OP_COMPRESS, t);
  const float* comp_v = separate_v ? buf_.comp_v : buf_.comp_k;
  const float* rowsum_v = buf_.rowsum + (separate_v ? rows : 0);

  // K' and V' = comp W^T (+ bias), per group.
  const size_t kp_stride = per_head ? dh : kvh * dh;  // row stride of K'/V'
  for (int kv = 0; kv < 2; ++kv) {
    const float* comp = kv == 0 ? buf_.comp_k : comp_v;
    float* dst = kv == 0 ? buf_.kp : buf_.vp;
    std::vector<DenseLayer>& list = kv == 0 ? ops.k : ops.v;
    if (!per_head) {
      if (!run_dense(list[0], k, comp, dst)) return false;
    } else {
      for (size_t h = 0; h < H; ++h)
        if (!run_dense(list[kvh == 1 ? 0 : h], k, comp + h * k * D, dst + h * k * dh)) return false;
    }
    // Biases the dense layer did not add: through E (rowsum(E)[r] * b) and E's own (p[r]).
    const WeightView& pb = kv == 0 ? Eb : Fb;
    if (!bias_through[kv] && !pb.present()) continue;
    t = now();
    const float* b = bias_through[kv] ? f32(kv == 0 ? w.k.bias : w.v.bias) : nullptr;
    const float* s = bias_through[kv] ? (kv == 0 ? buf_.rowsum : rowsum_v) : nullptr;
    for (size_t g = 0; g < G; ++g) {
      // This group's K'/V' rows, its columns, and the slice of b they take.
      const size_t cols = per_head ? dh : kvh * dh;
      const float* bg = b && per_head && kvh > 1 ? b + g * dh : b;
      kernels::add_rank1_f32_hwy(dst + (per_head ? g * k * dh : 0), kp_stride, k, cols, s ? s + g * k : nullptr, bg,
                             pb.present() ? f32(pb) + g * k : nullptr);
    }
    lap(LINFER_OP_ELEMENTWISE, t);
  }
  return true;
}

// Rows [0, T) are positions [first, first + T) of the sequence (first > 0 when stepping).
void Session::rotate(float* x, size_t T, size_t heads) {
  if (cfg_.rotary == Rotary::None) return;
  const auto t = now();
  workers_.ranges(T, 16, [&](size_t b, size_t e, size_t) { rotate_rows(x + b * heads * cfg_.head_dim, b, e - b, heads); });
  lap(LINFER_OP_ELEMENTWISE, t);
}

// `rows` rows at x (`heads` heads each) that are rows [row, row + rows) of the run.
void Session::rotate_rows(float* x, size_t row, size_t rows, size_t heads) const {
  if (cfg_.rotary == Rotary::None) return;
  const size_t dh = cfg_.head_dim, first = (stepping_ ? step_position_ : 0) + row;
  kernels::rotate_pairs_f32(x, heads * dh, rows, heads, dh,
                            f32(model_->desc.rotary_table) + first * dh, dh);
}

bool Session::attention(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = cfg_;
  if (c.attention_kind == AttentionKind::GiveTake) return give_take(w, ops, in, T, residual);
  if (c.attention_kind == AttentionKind::SlidingWindow) return sliding_window(w, ops, in, T, residual);
  if (c.attention_kind == AttentionKind::BlockSparse) return block_sparse(w, ops, in, T, residual);
  if (c.attention_kind == AttentionKind::Lsh) return lsh(w, ops, in, T, residual);
  if (!run_dense(ops.q, T, in, buf_.q)) return false;
  rotate(buf_.q, T, c.num_heads);
  if (linear_state_floats(c)) {  // linear (elu+1) or Performer
    if (!run_dense(ops.k[0], T, in, buf_.kp) || !run_dense(ops.v[0], T, in, buf_.vp)) return false;
    rotate(buf_.kp, T, c.kv_heads);
    const auto t = now();
    linear_attention(w, T, size_t(&w - model_->desc.layers.data()));
    lap(LINFER_OP_ATTENTION, t);
    return run_dense(ops.out, T, buf_.attn, residual, true);
  }
  const size_t keys = softmax_keys(w, ops, in, T);
  if (!keys) return false;
  auto t = now();
  attention_items(keys, 0, T);
  lap(LINFER_OP_ATTENTION, t);
  return run_dense(ops.out, T, buf_.attn, residual, true);
}

void Session::attention_items(size_t keys, size_t row_begin, size_t row_end, KeyWindow window) {
  const size_t block = kAttentionRowBlock, rows = row_end - row_begin, blocks = (rows + block - 1) / block,
               HD = size_t(cfg_.num_heads) * cfg_.head_dim;
  workers_.ranges(cfg_.num_heads * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
    for (size_t item = b; item < e; ++item) {
      const size_t h = item / blocks, r0 = row_begin + (item % blocks) * block, n = std::min(block, row_end - r0);
      attention_rows(h, keys, buf_.q + r0 * HD, buf_.attn + r0 * HD, n, chunk, window, r0);
    }
  });
}

// Longformer (HF LongformerSelfAttention): rows [g, T) attend to the keys within window_radius
// of them and to the g global rows' keys (q, k, v); the g global rows attend to every key, with
// their own projections when the model has them (q_global on the global rows, k_global and
// v_global on all rows), and their output replaces the local one. Both share the output layer.
bool Session::sliding_window(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = cfg_;
  const size_t g = std::min<size_t>(c.global_positions, T);
  if (!run_dense(ops.q, T, in, buf_.q)) return false;
  const size_t keys = softmax_keys(w, ops, in, T);
  if (!keys) return false;
  auto t = now();
  attention_items(keys, g, T, {c.window_radius, g});
  lap(LINFER_OP_ATTENTION, t);
  if (g > 0) {
    if (w.q_global.weight.present()) {  // Q of the global rows, K and V of every row, once more
      if (!run_dense(ops.q_global, g, in, buf_.q) || !run_dense(ops.k_global, T, in, buf_.kp) ||
          !run_dense(ops.v_global, T, in, buf_.vp))
        return false;
      prepare_keys(T);
    }
    t = now();
    attention_items(keys, 0, g);
    lap(LINFER_OP_ATTENTION, t);
  }
  return run_dense(ops.out, T, buf_.attn, residual, true);
}

// BigBird (HF BigBirdBlockSparseAttention as it runs in eval mode): query blocks of block_size
// rows; a global block (the first and last global_blocks, or every block of a short input) attends
// to every key, any other to the keys of the global blocks, its neighbours and its random blocks
// (block_sparse_key_spans), which the f32 kernel walks span by span: O(blocks seen) per row.
bool Session::block_sparse(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = cfg_;
  if (!run_dense(ops.q, T, in, buf_.q)) return false;
  const size_t keys = softmax_keys(w, ops, in, T);
  if (!keys) return false;
  const auto t = now();
  const size_t b = c.block_size, blocks = block_sparse_blocks(c, T), HD = size_t(c.num_heads) * c.head_dim,
               R = c.num_random_blocks, table_blocks = block_sparse_blocks(c, c.max_seq_len);
  const float* random = R ? f32(w.random_blocks) : nullptr;  // [heads, table_blocks, R]
  workers_.ranges(c.num_heads * blocks, 1, [&](size_t begin, size_t end, size_t chunk) {
    float* scratch = buf_.scratch + chunk * plan_.scratch_stride;
    uint32_t spans[2 * kMaxBlockSparseSpans];
    for (size_t item = begin; item < end; ++item) {
      const size_t h = item / blocks, i = item % blocks, r0 = i * b, rows = std::min(T, r0 + b) - r0;
      kernels::AttentionHeadArgs a = attention_head_args(h, keys, buf_.q + r0 * HD, buf_.attn + r0 * HD);
      if (!block_sparse_is_global(c, T, i)) {
        a.key_spans = spans;
        a.key_span_count =
            block_sparse_key_spans(c, random ? random + (h * table_blocks + i) * R : nullptr, T, i, spans);
      }
      kernels::attention_f32_hwy(a, 0, rows, scratch);
    }
  });
  lap(LINFER_OP_ATTENTION, t);
  return run_dense(ops.out, T, buf_.attn, residual, true);
}

// Reformer (lucidrains' reformer-pytorch LSHAttention in eval mode, its rotations fixed in the
// file): the queries double as keys. In each hashing round every head's rows are hashed (argmax
// over [x R, -x R] with the round's first lsh_half_buckets(T) rotation columns, on the rows before
// their rotary positions, as upstream) and sorted by (bucket, position); each chunk of bucket_size
// sorted rows attends to itself and to the chunk before it (round r's first chunk to round
// r - 1's last, round 0's to the last round's), against the normalised keys. The rounds' outputs
// are merged with weights softmax(their log-sum-exps): a running max and sum per row and head,
// rounds one after the other (each row is in one chunk of a round, so a round's chunks run in
// parallel).
bool Session::lsh(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = cfg_;
  const size_t H = c.num_heads, dh = c.head_dim, HD = H * dh, rounds = c.num_hashes, chunks = lsh_chunks(c, T);
  if (!run_dense(ops.q, T, in, buf_.q) || !run_dense(ops.v[0], T, in, buf_.vp)) return false;
  auto t = now();
  workers_.ranges(H * rounds, 1, [&](size_t b, size_t e, size_t chunk) {
    for (size_t item = b; item < e; ++item) lsh_sort(w.rotations, T, item / rounds, item % rounds, chunk);
  });
  lap(LINFER_OP_ATTENTION, t);
  rotate(buf_.q, T, H);
  t = now();
  for (size_t r = 0; r < rounds; ++r)
    workers_.ranges(H * chunks, 1, [&](size_t b, size_t e, size_t chunk) {
      LshSlots slots;  // a thread's items are consecutive chunks: each one's rows serve the next
      for (size_t item = b; item < e; ++item) lsh_chunk(T, item / chunks, r, item % chunks, chunk, slots);
    });
  const float* sum = buf_.lsh_merge + H * plan_.max_len;
  workers_.ranges(T, 16, [&](size_t b, size_t e, size_t) {
    for (size_t i = b; i < e; ++i)
      for (size_t h = 0; h < H; ++h) {
        const float inv = 1.0f / sum[h * plan_.max_len + i];
        for (size_t j = 0; j < dh; ++j) buf_.attn[i * HD + h * dh + j] *= inv;
      }
  });
  lap(LINFER_OP_ATTENTION, t);
  return run_dense(ops.out, T, buf_.attn, residual, true);
}

// Head h, round `round`: buckets of the T rows, then the rows sorted by (bucket, position) into
// buf_.lsh_sorted (a counting sort: ascending positions within a bucket).
void Session::lsh_sort(const WeightView& rotations, size_t T, size_t h, size_t round, size_t chunk) {
  const EncoderConfig& c = cfg_;
  const size_t dh = c.head_dim, HD = size_t(c.num_heads) * dh, half = lsh_half_buckets(c, T),
               table_half = lsh_half_buckets(c, c.max_seq_len), n = plan_.max_len;
  float* rotated = buf_.scratch + chunk * plan_.scratch_stride;  // [kLshHashRows x half]
  uint32_t* bucket = buf_.lsh_index + chunk * lsh_index_words(c, n);
  uint32_t* start = bucket + n;  // 2 half + 1 bucket starts
  const float* R = f32(rotations) + round * dh * table_half;  // [dh x table_half]
  for (size_t i0 = 0; i0 < T; i0 += kLshHashRows) {
    const size_t rows = std::min(kLshHashRows, T - i0);
    kernels::gemm_f32_hwy(rows, half, dh, buf_.q + i0 * HD + h * dh, HD, R, table_half, rotated, half);
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
  uint32_t* sorted = buf_.lsh_sorted + (h * c.num_hashes + round) * n;
  for (size_t i = 0; i < T; ++i) sorted[start[bucket[i]]++] = uint32_t(i);
}

// Gathers the rows of global chunk g (round g / chunks) of head h into slot `slot` of thread
// `chunk`'s scratch: their queries, keys normalised as F.normalize does (x / max(|x|, 1e-12))
// and transposed, values, positions.
void Session::lsh_gather(size_t T, size_t h, size_t g, size_t chunk, size_t slot) {
  const EncoderConfig& c = cfg_;
  const size_t dh = c.head_dim, HD = size_t(c.num_heads) * dh, n = plan_.max_len, b = c.bucket_size,
               chunks = lsh_chunks(c, T), first = (g % chunks) * b, rows = std::min(b, T - first),
               vh = c.kv_heads == 1 ? 0 : h, v_stride = size_t(c.kv_heads) * dh;
  const uint32_t* sorted = buf_.lsh_sorted + (h * c.num_hashes + g / chunks) * n + first;
  float* q = buf_.scratch + chunk * plan_.scratch_stride + slot * lsh_slot_floats(c);
  float* kt = q + b * dh;  // [dh x rows]
  float* v = kt + b * dh;
  uint32_t* pos = buf_.lsh_index + chunk * lsh_index_words(c, n) + n + 2 * lsh_half_buckets(c, n) + 1 + slot * b;
  for (size_t i = 0; i < rows; ++i) {
    const uint32_t p = sorted[i];
    pos[i] = p;
    const float* x = buf_.q + p * HD + h * dh;
    std::memcpy(q + i * dh, x, dh * sizeof(float));
    std::memcpy(v + i * dh, buf_.vp + p * v_stride + vh * dh, dh * sizeof(float));
    float sq = 0.0f;
    for (size_t j = 0; j < dh; ++j) sq += x[j] * x[j];
    const float inv = 1.0f / std::max(std::sqrt(sq), 1e-12f);
    for (size_t j = 0; j < dh; ++j) kt[j * rows + i] = x[j] * inv;
  }
}

// Head h, round `round`, chunk c of it: the chunk's rows against its own and the previous chunk's
// keys (lsh_chunk_f32_hwy), merged into buf_.attn and the head's running max and sum.
void Session::lsh_chunk(size_t T, size_t h, size_t round, size_t c, size_t chunk, LshSlots& slots) {
  const EncoderConfig& cfg = cfg_;
  const size_t dh = cfg.head_dim, HD = size_t(cfg.num_heads) * dh, n = plan_.max_len, b = cfg.bucket_size,
               chunks = lsh_chunks(cfg, T), all = cfg.num_hashes * chunks, own = round * chunks + c,
               prev = (own + all - 1) % all;
  if (slots.head != h) slots = LshSlots{h, {SIZE_MAX, SIZE_MAX}};
  // The slot of each chunk: kept when a slot holds it, else gathered into one the other does not use.
  size_t own_slot = slots.chunk[0] == own ? 0 : slots.chunk[1] == own ? 1 : SIZE_MAX;
  if (own_slot == SIZE_MAX) {
    own_slot = slots.chunk[0] == prev ? 1 : 0;
    lsh_gather(T, h, own, chunk, own_slot);
    slots.chunk[own_slot] = own;
  }
  size_t prev_slot = slots.chunk[0] == prev ? 0 : slots.chunk[1] == prev ? 1 : SIZE_MAX;
  if (prev_slot == SIZE_MAX) {
    prev_slot = 1 - own_slot;
    lsh_gather(T, h, prev, chunk, prev_slot);
    slots.chunk[prev_slot] = prev;
  }
  float* scratch = buf_.scratch + chunk * plan_.scratch_stride;
  const uint32_t* positions = buf_.lsh_index + chunk * lsh_index_words(cfg, n) + n + 2 * lsh_half_buckets(cfg, n) + 1;
  auto keys_of = [&](size_t slot, size_t g) {
    const float* q = scratch + slot * lsh_slot_floats(cfg);
    return kernels::LshKeys{q + b * dh, q + 2 * b * dh, positions + slot * b, std::min(b, T - (g % chunks) * b)};
  };
  const kernels::LshKeys own_keys = keys_of(own_slot, own), prev_keys = keys_of(prev_slot, prev);
  const size_t rows = own_keys.count;
  float* o = scratch + 2 * lsh_slot_floats(cfg);
  float* lse = o + b * dh;
  float* scores = lse + b;
  const kernels::LshChunkArgs args{scratch + own_slot * lsh_slot_floats(cfg), own_keys.pos, {own_keys, prev_keys},
                                   rows, dh, 1.0f / std::sqrt(float(dh)), kLshSelfScore,
                                   cfg.causal == CausalMode::Causal, o, lse};
  kernels::lsh_chunk_f32_hwy(args, scores);
  float* max = buf_.lsh_merge + h * n;
  float* sum = buf_.lsh_merge + (cfg.num_heads + h) * n;
  for (size_t i = 0; i < rows; ++i) {
    const size_t p = own_keys.pos[i];
    float* acc = buf_.attn + p * HD + h * dh;
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

// Keys and values for softmax attention into buf_.kp / buf_.vp (the Linformer's k compressed
// rows, or all T rows), each K head transposed to [dh x keys] into buf_.kt so that the scores
// vectorise over the keys. Returns the number of keys, 0 if a dense layer failed.
size_t Session::softmax_keys(const LayerWeights& w, LayerOps& ops, const float* in, size_t T) {
  const EncoderConfig& c = cfg_;
  size_t keys;
  if (c.attention_kind == AttentionKind::Linformer) {
    if (!linformer_kv(w, ops, in, T)) return 0;
    keys = c.proj_len;
  } else {
    if (!run_dense(ops.k[0], T, in, buf_.kp) || !run_dense(ops.v[0], T, in, buf_.vp)) return 0;
    rotate(buf_.kp, T, c.kv_heads);
    keys = T;
  }
  prepare_keys(keys);
  return keys;
}

void Session::prepare_keys(size_t keys) {
  const EncoderConfig& c = cfg_;
  const size_t H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads;
  const bool per_head = c.attention_kind == AttentionKind::Linformer && c.projection_groups() > 1;
  const auto t = now();
  const size_t S = per_head ? H : kvh;                // distinct K/V heads
  const size_t kp_stride = per_head ? dh : kvh * dh;  // row stride of K/V
  workers_.ranges(S, 1, [&](size_t b, size_t e, size_t) {
    for (size_t s = b; s < e; ++s) {
      const size_t head_offset = per_head ? s * keys * dh : s * dh;  // of head s in K and V
      kernels::transpose_f32_generic(buf_.kp + head_offset, kp_stride, keys, dh, buf_.kt + s * dh * keys, keys);
      if (plan_.int8_attention) pack_head(s, keys, buf_.vp + head_offset, kp_stride);
    }
  });
  lap(LINFER_OP_ATTENTION, t);
}

size_t Session::kv_head(size_t h) const {
  const bool per_head = cfg_.attention_kind == AttentionKind::Linformer && cfg_.projection_groups() > 1;
  return per_head || cfg_.kv_heads > 1 ? h : 0;  // kv_heads is 1 or num_heads here
}

// Softmax attention of head h over `keys` keys (see softmax_keys) for query rows q (row stride
// heads * head_dim) into o (same layout).
kernels::AttentionHeadArgs Session::attention_head_args(size_t h, size_t keys, const float* q, float* o) const {
  const EncoderConfig& c = cfg_;
  const size_t dh = c.head_dim, HD = c.num_heads * dh, kvh = c.kv_heads;
  const bool per_head = c.attention_kind == AttentionKind::Linformer && c.projection_groups() > 1;
  const size_t s = kv_head(h);
  kernels::AttentionHeadArgs a;
  a.q = q + h * dh;
  a.q_stride = HD;
  a.kt = buf_.kt + s * dh * keys;
  a.kt_stride = keys;
  a.v = buf_.vp + (per_head ? s * keys * dh : s * dh);
  a.v_stride = per_head ? dh : kvh * dh;
  a.o = o + h * dh;
  a.o_stride = HD;
  a.head_dim = dh;
  a.keys = keys;
  a.scale = 1.0f / std::sqrt(float(dh));
  return a;
}

// Head s's block of the HeadPanels buffer (plan.h, HeadLayout).
Session::HeadInt8 Session::head_int8(size_t s) const {
  const ExecutionPlan::HeadLayout& l = plan_.head_layout;
  uint8_t* p = buf_.head_panels + s * l.bytes;
  return {reinterpret_cast<int8_t*>(p), reinterpret_cast<int8_t*>(p + l.v_panels),
          reinterpret_cast<float*>(p + l.k_scales), reinterpret_cast<float*>(p + l.v_scales),
          reinterpret_cast<int32_t*>(p + l.k_sums), reinterpret_cast<int32_t*>(p + l.v_sums)};
}

// K'^T (from buf_.kt: each key's head_dim values are a column) and V' (v: each channel's values
// over the keys are a column) of head s as int8 weights, one scale per key and per channel.
void Session::pack_head(size_t s, size_t keys, const float* v, size_t v_stride) {
  const size_t dh = cfg_.head_dim;
  const HeadInt8 h = head_int8(s);
  kernels::pack_columns_int8_hwy(buf_.kt + s * dh * keys, keys, dh, keys, 0, keys, h.k_panels, h.k_scales, h.k_sums);
  kernels::pack_columns_int8_hwy(v, v_stride, keys, dh, 0, dh, h.v_panels, h.v_scales, h.v_sums);
}

void Session::attention_rows(size_t h, size_t keys, const float* q, float* o, size_t rows, size_t chunk,
                             KeyWindow window, size_t first_row) {
  const size_t dh = cfg_.head_dim, HD = cfg_.num_heads * dh;
  if (!plan_.int8_attention) {  // (the plan gives int8 attention to Linformer models only: no window)
    kernels::AttentionHeadArgs a = attention_head_args(h, keys, q, o);
    a.windowed = window.radius > 0;
    a.window_radius = window.radius;
    a.global_keys = window.global_keys;
    a.first_row = first_row;
    kernels::attention_f32_hwy(a, 0, rows, buf_.scratch + chunk * plan_.scratch_stride);
    return;
  }
  // int8: scores = Q K'^T on the int8 kernel (Q's rows quantized as any dense input), then P V'
  // on the int8 kernel, P's rows quantized as they are computed (each row's largest probability
  // is its scale's 127).
  const size_t B = plan_.attn_block, qs = plan_.attn_q_stride;
  uint8_t* base = buf_.attn_int8 + chunk * plan_.attn_int8_stride;
  float* scores = reinterpret_cast<float*>(base);
  int8_t* qrows = reinterpret_cast<int8_t*>(base + plan_.attn_q_offset);
  float* qscales = reinterpret_cast<float*>(base + plan_.attn_scales_offset);
  const kernels::DenseKernel& kernel = plan_.kernel_for(DType::I8);
  const HeadInt8 hw = head_int8(kv_head(h));
  const kernels::DenseWeights kt{DType::I8, dh, keys, hw.k_panels, hw.k_scales, hw.k_sums, nullptr};
  const kernels::DenseWeights v{DType::I8, keys, dh, hw.v_panels, hw.v_scales, hw.v_sums, nullptr};
  const float scale = 1.0f / std::sqrt(float(dh));
  for (size_t r0 = 0; r0 < rows; r0 += B) {
    const size_t n = std::min(B, rows - r0);
    kernel.quantize(q + r0 * HD + h * dh, HD, n, dh, qrows, qs, qscales);
    kernel.run(kt, {nullptr, 0, qrows, qs, qscales}, n, scores, keys, 0, keys, {});
    kernels::softmax_quantize_rows_hwy(scores, keys, n, keys, scale, kernels::int8_form(kernel), qrows, qs, qscales);
    kernel.run(v, {nullptr, 0, qrows, qs, qscales}, n, o + r0 * HD + h * dh, HD, 0, dh, {});
  }
}

// GiveTake: the p tokens (rows [T, T + p) of `in`) take from the sequence, then the sequence
// takes from what the tokens gathered (docs/converter.md). Both streams share W_q, W_k, W_v, W_out.
bool Session::give_take(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual) {
  const EncoderConfig& c = cfg_;
  const size_t p = c.num_global_tokens, R = T + p, H = c.num_heads, dh = c.head_dim, HD = H * dh,
               kvh = c.kv_heads, KV = kvh * dh, D = c.dim;
  if (!run_dense(ops.q, R, in, buf_.q) || !run_dense(ops.k[0], R, in, buf_.kp) ||
      !run_dense(ops.v[0], T, in, buf_.vp))
    return false;
  auto t = now();
  // K transposed per kv head: the sequence's [dh x T], then the tokens' [dh x p].
  float* kt_seq = buf_.kt;
  float* kt_tok = buf_.kt + kvh * dh * T;
  workers_.ranges(kvh, 1, [&](size_t b, size_t e, size_t) {
    for (size_t s = b; s < e; ++s) {
      kernels::transpose_f32_generic(buf_.kp + s * dh, KV, T, dh, kt_seq + s * dh * T, T);
      kernels::transpose_f32_generic(buf_.kp + T * KV + s * dh, KV, p, dh, kt_tok + s * dh * p, p);
    }
  });
  const float scale = 1.0f / std::sqrt(float(dh));
  const size_t heads_per_kv = H / kvh;
  auto run_heads = [&](size_t rows, size_t keys, auto args_for_head) {
    const size_t block = 32, blocks = (rows + block - 1) / block;
    workers_.ranges(H * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
      float* scratch = buf_.scratch + chunk * plan_.scratch_stride;
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
    const size_t s = h / heads_per_kv;
    return kernels::AttentionHeadArgs{buf_.q + T * HD + h * dh, HD, kt_seq + s * dh * T, T,
                                      buf_.vp + s * dh, KV, buf_.attn + T * HD + h * dh, HD, 0, 0, 0};
  });
  // Give: Y_s = softmax(Q_s K_t^T / sqrt(dh)) Y_t (head h's own take output), into rows [0, T).
  run_heads(T, p, [&](size_t h) {
    const size_t s = h / heads_per_kv;
    return kernels::AttentionHeadArgs{buf_.q + h * dh, HD, kt_tok + s * dh * p, p,
                                      buf_.attn + T * HD + h * dh, HD, buf_.attn + h * dh, HD, 0, 0, 0};
  });
  lap(LINFER_OP_ATTENTION, t);
  // Into buf_.sub, not straight into the residual: the convolution below still reads the input,
  // which is the residual stream itself with post-norm.
  if (!run_dense(ops.out, R, buf_.attn, buf_.sub)) return false;
  if (w.conv_weight.present()) {  // the locality branch: depthwise convolution of the input
    t = now();
    const size_t K = w.conv_weight.shape[1];
    const float* taps = model_->conv_taps[&w - model_->desc.layers.data()].data();
    workers_.ranges(T, 1, [&](size_t b, size_t e, size_t) {
      kernels::conv_depthwise_add_f32_hwy(in, T, D, taps, K, f32(w.conv_bias), buf_.sub, b, e);
    });
    lap(LINFER_OP_ELEMENTWISE, t);
  }
  add_rows(residual, buf_.sub, R, D);
  return true;
}

// Linear attention (elu+1) and Performer over q, kp, vp (T rows): a key state per kv head
// (kernels.h: S and z; the favor state), then each query row against it. Bidirectional: the state
// of all T keys, then (head, block of rows) items across threads. Causal: row i adds its key to
// the state and then reads it, so it sees rows j <= i only.
void Session::linear_attention(const LayerWeights& w, size_t T, size_t layer) {
  const EncoderConfig& c = cfg_;
  const size_t H = c.num_heads, dh = c.head_dim, HD = H * dh, kvh = c.kv_heads, KV = kvh * dh;
  const size_t heads_per_kv = H / kvh, state_floats = linear_state_floats(c);
  const bool performer = c.attention_kind == AttentionKind::Performer;
  const bool sequence_stabiliser = performer && c.key_stabiliser == KeyStabiliser::Sequence;
  kernels::FavorParams favor{};
  if (performer)
    favor = {f32(w.features), dh, c.num_features, c.feature_map, c.feature_eps,
             c.causal == CausalMode::Causal ? kFavorCausalDenEps : 0.0f};
  auto add_keys = [&](float* S, size_t r0, size_t rows, size_t s, float* scratch) {
    const float *k = buf_.kp + r0 * KV + s * dh, *v = buf_.vp + r0 * KV + s * dh;
    if (performer) kernels::favor_state_add_f32_hwy(favor, k, KV, v, KV, rows, dh, S, scratch);
    else kernels::linear_attention_state_f32_hwy(k, KV, v, KV, rows, dh, S, S + dh * dh);
  };
  auto apply = [&](const float* S, size_t r0, size_t rows, size_t h, float* scratch) {
    const float* q = buf_.q + r0 * HD + h * dh;
    float* o = buf_.attn + r0 * HD + h * dh;
    if (performer) kernels::favor_apply_f32_hwy(favor, q, HD, rows, dh, S, o, HD, scratch);
    else kernels::linear_attention_apply_f32_hwy(q, HD, rows, dh, S, S + dh * dh, o, HD, scratch);
  };
  if (c.causal == CausalMode::Causal) {
    // The state is kept per layer so that step() can continue where the last call stopped.
    float* carried = buf_.carried_state + layer * kvh * state_floats;
    workers_.ranges(kvh, 1, [&](size_t b, size_t e, size_t chunk) {
      float* scratch = buf_.scratch + chunk * plan_.scratch_stride;
      for (size_t s = b; s < e; ++s) {
        float* S = carried + s * state_floats;
        if (!stepping_) reset_linear_state(S);
        if (sequence_stabiliser)  // every row sees the stabiliser of all T keys (a preset s never grows)
          *kernels::favor_state(S, c.num_features, dh).s =
              kernels::favor_key_max_f32_hwy(favor, buf_.kp + s * dh, KV, T, scratch);
        for (size_t i = 0; i < T; ++i) {
          add_keys(S, i, 1, s, scratch);
          for (size_t h = s * heads_per_kv; h < (s + 1) * heads_per_kv; ++h) apply(S, i, 1, h, scratch);
        }
      }
    });
    return;
  }
  workers_.ranges(kvh, 1, [&](size_t b, size_t e, size_t chunk) {
    for (size_t s = b; s < e; ++s) {
      float* S = buf_.linear_state + s * state_floats;
      reset_linear_state(S);
      add_keys(S, 0, T, s, buf_.scratch + chunk * plan_.scratch_stride);
    }
  });
  const size_t block = 32, blocks = (T + block - 1) / block;
  workers_.ranges(H * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
    float* scratch = buf_.scratch + chunk * plan_.scratch_stride;
    for (size_t item = b; item < e; ++item) {
      const size_t h = item / blocks, r0 = (item % blocks) * block;
      apply(buf_.linear_state + (h / heads_per_kv) * state_floats, r0, std::min(block, T - r0), h, scratch);
    }
  });
}

void Session::reset_linear_state(float* S) const {
  if (cfg_.attention_kind == AttentionKind::Performer) kernels::favor_state_reset(S, cfg_.num_features, cfg_.head_dim);
  else std::fill(S, S + linear_state_floats(cfg_), 0.0f);
}

}  // namespace linfer::rt
