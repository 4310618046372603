// Inference (a session): creation, the entry points, embeddings, the layer loop and the output heads.
#include "inference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "attention/attention_kind.h"
#include "weight_rows.h"

namespace linfer::rt {
namespace {

const float* f32(const WeightView& w) { return static_cast<const float*>(w.data); }

kernels::DenseActivation dense_activation(Activation a) {
  switch (a) {
    case Activation::GeluErf: return kernels::DenseActivation::GeluErf;
    case Activation::GeluTanh: return kernels::DenseActivation::GeluTanh;
    case Activation::Relu: return kernels::DenseActivation::Relu;
    case Activation::Tanh: return kernels::DenseActivation::Tanh;
  }
  return kernels::DenseActivation::None;
}

}  // namespace

Inference::~Inference() {
  layer_ops_.clear();  // operators before the pool they may use
  plan_.attention.reset();
  attention_ = nullptr;
  head_dense_ = DenseLayer();
  head_out_ = DenseLayer();
#if LINFER_WITH_XNNPACK
  if (workers_.xnn_pool) pthreadpool_destroy(workers_.xnn_pool);
#endif
  free(owned_arena_);
}

Result<size_t> Inference::arena_size(const LoadedModel& model, const linfer_session_options& options) {
  Result<ExecutionPlan> plan = make_execution_plan(model, options);
  if (!plan.ok()) return plan.status();
  return size_t(plan.value().arena_bytes);
}

Result<std::unique_ptr<Inference>> Inference::create(const LoadedModel& model,
                                                 const linfer_session_options& options) {
  Result<ExecutionPlan> plan = make_execution_plan(model, options);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<Inference> s(new (std::nothrow) Inference());
  if (!s) return out_of_memory("a session", sizeof(Inference));
  s->model_ = &model;
  s->cfg_ = model.desc.config;
  s->plan_ = plan.value();
  s->attention_ = s->plan_.attention.get();
  if (Status st = s->prepare(options); !st.ok()) return st;
  return s;
}

Status Inference::prepare(const linfer_session_options& options) {
  const EncoderConfig& c = cfg_;
  const ExecutionPlan& p = plan_;
  uint8_t* base;
  if (options.arena) {
    if (options.arena_size < p.arena_bytes)
      return {LINFER_ERROR_BUFFER_TOO_SMALL, "the arena is too small: " + std::to_string(options.arena_size) +
                                                 " bytes given, " + std::to_string(p.arena_bytes) + " needed"};
    base = static_cast<uint8_t*>(options.arena);
  } else {
    if (posix_memalign(&owned_arena_, 64, p.arena_bytes) != 0) {
      owned_arena_ = nullptr;
      return out_of_memory("the session's arena", p.arena_bytes);
    }
    base = static_cast<uint8_t*>(owned_arena_);
  }
  base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
  const Arena arena(base, p.arena);
  const SessionBuffers& b = p.buffers;
  using Bound = std::pair<float* Buffers::*, ArenaBuffer SessionBuffers::*>;
  for (const auto& [to, from] : {
           Bound{&Buffers::residual, &SessionBuffers::residual}, Bound{&Buffers::residual2, &SessionBuffers::residual2},
           Bound{&Buffers::normed, &SessionBuffers::normed}, Bound{&Buffers::sublayer_out, &SessionBuffers::sublayer_out},
           Bound{&Buffers::queries, &SessionBuffers::queries}, Bound{&Buffers::attention_out, &SessionBuffers::attention_out},
           Bound{&Buffers::ff_hidden, &SessionBuffers::ff_hidden}, Bound{&Buffers::row_blocks, &SessionBuffers::row_blocks},
           Bound{&Buffers::sinusoids, &SessionBuffers::sinusoids}, Bound{&Buffers::pooled, &SessionBuffers::pooled},
           Bound{&Buffers::pooled_dense, &SessionBuffers::pooled_dense}, Bound{&Buffers::head_out, &SessionBuffers::head_out}})
    buf_.*to = arena.at(b.*from);
  buf_.quantized = {arena.at<int8_t>(b.quantized_rows), p.q_stride, arena.at(b.quantized_scales)};
  attention_->bind(arena);

  if (c.positions == PositionKind::Sinusoidal) {  // computed once, kept for every run
    const uint32_t half = c.dim / 2;
    for (uint32_t t = 0; t < p.max_len; ++t) {
      const double pos = double(t) + c.position_offset;
      float* row = buf_.sinusoids + size_t(t) * c.dim;
      for (uint32_t i = 0; i < half; ++i) {
        const double angle = pos * std::pow(double(c.sinusoidal_base), -2.0 * i / c.dim);
        row[i] = float(std::sin(angle));
        row[half + i] = float(std::cos(angle));
      }
    }
  }

  workers_.threads = p.threads;
  workers_.isa = p.max_isa;
#if LINFER_WITH_XNNPACK
  if (p.xnnpack) {
    if (std::string e = kernels::initialize_xnnpack(); !e.empty()) return unsupported(std::move(e));
    if (p.threads > 1) {
      workers_.xnn_pool = pthreadpool_create(p.threads);
      workers_.xnn_flags = p.yield_workers ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0;
      if (!workers_.xnn_pool)  // (pthreadpool does not say whether memory or a thread failed)
        return internal_error("could not create a pool of " + std::to_string(p.threads) + " threads");
    }
  }
#endif
#if LINFER_THREADS
  if (p.threads > 1 && !p.xnnpack) {
    pool_.reset(new (std::nothrow) ThreadPool());
    if (!pool_) return out_of_memory("a thread pool", sizeof(ThreadPool));
    if (Status s = pool_->start(p.threads, p.yield_workers); !s.ok()) return s;
    workers_.pool = pool_.get();
  }
#endif
  if (Status s = prepare_layers(); !s.ok()) return s;
  description_ = describe();  // (a few hundred bytes: a failure reaches the C API's guard)
  return {};
}

Status Inference::prepare_layers() {
  const EncoderConfig& c = cfg_;
  const bool yield = plan_.yield_workers;
  Status err;
  auto make = [&](DenseLayer& op, const LinearWeights& l, uint32_t group = 0,
                  kernels::DenseActivation act = kernels::DenseActivation::None, bool with_bias = true) {
    if (err.ok()) err = op.prepare(plan_, l.weight, group, with_bias ? l.bias : WeightView(), act, yield);
  };
  err = allocating("the dense layers of " + std::to_string(c.num_layers) + " layers",
                   uint64_t(c.num_layers) * sizeof(LayerOps), [&] { layer_ops_.resize(c.num_layers); });
  for (uint32_t i = 0; i < c.num_layers && err.ok(); ++i) {
    const LayerWeights& w = model_->desc.layers[i];
    LayerOps& ops = layer_ops_[i];
    make(ops.q, w.q);
    make(ops.out, w.out);
    make(ops.fc1, w.fc1, 0, dense_activation(c.activation));
    make(ops.fc2, w.fc2);
  }
  const HeadWeights& hw = model_->desc.head;
  if (hw.dense.weight.present())  // LM transform or classifier dense, each with its activation
    make(head_dense_, hw.dense, 0,
         dense_activation(c.head == HeadKind::LmLogits ? c.head_activation : c.classifier_activation));
  if (c.head != HeadKind::None) make(head_out_, hw.out);
  if (err.ok()) err = attention_->prepare_layers(*this);
  return err;
}

std::string Inference::describe() const {
  std::string s = "dense:";
  const char* names[3] = {"f32", "f16", "int8"};
  for (size_t t = 0; t < 3; ++t)
    if (plan_.dense_kernel[t])
      s += std::string(" ") + names[t] + " " +
           (plan_.xnnpack && t != size_t(DType::I8) ? "xnnpack_f32 (per-session packed copy)"
                                                    : plan_.dense_kernel[t]->name);
  s += std::string("; other kernels: highway ") + kernels::hwy_kernel_target(plan_.max_isa);
  s += "; row pipeline: " + (plan_.row_pipeline ? "on, " + std::to_string(plan_.row_block) + " rows" : std::string("off"));
  s += "; threads: " + std::to_string(plan_.threads) + (plan_.yield_workers ? " (yielding)" : "");
  return s;
}

size_t Inference::packed_weight_bytes() const {
  size_t n = head_dense_.packed_bytes() + head_out_.packed_bytes();
  for (const LayerOps& ops : layer_ops_) {
    n += ops.q.packed_bytes() + ops.out.packed_bytes() + ops.fc1.packed_bytes() + ops.fc2.packed_bytes();
  }
  return n + attention_->packed_weight_bytes();
}

// ---------------------------------------------------------------------------------------------
// run

Status Inference::run_ids(const int32_t* ids, size_t length) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  const EncoderConfig& c = cfg_;
  if (c.vocab_size == 0) return invalid_argument("this model takes embeddings, not token ids (vocab_size is 0)");
  if (length == 0 || length > plan_.max_len || !ids)
    return invalid_argument(!ids ? std::string("token ids are null")
                                 : "input length " + std::to_string(length) + " is outside [1, " +
                                       std::to_string(plan_.max_len) + "]");
  for (size_t t = 0; t < length; ++t)
    if (ids[t] < 0 || uint32_t(ids[t]) >= c.vocab_size)
      return invalid_argument("token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
                              " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
  const auto t0 = now();
  const WeightView& table = model_->desc.token_embedding;
  for (size_t t = 0; t < length; ++t)
    widen_weight_row(table, uint32_t(ids[t]), c.dim, c.embedding_scale, buf_.residual + t * c.dim);
  lap(LINFER_OP_EMBEDDING, t0);
  return forward(length);
}

Status Inference::step(int32_t id) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  const EncoderConfig& c = cfg_;
  if (Status s = attention_->can_step(c); !s.ok()) return s;
  if (c.head == HeadKind::Classifier)
    return invalid_argument("token-by-token runs give one row per token; a classifier pools the whole input");
  if (step_position_ >= plan_.max_len)
    return invalid_argument("the session has taken " + std::to_string(step_position_) +
                            " tokens, its maximum length; reset the state to start over");
  if (step_position_ == 0) attention_->start_sequence();  // a fresh sequence
  stepping_ = true;
  Status s = run_ids(&id, 1);
  stepping_ = false;
  if (s.ok()) ++step_position_;
  return s;
}

