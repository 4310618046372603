#include "session.h"

#include <sched.h>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>

#include "arena_plan.h"
#include "kernels.h"

namespace linfer::rt {
namespace {

// Steps of a run, for buffer lifetimes.
enum Step { kEmbed = 0, kAttention = 1, kFeedForward = 2, kHead = 3 };

// Names the buffers of a session in one place, so that arena_size() and create() agree.
struct Plan {
  enum Id {
    X, X2, H, Sub, Q, Attn, FF, CompK, CompV, KP, VP, KT, RowSum, Scratch, Positions, Pooled,
    Pooled2, Out, QX, QScales, LinearState, CarriedState, RowBlocks, Count
  };
  std::vector<ArenaRequest> req = std::vector<ArenaRequest>(Count, ArenaRequest{0, 0, 0});
  uint64_t total = 0;
};

// Floats of attention scratch per thread.
size_t scratch_stride(const EncoderConfig& c, uint64_t T) {
  if (c.attention_kind == AttentionKind::LinearElu) return c.head_dim + 16;
  const uint64_t keys = c.attention_kind == AttentionKind::Linformer ? c.proj_len : T + c.num_global_tokens;
  return kernels::attention_f32_scratch_floats(keys, c.head_dim) + 16;
}

// Whether f32 dense layers run on the own AVX-512 kernel (else XNNPACK): where the CPU has it,
// unless the options ask for XNNPACK (to compare the two, and to test the XNNPACK path on x86).
bool own_f32_dense_kernel(const linfer_session_options& o) {
  return kernels::f32_dense_fast_path_available() && o.dense_path != LINFER_DENSE_XNNPACK;
}

// Whether the layers run as one row pipeline (Session::layer_rows): softmax attention (Linformer
// or full) with every dense layer on the own kernels, which any thread can run on any rows, and
// (automatic choice) a layer's Q, output and feed-forward weights small enough (8 MiB) to stay
// in the last-level cache while every block of rows passes through all of them. Measured (2
// threads): S (2.5 MiB per layer in f32) runs 0-2% faster at n = 512, 3% at 2048, 6-9% at 8192,
// with an arena of 24 MiB instead of 56 at 8192; M (23.6 MiB) runs 7% slower, because each block
// then streams the whole layer from memory, where operator by operator one matrix (9 MiB) is
// reused.
bool row_pipeline(const EncoderConfig& c, bool int8, const linfer_session_options& o) {
  if (o.row_pipeline == LINFER_PIPELINE_OFF) return false;
  const uint64_t HD = uint64_t(c.num_heads) * c.head_dim;
  const uint64_t weights = (2 * c.dim * HD + 2 * uint64_t(c.dim) * c.ff_dim) * (int8 ? 1 : 4);
  return (c.attention_kind == AttentionKind::Linformer ||
          c.attention_kind == AttentionKind::FullSoftmax) &&
         own_f32_dense_kernel(o) && (o.row_pipeline == LINFER_PIPELINE_ON || weights <= (8u << 20));
}

// Rows per block of the row pipeline: a block's Q, attention output and feed-forward hidden
// rows (2 HD + F floats each) take about 512 KiB, half of a core's L2 on current x86 cores.
size_t row_block(const EncoderConfig& c, const linfer_session_options& o) {
  if (o.pipeline_block_rows) return o.pipeline_block_rows;
  const size_t per_row = (2 * size_t(c.num_heads) * c.head_dim + c.ff_dim) * sizeof(float);
  return std::clamp<size_t>((512 * 1024) / per_row / 6 * 6, 6, 96);
}

// Bytes of one quantized input row in the int8 scratch (Buffers::qx): the widest input of any
// dense layer, padded to the kernel's groups of 4. One stride for every layer, so that rows
// [a, b) of one layer and rows [c, d) of another never share bytes when [a, b) and [c, d) are
// disjoint: threads of the row pipeline quantize different layers' inputs at the same time. A
// call for rows [a, b) writes inside [a * stride, b * stride) (its own rows are in_padded apart).
size_t quantized_row_stride(const EncoderConfig& c) {
  const size_t widest = std::max<size_t>(std::max<size_t>(c.dim, size_t(c.num_heads) * c.head_dim), c.ff_dim);
  return (widest + 3) / 4 * 4;
}

// int8: whether any dense layer runs on the int8 kernels (they need room for quantized rows).
Plan make_plan(const EncoderConfig& c, uint64_t T, uint64_t threads, bool int8,
               const linfer_session_options& o) {
  Plan p;
  const uint64_t R = T + c.num_global_tokens;  // GiveTake's tokens ride along as extra rows
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, k = c.proj_len,
                 G = c.projection_groups(), S = G == 1 ? c.kv_heads : c.num_heads,
                 dh = c.head_dim, F4 = sizeof(float);
  auto set = [&](Plan::Id id, uint64_t floats, int first, int last) {
    p.req[id] = {floats * F4, first, last};
  };
  set(Plan::X, R * D, kEmbed, kHead);
  if (c.norm_placement == NormPlacement::Reversible) set(Plan::X2, R * D, kEmbed, kFeedForward);
  set(Plan::H, R * D, kEmbed, kHead);
  if (row_pipeline(c, int8, o)) {  // per-thread blocks of rows instead of whole-sequence buffers
    set(Plan::RowBlocks, threads * row_block(c, o) * (2 * HD + c.ff_dim), kAttention, kFeedForward);
  } else {
    set(Plan::Sub, R * D, kAttention, kFeedForward);
    set(Plan::Q, R * HD, kAttention, kAttention);
    set(Plan::Attn, R * HD, kAttention, kAttention);
    set(Plan::FF, R * c.ff_dim, kFeedForward, kFeedForward);
  }
  // Keys per head: the Linformer's k compressed rows, or all T rows for full attention.
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  const uint64_t keys = linformer ? k : R;
  if (linformer) {
    set(Plan::CompK, G * k * D, kAttention, kAttention);
    if (c.has_separate_proj_v()) set(Plan::CompV, G * k * D, kAttention, kAttention);
    set(Plan::RowSum, 2 * G * k, kAttention, kAttention);
  }
  set(Plan::KP, keys * S * dh, kAttention, kAttention);
  set(Plan::VP, keys * S * dh, kAttention, kAttention);
  if (c.attention_kind == AttentionKind::LinearElu)  // S (dh x dh) and z (dh) per kv head
    set(Plan::LinearState, S * (dh * dh + dh), kAttention, kAttention);
  if (c.attention_kind == AttentionKind::LinearElu && c.causal == CausalMode::Causal)
    set(Plan::CarriedState, uint64_t(c.num_layers) * S * (dh * dh + dh), kEmbed, kHead);
  else
    set(Plan::KT, S * dh * keys, kAttention, kAttention);
  set(Plan::Scratch, threads * scratch_stride(c, T), kAttention, kAttention);
  // Sinusoidal positions are computed once at creation and kept for every run.
  if (c.positions == PositionKind::Sinusoidal) set(Plan::Positions, T * D, kEmbed, kHead);
  if (c.head == HeadKind::Classifier) {
    set(Plan::Pooled, D, kHead, kHead);
    set(Plan::Pooled2, D, kHead, kHead);
    set(Plan::Out, c.num_classes, kHead, kHead);
  } else if (c.head == HeadKind::LmLogits) {
    set(Plan::Out, T * c.vocab_size, kHead, kHead);
  }
  if (int8) {
    const uint64_t rows = std::max<uint64_t>(R, k);
    set(Plan::QX, rows * quantized_row_stride(c) / 4, kAttention, kHead);  // bytes / 4, in floats
    set(Plan::QScales, rows, kAttention, kHead);
  }
  // Empty requests take no room.
  std::vector<ArenaRequest> used;
  std::vector<int> index;
  for (int i = 0; i < Plan::Count; ++i)
    if (p.req[i].bytes) {
      used.push_back(p.req[i]);
      index.push_back(i);
    }
  p.total = plan_arena(used) + 64;  // + 64: room to align a caller's buffer
  for (size_t j = 0; j < used.size(); ++j) p.req[index[j]] = used[j];
  return p;
}

// ThreadSanitizer cannot see the synchronisation inside libpthreadpool (not instrumented), so
// in TSan builds a parallel region states the ordering the pool guarantees: everything before the
// region happens before every chunk (start), every chunk before everything after it (done).
// Two addresses, so that no chunk is ordered after another: races between chunks stay visible.
#if defined(__SANITIZE_THREAD__)
struct RegionSync {
  char start, done;
  void before() { __tsan_release(&start); }
  void chunk_begin() { __tsan_acquire(&start); }
  void chunk_end() { __tsan_release(&done); }
  void after() { __tsan_acquire(&done); }
};
#else
struct RegionSync {
  void before() {}
  void chunk_begin() {}
  void chunk_end() {}
  void after() {}
};
#endif

// Runs fn(chunk) for chunk in [0, chunks) on the pool (or inline). No allocation. flags:
// PTHREADPOOL_FLAG_YIELD_WORKERS or 0 (Session::pool_flags_).
template <class Fn>
void parallel_chunks(pthreadpool_t pool, uint32_t flags, size_t chunks, Fn& fn) {
  if (!pool || chunks <= 1) {
    for (size_t i = 0; i < chunks; ++i) fn(i);
    return;
  }
  struct Context {
    Fn& fn;
    RegionSync sync;
  } ctx{fn, {}};
  ctx.sync.before();
  pthreadpool_parallelize_1d(
      pool,
      [](void* p, size_t i) {
        Context& c = *static_cast<Context*>(p);
        c.sync.chunk_begin();
        c.fn(i);
        c.sync.chunk_end();
      },
      &ctx, chunks, flags);
  ctx.sync.after();
}

// Splits [0, items) into `chunks` contiguous ranges, multiples of `quantum` where possible, and
// calls fn(begin, end, chunk).
template <class Fn>
void parallel_ranges(pthreadpool_t pool, uint32_t flags, size_t threads, size_t items, size_t quantum,
                     Fn&& fn) {
  const size_t units = (items + quantum - 1) / quantum;
  const size_t chunks = units < threads ? (units ? units : 1) : threads;
  auto body = [&](size_t c) {
    const size_t b = std::min(items, c * units / chunks * quantum);
    const size_t e = std::min(items, (c + 1) * units / chunks * quantum);
    if (b < e) fn(b, e, c);
  };
  parallel_chunks(pool, flags, chunks, body);
}

const float* f32(const WeightView& w) { return static_cast<const float*>(w.data); }

kernels::DenseActivation dense_activation(Activation a) {
  switch (a) {
    case Activation::GeluErf: return kernels::DenseActivation::GeluErf;
    case Activation::GeluTanh: return kernels::DenseActivation::GeluTanh;
    case Activation::Relu: return kernels::DenseActivation::Relu;
  }
  return kernels::DenseActivation::None;
}

bool has_int8_dense(const Model& m) {
  bool any = false;
  for_each_weight(m.desc, [&](const std::string&, const WeightView& w) {
    any = any || (w.present() && w.dtype == DType::I8);
  });
  return any;
}

}  // namespace

Session::~Session() {
  layer_ops_.clear();  // operators before the pool they may use
  if (pool_) pthreadpool_destroy(pool_);
  free(owned_arena_);
}

static std::string check_options(const EncoderConfig& c, const linfer_session_options& o,
                                 uint32_t* max_len, uint32_t* threads) {
  *max_len = o.max_seq_len ? o.max_seq_len : c.max_seq_len;
  if (*max_len > c.max_seq_len)
    return "max_seq_len " + std::to_string(o.max_seq_len) + " exceeds the model's n = " +
           std::to_string(c.max_seq_len);
  *threads = o.num_threads ? o.num_threads : 1;
  if (*threads > 256) return "num_threads " + std::to_string(o.num_threads) + " exceeds 256";
  if (o.arena && o.arena_size == 0) return "an arena pointer was given with arena_size 0";
  if (o.dense_path != LINFER_DENSE_AUTO && o.dense_path != LINFER_DENSE_XNNPACK)
    return "dense_path " + std::to_string(int(o.dense_path)) + " is not a linfer_dense_path";
  if (o.row_pipeline != LINFER_PIPELINE_AUTO && o.row_pipeline != LINFER_PIPELINE_OFF &&
      o.row_pipeline != LINFER_PIPELINE_ON)
    return "row_pipeline " + std::to_string(int(o.row_pipeline)) + " is not a linfer_row_pipeline";
  if (o.thread_wait != LINFER_WAIT_AUTO && o.thread_wait != LINFER_WAIT_SPIN &&
      o.thread_wait != LINFER_WAIT_YIELD)
    return "thread_wait " + std::to_string(int(o.thread_wait)) + " is not a linfer_thread_wait";
  if (o.pipeline_block_rows > 4096)
    return "pipeline_block_rows " + std::to_string(o.pipeline_block_rows) + " exceeds 4096";
  return "";
}

linfer_status Session::arena_size(const Model& model, const linfer_session_options& options,
                                  size_t* bytes, std::string* error) {
  uint32_t max_len, threads;
  *error = check_options(model.desc.config, options, &max_len, &threads);
  if (!error->empty()) return LINFER_ERROR_INVALID_ARGUMENT;
  *bytes = make_plan(model.desc.config, max_len, threads, has_int8_dense(model), options).total;
  return LINFER_OK;
}

linfer_status Session::create(const Model& model, const linfer_session_options& options,
                              std::unique_ptr<Session>* out, std::string* error) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = &model;
  s->cfg_ = model.desc.config;
  s->profiling_ = options.enable_profiling != 0;
  *error = check_options(s->cfg_, options, &s->max_len_, &s->threads_);
  if (!error->empty()) return LINFER_ERROR_INVALID_ARGUMENT;
  const linfer_status st = s->prepare(options, error);
  if (st == LINFER_OK) *out = std::move(s);
  return st;
}

