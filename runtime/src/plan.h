// SPDX-License-Identifier: Apache-2.0
// Everything a session decides once, from its model and options: the checked options, the dense
// kernels, the execution paths, the threads, and where every buffer lives in the arena.
// Inference::arena_size and Inference::create both build it, so they cannot disagree, and nothing
// after it reads the options again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arena_plan.h"
#include "kernels.h"
#include "linfer/linfer.h"
#include "model.h"
#include "status.h"

namespace linfer::rt {

class AttentionModule;  // attention/attention_kind.h

// Steps of a run, for buffer lifetimes. The attention sublayer takes three: what its keys are made
// from (e.g. a sequence projection's E X of all rows), the keys and values (and their int8
// panels), then the rows attending (with the row pipeline, each block from Q through the
// feed-forward). A buffer of the whole sublayer lives from kStepKeyInputs to kStepAttention; one
// of a single step can share bytes with another step's.
enum ArenaStep : int {
  kStepEmbed = 0,
  kStepKeyInputs = 1,
  kStepKeys = 2,
  kStepAttention = 3,
  kStepFeedForward = 4,
  kStepHead = 5
};

// A buffer of the arena: its place in ArenaLayout::requests, or none (not asked for, 0 bytes).
struct ArenaBuffer {
  size_t index = SIZE_MAX;
  bool used() const { return index != SIZE_MAX; }
};

// The arena's buffers as the session and its attention module ask for them (plan time), then
// placed by lifetime (plan_arena).
struct ArenaLayout {
  std::vector<ArenaRequest> requests;
  // `bytes` alive from step `first` to step `last` (ArenaStep); 0 bytes: none.
  ArenaBuffer request(uint64_t bytes, int first, int last);
  ArenaBuffer floats(uint64_t n, int first, int last) { return request(n * sizeof(float), first, last); }
};

// An allocated arena (64-byte aligned base): where each buffer of its layout starts.
class Arena {
 public:
  Arena(uint8_t* base, const ArenaLayout& layout) : base_(base), layout_(&layout) {}
  template <class T = float>
  T* at(ArenaBuffer b) const {
    return b.used() ? reinterpret_cast<T*>(base_ + layout_->requests[b.index].offset) : nullptr;
  }

 private:
  uint8_t* base_;
  const ArenaLayout* layout_;
};

// The session's own buffers (the attention module keeps its own handles).
struct SessionBuffers {
  ArenaBuffer residual, residual2, normed, sublayer_out, queries, attention_out, ff_hidden, row_blocks, sinusoids,
      pooled, pooled_dense, head_out, quantized_rows, quantized_scales, smoothed_rows;
};

// Rows of E (or F) a thread widens at a time when the projections are f16.
constexpr size_t kProjRowsPerStep = 4;
// Query rows per work item of the attention core (operator by operator; the row pipeline's
// threads take their blocks).
constexpr size_t kAttentionRowBlock = 32;

// Calibration (linfer-convert --calibrate): a session whose hook is set hands it every dense
// layer's input rows before the layer computes, with the layer's weight data (the model's tensor,
// as in the file). Only the converter sets one, on its own session (set_dense_input_hook).
struct DenseInputHook {
  void (*observe)(void* context, const void* weight, const float* x, size_t rows, size_t inputs) = nullptr;
  void* context = nullptr;
};

struct ExecutionPlan {
  uint32_t max_len = 0;  // longest input
  uint32_t threads = 1;
  bool yield_workers = false;  // the pool's threads sleep between regions (more threads than CPUs)
  bool profiling = false;
  DenseInputHook dense_input_hook;  // unset but in the converter's calibration session

  // Dense layers: the own kernel for each weight dtype (indexed by DType), or XNNPACK operators
  // for the f32 and f16 layers (option LINFER_DENSE_XNNPACK).
  const kernels::DenseKernel* dense_kernel[3] = {nullptr, nullptr, nullptr};
  bool xnnpack = false;
  kernels::Isa max_isa = kernels::Isa::Generic;

  bool row_pipeline = false;   // softmax-attention layers as one parallel region (inference_rows.cc)
  size_t row_block = 0;        // its rows per block
  size_t short_run_rows = 0;   // rows per thread up to which a run makes one block per thread (>= row_block)
  size_t operators_below = 0;  // rows below which a short run goes operator by operator (plan.cc)

  size_t q_stride = 0;  // bytes per quantized input row of the int8 layers (0: none)
  // floats per input row of the int8 layers with input scales, multiplied before quantizing, at
  // the same row indices as the quantized rows (0: no layer has input scales)
  size_t smoothed_stride = 0;

  // The attention kind's module (attention/registry.cc): its own decisions and buffer handles,
  // made here; the session that takes this plan owns it.
  std::shared_ptr<AttentionModule> attention;

  // The arena: its buffers (offsets placed) and the total to allocate (with room to align a
  // caller's buffer).
  ArenaLayout arena;
  SessionBuffers buffers;
  uint64_t arena_bytes = 0;

  const kernels::DenseKernel& kernel_for(DType dtype) const { return *dense_kernel[size_t(dtype)]; }
};

// Floating-point operations (a multiply-add counts 2) of one forward pass over T tokens, as the
// runtime computes it: the dense layers here, the attention's own by its module
// (AttentionKindInfo::layer_flops). For benchmarks' GFLOP/s (linfer_model_flops).
uint64_t forward_flops(const EncoderConfig& c, uint64_t T);

// Checks the options against the model and builds the plan: LINFER_ERROR_INVALID_ARGUMENT for
// options out of range, LINFER_ERROR_UNSUPPORTED for what this build left out,
// LINFER_ERROR_OUT_OF_MEMORY for an arena beyond the address space.
Result<ExecutionPlan> make_execution_plan(const LoadedModel& model, const linfer_session_options& options);

}  // namespace linfer::rt