Status Inference::run_embeddings(const float* embeddings, size_t length) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  if (length == 0 || length > plan_.max_len || !embeddings)
    return invalid_argument(!embeddings ? std::string("embeddings are null")
                                        : "input length " + std::to_string(length) + " is outside [1, " +
                                              std::to_string(plan_.max_len) + "]");
  std::memcpy(buf_.residual, embeddings, length * cfg_.dim * sizeof(float));
  return forward(length);
}

std::chrono::steady_clock::time_point Inference::lap(linfer_op_kind kind,
                                                  std::chrono::steady_clock::time_point start) {
  if (!plan_.profiling) return start;
  const auto t = std::chrono::steady_clock::now();
  profile_.milliseconds[kind] += std::chrono::duration<double, std::milli>(t - start).count();
  return t;
}

bool Inference::run_dense(const DenseLayer& op, size_t rows, const float* x, float* y, bool accumulate) {
  const auto t0 = now();
  const bool ok = op.run(workers_, buf_.quantized, rows, x, y, accumulate, buf_.sublayer_out);
  lap(LINFER_OP_DENSE, t0);
  return ok;
}

void Inference::layernorm_rows(const float* in, float* out, size_t rows, const NormWeights& n) {
  const auto t0 = now();
  const size_t D = cfg_.dim;
  workers_.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::layernorm_f32_hwy(in + b * D, D, out + b * D, D, e - b, D, f32(n.weight), f32(n.bias),
                               cfg_.norm_eps);
  });
  lap(LINFER_OP_NORM, t0);
}