linfer_status Session::prepare(const linfer_session_options& options, std::string* error) {
  const EncoderConfig& c = cfg_;
  *error = kernels::initialize_xnnpack();
  if (!error->empty()) return LINFER_ERROR_INTERNAL;
  Plan plan = make_plan(c, max_len_, threads_, has_int8_dense(*model_), options);
  uint8_t* base;
  if (options.arena) {
    if (options.arena_size < plan.total) {
      *error = "the arena is too small: " + std::to_string(options.arena_size) +
               " bytes given, " + std::to_string(plan.total) + " needed";
      return LINFER_ERROR_BUFFER_TOO_SMALL;
    }
    base = static_cast<uint8_t*>(options.arena);
  } else {
    if (posix_memalign(&owned_arena_, 64, plan.total) != 0) {
      owned_arena_ = nullptr;
      *error = "out of memory allocating a " + std::to_string(plan.total) + "-byte arena";
      return LINFER_ERROR_OUT_OF_MEMORY;
    }
    base = static_cast<uint8_t*>(owned_arena_);
  }
  arena_bytes_ = plan.total;
  base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
  auto at = [&](Plan::Id id) {
    return plan.req[id].bytes ? reinterpret_cast<float*>(base + plan.req[id].offset) : nullptr;
  };
  buf_ = {at(Plan::X),       at(Plan::X2),     at(Plan::H),      at(Plan::Sub),
          at(Plan::Q),       at(Plan::Attn),   at(Plan::FF),     at(Plan::CompK),
          at(Plan::CompV),   at(Plan::KP),     at(Plan::VP),     at(Plan::KT),
          at(Plan::RowSum),  at(Plan::Scratch), at(Plan::Positions), at(Plan::Pooled),
          at(Plan::Pooled2), at(Plan::Out),   at(Plan::QScales),
          reinterpret_cast<uint8_t*>(at(Plan::QX)), at(Plan::LinearState), at(Plan::CarriedState),
          at(Plan::RowBlocks)};
  scratch_stride_ = scratch_stride(c, max_len_);
  row_pipeline_ = row_pipeline(c, has_int8_dense(*model_), options);
  row_block_ = row_block(c, options);
  own_f32_dense_ = own_f32_dense_kernel(options);
  qx_stride_ = quantized_row_stride(c);

  if (c.positions == PositionKind::Sinusoidal) {
    const uint32_t half = c.dim / 2;
    for (uint32_t t = 0; t < max_len_; ++t) {
      const double p = double(t) + c.position_offset;
      float* row = buf_.positions + size_t(t) * c.dim;
      for (uint32_t i = 0; i < half; ++i) {
        const double angle = p * std::pow(double(c.sinusoidal_base), -2.0 * i / c.dim);
        row[i] = float(std::sin(angle));
        row[half + i] = float(std::cos(angle));
      }
    }
  }

  if (threads_ > 1) {
    // Spinning workers hold their cores: with more threads than CPUs to run them, each barrier
    // waits for a time slice (measured on 2 CPUs: 4 threads, 50 ms instead of 0.1 ms per run of
    // a tiny model).
    bool yield = options.thread_wait == LINFER_WAIT_YIELD;
    if (options.thread_wait == LINFER_WAIT_AUTO) {
      cpu_set_t cpus;
      yield = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && threads_ > uint32_t(CPU_COUNT(&cpus));
    }
    pool_flags_ = yield ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0;
    pool_ = pthreadpool_create(threads_);
    if (!pool_) {
      *error = "could not create a pool of " + std::to_string(threads_) + " threads";
      return LINFER_ERROR_INTERNAL;
    }
  }

  // XNNPACK operators, weights packed once.
  const size_t before = kernels::xnnpack_allocated_bytes();
  const size_t D = c.dim, H = c.num_heads, dh = c.head_dim, HD = H * dh, kvh = c.kv_heads,
               F = c.ff_dim;
  const bool before_placement = c.projection_placement == ProjectionPlacement::Before;
  const bool per_head = c.projection_groups() > 1;
  layer_ops_.resize(c.num_layers);
  for (uint32_t i = 0; i < c.num_layers && error->empty(); ++i) {
    const LayerWeights& w = model_->desc.layers[i];
    LayerOps& ops = layer_ops_[i];
    auto make = [&](Linear& op, size_t in, size_t out_ch, const WeightView& weight,
                    size_t first_row, const float* bias,
                    kernels::DenseActivation act = kernels::DenseActivation::None) {
      if (error->empty()) *error = make_linear(op, in, out_ch, weight, first_row, bias, act);
    };
    make(ops.q, D, HD, w.q.weight, 0, f32(w.q.bias));
    // K and V: on the compressed input (k rows). Per-head projections give each head its own
    // compressed input, so each head gets the operator for its slice of W (or the one shared
    // single head when kv_heads = 1). With placement "after", the bias goes through E (added by
    // hand as rowsum(E) * b), so the operator gets no bias. Full attention: a plain linear.
    for (int kv = 0; kv < 2; ++kv) {
      const LinearWeights& lw = kv == 0 ? w.k : w.v;
      std::vector<Linear>& list = kv == 0 ? ops.k : ops.v;
      const bool linformer = c.attention_kind == AttentionKind::Linformer;
      const float* bias = !linformer || before_placement ? f32(lw.bias) : nullptr;
      if (!per_head) {
        list.resize(1);
        make(list[0], D, kvh * dh, lw.weight, 0, bias);
      } else {
        list.resize(kvh);
        for (size_t h = 0; h < kvh; ++h)
          make(list[h], D, dh, lw.weight, h * dh, bias ? bias + h * dh : nullptr);
      }
    }
    make(ops.out, HD, D, w.out.weight, 0, f32(w.out.bias));
    make(ops.fc1, D, F, w.fc1.weight, 0, f32(w.fc1.bias), dense_activation(c.activation));
    make(ops.fc2, F, D, w.fc2.weight, 0, f32(w.fc2.bias));
  }
  // GiveTake convolutions: taps transposed to [K x dim] so the kernel vectorises over channels.
  conv_taps_.resize(c.num_layers);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const WeightView& cw = model_->desc.layers[i].conv_weight;
    if (!cw.present()) continue;
    const size_t K = cw.shape[1];
    conv_taps_[i].resize(K * D);
    for (size_t ch = 0; ch < D; ++ch)
      for (size_t j = 0; j < K; ++j) conv_taps_[i][j * D + ch] = f32(cw)[ch * K + j];
  }
  const HeadWeights& hw = model_->desc.head;
  if (error->empty() && hw.dense.weight.present())
    *error = make_linear(head_dense_, D, D, hw.dense.weight, 0, f32(hw.dense.bias),
                         c.head == HeadKind::LmLogits ? dense_activation(c.head_activation)
                                                      : kernels::DenseActivation::None);
  if (error->empty() && c.head != HeadKind::None)
    *error = make_linear(head_out_, D, c.output_channels(), hw.out.weight, 0, f32(hw.out.bias));
  if (!error->empty()) return LINFER_ERROR_INTERNAL;
  const size_t after = kernels::xnnpack_allocated_bytes();
  packed_bytes_ += after > before ? after - before : 0;
  return LINFER_OK;
}

