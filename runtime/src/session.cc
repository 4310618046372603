// Session creation, the entry points, embeddings, the layer loop and the output heads.
#include "session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

Session::~Session() {
  layer_ops_.clear();  // operators before the pool they may use
  head_dense_ = DenseLayer();
  head_out_ = DenseLayer();
#if LINFER_WITH_XNNPACK
  if (workers_.xnn_pool) pthreadpool_destroy(workers_.xnn_pool);
#endif
  free(owned_arena_);
}

Result<size_t> Session::arena_size(const LoadedModel& model, const linfer_session_options& options) {
  Result<ExecutionPlan> plan = make_execution_plan(model, options);
  if (!plan.ok()) return plan.status();
  return size_t(plan.value().arena_bytes);
}

Result<std::unique_ptr<Session>> Session::create(const LoadedModel& model,
                                                 const linfer_session_options& options) {
  Result<ExecutionPlan> plan = make_execution_plan(model, options);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<Session> s(new (std::nothrow) Session());
  if (!s) return out_of_memory("a session", sizeof(Session));
  s->model_ = &model;
  s->cfg_ = model.desc.config;
  s->plan_ = plan.value();
  if (Status st = s->prepare(options); !st.ok()) return st;
  return s;
}

Status Session::prepare(const linfer_session_options& options) {
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
  auto at = [&](Buffer b) {
    return p.bytes[size_t(b)] ? reinterpret_cast<float*>(base + p.offset[size_t(b)]) : nullptr;
  };
  buf_.x = at(Buffer::X);
  buf_.x2 = at(Buffer::X2);
  buf_.h = at(Buffer::H);
  buf_.sub = at(Buffer::Sub);
  buf_.q = at(Buffer::Q);
  buf_.attn = at(Buffer::Attn);
  buf_.ff = at(Buffer::FF);
  buf_.comp_k = at(Buffer::CompK);
  buf_.comp_v = at(Buffer::CompV);
  buf_.kp = at(Buffer::KP);
  buf_.vp = at(Buffer::VP);
  buf_.kt = at(Buffer::KT);
  buf_.rowsum = at(Buffer::RowSum);
  buf_.scratch = at(Buffer::Scratch);
  buf_.positions = at(Buffer::Positions);
  buf_.pooled = at(Buffer::Pooled);
  buf_.pooled2 = at(Buffer::Pooled2);
  buf_.out = at(Buffer::Out);
  buf_.quantized = {reinterpret_cast<int8_t*>(at(Buffer::QX)), p.q_stride, at(Buffer::QScales)};
  buf_.linear_state = at(Buffer::LinearState);
  buf_.carried_state = at(Buffer::CarriedState);
  buf_.row_blocks = at(Buffer::RowBlocks);
  buf_.proj_rows = at(Buffer::ProjRows);
  buf_.comp_panels = reinterpret_cast<int8_t*>(at(Buffer::CompPanels));
  buf_.comp_scales = at(Buffer::CompScales);
  buf_.comp_sums = reinterpret_cast<int32_t*>(at(Buffer::CompSums));
  buf_.comp_rows = reinterpret_cast<int8_t*>(at(Buffer::CompRows));
  buf_.head_panels = reinterpret_cast<uint8_t*>(at(Buffer::HeadPanels));
  buf_.attn_int8 = reinterpret_cast<uint8_t*>(at(Buffer::AttnInt8));
  buf_.lsh_sorted = reinterpret_cast<uint32_t*>(at(Buffer::LshSorted));
  buf_.lsh_merge = at(Buffer::LshMerge);
  buf_.lsh_index = reinterpret_cast<uint32_t*>(at(Buffer::LshIndex));

  if (c.positions == PositionKind::Sinusoidal) {  // computed once, kept for every run
    const uint32_t half = c.dim / 2;
    for (uint32_t t = 0; t < p.max_len; ++t) {
      const double pos = double(t) + c.position_offset;
      float* row = buf_.positions + size_t(t) * c.dim;
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

Status Session::prepare_layers() {
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
    // K and V. Linformer: on the compressed input (k rows); with placement "after" the bias goes
    // through E (added as rowsum(E) * b by the attention), so the layer gets no bias. Per-head
    // projections give each head its own compressed input, so each kv head gets the layer for its
    // group of rows of W. Other kinds: a plain linear over all rows.
    const bool linformer = c.attention_kind == AttentionKind::Linformer;
    const bool bias_in_layer = !linformer || c.projection_placement == ProjectionPlacement::Before;
    for (int kv = 0; kv < 2; ++kv) {
      if (kv == 0 && c.attention_kind == AttentionKind::Lsh) continue;  // (the queries are the keys)
      const LinearWeights& lw = kv == 0 ? w.k : w.v;
      std::vector<DenseLayer>& list = kv == 0 ? ops.k : ops.v;
      if (err.ok())
        err = allocating("the dense layers of layer " + std::to_string(i) + "'s " + (kv == 0 ? "K" : "V") +
                             " projection (" + std::to_string(lw.weight.panel_groups) + " groups)",
                       uint64_t(lw.weight.panel_groups) * sizeof(DenseLayer),
                       [&] { list.resize(lw.weight.panel_groups); });
      for (uint32_t g = 0; g < lw.weight.panel_groups && err.ok(); ++g)
        make(list[g], lw, g, kernels::DenseActivation::None, bias_in_layer);
    }
    make(ops.out, w.out);
    if (w.q_global.weight.present()) {  // sliding window: the global rows' own projections
      make(ops.q_global, w.q_global);
      make(ops.k_global, w.k_global);
      make(ops.v_global, w.v_global);
    }
    make(ops.fc1, w.fc1, 0, dense_activation(c.activation));
    make(ops.fc2, w.fc2);
  }
  const HeadWeights& hw = model_->desc.head;
  if (hw.dense.weight.present())  // LM transform or classifier dense, each with its activation
    make(head_dense_, hw.dense, 0,
         dense_activation(c.head == HeadKind::LmLogits ? c.head_activation : c.classifier_activation));
  if (c.head != HeadKind::None) make(head_out_, hw.out);
  return err;
}

std::string Session::describe() const {
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

size_t Session::packed_weight_bytes() const {
  size_t n = head_dense_.packed_bytes() + head_out_.packed_bytes();
  for (const LayerOps& ops : layer_ops_) {
    n += ops.q.packed_bytes() + ops.out.packed_bytes() + ops.fc1.packed_bytes() + ops.fc2.packed_bytes();
    for (const DenseLayer& l : ops.k) n += l.packed_bytes();
    for (const DenseLayer& l : ops.v) n += l.packed_bytes();
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// run

Status Session::run_ids(const int32_t* ids, size_t length) {
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
    widen_weight_row(table, uint32_t(ids[t]), c.dim, c.embedding_scale, buf_.x + t * c.dim);
  lap(LINFER_OP_EMBEDDING, t0);
  return forward(length);
}

Status Session::step(int32_t id) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  const EncoderConfig& c = cfg_;
  if (c.attention_kind == AttentionKind::Lsh)
    return invalid_argument(
        "token-by-token runs are not defined for lsh attention: a row's buckets and chunk depend on the "
        "whole input, also when causal");
  if (!linear_state_floats(c) || c.causal != CausalMode::Causal)
    return invalid_argument("token-by-token runs need a causal linear-attention or performer model");
  if (c.key_stabiliser == KeyStabiliser::Sequence)
    return invalid_argument(
        "token-by-token runs need rows that do not depend on later tokens; this performer model's "
        "key stabiliser spans the whole input (key_stabiliser 'sequence', performer-pytorch's semantics)");
  if (c.head == HeadKind::Classifier)
    return invalid_argument("token-by-token runs give one row per token; a classifier pools the whole input");
  if (step_position_ >= plan_.max_len)
    return invalid_argument("the session has taken " + std::to_string(step_position_) +
                            " tokens, its maximum length; reset the state to start over");
  if (step_position_ == 0) {  // a fresh sequence: the carried state starts empty
    for (size_t i = 0; i < size_t(c.num_layers) * c.kv_heads; ++i)
      reset_linear_state(buf_.carried_state + i * linear_state_floats(c));
  }
  stepping_ = true;
  Status s = run_ids(&id, 1);
  stepping_ = false;
  if (s.ok()) ++step_position_;
  return s;
}

Status Session::run_embeddings(const float* embeddings, size_t length) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  if (length == 0 || length > plan_.max_len || !embeddings)
    return invalid_argument(!embeddings ? std::string("embeddings are null")
                                        : "input length " + std::to_string(length) + " is outside [1, " +
                                              std::to_string(plan_.max_len) + "]");
  std::memcpy(buf_.x, embeddings, length * cfg_.dim * sizeof(float));
  return forward(length);
}

std::chrono::steady_clock::time_point Session::lap(linfer_op_kind kind,
                                                  std::chrono::steady_clock::time_point start) {
  if (!plan_.profiling) return start;
  const auto t = std::chrono::steady_clock::now();
  profile_.milliseconds[kind] += std::chrono::duration<double, std::milli>(t - start).count();
  return t;
}

bool Session::run_dense(const DenseLayer& op, size_t rows, const float* x, float* y, bool accumulate) {
  const auto t0 = now();
  const bool ok = op.run(workers_, buf_.quantized, rows, x, y, accumulate, buf_.sub);
  lap(LINFER_OP_DENSE, t0);
  return ok;
}

void Session::layernorm_rows(const float* in, float* out, size_t rows, const NormWeights& n) {
  const auto t0 = now();
  const size_t D = cfg_.dim;
  workers_.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::layernorm_f32_hwy(in + b * D, D, out + b * D, D, e - b, D, f32(n.weight), f32(n.bias),
                               cfg_.norm_eps);
  });
  lap(LINFER_OP_NORM, t0);
}

void Session::add_rows(float* y, const float* x, size_t rows, size_t cols) {
  const auto t0 = now();
  workers_.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::add_f32_hwy(y + b * cols, x + b * cols, (e - b) * cols);
  });
  lap(LINFER_OP_ELEMENTWISE, t0);
}

