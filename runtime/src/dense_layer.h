// SPDX-License-Identifier: Apache-2.0
// One dense layer of a session (Q, K, V, output, feed-forward, heads): it chooses, prepares and
// runs. Chosen by the execution plan: the model's shared weights on linfer's kernel for their
// dtype (the session holds no weights), or, with the option LINFER_DENSE_XNNPACK, an XNNPACK
// operator with its own packed f32 copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels.h"
#include "parallel.h"
#include "plan.h"
#include "status.h"

struct linfer_session;

namespace linfer::rt {

// Where the int8 kernels put quantized rows: every row of a run at one stride (the plan's
// q_stride), so that threads working on disjoint rows, of this layer or another, never share bytes.
struct QuantizedRows {
  int8_t* q = nullptr;
  size_t stride = 0;
  float* scales = nullptr;
  // Layers with input scales or f32 input channels: the rows times the scales, with the f32
  // channels zeroed, floats at the same row indices (the plan's smoothed_stride floats apart),
  // which the quantizer then reads.
  float* smoothed = nullptr;
  size_t smoothed_stride = 0;
};

// A multiple of every dense kernel's tile height (6 rows on x86 and in the relaxed wasm modules;
// 2, 4 and 8 on Arm) but the SIMD128 wasm float tile of 5 rows, whose outputs do not depend on
// where a tile starts (each is the same chain of float multiplies and adds), so the threads
// module's are the same for any split too.
constexpr size_t kRowQuantum = 24;
// The fewest rows of a chunk when a layer's rows are cut into more chunks than threads: the kernel
// passes the weights once per chunk (as once per row block within one: 128 rows of 512 f32
// inputs on AVX-512), so chunks of fewer rows would read the weights more often than one
// thread's share does.
constexpr size_t kMinChunkRows = 4 * kRowQuantum;

// Sets the calibration hook of a session (plan.h DenseInputHook) or, with an empty hook, clears
// it; only between runs. Unset, the hook costs a load and a branch per dense layer run. Not part
// of the C API: the converter links the runtime's objects (linfer_calibrate).
void set_dense_input_hook(linfer_session* session, const DenseInputHook& hook);

class DenseLayer {
 public:
  // weight: a dense slot of the model (panel layout); this layer is its group `group` (per-head
  // K/V projections), or group 0 of a single-group matrix. bias: the slot's f32 bias or absent.
  // Fails only on the XNNPACK path: out of memory, or XNNPACK's refusal (internal).
  Status prepare(const ExecutionPlan& plan, const WeightView& weight, uint32_t group, const WeightView& bias,
                 kernels::DenseActivation activation, bool yield_workers);

  // y = act(x W^T + b) (or y += with accumulate) for `rows` rows, split across the workers: by
  // rows when there are enough to go round, else by output channels. scratch: rows x outputs
  // floats, used by XNNPACK to accumulate (may be null otherwise). Returns false if XNNPACK failed.
  bool run(const Workers& workers, const QuantizedRows& qrows, size_t rows, const float* x, float* y, bool accumulate,
           float* scratch) const;

  // One thread's share on the own kernel: rows [0, rows) of x, their int8 form (if any) in rows
  // [first_row, first_row + rows) of qrows, which no other thread uses meanwhile. For the row
  // pipeline.
  void run_rows(const QuantizedRows& qrows, const float* x, size_t rows, float* y, bool accumulate,
                size_t first_row) const;

  bool on_own_kernel() const { return kernel_ != nullptr; }
  const char* kernel_name() const { return kernel_ ? kernel_->name : "xnnpack_f32"; }
  size_t inputs() const { return in_; }
  size_t outputs() const { return out_; }
  size_t packed_bytes() const { return packed_bytes_; }  // held by this layer (XNNPACK only)

 private:
  void observe(const float* x, size_t rows) const;  // the calibration hook, if set
  void quantize(const QuantizedRows& qrows, const float* x, size_t rows, size_t first_row) const;
  void run_channels(const QuantizedRows& qrows, const float* x, size_t rows, float* y, bool accumulate,
                    size_t first_row, size_t n_begin, size_t n_end) const;
  // An activation the kernels do not fuse (Tanh) as a pass of its own over y.
  void activation_pass(const Workers& workers, size_t rows, float* y) const;
  // y[:, n_begin..n_end) += the f32 input channels' products (before the activation).
  void add_f32_inputs(const float* x, size_t rows, float* y, size_t n_begin, size_t n_end) const;

  const kernels::DenseKernel* kernel_ = nullptr;  // null: XNNPACK
  kernels::DenseWeights weights_;
  const float* input_scales_ = nullptr;  // int8 with activation smoothing: one factor per input
  // int8 with f32 input channels: their indices, and their f32 weight columns (this layer's rows
  // of each; f32_column_stride_ floats apart: WeightView::f32_inputs).
  const uint32_t* f32_inputs_ = nullptr;
  const float* f32_weights_ = nullptr;
  uint32_t f32_count_ = 0;
  size_t f32_column_stride_ = 0;
  const void* source_ = nullptr;                                          // the model's weight tensor (for the hook)
  const DenseInputHook* hook_ = nullptr;                                  // the session's (its plan's), set by prepare
  kernels::DenseActivation activation_ = kernels::DenseActivation::None;  // the whole activation
  kernels::DenseActivation fused_ = kernels::DenseActivation::None;       // the part the kernel does
#if LINFER_WITH_XNNPACK
  kernels::XnnpackDense xnnpack_;
#endif
  size_t in_ = 0, out_ = 0, packed_bytes_ = 0;
};

}  // namespace linfer::rt