std::string Session::make_linear(Linear& op, size_t in, size_t out, const WeightView& weight,
                                 size_t first_row, const float* bias,
                                 kernels::DenseActivation activation) {
  op.activation = activation;
  // Every kernel runs from its own packed copy: once packed, the file's pages of the matrix are
  // released (peak RSS of the f32 M model at n = 512: 762 MiB with them, 467 MiB without).
  std::string err;
  if (weight.dtype == DType::I8) {
    op.kernel = Linear::Kernel::Int8Vnni;
    const int8_t* w = static_cast<const int8_t*>(weight.data) + first_row * in;
    err = kernels::pack_int8_weights(w, weight.scales + first_row, bias, in, out, &op.i8);
    packed_bytes_ += op.i8.bytes();
    model_->release_pages(w, in * out);
    return err;
  }
  const float* w = f32(weight) + first_row * in;
  if (own_f32_dense_) {
    op.kernel = Linear::Kernel::F32Avx512;
    err = kernels::pack_f32_weights(w, bias, in, out, &op.f32);
    packed_bytes_ += op.f32.bytes();
  } else {
    op.kernel = Linear::Kernel::Xnnpack;
    err = op.xnn.create(in, out, in, out, w, bias, activation == kernels::DenseActivation::Relu,
                         pool_flags_ != 0);
  }
  model_->release_pages(w, in * out * sizeof(float));
  return err;
}