// Positions of rows [0, T) (rows [step_position_, ...) of the sequence when stepping) added to x.
void Session::add_positions(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, first = stepping_ ? step_position_ : 0;
  if (c.positions == PositionKind::Sinusoidal) {
    add_rows(buf_.x, buf_.positions + first * D, T, D);
  } else if (c.positions == PositionKind::Learned) {
    const WeightView& table = model_->desc.position_embedding;
    const size_t row0 = c.position_offset + first;
    if (table.dtype == DType::F32) {
      add_rows(buf_.x, f32(table) + row0 * D, T, D);
    } else {  // widened into h, which is free until the first layer
      const auto t0 = now();
      workers_.ranges(T, 1, [&](size_t b, size_t e, size_t) {
        for (size_t t = b; t < e; ++t) widen_weight_row(table, uint32_t(row0 + t), D, 1.0f, buf_.h + t * D);
      });
      lap(LINFER_OP_EMBEDDING, t0);
      add_rows(buf_.x, buf_.h, T, D);
    }
  }
}

bool Session::feed_forward(LayerOps& ops, const float* in, size_t R, float* residual) {
  return run_dense(ops.fc1, R, in, buf_.ff) && run_dense(ops.fc2, R, buf_.ff, residual, true);
}

bool Session::output_head(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim;
  const HeadWeights& hw = model_->desc.head;
  if (c.head == HeadKind::None) {
    output_ = buf_.x;
    output_rows_ = T;
    output_cols_ = D;
    return true;
  }
  if (c.head == HeadKind::LmLogits) {
    const float* in = buf_.x;
    if (hw.dense.weight.present()) {
      if (!run_dense(head_dense_, T, buf_.x, buf_.h)) return false;  // with its activation
      in = buf_.h;
    }
    if (hw.norm.weight.present()) {
      layernorm_rows(in, buf_.h, T, hw.norm);
      in = buf_.h;
    }
    if (!run_dense(head_out_, T, in, buf_.out)) return false;
    output_ = buf_.out;
    output_rows_ = T;
    output_cols_ = c.vocab_size;
    return true;
  }
  // Classifier over a pooled vector: the first row, or the mean of all rows.
  const auto t0 = now();
  float* pooled = buf_.pooled;
  if (c.pooling == Pooling::First) std::memcpy(pooled, buf_.x, D * sizeof(float));
  else kernels::mean_rows_f32_hwy(buf_.x, T, D, D, pooled);
  lap(LINFER_OP_ELEMENTWISE, t0);
  if (hw.dense.weight.present()) {  // dense + tanh
    if (!run_dense(head_dense_, 1, pooled, buf_.pooled2)) return false;
    pooled = buf_.pooled2;
  }
  if (!run_dense(head_out_, 1, pooled, buf_.out)) return false;
  output_ = buf_.out;
  output_rows_ = 1;
  output_cols_ = c.num_classes;
  return true;
}

