// SPDX-License-Identifier: Apache-2.0
// The runtime's session (behind linfer_session and the C++ wrapper linfer::Session): one
// execution plan, its arena, its thread pool, the layer loop with its dense layers and norms over
// the model's shared weights, and the attention kind's module (attention/), which owns
// everything kind-specific. run() trusts what creation checked and allocates nothing.
// The work is spread over files by job:
//   inference_prepare.cc  creation: the plan bound to an arena, the dense layers, the threads
//   inference.cc          the entry points, embeddings, the layer loop, output heads
//   inference_rows.cc     the row pipeline (a softmax-attention layer as one parallel region)
//   layer_context.cc      what sublayers run with, the face the attention modules see
//   attention/            one module per attention kind (attention_kind.h), registry.cc
//   plan.cc               the decisions, made once; dense_layer.cc: one dense layer
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dense_layer.h"
#include "layer_context.h"
#include "linfer/linfer.h"
#include "model.h"
#include "parallel.h"
#include "plan.h"
#include "status.h"

namespace linfer::rt {

class AttentionModule;

class Inference : public LayerContext {
 public:
  ~Inference();
  // Arena bytes for these options (make_execution_plan's errors).
  static Result<size_t> arena_size(const LoadedModel& model, const linfer_session_options& options);
  // The plan's errors, LINFER_ERROR_BUFFER_TOO_SMALL for a caller's arena below arena_size,
  // LINFER_ERROR_OUT_OF_MEMORY naming what could not be allocated and its bytes,
  // LINFER_ERROR_UNSUPPORTED when XNNPACK does not run on this CPU, else internal.
  static Result<std::unique_ptr<Inference>> create(const LoadedModel& model, const linfer_session_options& options);

  // LINFER_ERROR_INVALID_ARGUMENT for bad inputs; on success nothing is allocated.
  Status run_ids(const int32_t* ids, size_t length);
  Status run_embeddings(const float* embeddings, size_t length);
  Status step(int32_t id);
  void reset_state() { step_position_ = 0; }

  const float* output() const { return output_; }
  size_t output_rows() const { return output_rows_; }
  size_t output_cols() const { return output_cols_; }
  // Final hidden states of the last run: the residual stream, which no head overwrites.
  const float* hidden_states() const { return buf_.residual; }
  size_t hidden_rows() const { return last_length_; }
  size_t hidden_cols() const { return cfg_.dim; }
  size_t arena_bytes() const { return plan_.arena_bytes; }
  // Calibration only (dense_layer.h set_dense_input_hook): every dense layer reads this one.
  void set_dense_input_hook(const DenseInputHook& hook) { plan_.dense_input_hook = hook; }
  size_t packed_weight_bytes() const;  // weights this session holds itself (XNNPACK only)
  // The kernels and threads chosen (linfer_session_describe), made when first asked for: an
  // application that never asks links none of it.
  const std::string& description() const {
    if (description_.empty()) description_ = describe();
    return description_;
  }
  linfer_profile profile() const;
  void reset_profile() {
    for (auto& t : profile_time_) t = {};
    profile_runs_ = 0;
  }

 private:
  Inference() = default;
  // The dense layers every layer has; the attention's own (K, V, ...) belong to its module.
  struct LayerOps {
    DenseLayer q, out, fc1, fc2;
  };
  // The session's own buffers in the arena (plan.h, SessionBuffers; the sublayers' are
  // LayerContext's); null when the plan has none.
  struct Buffers {
    float* residual = nullptr;      // the residual stream, rows x dim (the hidden states)
    float* residual2 = nullptr;     // reversible layers: the second stream
    float* normed = nullptr;        // a norm's output: a sublayer's input (pre-norm, reversible)
    float* ff_hidden = nullptr;     // the feed-forward's hidden rows
    float* row_blocks = nullptr;    // row pipeline: per thread, a block's Q, attention, hidden rows
    float* sinusoids = nullptr;     // sinusoidal positions, computed at creation
    float* pooled = nullptr;        // classifier: the pooled vector
    float* pooled_dense = nullptr;  // classifier: after its dense layer
    float* head_out = nullptr;      // logits or class scores
  };

  // inference_prepare.cc
  Status prepare(const linfer_session_options& options);
  Status prepare_layers();
  std::string describe() const;

  // How a layer's two sublayers connect, by norm placement: the one description both layer
  // bodies follow (forward, and the row pipeline's layer_rows).
  //   - the attention reads `side`, normed by attention_norm; with post-norm, the residual stream
  //     itself. It adds to the residual stream, which post-norm then norms (attention_norm);
  //   - the feed-forward reads the residual stream, normed by feed_forward_norm (post-norm: the
  //     stream itself). It adds to `side`; post-norm then norms the residual stream.
  // `side` is the residual stream, but in reversible layers (x holds y1, x2 holds y2): residual2.
  struct LayerRoute {
    float* side;
    bool post;
  };
  LayerRoute layer_route() const;

  // inference.cc
  Status forward(size_t T);
  void add_positions(size_t T);
  bool feed_forward(LayerOps& ops, const float* in, size_t R, float* residual);
  bool output_head(size_t T);
  void layernorm_rows(const float* in, float* out, size_t rows, const NormWeights& n);

  // inference_rows.cc
  bool layer_rows(size_t layer, const LayerWeights& w, LayerOps& ops, size_t T);
#if LINFER_THREADS
  bool layer_operators(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, const LayerRoute& route);
#endif

  AttentionModule* attention_ = nullptr;  // plan_.attention
#if LINFER_THREADS
  std::unique_ptr<ThreadPool> pool_;  // workers_.pool
#endif
  void* owned_arena_ = nullptr;
  Buffers buf_;
  std::vector<LayerOps> layer_ops_;
  DenseLayer head_dense_, head_out_;
  mutable std::string description_;
  const float* output_ = nullptr;
  size_t output_rows_ = 0, output_cols_ = 0, last_length_ = 0;
  uint64_t profile_runs_ = 0;
};

// The refusals of an input: its length outside [1, max_len], a token id outside the vocabulary.
Status input_length_error(size_t length, size_t max_len);
Status token_id_error(int32_t id, size_t position, uint32_t vocab_size);

}  // namespace linfer::rt