bool Session::run_linear(const Linear& op, size_t rows, const float* x, float* y, bool accumulate) {
  auto t0 = now();
  if (op.kernel == Linear::Kernel::Xnnpack) {
    // XNNPACK has no accumulate and no GELU: a temporary and separate passes.
    const size_t out = op.outputs();
    if (!op.xnn.run(rows, x, accumulate ? buf_.sub : y, pool_)) return false;
    lap(LINFER_OP_DENSE, t0);
    if (accumulate) add_rows(y, buf_.sub, rows, out);
    if (op.activation != kernels::DenseActivation::None &&
        op.activation != kernels::DenseActivation::Relu)
      activate(y, rows, out, op.activation);
    return true;
  }
  const size_t in = op.inputs(), out = op.outputs();
  if (rows >= 8 * threads_) {  // rows split across threads, each quantizing its own (int8)
    parallel_ranges(pool_, pool_flags_, threads_, rows, 6, [&](size_t b, size_t e, size_t) {
      dense_rows(op, x + b * in, e - b, y + b * out, accumulate, b);
    });
  } else {  // too few rows to go round: output channels split, int8 rows quantized once first
    quantize_rows(op, x, rows, 0);
    parallel_ranges(pool_, pool_flags_, threads_, out, 64, [&](size_t b, size_t e, size_t) {
      dense_quantized(op, x, rows, y, accumulate, 0, b, e);
    });
  }
  lap(LINFER_OP_DENSE, t0);
  return true;
}

// ---------------------------------------------------------------------------------------------
// run

