// SPDX-License-Identifier: Apache-2.0
// Inference (a session) created: the plan bound to an arena, the dense layers prepared, the threads
// started. It runs once per session, so it is compiled for size (linfer_cold_sources).
#include "inference.h"

#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

#include "attention/attention_kind.h"
#include "linfer/types/aligned_alloc.h"
#include "model_options.h"

namespace linfer::rt {
namespace {

kernels::DenseActivation dense_activation(Activation a) {
  switch (a) {
    case Activation::GeluErf:
      return kernels::DenseActivation::GeluErf;
    case Activation::GeluTanh:
      return kernels::DenseActivation::GeluTanh;
    case Activation::Relu:
      return kernels::DenseActivation::Relu;
    case Activation::Tanh:
      return kernels::DenseActivation::Tanh;
  }
  return kernels::DenseActivation::None;
}

}  // namespace

// (The run entry points' refusals: out of line here, compiled for size, not inlined into them.)
Status input_length_error(size_t length, size_t max_len) {
  return invalid_argument("input length {} is outside [1, {}]", kept(length), kept(max_len));
}
Status token_id_error(int32_t id, size_t position, uint32_t vocab_size) {
  return invalid_argument("token id {} at position {} is outside the vocabulary [0, {})", kept(id), kept(position),
                          kept(vocab_size));
}

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

Result<std::unique_ptr<Inference>> Inference::create(const LoadedModel& model, const linfer_session_options& options) {
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
      return failure(LINFER_ERROR_BUFFER_TOO_SMALL, "the arena is too small: {} bytes given, {} needed",
                     kept(options.arena_size), kept(p.arena_bytes));
    base = static_cast<uint8_t*>(options.arena);
  } else {
    owned_arena_ = aligned_block(64, p.arena_bytes);
    if (!owned_arena_) {
      return out_of_memory("the session's arena", p.arena_bytes);
    }
    base = static_cast<uint8_t*>(owned_arena_);
  }
  base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
  const Arena arena(base, p.arena);
  const SessionBuffers& b = p.buffers;
  using Bound = std::pair<float * Buffers::*, ArenaBuffer SessionBuffers::*>;
  for (const auto& [to, from] :
       {Bound{&Buffers::residual, &SessionBuffers::residual}, Bound{&Buffers::residual2, &SessionBuffers::residual2},
        Bound{&Buffers::normed, &SessionBuffers::normed}, Bound{&Buffers::ff_hidden, &SessionBuffers::ff_hidden},
        Bound{&Buffers::row_blocks, &SessionBuffers::row_blocks},
        Bound{&Buffers::sinusoids, &SessionBuffers::sinusoids}, Bound{&Buffers::pooled, &SessionBuffers::pooled},
        Bound{&Buffers::pooled_dense, &SessionBuffers::pooled_dense},
        Bound{&Buffers::head_out, &SessionBuffers::head_out}})
    buf_.*to = arena.at(b.*from);
  sub_.queries = arena.at(b.queries);
  sub_.attention_out = arena.at(b.attention_out);
  sub_.sublayer_out = arena.at(b.sublayer_out);
  sub_.quantized = {arena.at<int8_t>(b.quantized_rows), p.q_stride, arena.at(b.quantized_scales),
                    arena.at(b.smoothed_rows), p.smoothed_stride};
  attention_->bind(arena);

  if (sinusoidal_positions(c)) {  // computed once, kept for every run
#if LINFER_BARE_METAL             // (without libm's pow, sin and cos; Highway's Sin and Cos hold to 39,000)
    if (double(p.max_len) + c.position_offset > kernels::kSinusoidMaxPosition)
      return unsupported(
          "sinusoidal positions up to {}: a bare-metal build computes them up to 39000; make the session's max_seq_len "
          "smaller",
          kept(uint64_t(p.max_len) + c.position_offset));
    kernels::sinusoids_f32_hwy(buf_.sinusoids, p.max_len, c.dim, c.position_offset, c.sinusoidal_base);
#else
    kernels::sinusoids_f32_ref(buf_.sinusoids, p.max_len, c.dim, c.position_offset, c.sinusoidal_base);
#endif
  }

  workers_.threads = p.threads;
  workers_.isa = p.max_isa;
#if LINFER_WITH_XNNPACK
  if (p.xnnpack) {
    if (Status s = kernels::initialize_xnnpack(); !s.ok()) return s;
    if (p.threads > 1) {
      workers_.xnn_pool = pthreadpool_create(p.threads);
      workers_.xnn_flags = p.yield_workers ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0;
      if (!workers_.xnn_pool)  // (pthreadpool does not say whether memory or a thread failed)
        return internal_error("could not create a pool of {} threads", kept(p.threads));
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
  err = allocating(message("the dense layers of {} layers", kept(c.num_layers)),
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
  if (hw.out.weight.present()) make(head_out_, hw.out);  // LM or classifier
  if (err.ok()) err = attention_->prepare_layers(*this);
  return err;
}

std::string Inference::describe() const {
  std::string s = "dense:";
  const char* names[3] = {"f32", "f16", "int8"};
  for (size_t t = 0; t < 3; ++t)
    if (plan_.dense_kernel[t])
      s += message(" {} {}", names[t],
                   plan_.xnnpack && t != size_t(DType::I8) ? "xnnpack_f32 (per-session packed copy)"
                                                           : plan_.dense_kernel[t]->name);
  s += message("; other kernels: highway {}; row pipeline: ", kernels::hwy_kernel_target(plan_.max_isa));
  if (!plan_.row_pipeline)
    s += "off";
  else if (plan_.short_run_rows == plan_.row_block)
    s += message("on, {} rows", kept(plan_.row_block));
  else  // (a short run: one block per thread)
    s += message("on, {} rows, or one block of up to {} rows per thread", kept(plan_.row_block),
                 kept(plan_.short_run_rows));
  if (LINFER_THREADS && plan_.operators_below)  // (AMX's int8 layers over 1 MiB, several threads: plan.cc)
    s += message(", operator by operator below {} rows", kept(plan_.operators_below));
  s += message("; threads: {}{}", kept(plan_.threads), plan_.yield_workers ? " (yielding)" : "");
  const std::string attention = attention_->describe();
  if (!attention.empty()) s += "; attention: " + attention;
  return s;
}

size_t Inference::packed_weight_bytes() const {
  size_t n = head_dense_.packed_bytes() + head_out_.packed_bytes();
  for (const LayerOps& ops : layer_ops_) {
    n += ops.q.packed_bytes() + ops.out.packed_bytes() + ops.fc1.packed_bytes() + ops.fc2.packed_bytes();
  }
  return n + attention_->packed_weight_bytes();
}

}  // namespace linfer::rt
