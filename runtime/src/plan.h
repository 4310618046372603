// Everything a session decides once, from its model and options: the checked options, the dense
// kernels, the execution paths, the threads, and where every buffer lives in the arena.
// Session::arena_size and Session::create both build it, so they cannot disagree, and nothing
// after it reads the options again.
#pragma once

#include <cstdint>
#include <string>

#include "kernels.h"
#include "linfer/linfer.h"
#include "model.h"
#include "status.h"

namespace linfer::rt {

// The buffers of a session's arena.
enum class Buffer {
  X, X2, H, Sub, Q, Attn, FF, CompK, CompV, KP, VP, KT, RowSum, Scratch, Positions, Pooled,
  Pooled2, Out, QX, QScales, LinearState, CarriedState, RowBlocks, ProjRows, CompPanels, CompScales,
  CompSums, CompRows, HeadPanels, AttnInt8, LshSorted, LshMerge, LshIndex, Count
};

// Rows of E (or F) a thread widens at a time when the projections are f16.
constexpr size_t kProjRowsPerStep = 4;
// Query rows per work item of the attention core (operator by operator; the row pipeline's
// threads take their blocks).
constexpr size_t kAttentionRowBlock = 32;
// Causal Performer: added to each feature of the key sum in the denominator, as lucidrains'
// causal_linear_attention does (kernels.h FavorParams::den_eps).
constexpr float kFavorCausalDenEps = 1e-6f;

struct ExecutionPlan {
  uint32_t max_len = 0;  // longest input
  uint32_t threads = 1;
  bool yield_workers = false;  // the pool's threads sleep between regions (more threads than CPUs)
  bool profiling = false;

  // Dense layers: the own kernel for each weight dtype (indexed by DType), or XNNPACK operators
  // for the f32 and f16 layers (option LINFER_DENSE_XNNPACK).
  const kernels::DenseKernel* dense_kernel[3] = {nullptr, nullptr, nullptr};
  bool xnnpack = false;
  kernels::Isa max_isa = kernels::Isa::Generic;

  bool row_pipeline = false;  // softmax-attention layers as one parallel region (session_rows.cc)
  size_t row_block = 0;       // its rows per block

  size_t q_stride = 0;        // bytes per quantized input row of the int8 layers (0: none)
  size_t scratch_stride = 0;  // floats of attention scratch per thread
  bool widen_projections = false;  // E / F are f16: widened kProjRowsPerStep rows at a time
  // E / F are int8: the compression runs on the int8 dense kernel, E's rows as its input (in its
  // form, comp_q_stride bytes apart) and X's columns quantized into panels as its weights.
  bool int8_compression = false;
  size_t comp_q_stride = 0;
  // In the same models the attention's products Q K'^T and P V' run on the int8 kernel too: K'^T
  // and V' of each distinct head packed per run as int8 weights (HeadPanels: per head K'^T's
  // panels at 0, then V''s, the scales and sums of each at these offsets, `bytes` in all), a
  // thread's rows quantized attn_block at a time (AttnInt8, attn_int8_stride bytes per thread:
  // scores at 0, quantized Q or P rows attn_q_stride bytes apart at attn_q_offset, their scales
  // at attn_scales_offset).
  bool int8_attention = false;
  struct HeadLayout {
    size_t v_panels = 0, k_scales = 0, k_sums = 0, v_scales = 0, v_sums = 0, bytes = 0;
  } head_layout;
  size_t attn_block = 0, attn_q_stride = 0, attn_q_offset = 0, attn_scales_offset = 0, attn_int8_stride = 0;

  // The arena: per buffer its offset and bytes (0 bytes: not used), and the total to allocate
  // (with room to align a caller's buffer).
  uint64_t offset[size_t(Buffer::Count)] = {};
  uint64_t bytes[size_t(Buffer::Count)] = {};
  uint64_t arena_bytes = 0;

  const kernels::DenseKernel& kernel_for(DType dtype) const { return *dense_kernel[size_t(dtype)]; }
};

// Lsh: rows per block of the hash (their rotated values in the thread's scratch).
constexpr size_t kLshHashRows = 16;
// Lsh: 32-bit words of a thread's index scratch (a round's buckets of T rows and their counts,
// the positions of the two gathered chunks).
inline uint64_t lsh_index_words(const EncoderConfig& c, uint64_t T) {
  return T + 2 * lsh_half_buckets(c, T) + 1 + 2 * uint64_t(c.bucket_size);
}
// Lsh: floats of one gathered chunk in a thread's scratch (its rows' queries [b x dh], normalised
// keys transposed [dh x b] and values [b x dh]).
inline uint64_t lsh_slot_floats(const EncoderConfig& c) { return 3 * uint64_t(c.bucket_size) * c.head_dim; }

// Floats of one kv head's key state for the attention kinds that keep one (linear: S and z;
// Performer: kernels.h's favor state), else 0.
inline uint64_t linear_state_floats(const EncoderConfig& c) {
  const uint64_t dh = c.head_dim;
  if (c.attention_kind == AttentionKind::LinearElu) return dh * dh + dh;
  if (c.attention_kind == AttentionKind::Performer) return kernels::favor_state_floats(c.num_features, dh);
  return 0;
}

// Floating-point operations (a multiply-add counts 2) of one forward pass over T tokens, as the
// runtime computes it (with the compression reassociated). For benchmarks' GFLOP/s
// (linfer_model_flops).
uint64_t forward_flops(const EncoderConfig& c, uint64_t T);

// Checks the options against the model and builds the plan: LINFER_ERROR_INVALID_ARGUMENT for
// options out of range, LINFER_ERROR_UNSUPPORTED for what this build left out,
// LINFER_ERROR_OUT_OF_MEMORY for an arena beyond the address space.
Result<ExecutionPlan> make_execution_plan(const LoadedModel& model, const linfer_session_options& options);

}  // namespace linfer::rt