linfer_status Session::run_ids(const int32_t* ids, size_t length, std::string* error) {
  const EncoderConfig& c = cfg_;
  if (c.vocab_size == 0) {
    *error = "this model takes embeddings, not token ids (vocab_size is 0)";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  if (length == 0 || length > max_len_ || !ids) {
    *error = !ids ? std::string("token ids are null")
                  : "input length " + std::to_string(length) + " is outside [1, " +
                        std::to_string(max_len_) + "]";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  for (size_t t = 0; t < length; ++t)
    if (ids[t] < 0 || uint32_t(ids[t]) >= c.vocab_size) {
      *error = "token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
               " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")";
      return LINFER_ERROR_INVALID_ARGUMENT;
    }
  const auto t0 = now();
  const float* table = f32(model_->desc.token_embedding);
  const size_t D = c.dim;
  for (size_t t = 0; t < length; ++t) {
    const float* src = table + size_t(ids[t]) * D;
    float* dst = buf_.x + t * D;
    for (size_t i = 0; i < D; ++i) dst[i] = c.embedding_scale * src[i];
  }
  lap(LINFER_OP_EMBEDDING, t0);
  return forward(length, error);
}

linfer_status Session::step(int32_t id, std::string* error) {
  const EncoderConfig& c = cfg_;
  if (c.attention_kind != AttentionKind::LinearElu || c.causal != CausalMode::Causal) {
    *error = "token-by-token runs need a causal linear-attention model";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  if (c.head == HeadKind::Classifier) {
    *error = "token-by-token runs give one row per token; a classifier pools the whole input";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  if (step_position_ >= max_len_) {
    *error = "the session has taken " + std::to_string(step_position_) +
             " tokens, its maximum length; reset the state to start over";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  if (step_position_ == 0) {  // a fresh sequence: the carried state starts empty
    const size_t per_layer = c.kv_heads * (size_t(c.head_dim) * c.head_dim + c.head_dim);
    std::fill(buf_.carried_state, buf_.carried_state + c.num_layers * per_layer, 0.0f);
  }
  stepping_ = true;
  const linfer_status s = run_ids(&id, 1, error);
  stepping_ = false;
  if (s == LINFER_OK) ++step_position_;
  return s;
}

linfer_status Session::run_embeddings(const float* embeddings, size_t length, std::string* error) {
  if (length == 0 || length > max_len_ || !embeddings) {
    *error = !embeddings ? std::string("embeddings are null")
                         : "input length " + std::to_string(length) + " is outside [1, " +
                               std::to_string(max_len_) + "]";
    return LINFER_ERROR_INVALID_ARGUMENT;
  }
  std::memcpy(buf_.x, embeddings, length * cfg_.dim * sizeof(float));
  return forward(length, error);
}

std::chrono::steady_clock::time_point Session::lap(linfer_op_kind kind,
                                                  std::chrono::steady_clock::time_point start) {
  if (!profiling_) return start;
  const auto t = std::chrono::steady_clock::now();
  profile_.milliseconds[kind] += std::chrono::duration<double, std::milli>(t - start).count();
  return t;
}

void Session::layernorm_rows(const float* in, float* out, size_t T, const NormWeights& n) {
  const auto t0 = now();
  const size_t D = cfg_.dim;
  parallel_ranges(pool_, pool_flags_, threads_, T, 1, [&](size_t b, size_t e, size_t) {
    kernels::layernorm_f32_fast(in + b * D, D, out + b * D, D, e - b, D, f32(n.weight),
                                f32(n.bias), cfg_.norm_eps);
  });
  lap(LINFER_OP_NORM, t0);
}

void Session::activate(float* x, size_t rows, size_t cols, kernels::DenseActivation act) {
  const auto t0 = now();
  parallel_ranges(pool_, pool_flags_, threads_, rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::activation_f32_fast(x + b * cols, (e - b) * cols, act);
  });
  lap(LINFER_OP_ACTIVATION, t0);
}

void Session::add_rows(float* y, const float* x, size_t rows, size_t cols) {
  const auto t0 = now();
  parallel_ranges(pool_, pool_flags_, threads_, rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::add_f32_fast(y + b * cols, x + b * cols, (e - b) * cols);
  });
  lap(LINFER_OP_ELEMENTWISE, t0);
}

// Linformer keys and values: K' = E X W_k^T (+ biases), V' likewise, k rows per group.
bool Session::linformer_kv(const LayerWeights& w, LayerOps& ops, const float* in, size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads, k = c.proj_len,
               n = c.max_seq_len, G = c.projection_groups();
  const bool per_head = G > 1;

  // Compress the input along the sequence first: comp = E[:, :T] X (k x D per group). K and V
  // are then projected on k rows instead of T (the reassociation E (X W) = (E X) W).
  const bool layerwise = c.projection_sharing == ProjectionSharing::Layerwise;
  const WeightView& E = layerwise ? model_->desc.shared_proj : w.proj_k;
  const WeightView& Eb = layerwise ? model_->desc.shared_proj_bias : w.proj_k_bias;
  const bool separate_v = c.has_separate_proj_v();
  const WeightView& Fv = separate_v ? w.proj_v : E;
  const WeightView& Fb = separate_v ? w.proj_v_bias : Eb;
  auto t = now();
  const size_t rows = G * k;  // all groups' compressed rows, split across threads
  // E's rows, then F's when separate, as one range split across threads (one parallel region).
  // Row r of group g is row (g*k + r) of the stacked [G*k x n] projection.
  parallel_ranges(pool_, pool_flags_, threads_, (separate_v ? 2 : 1) * rows, 4, [&](size_t b, size_t e, size_t) {
    for (int kv = 0; kv < 2; ++kv) {
      const size_t lo = std::max(b, kv * rows), hi = std::min(e, (kv + 1) * rows);
      if (lo >= hi) continue;
      const float* proj = f32(kv == 0 ? E : Fv);
      float* comp = kv == 0 ? buf_.comp_k : buf_.comp_v;
      const size_t r = lo - kv * rows;
      kernels::gemm_f32_fast(hi - lo, D, T, proj + r * n, n, in, D, comp + r * D, D);
    }
  });
  lap(LINFER_OP_COMPRESS, t);
  const float* comp_v = separate_v ? buf_.comp_v : buf_.comp_k;

  // K' and V' = comp W^T (+ bias), per group.
  const size_t kp_stride = per_head ? dh : kvh * dh;      // row stride of K'/V'
  for (int kv = 0; kv < 2; ++kv) {
    const float* comp = kv == 0 ? buf_.comp_k : comp_v;
    float* dst = kv == 0 ? buf_.kp : buf_.vp;
    std::vector<Linear>& list = kv == 0 ? ops.k : ops.v;
    if (!per_head) {
      if (!run_linear(list[0], k, comp, dst)) return false;
    } else {
      for (size_t h = 0; h < H; ++h)
        if (!run_linear(list[kvh == 1 ? 0 : h], k, comp + h * k * D, dst + h * k * dh))
          return false;
    }
    // Biases that the dense operator did not add.
    t = now();
    const LinearWeights& lw = kv == 0 ? w.k : w.v;
    const WeightView& pb = kv == 0 ? Eb : Fb;
    const float* proj = f32(kv == 0 ? E : Fv);
    const bool after_bias = c.projection_placement == ProjectionPlacement::After && lw.bias.present();
    if (after_bias || pb.present()) {
      float* rowsum = buf_.rowsum;
      parallel_ranges(pool_, pool_flags_, threads_, rows, 8, [&](size_t b, size_t e, size_t) {
        for (size_t r = b; r < e; ++r)
          rowsum[r] = after_bias ? kernels::sum_f32_fast(proj + r * n, T) : 0.0f;
      });
      const float* b = f32(lw.bias);
      const float* pbias = f32(pb);
      for (size_t g = 0; g < G; ++g) {
        // Columns of this group's K'/V' and the slice of b they take.
        const size_t cols = per_head ? dh : kvh * dh;
        const float* bg = per_head && kvh > 1 ? b + g * dh : b;
        float* base = dst + (per_head ? g * k * dh : 0);
        for (size_t r = 0; r < k; ++r) {
          float* row = base + r * kp_stride;
          const float s = rowsum[g * k + r];
          const float p = pbias ? pbias[g * k + r] : 0.0f;
          for (size_t j = 0; j < cols; ++j) row[j] += (after_bias ? s * bg[j] : 0.0f) + p;
        }
      }
    }
    lap(LINFER_OP_ELEMENTWISE, t);
  }
  return true;
}

bool Session::attention(const LayerWeights& w, LayerOps& ops, const float* in, size_t T,
                        float* residual) {
  const EncoderConfig& c = cfg_;
  if (c.attention_kind == AttentionKind::GiveTake) return give_take(w, ops, in, T, residual);
  if (!run_linear(ops.q, T, in, buf_.q)) return false;
  if (c.attention_kind == AttentionKind::LinearElu) {
    if (!run_linear(ops.k[0], T, in, buf_.kp) || !run_linear(ops.v[0], T, in, buf_.vp)) return false;
    const auto t = now();
    linear_attention(T, size_t(&w - model_->desc.layers.data()));
    lap(LINFER_OP_ATTENTION, t);
    return run_linear(ops.out, T, buf_.attn, residual, true);
  }
  const size_t keys = softmax_keys(w, ops, in, T);
  if (!keys) return false;
  auto t = now();
  // The attention core: (head, block of rows) items split across threads.
  const size_t block = 32;
  const size_t blocks = (T + block - 1) / block;
  parallel_ranges(pool_, pool_flags_, threads_, c.num_heads * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
    float* scratch = buf_.scratch + chunk * scratch_stride_;
    for (size_t item = b; item < e; ++item) {
      const size_t h = item / blocks, r0 = (item % blocks) * block;
      kernels::attention_f32_fast(head_args(h, keys, buf_.q, buf_.attn), r0,
                                  std::min(T, r0 + block), scratch);
    }
  });
  lap(LINFER_OP_ATTENTION, t);
  return run_linear(ops.out, T, buf_.attn, residual, true);
}

// Keys and values for softmax attention into buf_.kp / buf_.vp (the Linformer's k compressed
// rows, or all T rows), each K head transposed to [dh x keys] into buf_.kt so that the scores
// vectorise over the keys. Returns the number of keys, 0 if a dense layer failed.
size_t Session::softmax_keys(const LayerWeights& w, LayerOps& ops, const float* in, size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads;
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  const bool per_head = linformer && c.projection_groups() > 1;
  size_t keys;
  if (linformer) {
    if (!linformer_kv(w, ops, in, T)) return 0;
    keys = c.proj_len;
  } else {
    if (!run_linear(ops.k[0], T, in, buf_.kp) || !run_linear(ops.v[0], T, in, buf_.vp)) return 0;
    keys = T;
  }
  const auto t = now();
  const size_t S = per_head ? H : kvh;                // distinct K/V heads
  const size_t kp_stride = per_head ? dh : kvh * dh;  // row stride of K/V
  parallel_ranges(pool_, pool_flags_, threads_, S, 1, [&](size_t b, size_t e, size_t) {
    for (size_t s = b; s < e; ++s) {
      const float* src = buf_.kp + (per_head ? s * keys * dh : s * dh);
      float* dst = buf_.kt + s * dh * keys;
      for (size_t r = 0; r < keys; ++r)
        for (size_t j = 0; j < dh; ++j) dst[j * keys + r] = src[r * kp_stride + j];
    }
  });
  lap(LINFER_OP_ATTENTION, t);
  return keys;
}

// Softmax attention of head h over `keys` keys (see softmax_keys) for query rows q (row stride
// heads * head_dim) into o (same layout).
kernels::AttentionHeadArgs Session::head_args(size_t h, size_t keys, const float* q,
                                              float* o) const {
  const EncoderConfig& c = cfg_;
  const size_t dh = c.head_dim, HD = c.num_heads * dh, kvh = c.kv_heads;
  const bool per_head = c.attention_kind == AttentionKind::Linformer && c.projection_groups() > 1;
  const size_t s = per_head || kvh > 1 ? h : 0;  // kv_heads is 1 or num_heads here
  kernels::AttentionHeadArgs a;
  a.q = q + h * dh;
  a.q_stride = HD;
  a.kt = buf_.kt + s * dh * keys;
  a.kt_stride = keys;
  a.v = buf_.vp + (per_head ? s * keys * dh : s * dh);
  a.v_stride = per_head ? dh : kvh * dh;
  a.o = o + h * dh;
  a.o_stride = HD;
  a.head_dim = dh;
  a.keys = keys;
  a.scale = 1.0f / std::sqrt(float(dh));
  return a;
}

// GiveTake: the p tokens (rows [T, T + p) of `in`) take from the sequence, then the sequence
// takes from what the tokens gathered (docs/converter.md). Both streams share W_q, W_k, W_v, W_out.
bool Session::give_take(const LayerWeights& w, LayerOps& ops, const float* in, size_t T,
                        float* residual) {
  const EncoderConfig& c = cfg_;
  const size_t p = c.num_global_tokens, R = T + p, H = c.num_heads, dh = c.head_dim, HD = H * dh,
               kvh = c.kv_heads, KV = kvh * dh, D = c.dim;
  if (!run_linear(ops.q, R, in, buf_.q) || !run_linear(ops.k[0], R, in, buf_.kp) ||
      !run_linear(ops.v[0], T, in, buf_.vp))
    return false;
  auto t = now();
  // K transposed per kv head: the sequence's [dh x T], then the tokens' [dh x p].
  float* kt_seq = buf_.kt;
  float* kt_tok = buf_.kt + kvh * dh * T;
  for (size_t s = 0; s < kvh; ++s)
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < dh; ++j) {
        const float v = buf_.kp[r * KV + s * dh + j];
        if (r < T) kt_seq[s * dh * T + j * T + r] = v;
        else kt_tok[s * dh * p + j * p + (r - T)] = v;
      }
  const float scale = 1.0f / std::sqrt(float(dh));
  const size_t heads_per_kv = H / kvh;
  auto run_heads = [&](size_t rows, size_t keys, auto args_for_head) {
    const size_t block = 32, blocks = (rows + block - 1) / block;
    parallel_ranges(pool_, pool_flags_, threads_, H * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
      float* scratch = buf_.scratch + chunk * scratch_stride_;
      for (size_t item = b; item < e; ++item) {
        const size_t h = item / blocks, r0 = (item % blocks) * block;
        kernels::AttentionHeadArgs a = args_for_head(h);
        a.head_dim = dh;
        a.keys = keys;
        a.scale = scale;
        kernels::attention_f32_fast(a, r0, std::min(rows, r0 + block), scratch);
      }
    });
  };
  // Take: Y_t = softmax(Q_t K_s^T / sqrt(dh)) V_s, into rows [T, R) of attn.
  run_heads(p, T, [&](size_t h) {
    const size_t s = h / heads_per_kv;
    return kernels::AttentionHeadArgs{buf_.q + T * HD + h * dh, HD, kt_seq + s * dh * T, T,
                                      buf_.vp + s * dh, KV, buf_.attn + T * HD + h * dh, HD, 0, 0, 0};
  });
  // Give: Y_s = softmax(Q_s K_t^T / sqrt(dh)) Y_t (head h's own take output), into rows [0, T).
  run_heads(T, p, [&](size_t h) {
    const size_t s = h / heads_per_kv;
    return kernels::AttentionHeadArgs{buf_.q + h * dh, HD, kt_tok + s * dh * p, p,
                                      buf_.attn + T * HD + h * dh, HD, buf_.attn + h * dh, HD, 0, 0, 0};
  });
  lap(LINFER_OP_ATTENTION, t);
  // Into buf_.sub, not straight into the residual: the convolution below still reads the input,
  // which is the residual stream itself with post-norm.
  if (!run_linear(ops.out, R, buf_.attn, buf_.sub)) return false;
  if (w.conv_weight.present()) {  // the locality branch: depthwise convolution of the input
    t = now();
    const size_t K = w.conv_weight.shape[1];
    const float* taps = conv_taps_[&w - model_->desc.layers.data()].data();
    parallel_ranges(pool_, pool_flags_, threads_, T, 1, [&](size_t b, size_t e, size_t) {
      kernels::conv_depthwise_add_f32_fast(in, T, D, taps, K, f32(w.conv_bias), buf_.sub, b, e);
    });
    lap(LINFER_OP_ELEMENTWISE, t);
  }
  add_rows(residual, buf_.sub, R, D);
  return true;
}