void Inference::add_rows(float* y, const float* x, size_t rows, size_t cols) {
  const auto t0 = now();
  workers_.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::add_f32_hwy(y + b * cols, x + b * cols, (e - b) * cols);
  });
  lap(LINFER_OP_ELEMENTWISE, t0);
}

// Positions of rows [0, T) (rows [step_position_, ...) of the sequence when stepping) added to x.
void Inference::add_positions(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, first = stepping_ ? step_position_ : 0;
  if (c.positions == PositionKind::Sinusoidal) {
    add_rows(buf_.residual, buf_.sinusoids + first * D, T, D);
  } else if (c.positions == PositionKind::Learned) {
    const WeightView& table = model_->desc.position_embedding;
    const size_t row0 = c.position_offset + first;
    if (table.dtype == DType::F32) {
      add_rows(buf_.residual, f32(table) + row0 * D, T, D);
    } else {  // widened into h, which is free until the first layer
      const auto t0 = now();
      workers_.ranges(T, 1, [&](size_t b, size_t e, size_t) {
        for (size_t t = b; t < e; ++t) widen_weight_row(table, uint32_t(row0 + t), D, 1.0f, buf_.normed + t * D);
      });
      lap(LINFER_OP_EMBEDDING, t0);
      add_rows(buf_.residual, buf_.normed, T, D);
    }
  }
}

