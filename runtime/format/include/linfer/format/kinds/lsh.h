// SPDX-License-Identifier: Apache-2.0
// LSH attention's (Reformer's) configuration fields (docs/format.md; where a file holds them and
// their checks: runtime/format/src/kinds/lsh.cc).
#pragma once

#include "linfer/format/encoder.h"

namespace linfer {

struct LshFields {
  static constexpr AttentionKind kKind = AttentionKind::Lsh;
  uint32_t bucket_size = 0;  // rows per chunk (and T / bucket_size buckets)
  uint32_t num_hashes = 0;   // hashing rounds
};
inline LshFields& lsh_fields(EncoderConfig& c) { return kind_fields<LshFields>(c); }
inline const LshFields& lsh_fields(const EncoderConfig& c) { return kind_fields<LshFields>(c); }
// LSH attention's tensor of a layer, its index in LayerWeights::kind_tensors: the random
// rotations [num_hashes, head_dim, lsh_half_buckets(max_seq_len)] (kinds/lsh.cc).
struct LshTensors {
  enum Layer : uint8_t { kRotations };
};

// An input of T rows is hashed into 2 lsh_half_buckets(T) buckets per round (the first
// lsh_half_buckets(T) columns of a round's rotations: their shape). Chunks and the rest are the
// runtime's (runtime/src/attention/lsh.cc).
inline size_t lsh_half_buckets(const EncoderConfig& c, size_t T) {
  const size_t b = lsh_fields(c).bucket_size;
  return b ? (T + 2 * b - 1) / (2 * b) : 0;
}

}  // namespace linfer
