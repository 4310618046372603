// SPDX-License-Identifier: Apache-2.0
// The kernels of LSH attention (the lsh kind's; built with it, schema/attention_kinds.txt):
// lsh_ref.cc, lsh_hwy.cc. Their pair test: tests/unit/kernels/test_lsh_kernels.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace linfer::kernels {

// Reformer's LSH attention (lucidrains' reformer-pytorch), one chunk of one head in one hashing
// round: `rows` queries against two groups of keys that the caller gathered (the chunk's own
// sorted rows, then the chunk before's). s_ij = scale q_i . k_j, except -FLT_MAX where causal and
// k_pos[j] > q_pos[i], and self_score where k_pos[j] == q_pos[i] (a row attends to itself only
// when nothing else is left); lse_i = log sum_j exp(s_ij), o_i = sum_j exp(s_ij - lse_i) v_j. A
// key in both groups counts twice.
struct LshKeys {
  const float* kt;      // [d x count]: the (normalised) keys transposed
  const float* v;       // [count x d]
  const uint32_t* pos;  // their sequence positions
  size_t count;
};
struct LshChunkArgs {
  const float* q;         // [rows x d]
  const uint32_t* q_pos;  // sequence positions of the queries, [rows]
  LshKeys keys[2];
  size_t rows, d;
  float scale, self_score;
  bool causal;
  float* o;    // [rows x d]
  float* lse;  // [rows]
};
// Floats of scratch either kernel needs per call: the scores of both key groups.
inline size_t lsh_chunk_scratch_floats(size_t rows, size_t keys) { return rows * keys; }
void lsh_chunk_f32_ref(const LshChunkArgs& args, float* scratch);
void lsh_chunk_f32_hwy(const LshChunkArgs& args, float* scratch);

}  // namespace linfer::kernels
