// A session: the arena planned for one maximum length and thread count, dense layers packed once,
// and run(), which trusts what creation checked and allocates nothing.
#pragma once

#include <pthreadpool.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "linfer/linfer.h"
#include "model.h"
#include "f32/dense_f32.h"
#include "int8/dense_int8.h"
#include "xnnpack/dense.h"

namespace linfer::rt {

struct SessionLayout;  // buffer placement, see session.cc

class Session {
 public:
  ~Session();
  // Arena bytes for these options, or an error.
  static linfer_status arena_size(const Model& model, const linfer_session_options& options,
                                  size_t* bytes, std::string* error);
  static linfer_status create(const Model& model, const linfer_session_options& options,
                              std::unique_ptr<Session>* out, std::string* error);

  linfer_status run_ids(const int32_t* ids, size_t length, std::string* error);
  linfer_status run_embeddings(const float* embeddings, size_t length, std::string* error);
  linfer_status step(int32_t id, std::string* error);
  void reset_state() { step_position_ = 0; }

  const float* output() const { return output_; }
  size_t output_rows() const { return output_rows_; }
  size_t output_cols() const { return output_cols_; }
  // Final hidden states of the last run: the residual stream, which no head overwrites.
  const float* hidden_states() const { return buf_.x; }
  size_t hidden_rows() const { return last_length_; }
  size_t hidden_cols() const { return cfg_.dim; }
  size_t arena_bytes() const { return arena_bytes_; }
  size_t packed_weight_bytes() const { return packed_bytes_; }
  linfer_profile profile() const { return profile_; }
  void reset_profile() { profile_ = linfer_profile{}; }

 private:
  Session() = default;
  // A dense layer on one of three kernels, chosen at creation: the int8 VNNI kernel (int8 weights,
  // which the model keeps int8 only where the CPU has it), the own AVX-512 f32 kernel, or XNNPACK
  // (f32 elsewhere: NEON, AVX2; or with the option LINFER_DENSE_XNNPACK). The own kernels fuse the activation
  // and the residual add; run_linear does them as separate passes around XNNPACK.
  struct Linear {
    enum class Kernel { Xnnpack, F32Avx512, Int8Vnni } kernel = Kernel::Xnnpack;
    kernels::DenseActivation activation = kernels::DenseActivation::None;
    kernels::DenseLayer xnn;
    kernels::F32Weights f32;
    kernels::Int8Weights i8;
    size_t inputs() const {
      return kernel == Kernel::Xnnpack ? xnn.inputs() : kernel == Kernel::F32Avx512 ? f32.in : i8.in;
    }
    size_t outputs() const {
      return kernel == Kernel::Xnnpack ? xnn.outputs()
             : kernel == Kernel::F32Avx512 ? f32.out : i8.out;
    }
  };
  struct LayerOps {
    Linear q, out, fc1, fc2;
    std::vector<Linear> k, v;  // one, or one per head (per-head projections)
  };
  struct Buffers {
    float *x = nullptr, *x2 = nullptr, *h = nullptr, *sub = nullptr, *q = nullptr,
          *attn = nullptr, *ff = nullptr, *comp_k = nullptr, *comp_v = nullptr, *kp = nullptr,
          *vp = nullptr, *kt = nullptr, *rowsum = nullptr, *scratch = nullptr,
          *positions = nullptr, *pooled = nullptr, *pooled2 = nullptr, *out = nullptr,
          *qscales = nullptr;
    uint8_t* qx = nullptr;  // int8 path: quantized rows
    float* linear_state = nullptr;  // linear attention: S and z per kv head
    float* carried_state = nullptr;  // causal linear attention: S and z per layer and kv head
    float* row_blocks = nullptr;     // row pipeline: per thread, a block's Q, attention, hidden rows
  };

  linfer_status prepare(const linfer_session_options& options, std::string* error);
  // Creates `op` for rows [first_row, first_row + out) of `weight`. Returns "" or a message.
  std::string make_linear(Linear& op, size_t in, size_t out, const WeightView& weight,
                          size_t first_row, const float* bias,
                          kernels::DenseActivation activation = kernels::DenseActivation::None);
  // y = act(x W^T + b), or with accumulate y += x W^T + b (y then must not be buf_.sub).
  bool run_linear(const Linear& op, size_t rows, const float* x, float* y, bool accumulate = false);
  linfer_status forward(size_t T, std::string* error);
  // The attention and feed-forward sublayers add their output to `residual`.
  bool attention(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  bool linformer_kv(const LayerWeights& w, LayerOps& ops, const float* in, size_t T);
  size_t softmax_keys(const LayerWeights& w, LayerOps& ops, const float* in, size_t T);
  kernels::AttentionHeadArgs head_args(size_t h, size_t keys, const float* q, float* o) const;
  bool layer_rows(const LayerWeights& w, LayerOps& ops, size_t T);
  void dense_rows(const Linear& op, const float* x, size_t rows, float* y, bool accumulate,
                  size_t first_row);
  void quantize_rows(const Linear& op, const float* x, size_t rows, size_t first_row);
  void dense_quantized(const Linear& op, const float* x, size_t rows, float* y, bool accumulate,
                       size_t first_row, size_t n_begin, size_t n_end);
  void linear_attention(size_t T, size_t layer);
  bool give_take(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  bool feed_forward(const LayerWeights& w, LayerOps& ops, const float* in, size_t T,
                    float* residual);
  void layernorm_rows(const float* in, float* out, size_t T, const NormWeights& n);
  void activate(float* x, size_t rows, size_t cols, kernels::DenseActivation act);
  void add_rows(float* y, const float* x, size_t rows, size_t cols);
  bool head(size_t T);

  const Model* model_ = nullptr;
  EncoderConfig cfg_;
  uint32_t max_len_ = 0, threads_ = 1;
  pthreadpool_t pool_ = nullptr;
  uint32_t pool_flags_ = 0;  // PTHREADPOOL_FLAG_YIELD_WORKERS when the workers sleep between regions
  void* owned_arena_ = nullptr;
  size_t arena_bytes_ = 0, packed_bytes_ = 0;
  Buffers buf_;
  std::vector<LayerOps> layer_ops_;
  Linear head_dense_, head_out_;
  std::vector<std::vector<float>> conv_taps_;  // per layer, GiveTake convolution [K x dim]
  const float* output_ = nullptr;
  size_t output_rows_ = 0, output_cols_ = 0, last_length_ = 0;
  // Token-by-token runs of causal linear attention: tokens fed so far, and whether the current
  // forward pass continues from the carried state (buf_.carried_state) instead of starting over.
  size_t step_position_ = 0;
  bool stepping_ = false;
  size_t scratch_stride_ = 0;
  bool own_f32_dense_ = false; // f32 dense layers on the own kernel, not XNNPACK
  bool row_pipeline_ = false;  // layers run by layer_rows
  size_t row_block_ = 0;       // its rows per block
  size_t qx_stride_ = 0;       // bytes per quantized row in buf_.qx (quantized_row_stride)
  bool profiling_ = false;
  linfer_profile profile_{};
  // Adds the time since `start` to `kind` when profiling; returns the new start.
  std::chrono::steady_clock::time_point lap(linfer_op_kind kind,
                                            std::chrono::steady_clock::time_point start);
  std::chrono::steady_clock::time_point now() const {
    return profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  }
};

}  // namespace linfer::rt