// Rows [0, T) are positions [first, first + T) of the sequence (first > 0 when stepping).
void Inference::rotate(float* x, size_t T, size_t heads) {
  if (cfg_.rotary == Rotary::None) return;
  const auto t = now();
  workers_.ranges(T, 16, [&](size_t b, size_t e, size_t) { rotate_rows(x + b * heads * cfg_.head_dim, b, e - b, heads); });
  lap(LINFER_OP_ELEMENTWISE, t);
}

// `rows` rows at x (`heads` heads each) that are rows [row, row + rows) of the run.
void Inference::rotate_rows(float* x, size_t row, size_t rows, size_t heads) const {
  if (cfg_.rotary == Rotary::None) return;
  const size_t dh = cfg_.head_dim, first = first_position() + row;
  kernels::rotate_pairs_f32(x, heads * dh, rows, heads, dh, f32(model_->desc.rotary_table) + first * dh, dh);
}

bool Inference::feed_forward(LayerOps& ops, const float* in, size_t R, float* residual) {
  return run_dense(ops.fc1, R, in, buf_.ff_hidden) && run_dense(ops.fc2, R, buf_.ff_hidden, residual, true);
}

bool Inference::output_head(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim;
  const HeadWeights& hw = model_->desc.head;
  if (c.head == HeadKind::None) {
    output_ = buf_.residual;
    output_rows_ = T;
    output_cols_ = D;
    return true;
  }
  if (c.head == HeadKind::LmLogits) {
    const float* in = buf_.residual;
    if (hw.dense.weight.present()) {
      if (!run_dense(head_dense_, T, buf_.residual, buf_.normed)) return false;  // with its activation
      in = buf_.normed;
    }
    if (hw.norm.weight.present()) {
      layernorm_rows(in, buf_.normed, T, hw.norm);
      in = buf_.normed;
    }
    if (!run_dense(head_out_, T, in, buf_.head_out)) return false;
    output_ = buf_.head_out;
    output_rows_ = T;
    output_cols_ = c.vocab_size;
    return true;
  }
  // Classifier over a pooled vector: the first row, or the mean of all rows.
  const auto t0 = now();
  float* pooled = buf_.pooled;
  if (c.pooling == Pooling::First) std::memcpy(pooled, buf_.residual, D * sizeof(float));
  else kernels::mean_rows_f32_hwy(buf_.residual, T, D, D, pooled);
  lap(LINFER_OP_ELEMENTWISE, t0);
  if (hw.dense.weight.present()) {  // dense + tanh
    if (!run_dense(head_dense_, 1, pooled, buf_.pooled_dense)) return false;
    pooled = buf_.pooled_dense;
  }
  if (!run_dense(head_out_, 1, pooled, buf_.head_out)) return false;
  output_ = buf_.head_out;
  output_rows_ = 1;
  output_cols_ = c.num_classes;
  return true;
}

