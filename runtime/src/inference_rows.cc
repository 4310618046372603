// SPDX-License-Identifier: Apache-2.0
// The row pipeline: a softmax-attention layer as one parallel region over blocks of rows.
#include <algorithm>

#include "attention/attention_kind.h"
#include "inference.h"
#include "weight_rows.h"

namespace linfer::rt {

// First, over all rows: the attention input (norm), then the keys (compression, K', V'), which
// need every row. Then the rows are cut into chunks that the threads take as they finish one, and
// each chunk runs, a block at a time, through Q, attention, the output projection and residual,
// the norm, the feed-forward and its residual: one parallel region instead of one per operator,
// and a block's intermediate rows stay in the core's cache. Every dense layer is on the own
// kernels (the plan checks), which any thread can run on any rows; a thread quantizes the int8
// inputs of its blocks into rows of its own (qrow below), so threads never share scratch bytes.
bool Inference::layer_rows(size_t layer, const LayerWeights& w, LayerOps& ops, size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, HD = size_t(c.num_heads) * c.head_dim, F = c.ff_dim, B = plan_.row_block;
  const LayerRoute route = layer_route();  // the streams, as the whole-sequence body (forward)
  const float* in = buf_.residual;
  if (!route.post) {
    layernorm_rows(route.side, buf_.normed, T, w.attention_norm);
    in = buf_.normed;
  }
  // What needs every row (the keys), by the attention's module.
  if (!attention_->prepare_rows(*this, AttentionLayer{layer, w, ops.q, ops.out}, in, T)) return false;
  AttentionModule& attention = *attention_;
  const QuantizedRows& qrows = sub_.quantized;
  // A block's n rows normed on the calling thread (layernorm_rows spreads over the workers).
  auto layernorm_block = [&](const float* from, float* to, size_t n, const NormWeights& norm) {
    kernels::layernorm_f32_hwy(from, D, to, D, n, D, f32_data(norm.weight), f32_data(norm.bias), c.norm_eps);
  };
  // A short run (at most short_run_rows rows per thread) makes one share per thread, each share
  // one block: every layer's weights pass once per thread. A longer one passes in blocks of B
  // rows: in chunks of whole blocks where there are at least 2 blocks per thread (up to
  // kChunksPerThread per thread: a chunk that ended in a part of a block would pass every layer's
  // weights for a few rows), else in one share per thread. Shares split at multiples of
  // kRowQuantum, not of B: a block of B rows larger than T / threads (AMX's) must not leave a
  // thread without rows. (A caller's pipeline_block_rows, which is also short_run_rows, keeps
  // shares of whole blocks where kRowQuantum does not divide it.)
  const size_t share_quantum = B % kRowQuantum == 0 ? kRowQuantum : B, held = plan_.short_run_rows;
  const bool short_run = T <= workers_.threads * held;
#if LINFER_THREADS  // (one thread: operators_below is 0)
  if (short_run && T < plan_.operators_below) return layer_operators(w, ops, in, T, route);
#endif
  const size_t block = short_run ? held : B;
  // The int8 rows (QuantizedRows, which holds min(T, threads * held) rows or more): a short run
  // quantizes each block into its own rows, a longer one into its thread's first B rows.
  auto run_chunk = [&](size_t begin, size_t end, size_t worker) {
    float* q = buf_.row_blocks + worker * held * (2 * HD + F);
    float* attn = q + block * HD;
    float* ff = attn + block * HD;
    // Profile: the calling thread's split (its chunks are a share of the whole); clock reads only
    // when profiling.
    const bool timing = plan_.profiling && worker == 0;
    auto t = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    auto mark = [&](linfer_op_kind kind) {
      if (timing) t = lap(kind, t);
    };
    for (size_t r0 = begin; r0 < end; r0 += block) {
      const size_t n = std::min(block, end - r0), qrow = short_run ? r0 : worker * B;
      float* x = buf_.residual + r0 * D;
      ops.q.run_rows(qrows, in + r0 * D, n, q, false, qrow);
      rotate_rows(q, r0, n, c.num_heads);
      mark(LINFER_OP_DENSE);
      attention.attend_rows(*this, q, attn, n, r0, worker);
      mark(LINFER_OP_ATTENTION);
      ops.out.run_rows(qrows, attn, n, x, true, qrow);
      mark(LINFER_OP_DENSE);
      if (route.post) layernorm_block(x, x, n, w.attention_norm);
      const float* ff_in = x;
      if (!route.post) {
        float* h = buf_.normed + r0 * D;  // this block's attention input is no longer needed
        layernorm_block(x, h, n, w.feed_forward_norm);
        ff_in = h;
      }
      mark(LINFER_OP_NORM);
      ops.fc1.run_rows(qrows, ff_in, n, ff, false, qrow);
      ops.fc2.run_rows(qrows, ff, n, route.side + r0 * D, true, qrow);
      mark(LINFER_OP_DENSE);
      if (route.post) {
        layernorm_block(x, x, n, w.feed_forward_norm);
        mark(LINFER_OP_NORM);
      }
    }
  };
  if (!short_run && (T + B - 1) / B >= 2 * workers_.threads)
    workers_.balanced_ranges(T, B, 1, run_chunk);
  else
    workers_.ranges(T, share_quantum, run_chunk);
  return true;
}

#if LINFER_THREADS
// A short run below plan_.operators_below rows (AMX's int8 layers, 2 threads, n = 128, large
// layers: plan.cc): the rows pass as one block, operator by operator, each operator across the
// threads (the dense layers by channels: DenseLayer::run), in the row blocks' memory
// (T <= threads * short_run_rows rows of 2 HD + F floats).
bool Inference::layer_operators(const LayerWeights& w, LayerOps& ops, const float* in, size_t T,
                                const LayerRoute& route) {
  const EncoderConfig& c = cfg_;
  const size_t HD = size_t(c.num_heads) * c.head_dim;
  float* q = buf_.row_blocks;
  float* attn = q + T * HD;
  float* ff = attn + T * HD;
  if (!run_dense(ops.q, T, in, q)) return false;
  rotate(q, T, c.num_heads);
  const auto t = now();
  const size_t held = plan_.short_run_rows;  // (a worker's attention scratch holds this many rows)
  workers_.ranges(T, kRowQuantum, [&](size_t b, size_t e, size_t worker) {
    for (size_t r = b; r < e; r += held)
      attention_->attend_rows(*this, q + r * HD, attn + r * HD, std::min(held, e - r), r, worker);
  });
  lap(LINFER_OP_ATTENTION, t);
  if (!run_dense(ops.out, T, attn, buf_.residual, true)) return false;
  if (route.post) layernorm_rows(buf_.residual, buf_.residual, T, w.attention_norm);
  const float* ff_in = buf_.residual;
  if (!route.post) {
    layernorm_rows(buf_.residual, buf_.normed, T, w.feed_forward_norm);
    ff_in = buf_.normed;
  }
  if (!run_dense(ops.fc1, T, ff_in, ff) || !run_dense(ops.fc2, T, ff, route.side, true)) return false;
  if (route.post) layernorm_rows(buf_.residual, buf_.residual, T, w.feed_forward_norm);
  return true;
}
#endif

}  // namespace linfer::rt