// Linear (elu+1) attention over q, kp, vp (T rows). Bidirectional: per kv head, the state
// (S, z) over all rows, then every row of every head reads it. Causal: row i adds itself to the
// state and then reads it, so it sees rows j <= i only.
void Session::linear_attention(size_t T, size_t layer) {
  const EncoderConfig& c = cfg_;
  const size_t H = c.num_heads, dh = c.head_dim, HD = H * dh, kvh = c.kv_heads, KV = kvh * dh;
  const size_t heads_per_kv = H / kvh;
  auto state = [&](size_t s) { return buf_.linear_state + s * (dh * dh + dh); };
  if (c.causal == CausalMode::Causal) {
    // The state is kept per layer so that step() can continue where the last call stopped.
    float* carried = buf_.carried_state + layer * kvh * (dh * dh + dh);
    parallel_ranges(pool_, pool_flags_, threads_, kvh, 1, [&](size_t b, size_t e, size_t chunk) {
      float* scratch = buf_.scratch + chunk * scratch_stride_;
      for (size_t s = b; s < e; ++s) {
        float* S = carried + s * (dh * dh + dh);
        if (!stepping_) std::fill(S, S + dh * dh + dh, 0.0f);
        for (size_t i = 0; i < T; ++i) {
          kernels::linear_attention_state_f32_fast(buf_.kp + i * KV + s * dh, KV, buf_.vp + i * KV + s * dh,
                                                   KV, 1, dh, S, S + dh * dh);
          for (size_t h = s * heads_per_kv; h < (s + 1) * heads_per_kv; ++h)
            kernels::linear_attention_apply_f32_fast(buf_.q + i * HD + h * dh, HD, 1, dh, S, S + dh * dh,
                                                     buf_.attn + i * HD + h * dh, HD, scratch);
        }
      }
    });
    return;
  }
  parallel_ranges(pool_, pool_flags_, threads_, kvh, 1, [&](size_t b, size_t e, size_t) {
    for (size_t s = b; s < e; ++s) {
      float* S = state(s);
      std::fill(S, S + dh * dh + dh, 0.0f);
      kernels::linear_attention_state_f32_fast(buf_.kp + s * dh, KV, buf_.vp + s * dh, KV, T, dh, S,
                                               S + dh * dh);
    }
  });
  const size_t block = 32, blocks = (T + block - 1) / block;
  parallel_ranges(pool_, pool_flags_, threads_, H * blocks, 1, [&](size_t b, size_t e, size_t chunk) {
    float* scratch = buf_.scratch + chunk * scratch_stride_;
    for (size_t item = b; item < e; ++item) {
      const size_t h = item / blocks, r0 = (item % blocks) * block, rows = std::min(block, T - r0);
      const float* S = state(h / heads_per_kv);
      kernels::linear_attention_apply_f32_fast(buf_.q + r0 * HD + h * dh, HD, rows, dh, S, S + dh * dh,
                                               buf_.attn + r0 * HD + h * dh, HD, scratch);
    }
  });
}