Status Inference::forward(size_t T) {
  const EncoderConfig& c = cfg_;
  const EncoderDescription& d = model_->desc;
  const size_t D = c.dim;
  output_ = nullptr;
  output_rows_ = output_cols_ = 0;
  if (plan_.profiling) ++profile_.runs;
  last_length_ = T;
  if (!stepping_) step_position_ = 0;  // a whole run starts a new sequence
  add_positions(T);
  if (c.embedding_norm) layernorm_rows(buf_.residual, buf_.residual, T, d.embedding_norm);

  // GiveTake carries its p learned tokens as rows [T, T + p) of the same buffers: norms, the
  // feed-forward and the residuals treat them like sequence rows; only attention tells them apart.
  const size_t R = T + c.num_global_tokens;
  for (uint32_t i = 0; i < c.num_global_tokens; ++i)
    widen_weight_row(d.global_tokens, i, D, 1.0f, buf_.residual + (T + i) * D);
  bool ok = true;
  if (c.norm_placement == NormPlacement::Reversible) std::memcpy(buf_.residual2, buf_.residual, R * D * sizeof(float));
  for (uint32_t i = 0; i < c.num_layers && ok; ++i) {
    const LayerWeights& w = d.layers[i];
    LayerOps& ops = layer_ops_[i];
    if (plan_.row_pipeline) {
      ok = layer_rows(i, w, ops, T);
      continue;
    }
    const AttentionLayer layer{i, w, ops.q, ops.out};
    switch (c.norm_placement) {
      // The sublayers add into the residual stream themselves. With post-norm their input is
      // the stream: each reads it in full (Q, K, V; the first feed-forward layer) before the
      // last dense layer adds to it.
      case NormPlacement::Pre:
        layernorm_rows(buf_.residual, buf_.normed, R, w.attention_norm);
        ok = attention_->run(*this, layer, buf_.normed, T, buf_.residual);
        layernorm_rows(buf_.residual, buf_.normed, R, w.feed_forward_norm);
        ok = ok && feed_forward(ops, buf_.normed, R, buf_.residual);
        break;
      case NormPlacement::Post:
        ok = attention_->run(*this, layer, buf_.residual, T, buf_.residual);
        layernorm_rows(buf_.residual, buf_.residual, R, w.attention_norm);
        ok = ok && feed_forward(ops, buf_.residual, R, buf_.residual);
        layernorm_rows(buf_.residual, buf_.residual, R, w.feed_forward_norm);
        break;
      case NormPlacement::Reversible:  // x holds y1, x2 holds y2
        layernorm_rows(buf_.residual2, buf_.normed, R, w.attention_norm);
        ok = attention_->run(*this, layer, buf_.normed, T, buf_.residual);
        layernorm_rows(buf_.residual, buf_.normed, R, w.feed_forward_norm);
        ok = ok && feed_forward(ops, buf_.normed, R, buf_.residual2);
        break;
    }
  }
  if (ok && c.norm_placement == NormPlacement::Reversible) {
    add_rows(buf_.residual, buf_.residual2, T, D);
    if (c.reversible_merge == ReversibleMerge::Mean)  // (y1 + y2) / 2, as reformer-pytorch
      kernels::scale_f32_hwy(buf_.residual, T * D, 0.5f, buf_.residual);
  }
  if (ok && c.final_norm) layernorm_rows(buf_.residual, buf_.residual, T, d.final_norm);
  if (ok) ok = output_head(T);
  if (!ok) return internal_error("an XNNPACK dense operator failed during the run");
  return {};
}

}  // namespace linfer::rt
