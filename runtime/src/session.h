// A session: one execution plan, its arena, its thread pool and its dense layers over the
// model's shared weights; and run(), which trusts what creation checked and allocates nothing.
// The work is spread over files by job:
//   session.cc            creation, the entry points, embeddings, the layer loop, output heads
//   session_attention.cc  the attention kinds (Linformer, full softmax, linear, GiveTake, Performer,
//                         sliding window)
//   session_rows.cc       the row pipeline (a softmax-attention layer as one parallel region)
//   plan.cc               the decisions, made once; dense_layer.cc: one dense layer
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dense_layer.h"
#include "linfer/linfer.h"
#include "model.h"
#include "parallel.h"
#include "plan.h"
#include "status.h"

namespace linfer::rt {

class Session {
 public:
  ~Session();
  // Arena bytes for these options (make_execution_plan's errors).
  static Result<size_t> arena_size(const LoadedModel& model, const linfer_session_options& options);
  // The plan's errors, LINFER_ERROR_BUFFER_TOO_SMALL for a caller's arena below arena_size,
  // LINFER_ERROR_OUT_OF_MEMORY naming what could not be allocated and its bytes,
  // LINFER_ERROR_UNSUPPORTED when XNNPACK does not run on this CPU, else internal.
  static Result<std::unique_ptr<Session>> create(const LoadedModel& model,
                                                 const linfer_session_options& options);

  // LINFER_ERROR_INVALID_ARGUMENT for bad inputs; on success nothing is allocated.
  Status run_ids(const int32_t* ids, size_t length);
  Status run_embeddings(const float* embeddings, size_t length);
  Status step(int32_t id);
  void reset_state() { step_position_ = 0; }

  const float* output() const { return output_; }
  size_t output_rows() const { return output_rows_; }
  size_t output_cols() const { return output_cols_; }
  // Final hidden states of the last run: the residual stream, which no head overwrites.
  const float* hidden_states() const { return buf_.x; }
  size_t hidden_rows() const { return last_length_; }
  size_t hidden_cols() const { return cfg_.dim; }
  size_t arena_bytes() const { return plan_.arena_bytes; }
  size_t packed_weight_bytes() const;  // weights this session holds itself (XNNPACK only)
  const std::string& description() const { return description_; }
  linfer_profile profile() const { return profile_; }
  void reset_profile() { profile_ = linfer_profile{}; }

 private:
  Session() = default;
  struct LayerOps {
    DenseLayer q, out, fc1, fc2;
    std::vector<DenseLayer> k, v;  // one, or one per kv head (per-head projections)
    DenseLayer q_global, k_global, v_global;  // sliding window with global projections
  };
  // The arena's buffers (plan.h, Buffer); null when the plan does not use one.
  struct Buffers {
    float *x = nullptr, *x2 = nullptr, *h = nullptr, *sub = nullptr, *q = nullptr,
          *attn = nullptr, *ff = nullptr, *comp_k = nullptr, *comp_v = nullptr, *kp = nullptr,
          *vp = nullptr, *kt = nullptr, *rowsum = nullptr, *scratch = nullptr,
          *positions = nullptr, *pooled = nullptr, *pooled2 = nullptr, *out = nullptr;
    QuantizedRows quantized;         // int8 layers
    float* linear_state = nullptr;   // linear attention: S and z per kv head
    float* carried_state = nullptr;  // causal linear attention: S and z per layer and kv head
    float* row_blocks = nullptr;     // row pipeline: per thread, a block's Q, attention, hidden rows
    float* proj_rows = nullptr;      // f16 projections: per thread, rows of E widened to f32
    // int8 compression (plan.h): X's columns as int8 panels with their scales and sums; E's (and
    // F's) rows in the int8 kernel's input form.
    int8_t* comp_panels = nullptr;
    float* comp_scales = nullptr;
    int32_t* comp_sums = nullptr;
    int8_t* comp_rows = nullptr;
    uint8_t* head_panels = nullptr;  // int8 attention: K'^T and V' per distinct head (plan.h)
    uint8_t* attn_int8 = nullptr;    // int8 attention: per thread, scores and quantized rows
    uint32_t* lsh_sorted = nullptr;  // Lsh: per head and round, the rows in bucket order
    float* lsh_merge = nullptr;      // Lsh: per head, the rounds' running log-sum-exp max, then sum
    uint32_t* lsh_index = nullptr;   // Lsh: per thread, buckets and counts, chunk positions
  };

  Status prepare(const linfer_session_options& options);
  Status prepare_layers();
  std::string describe() const;

