// SPDX-License-Identifier: Apache-2.0
// BlockSparse's (BigBird's ITC pattern) configuration fields (docs/format.md; where a file holds
// them and their checks: runtime/format/src/kinds/block_sparse.cc).
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

struct BlockSparseFields {
  static constexpr AttentionKind kKind = AttentionKind::BlockSparse;
  uint32_t block_size = 0;         // rows per block
  uint32_t global_blocks = 0;      // global blocks at each end of the input
  uint32_t num_random_blocks = 0;  // random key blocks per query block
};
inline BlockSparseFields& block_sparse_fields(EncoderConfig& c) { return kind_fields<BlockSparseFields>(c); }
inline const BlockSparseFields& block_sparse_fields(const EncoderConfig& c) {
  return kind_fields<BlockSparseFields>(c);
}

// BlockSparse's tensor of a layer, its index in LayerWeights::kind_tensors: the random key
// blocks [num_heads, blocks, num_random_blocks], block indices as f32 (kinds/block_sparse.cc).
struct BlockSparseTensors {
  enum Layer : uint8_t { kRandomBlocks };
};
// An input of T rows has ceil(T / block_size) blocks, the last one possibly shorter (the shape of
// random_blocks). The pattern itself is the runtime's (runtime/src/attention/block_sparse.cc).
inline size_t block_sparse_blocks(const EncoderConfig& c, size_t T) {
  const uint32_t b = block_sparse_fields(c).block_size;
  return b ? (T + b - 1) / b : 0;
}

}  // namespace linfer