// A whole layer as one row pipeline. First, over all rows: the attention input (norm), then the
// keys (compression, K', V'), which need every row. Then each thread takes a contiguous share of
// the rows and runs them, a block at a time, through Q, attention, the output projection and
// residual, the norm, the feed-forward and its residual: one parallel region instead of one per
// operator, and a block's intermediate rows stay in the core's cache.
bool Session::layer_rows(const LayerWeights& w, LayerOps& ops, size_t T) {
#if defined(__x86_64__)
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, HD = size_t(c.num_heads) * c.head_dim, F = c.ff_dim, B = row_block_;
  const NormPlacement placement = c.norm_placement;
  // Attention input, and the residual streams the two sublayers add to.
  const float* in = buf_.x;
  float* ff_residual = buf_.x;
  if (placement == NormPlacement::Pre) {
    layernorm_rows(buf_.x, buf_.h, T, w.attention_norm);
    in = buf_.h;
  } else if (placement == NormPlacement::Reversible) {  // x holds y1, x2 holds y2
    layernorm_rows(buf_.x2, buf_.h, T, w.attention_norm);
    in = buf_.h;
    ff_residual = buf_.x2;
  }
  const size_t keys = softmax_keys(w, ops, in, T);
  if (!keys) return false;
  parallel_ranges(pool_, pool_flags_, threads_, T, B, [&](size_t begin, size_t end, size_t chunk) {
    float* q = buf_.row_blocks + chunk * B * (2 * HD + F);
    float* attn = q + B * HD;
    float* ff = attn + B * HD;
    float* scratch = buf_.scratch + chunk * scratch_stride_;
    // Profile: the first share's split (the shares are equal); clock reads only when profiling.
    const bool timing = profiling_ && chunk == 0;
    auto t = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    auto mark = [&](linfer_op_kind kind) {
      if (timing) t = lap(kind, t);
    };
    for (size_t r0 = begin; r0 < end; r0 += B) {
      const size_t n = std::min(B, end - r0);
      float* x = buf_.x + r0 * D;
      dense_rows(ops.q, in + r0 * D, n, q, false, r0);
      mark(LINFER_OP_DENSE);
      for (size_t h = 0; h < c.num_heads; ++h)
        kernels::attention_f32_fast(head_args(h, keys, q, attn), 0, n, scratch);
      mark(LINFER_OP_ATTENTION);
      dense_rows(ops.out, attn, n, x, true, r0);
      mark(LINFER_OP_DENSE);
      const float* ff_in = x;
      if (placement == NormPlacement::Post) {
        kernels::layernorm_f32_fast(x, D, x, D, n, D, f32(w.attention_norm.weight),
                                    f32(w.attention_norm.bias), c.norm_eps);
      } else {
        float* h = buf_.h + r0 * D;  // this block's attention input is no longer needed
        kernels::layernorm_f32_fast(x, D, h, D, n, D, f32(w.feed_forward_norm.weight),
                                    f32(w.feed_forward_norm.bias), c.norm_eps);
        ff_in = h;
      }
      mark(LINFER_OP_NORM);
      dense_rows(ops.fc1, ff_in, n, ff, false, r0);
      dense_rows(ops.fc2, ff, n, ff_residual + r0 * D, true, r0);
      mark(LINFER_OP_DENSE);
      if (placement == NormPlacement::Post) {
        kernels::layernorm_f32_fast(x, D, x, D, n, D, f32(w.feed_forward_norm.weight),
                                    f32(w.feed_forward_norm.bias), c.norm_eps);
        mark(LINFER_OP_NORM);
      }
    }
  });
  return true;
#else
  (void)w, (void)ops, (void)T;
  return false;  // unreachable: the row pipeline is chosen only where the own kernels exist
#endif
}