  // session.cc
  Status forward(size_t T);
  void add_positions(size_t T);
  // Rotary positions on T rows of `heads` heads (queries or keys), when the model has them;
  // rotate_rows: `rows` rows at x that are rows [row, row + rows) of the run, on the calling
  // thread (the row pipeline's blocks).
  void rotate(float* x, size_t T, size_t heads);
  void rotate_rows(float* x, size_t row, size_t rows, size_t heads) const;
  bool run_dense(const DenseLayer& op, size_t rows, const float* x, float* y, bool accumulate = false);
  bool feed_forward(LayerOps& ops, const float* in, size_t R, float* residual);
  bool output_head(size_t T);
  void layernorm_rows(const float* in, float* out, size_t rows, const NormWeights& n);
  void add_rows(float* y, const float* x, size_t rows, size_t cols);
  // Adds the time since `start` to `kind` when profiling; returns the new start.
  std::chrono::steady_clock::time_point lap(linfer_op_kind kind, std::chrono::steady_clock::time_point start);
  std::chrono::steady_clock::time_point now() const {
    return plan_.profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  }

  // session_attention.cc. The attention sublayers add their output to `residual`.
  bool attention(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  bool linformer_kv(const LayerWeights& w, LayerOps& ops, const float* in, size_t T);
  void compress(const WeightView& E, const float* in, size_t T, float* comp, size_t row_begin,
                size_t row_end, float* rowsum, size_t chunk);
  // The compression of all projections of a layer on the int8 kernel (E[kv], kv = 0 K, 1 V;
  // rowsum[kv] null or where their row sums go).
  void compress_int8(const WeightView* const E[2], size_t projections, const float* in, size_t T,
                     float* const comp[2], float* const rowsum[2]);
  size_t softmax_keys(const LayerWeights& w, LayerOps& ops, const float* in, size_t T);
  // K (buf_.kp) transposed per distinct head into buf_.kt, and the int8 attention's panels.
  void prepare_keys(size_t keys);
  // Longformer: each row over its window and the global rows; the global rows over every row.
  bool sliding_window(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  bool block_sparse(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  // Reformer: hash, sort, chunked attention per round, rounds merged by their log-sum-exp.
  bool lsh(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);
  void lsh_sort(const WeightView& rotations, size_t T, size_t h, size_t round, size_t chunk);
  // The two chunks a thread's scratch holds (rows gathered), to reuse the chunk before the next.
  struct LshSlots {
    size_t head = SIZE_MAX, chunk[2] = {SIZE_MAX, SIZE_MAX};
  };
  void lsh_chunk(size_t T, size_t h, size_t round, size_t c, size_t chunk, LshSlots& slots);
  void lsh_gather(size_t T, size_t h, size_t global_chunk, size_t chunk, size_t slot);
  // The keys a query row sees: every key (radius 0), or (sliding window) the keys within radius
  // of the row's position and the first global_keys.
  struct KeyWindow {
    size_t radius, global_keys;  // (no member initializers: `= {}` below value-initializes to 0)
  };
  // Softmax attention of every head for query rows [row_begin, row_end) of buf_.q into buf_.attn,
  // (head, block of rows) items across threads.
  void attention_items(size_t keys, size_t row_begin, size_t row_end, KeyWindow window = {});
  kernels::AttentionHeadArgs attention_head_args(size_t head, size_t keys, const float* q, float* o) const;
  // The distinct K/V head (softmax_keys' s) that query head h reads.
  size_t kv_head(size_t h) const;
  // Softmax attention of head h for `rows` query rows of q into o (both row stride heads x
  // head_dim, pointing at row 0 of the block), on the f32 kernel or, in int8 Linformer models,
  // the int8 one; chunk: the thread's scratch. A window (f32 only) needs the block's first row.
  void attention_rows(size_t h, size_t keys, const float* q, float* o, size_t rows, size_t chunk,
                      KeyWindow window = {}, size_t first_row = 0);
  // The int8 attention's weights of distinct K/V head s: K'^T (keys output channels of head_dim
  // inputs) and V' (head_dim channels of `keys` inputs) as int8 panels with their scales and sums.
  struct HeadInt8 {
    int8_t *k_panels, *v_panels;
    float *k_scales, *v_scales;
    int32_t *k_sums, *v_sums;
  };
  HeadInt8 head_int8(size_t s) const;
  void pack_head(size_t s, size_t keys, const float* v, size_t v_stride);
  void linear_attention(const LayerWeights& w, size_t T, size_t layer);
  void reset_linear_state(float* S) const;  // one kv head's
  bool give_take(const LayerWeights& w, LayerOps& ops, const float* in, size_t T, float* residual);

  // session_rows.cc
  bool layer_rows(const LayerWeights& w, LayerOps& ops, size_t T);

  const LoadedModel* model_ = nullptr;
  EncoderConfig cfg_;
  ExecutionPlan plan_;
  Workers workers_;
#if LINFER_THREADS
  std::unique_ptr<ThreadPool> pool_;  // workers_.pool
#endif
  void* owned_arena_ = nullptr;
  Buffers buf_;
  std::vector<LayerOps> layer_ops_;
  DenseLayer head_dense_, head_out_;
  std::string description_;
  const float* output_ = nullptr;
  size_t output_rows_ = 0, output_cols_ = 0, last_length_ = 0;
  // Token-by-token runs of causal linear attention: tokens fed so far, and whether the current
  // forward pass continues from the carried state (buf_.carried_state) instead of starting over.
  size_t step_position_ = 0;
  bool stepping_ = false;
  linfer_profile profile_{};
};

}  // namespace linfer::rt
