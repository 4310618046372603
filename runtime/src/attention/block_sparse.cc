// SPDX-License-Identifier: Apache-2.0
// Block sparse attention (BigBird, HF BigBirdBlockSparseAttention as it runs in eval mode; BigBird's
// ITC pattern, docs/format.md): query blocks of block_size rows; a global block (the first and
// last global_blocks, or every block of a short input) attends to every key, any other to the keys
// of the global blocks, its neighbours and its random blocks (block_sparse_key_spans), which the
// f32 kernel walks span by span: O(blocks seen) per row. (The format keeps block_sparse_blocks:
// the random blocks' table is shaped by it.)
#include <algorithm>

#include "attention/softmax_attention.h"
#include "linfer/format/kinds/block_sparse.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {

// When an input has at most 2 g + 3 + 2 R blocks (g global_blocks, R num_random_blocks) every row
// attends to every key, as Hugging Face switches to full attention there.
bool block_sparse_is_full(const EncoderConfig& c, size_t T) {
  return block_sparse_blocks(c, T) <=
         2 * size_t(block_sparse_fields(c).global_blocks) + 3 + 2 * size_t(block_sparse_fields(c).num_random_blocks);
}

// Whether query block i (of an input of T rows) attends to every key: full inputs, the first and
// the last g blocks.
bool block_sparse_is_global(const EncoderConfig& c, size_t T, size_t i) {
  const size_t blocks = block_sparse_blocks(c, T), g = block_sparse_fields(c).global_blocks;
  return block_sparse_is_full(c, T) || i < g || i + g >= blocks;
}

// Most key spans a query block sees: the global blocks and its neighbours (at most 3 spans), and
// one per random block.
constexpr size_t kMaxBlockSparseSpans = 3 + Limits::kMaxRandomBlocks;

// The keys query block i (not global) of an input of T rows sees, as spans [begin, end) of key
// rows written to spans[2s], spans[2s + 1]; returns their number. First the union of the global
// blocks and blocks i - 1, i, i + 1 (each key once, in order), then one span per random block
// random[r] (r < num_random_blocks; `random` is row i of a head's random_blocks) that exists in
// this input (< the input's blocks), listed even when its keys were listed already: such a key
// counts once per listing in the softmax (Hugging Face's eval-mode pattern points every random
// block at block 0).
size_t block_sparse_key_spans(const EncoderConfig& c, const float* random, size_t T, size_t i, uint32_t* spans) {
  const size_t b = block_sparse_fields(c).block_size, blocks = block_sparse_blocks(c, T),
               g = block_sparse_fields(c).global_blocks;
  // The global blocks and the neighbours, each key once: block intervals [0, g), [i - 1, i + 2)
  // and [blocks - g, blocks), in this order for a non-global block i, merged where they overlap
  // or touch.
  const size_t intervals[3][2] = {{0, g}, {i > 0 ? i - 1 : 0, std::min(blocks, i + 2)}, {blocks - g, blocks}};
  size_t count = 0, first = 0, end = 0;
  for (const auto& iv : intervals) {
    if (iv[0] >= iv[1]) continue;
    if (end > 0 && iv[0] <= end) {
      end = std::max(end, iv[1]);
      continue;
    }
    if (end > 0) spans[2 * count] = uint32_t(first * b), spans[2 * count + 1] = uint32_t(std::min(T, end * b)), ++count;
    first = iv[0], end = iv[1];
  }
  spans[2 * count] = uint32_t(first * b), spans[2 * count + 1] = uint32_t(std::min(T, end * b)), ++count;
  for (size_t r = 0; random && r < block_sparse_fields(c).num_random_blocks; ++r) {
    const size_t k = size_t(random[r]);
    if (k >= blocks) continue;  // a block of a longer input
    spans[2 * count] = uint32_t(k * b), spans[2 * count + 1] = uint32_t(std::min(T, (k + 1) * b));
    ++count;
  }
  return count;
}

class BlockSparseAttention final : public SoftmaxAttention {
 public:
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override;
};

bool BlockSparseAttention::run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T,
                               float* residual) {
  const EncoderConfig& c = s.config();
  if (!s.run_dense(layer.q, T, in, s.queries())) return false;
  const size_t keys = make_keys(s, layer, in, T);
  if (!keys) return false;
  const auto t = s.now();
  const size_t b = block_sparse_fields(c).block_size, blocks = block_sparse_blocks(c, T),
               HD = size_t(c.num_heads) * c.head_dim, R = block_sparse_fields(c).num_random_blocks,
               table_blocks = block_sparse_blocks(c, c.max_seq_len);
  const float* random =
      R ? f32_data(layer.w.kind_tensors[BlockSparseTensors::kRandomBlocks]) : nullptr;  // [heads, table_blocks, R]
  float* const q = s.queries();
  float* const attn = s.attention_out();
  s.workers().balanced_ranges(c.num_heads * blocks, 1, 1, [&](size_t begin, size_t end, size_t worker) {
    float* scratch = scratch_ + worker * scratch_stride_;
    uint32_t spans[2 * kMaxBlockSparseSpans];
    for (size_t item = begin; item < end; ++item) {
      const size_t h = item / blocks, i = item % blocks, r0 = i * b, rows = std::min(T, r0 + b) - r0;
      kernels::AttentionHeadArgs a = attention_head_args(s, h, keys, q + r0 * HD, attn + r0 * HD);
      if (!block_sparse_is_global(c, T, i)) {
        a.key_spans = spans;
        a.key_span_count =
            block_sparse_key_spans(c, random ? random + (h * table_blocks + i) * R : nullptr, T, i, spans);
      }
      kernels::attention_f32_hwy(a, 0, rows, scratch);
    }
  });
  s.lap(LINFER_OP_ATTENTION, t);
  return s.run_dense(layer.out, T, s.attention_out(), residual, true);
}

uint64_t block_sparse_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, KV = uint64_t(c.kv_heads) * c.head_dim;
  // Keys each query block sees (random blocks counted as if every one existed), times its rows.
  uint64_t seen = 0;
  uint32_t spans[2 * kMaxBlockSparseSpans];
  const uint64_t blocks = block_sparse_blocks(c, T), b = block_sparse_fields(c).block_size;
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t rows = std::min(T, (i + 1) * b) - i * b;
    if (block_sparse_is_global(c, T, i)) {
      seen += rows * T;
      continue;
    }
    const size_t n = block_sparse_key_spans(c, nullptr, T, i, spans);
    uint64_t keys = uint64_t(block_sparse_fields(c).num_random_blocks) * b;
    for (size_t s = 0; s < n; ++s) keys += spans[2 * s + 1] - spans[2 * s];
    seen += rows * keys;
  }
  return 2 * 2 * T * D * KV + 2 * 2 * seen * HD;  // K, V; scores, P V
}

}  // namespace

extern const AttentionKindInfo kBlockSparseAttention = {
    AttentionKind::BlockSparse, [] { return std::unique_ptr<AttentionModule>(new BlockSparseAttention()); },
    block_sparse_layer_flops, nullptr, nullptr};

}  // namespace linfer::rt
