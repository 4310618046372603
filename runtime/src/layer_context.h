// SPDX-License-Identifier: Apache-2.0
// What a layer's sublayers run with, and all that an attention module sees of its session: the
// model and the plan, the workers, the session's buffers a sublayer writes (Q, the attention
// output, a sublayer's output), the dense-layer runner, rotary positions and the profile's
// clock. The session (inference.h) is one and fills it at creation; a module gets this face only,
// so that what a module may touch is written down here and nowhere else.
#pragma once

#include <chrono>
#include <cstddef>

#include "dense_layer.h"
#include "linfer/linfer.h"
#include "model.h"
#include "parallel.h"
#include "plan.h"

namespace linfer::rt {

class LayerContext {
 public:
  LayerContext(const LayerContext&) = delete;
  LayerContext& operator=(const LayerContext&) = delete;

  const LoadedModel& model() const { return *model_; }
  const EncoderConfig& config() const { return cfg_; }
  const ExecutionPlan& plan() const { return plan_; }
  const Workers& workers() const { return workers_; }
  // Q of every row and the attention output, row stride heads x head_dim (whole-sequence runs).
  float* queries() const { return sub_.queries; }
  float* attention_out() const { return sub_.attention_out; }
  // A sublayer's output before its residual add (rows x dim).
  float* sublayer_out() const { return sub_.sublayer_out; }
  // Whether this forward pass continues a token-by-token sequence, and the sequence position of
  // its row 0.
  bool stepping() const { return stepping_; }
  size_t first_position() const { return stepping_ ? step_position_ : 0; }

  // One dense layer over `rows` rows of x into y (added to y with accumulate). False if an
  // XNNPACK operator failed.
  bool run_dense(const DenseLayer& op, size_t rows, const float* x, float* y, bool accumulate = false);
  // y += x over `rows` rows of `cols`.
  void add_rows(float* y, const float* x, size_t rows, size_t cols);
  // Rotary positions on T rows of `heads` heads (queries or keys), when the model has them;
  // rotate_rows: `rows` rows at x that are rows [row, row + rows) of the run, on the calling
  // thread (the row pipeline's blocks).
  void rotate(float* x, size_t T, size_t heads);
  void rotate_rows(float* x, size_t row, size_t rows, size_t heads) const;
  // Adds the time since `start` to `kind` when profiling; returns the new start.
  std::chrono::steady_clock::time_point lap(linfer_op_kind kind, std::chrono::steady_clock::time_point start);
  std::chrono::steady_clock::time_point now() const {
    return plan_.profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  }

 protected:
  LayerContext() = default;
  ~LayerContext() = default;

  // The session's buffers that sublayers write, in the arena (plan.h, SessionBuffers).
  struct SublayerBuffers {
    float* queries = nullptr;        // Q, rows x heads x head_dim
    float* attention_out = nullptr;  // the attention's output before the output projection
    float* sublayer_out = nullptr;   // a sublayer's output before its residual add
    QuantizedRows quantized;         // int8 layers' quantized input rows
  };

  const LoadedModel* model_ = nullptr;
  EncoderConfig cfg_;
  ExecutionPlan plan_;
  Workers workers_;
  SublayerBuffers sub_;
  // Token-by-token runs (causal models of kinds that keep a state): tokens fed so
  // far, and whether the current forward pass continues from the module's carried state instead
  // of starting over.
  size_t step_position_ = 0;
  bool stepping_ = false;
  // The profile: time per op kind in clock ticks, made milliseconds when read (no double
  // arithmetic per lap: a microcontroller has none in hardware).
  std::chrono::steady_clock::duration profile_time_[LINFER_OP_KIND_COUNT] = {};
};

}  // namespace linfer::rt