// One thread's share of a dense layer on the own kernels (run_linear, the row pipeline): rows
// [0, rows) of x, which are rows [first_row, first_row + rows) of the run; first_row places the
// int8 kernel's quantized rows in the arena.
void Session::dense_rows(const Linear& op, const float* x, size_t rows, float* y, bool accumulate,
                         size_t first_row) {
  quantize_rows(op, x, rows, first_row);
  dense_quantized(op, x, rows, y, accumulate, first_row, 0, op.outputs());
}

// int8: quantizes the rows (one scale each) into the arena; nothing for f32.
void Session::quantize_rows(const Linear& op, const float* x, size_t rows, size_t first_row) {
#if defined(__x86_64__)
  if (op.kernel != Linear::Kernel::Int8Vnni) return;
  const kernels::Int8Weights& w = op.i8;
  kernels::quantize_rows_u8_avx512(x, w.in, rows, w.in, w.in_padded,
                                   buf_.qx + first_row * qx_stride_, buf_.qscales + first_row);
#else
  (void)op, (void)x, (void)rows, (void)first_row;
#endif
}

// Output channels [n_begin, n_end) of the rows (int8: as quantize_rows left them).
void Session::dense_quantized(const Linear& op, const float* x, size_t rows, float* y,
                              bool accumulate, size_t first_row, size_t n_begin, size_t n_end) {
#if defined(__x86_64__)
  const kernels::DenseEpilogue e{op.activation, accumulate};
  if (op.kernel == Linear::Kernel::F32Avx512) {
    kernels::dense_f32_avx512(op.f32, x, op.f32.in, rows, y, op.f32.out, n_begin, n_end, e);
    return;
  }
  const kernels::Int8Weights& w = op.i8;
  kernels::dense_int8_f32_avx512vnni(w, buf_.qx + first_row * qx_stride_,
                                     buf_.qscales + first_row, rows, y, w.out, n_begin, n_end, e);
#else
  (void)op, (void)x, (void)rows, (void)y, (void)accumulate, (void)first_row, (void)n_begin,
      (void)n_end;  // unreachable: the own kernels are chosen only where they exist
#endif
}

bool Session::feed_forward(const LayerWeights&, LayerOps& ops, const float* in, size_t T,
                           float* residual) {
  return run_linear(ops.fc1, T, in, buf_.ff) && run_linear(ops.fc2, T, buf_.ff, residual, true);
}

bool Session::head(size_t T) {
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
      if (!run_linear(head_dense_, T, buf_.x, buf_.h)) return false;  // with its activation
      in = buf_.h;
    }
    if (hw.norm.weight.present()) {
      layernorm_rows(in, buf_.h, T, hw.norm);
      in = buf_.h;
    }
    if (!run_linear(head_out_, T, in, buf_.out)) return false;
    output_ = buf_.out;
    output_rows_ = T;
    output_cols_ = c.vocab_size;
    return true;
  }
  // Classifier over a pooled vector.
  float* pooled = buf_.pooled;
  if (c.pooling == Pooling::First) {
    std::memcpy(pooled, buf_.x, D * sizeof(float));
  } else {
    for (size_t i = 0; i < D; ++i) {
      double s = 0;
      for (size_t t = 0; t < T; ++t) s += buf_.x[t * D + i];
      pooled[i] = float(s / double(T));
    }
  }
  if (hw.dense.weight.present()) {
    if (!run_linear(head_dense_, 1, pooled, buf_.pooled2)) return false;
    for (size_t i = 0; i < D; ++i) buf_.pooled2[i] = std::tanh(buf_.pooled2[i]);
    pooled = buf_.pooled2;
  }
  if (!run_linear(head_out_, 1, pooled, buf_.out)) return false;
  output_ = buf_.out;
  output_rows_ = 1;
  output_cols_ = c.num_classes;
  return true;
}

linfer_status Session::forward(size_t T, std::string* error) {
  const EncoderConfig& c = cfg_;
  const EncoderDescription& d = model_->desc;
  const size_t D = c.dim;
  output_ = nullptr;
  output_rows_ = output_cols_ = 0;
  if (profiling_) ++profile_.runs;
  last_length_ = T;
  if (!stepping_) step_position_ = 0;  // a whole run starts a new sequence
  // Positions.
  if (c.positions != PositionKind::None) {
    const size_t first = stepping_ ? step_position_ : 0;  // position of row 0
    const float* pos = c.positions == PositionKind::Learned
                           ? f32(d.position_embedding) + (size_t(c.position_offset) + first) * D
                           : buf_.positions + first * D;
    add_rows(buf_.x, pos, T, D);
  }
  if (c.embedding_norm) layernorm_rows(buf_.x, buf_.x, T, d.embedding_norm);

  // GiveTake carries its p learned tokens as rows [T, T + p) of the same buffers: norms, the
  // feed-forward and the residuals treat them like sequence rows; only attention tells them apart.
  const size_t R = T + c.num_global_tokens;
  if (c.num_global_tokens)
    std::memcpy(buf_.x + T * D, d.global_tokens.data, c.num_global_tokens * D * sizeof(float));
  bool ok = true;
  if (c.norm_placement == NormPlacement::Reversible)
    std::memcpy(buf_.x2, buf_.x, R * D * sizeof(float));
  for (uint32_t i = 0; i < c.num_layers && ok; ++i) {
    const LayerWeights& w = d.layers[i];
    LayerOps& ops = layer_ops_[i];
    if (row_pipeline_) {
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
        ok = ok && feed_forward(w, ops, buf_.h, R, buf_.x);
        break;
      case NormPlacement::Post:
        ok = attention(w, ops, buf_.x, T, buf_.x);
        layernorm_rows(buf_.x, buf_.x, R, w.attention_norm);
        ok = ok && feed_forward(w, ops, buf_.x, R, buf_.x);
        layernorm_rows(buf_.x, buf_.x, R, w.feed_forward_norm);
        break;
      case NormPlacement::Reversible:  // x holds y1, x2 holds y2
        layernorm_rows(buf_.x2, buf_.h, R, w.attention_norm);
        ok = attention(w, ops, buf_.h, T, buf_.x);
        layernorm_rows(buf_.x, buf_.h, R, w.feed_forward_norm);
        ok = ok && feed_forward(w, ops, buf_.h, R, buf_.x2);
        break;
    }
  }
  if (ok && c.norm_placement == NormPlacement::Reversible) add_rows(buf_.x, buf_.x2, T, D);
  if (ok && c.final_norm) layernorm_rows(buf_.x, buf_.x, T, d.final_norm);
  if (ok) ok = head(T);
  if (!ok) {
    *error = "a dense layer failed during run (XNNPACK)";
    return LINFER_ERROR_INTERNAL;
  }
  return LINFER_OK;
}

}  // namespace linfer::rt