Status Session::forward(size_t T) {
  const EncoderConfig& c = cfg_;
  const EncoderDescription& d = model_->desc;
  const size_t D = c.dim;
  output_ = nullptr;
  output_rows_ = output_cols_ = 0;
  if (plan_.profiling) ++profile_.runs;
  last_length_ = T;
  if (!stepping_) step_position_ = 0;  // a whole run starts a new sequence
  add_positions(T);
  if (c.embedding_norm) layernorm_rows(buf_.x, buf_.x, T, d.embedding_norm);

  // GiveTake carries its p learned tokens as rows [T, T + p) of the same buffers: norms, the
  // feed-forward and the residuals treat them like sequence rows; only attention tells them apart.
  const size_t R = T + c.num_global_tokens;
  for (uint32_t i = 0; i < c.num_global_tokens; ++i)
    widen_weight_row(d.global_tokens, i, D, 1.0f, buf_.x + (T + i) * D);
  bool ok = true;
  if (c.norm_placement == NormPlacement::Reversible) std::memcpy(buf_.x2, buf_.x, R * D * sizeof(float));
  for (uint32_t i = 0; i < c.num_layers && ok; ++i) {
    const LayerWeights& w = d.layers[i];
    LayerOps& ops = layer_ops_[i];
    if (plan_.row_pipeline) {
      ok = layer_rows(w, ops, T);
      continue;
    }
    switch (c.norm_placement) {
      // The sublayers add into the residual stream themselves. With post-norm their input is
      // the stream: each reads it in full (Q, K, V; the first feed-forward layer) before the
      // last dense layer adds to it.
      case NormPlacement::Pre:
        layernorm_rows(buf_.x, buf_.h, R, w.attention_norm);
        ok = attention(w, ops, buf_.h, T, buf_.x);
        layernorm_rows(buf_.x, buf_.h, R, w.feed_forward_norm);
        ok = ok && feed_forward(ops, buf_.h, R, buf_.x);
        break;
      case NormPlacement::Post:
        ok = attention(w, ops, buf_.x, T, buf_.x);
        layernorm_rows(buf_.x, buf_.x, R, w.attention_norm);
        ok = ok && feed_forward(ops, buf_.x, R, buf_.x);
        layernorm_rows(buf_.x, buf_.x, R, w.feed_forward_norm);
        break;
      case NormPlacement::Reversible:  // x holds y1, x2 holds y2
        layernorm_rows(buf_.x2, buf_.h, R, w.attention_norm);
        ok = attention(w, ops, buf_.h, T, buf_.x);
        layernorm_rows(buf_.x, buf_.h, R, w.feed_forward_norm);
        ok = ok && feed_forward(ops, buf_.h, R, buf_.x2);
        break;
    }
  }
  if (ok && c.norm_placement == NormPlacement::Reversible) {
    add_rows(buf_.x, buf_.x2, T, D);
    if (c.reversible_merge == ReversibleMerge::Mean)  // (y1 + y2) / 2, as reformer-pytorch
      kernels::scale_f32_hwy(buf_.x, T * D, 0.5f, buf_.x);
  }
  if (ok && c.final_norm) layernorm_rows(buf_.x, buf_.x, T, d.final_norm);
  if (ok) ok = output_head(T);
  if (!ok) return internal_error("an XNNPACK dense operator failed during the run");
  return {};
}

}  // namespace linfer::rt
