// SPDX-License-Identifier: Apache-2.0
#include "plan.h"

#if LINFER_THREADS && defined(__EMSCRIPTEN__)
#include <emscripten/threading.h>
#elif LINFER_THREADS
#include <sched.h>
#endif

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "arena_plan.h"
#include "c_enum.h"
#include "attention/attention_kind.h"
#include "dense_layer.h"
#include "model_options.h"

namespace linfer::rt {
namespace {

// Options out of range: LINFER_ERROR_INVALID_ARGUMENT.
Status options_out_of_range(const EncoderConfig& c, const linfer_session_options& o) {
  if (o.max_seq_len > c.max_seq_len)
    return invalid_argument("max_seq_len {} exceeds the model's n = {}", kept(o.max_seq_len), kept(c.max_seq_len));
  if (o.num_threads > 256) return invalid_argument("num_threads {} exceeds 256", kept(o.num_threads));
  if (o.arena && o.arena_size == 0) return invalid_argument("an arena pointer was given with arena_size 0");
  const int dense_path = raw_value(o.dense_path), row_pipeline = raw_value(o.row_pipeline);
  const int thread_wait = raw_value(o.thread_wait), max_isa = raw_value(o.max_isa);
  if (dense_path != LINFER_DENSE_AUTO && dense_path != LINFER_DENSE_XNNPACK)
    return invalid_argument("dense_path {} is not a linfer_dense_path", kept(dense_path));
  if (row_pipeline != LINFER_PIPELINE_AUTO && row_pipeline != LINFER_PIPELINE_OFF && row_pipeline != LINFER_PIPELINE_ON)
    return invalid_argument("row_pipeline {} is not a linfer_row_pipeline", kept(row_pipeline));
  if (thread_wait != LINFER_WAIT_AUTO && thread_wait != LINFER_WAIT_SPIN && thread_wait != LINFER_WAIT_YIELD)
    return invalid_argument("thread_wait {} is not a linfer_thread_wait", kept(thread_wait));
  if (o.pipeline_block_rows > 4096)
    return invalid_argument("pipeline_block_rows {} exceeds 4096", kept(o.pipeline_block_rows));
  if (max_isa < int(LINFER_ISA_AUTO) || max_isa > int(LINFER_ISA_X86_AVX512_BF16))
    return invalid_argument("max_isa {} is not a linfer_isa", kept(max_isa));
  return {};
}

// Options that need what this build may leave out: refused with the build option that brings it.
Status left_out_of_build(const linfer_session_options& o) {
#if !LINFER_WITH_XNNPACK
  if (o.dense_path == LINFER_DENSE_XNNPACK)
    return unsupported(
        "dense_path LINFER_DENSE_XNNPACK: this build has no XNNPACK (configure with "
        "-DLINFER_WITH_XNNPACK=ON)");
#endif
#if LINFER_BARE_METAL
  // (The kernels' list has the core's own only: kernels/dense/dense_select.cc.)
  if (raw_value(o.max_isa) != LINFER_ISA_AUTO)
    return unsupported("max_isa {}: a bare-metal build has its core's kernels only; leave it LINFER_ISA_AUTO",
                       kept(raw_value(o.max_isa)));
#endif
#if !LINFER_THREADS
  if (o.num_threads > 1)
    return unsupported(
        "num_threads {}: this build runs on the calling thread only (configure with -DLINFER_THREADS=ON)",
        kept(o.num_threads));
#endif
  (void)o;
  return {};
}

// The kernels' cap for the option; an instruction set of another architecture leaves the
// portable kernels only.
kernels::Isa isa_cap(linfer_isa isa) {
  using kernels::Isa;
  switch (isa) {
    case LINFER_ISA_AUTO:
      return kernels::best_isa();
    case LINFER_ISA_GENERIC:
      return Isa::Generic;
    case LINFER_ISA_X86_SSE4:
      return Isa::X86Sse4;
    case LINFER_ISA_X86_AVX2:
      return Isa::X86Avx2;
    case LINFER_ISA_X86_AVXVNNI:
      return Isa::X86AvxVnni;
    case LINFER_ISA_X86_AVX512:
      return Isa::X86Avx512;
    case LINFER_ISA_X86_AVX512_VNNI:
      return Isa::X86Avx512Vnni;
    case LINFER_ISA_X86_AVX512_BF16:
      return Isa::X86Avx512Bf16;
    case LINFER_ISA_X86_AMX:
      return Isa::X86Amx;
    case LINFER_ISA_ARM_NEON:
      return Isa::ArmNeon;
    case LINFER_ISA_ARM_NEON_DOT:
      return Isa::ArmNeonDot;
    case LINFER_ISA_ARM_NEON_I8MM:
      return Isa::ArmNeonI8mm;
  }
  return Isa::Generic;
}

// Whether the layers run as one row pipeline (Inference::layer_rows): a kind whose module has it
// (AttentionModule::has_row_pipeline: every row's output needs only its own query and the keys
// computed before the blocks) with every dense layer on the
// own kernels, which any thread can run on any rows, and (automatic choice) a layer's Q, output and feed-forward
// weights small enough (8 MiB) to stay in the last-level cache while every block of rows passes through all of them.
// Measured (2 threads, f32): S (2.5 MiB per layer) runs 0-2% faster at n = 512, 3% at 2048, 6-9% at 8192, with an arena
// of 24 MiB instead of 56 at 8192; M (23.6 MiB) runs 7% slower, because each block then streams the whole layer from
// memory, where operator by operator one matrix (9 MiB) is reused.
bool use_row_pipeline(const LoadedModel& m, const linfer_session_options& o, bool xnnpack,
                      const AttentionModule& attention) {
  if (o.row_pipeline == LINFER_PIPELINE_OFF || xnnpack) return false;
  if (!attention.has_row_pipeline(m.desc.config)) return false;
  const LayerWeights& l = m.desc.layers[0];
  const uint64_t bytes = l.q.weight.bytes() + l.out.weight.bytes() + l.fc1.weight.bytes() + l.fc2.weight.bytes();
  return o.row_pipeline == LINFER_PIPELINE_ON || bytes <= (8u << 20);
}

// Rows per block of the row pipeline: a block's Q, attention output and feed-forward hidden
// rows (2 HD + F floats each) take about 512 KiB, half of a core's L2 on current x86 cores; a
// multiple of kRowQuantum, which every dense kernel's tile height divides (but wasm's 5-row f32
// tile: dense_layer.h). (Any block size keeps outputs independent of the thread count: blocks
// start on one grid for all threads.)
// A kernel that needs more rows per call for its speed (kernels.h DenseKernel::min_rows: AMX) gets
// them, rounded up to a multiple of kRowQuantum: on M (int8, 1 thread, n = 512) AMX runs 2.6x
// slower in blocks of 24 rows than in blocks of 128 (each block streams the layer's weights).
size_t row_block(const EncoderConfig& c, const linfer_session_options& o, size_t kernel_min_rows) {
  if (o.pipeline_block_rows) return o.pipeline_block_rows;
  const size_t per_row = (2 * size_t(c.num_heads) * c.head_dim + c.ff_dim) * sizeof(float);
  const size_t for_cache =
      std::clamp<size_t>((512 * 1024) / per_row / kRowQuantum * kRowQuantum, kRowQuantum, 4 * kRowQuantum);
  return std::max(for_cache, (kernel_min_rows + kRowQuantum - 1) / kRowQuantum * kRowQuantum);
}

// A short run's rows pass as one block per thread (Inference::layer_rows), up to this many per
// thread: blocks of row_block rows pass every layer's weights once per block, from L3 or memory,
// where a short run's intermediate rows gain little from staying in L2. Measured on all-MiniLM-L6-v2
// (f32, one thread, AMD EPYC with AVX2, against ONNX Runtime in the same process, run by run):
// blocks of 48 rows 0.84x ONNX Runtime at n = 128, one block 0.99x; n = 256 0.87x and 0.95x (two
// threads: within the noise). Above a few hundred rows per thread the blocks break even and
// then win (S: 3% faster at n = 2048, 6-9% at 8192). A multiple of kRowQuantum.
constexpr size_t kShortRunRows = 264;

// The rows a thread's block region holds: a short run's whole share (its max_len over the
// threads, up to kShortRunRows), or row_block, whichever is more. A caller's pipeline_block_rows
// is kept for every run.
size_t short_run_rows(const linfer_session_options& o, size_t max_len, size_t threads, size_t block) {
  if (o.pipeline_block_rows) return block;
  const size_t share = (max_len + threads - 1) / threads;
  return std::max(block, std::min(kShortRunRows, (share + kRowQuantum - 1) / kRowQuantum * kRowQuantum));
}

// A short run of the row pipeline whose threads' shares would be fewer rows than the int8
// kernel needs per call (AMX's min_rows) goes operator by operator instead, each dense layer's
// channels split between the threads (Inference::layer_operators), where a layer's weights
// (Q, output and feed-forward) are more than a core's L2 holds: each thread then streams half of
// them instead of all of them. Measured with AMX, 2 threads, n = 128: M int8 (7 MiB per layer)
// 21.9-22.7 ms against 24.6-25.1 in shares, all-MiniLM-L6-v2 int8 (1.5 MiB) 3.68-3.88 against
// 3.83-3.90; S int8 (0.6 MiB, in L2) 1.48-1.51 against 1.31-1.34, so it keeps its shares.
size_t operators_below(const LoadedModel& m, const ExecutionPlan& p, size_t kernel_min_rows) {
  const LayerWeights& l = m.desc.layers[0];
  const uint64_t bytes = l.q.weight.bytes() + l.out.weight.bytes() + l.fc1.weight.bytes() + l.fc2.weight.bytes();
  if (!LINFER_THREADS || !p.row_pipeline || p.threads < 2 || !kernel_min_rows || bytes <= (1u << 20)) return 0;
  return kernel_min_rows * p.threads;
}

}  // namespace

Result<ExecutionPlan> make_execution_plan(const LoadedModel& model, const linfer_session_options& o) {
  const EncoderDescription& d = model.desc;
  const EncoderConfig& c = d.config;
  if (Status s = options_out_of_range(c, o); !s.ok()) return s;
  if (Status s = left_out_of_build(o); !s.ok()) return s;
  ExecutionPlan plan;
  ExecutionPlan* const p = &plan;
  p->max_len = o.max_seq_len ? o.max_seq_len : c.max_seq_len;
  p->threads = o.num_threads ? o.num_threads : 1;
  p->profiling = o.enable_profiling != 0;
#if LINFER_THREADS
  if (p->threads > 1) {
    // Spinning workers hold their cores: with more threads than CPUs to run them, each barrier
    // waits for a time slice (measured on 2 CPUs: 4 threads, 50 ms instead of 0.1 ms per run of
    // a tiny model).
    p->yield_workers = o.thread_wait == LINFER_WAIT_YIELD;
    if (o.thread_wait == LINFER_WAIT_AUTO) {
#if defined(__EMSCRIPTEN__)
      // No affinity in wasm: the engine's count (navigator.hardwareConcurrency, Node's os.cpus()).
      const int cpus = emscripten_num_logical_cores();
      p->yield_workers = cpus > 0 && p->threads > uint32_t(cpus);
#else
      cpu_set_t cpus;
      p->yield_workers = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && p->threads > uint32_t(CPU_COUNT(&cpus));
#endif
    }
  }
#endif

  // Dense layers: which dtypes occur, the kernel for each, the widest int8 input.
  p->max_isa = isa_cap(o.max_isa);
  bool has[3] = {false, false, false};
  size_t widest_int8_input = 0, widest_smoothed_input = 0;
  for_each_slot(d, [&](Slot slot, uint32_t, const std::string&, const WeightView& w) {
    if (!w.present() || !is_dense_slot(d.config, slot)) return;
    has[size_t(w.dtype)] = true;
    if (w.dtype == DType::I8) widest_int8_input = std::max<size_t>(widest_int8_input, w.shape[1]);
    if (!LINFER_BARE_METAL && (w.input_scales || w.f32_input_count))  // (f32 inputs: the rows copied, zeroed)
      widest_smoothed_input = std::max<size_t>(widest_smoothed_input, w.shape[1]);
  });
  p->smoothed_stride = (widest_smoothed_input + 15) / 16 * 16;
  for (DType t : {DType::F32, DType::F16, DType::I8})
    if (has[size_t(t)]) p->dense_kernel[size_t(t)] = &kernels::select_dense_kernel(t, p->max_isa);
  // fp16 arithmetic only when asked for, and only where the CPU has it (else the option is ignored).
  if (has[size_t(DType::F16)] && o.fp16_arithmetic)
    if (const kernels::DenseKernel* k = kernels::select_dense_f16_fp16_arithmetic(p->max_isa))
      p->dense_kernel[size_t(DType::F16)] = k;
  p->xnnpack = o.dense_path == LINFER_DENSE_XNNPACK && (has[size_t(DType::F32)] || has[size_t(DType::F16)]);
  if (has[size_t(DType::I8)]) {
    // One stride for every layer (the widest input), so that rows [a, b) of one layer and rows
    // [c, d) of another never share bytes when the ranges are disjoint: threads of the row
    // pipeline quantize different layers' inputs at the same time.
    p->q_stride = (int8_padded_inputs(uint32_t(widest_int8_input)) * p->kernel_for(DType::I8).q_bytes + 63) / 64 * 64;
  }
  // The attention kind's module: made here, checks its part and plans its buffers below.
  const AttentionKindInfo* kind = attention_kind_info(c.attention_kind);
  if (!kind) return attention_kind_built(c.attention_kind);  // (a loaded model's kind is built)
  Status made = allocating("the attention module", 256, [&] { p->attention = kind->make(); });
  if (!made.ok()) return made;
  AttentionModule& attention = *p->attention;
  p->row_pipeline = use_row_pipeline(model, o, p->xnnpack, attention);
  size_t kernel_min_rows = 0;
  for (const kernels::DenseKernel* k : p->dense_kernel)
    if (k) kernel_min_rows = std::max(kernel_min_rows, k->min_rows);
  p->row_block = row_block(c, o, kernel_min_rows);
  p->short_run_rows = short_run_rows(o, p->max_len, p->threads, p->row_block);
  p->operators_below = operators_below(model, *p, kernel_min_rows);

  // The arena: buffers placed by lifetime (greedy, largest first).
  const uint64_t T = p->max_len, R = T + c.num_global_tokens;  // the added rows ride as rows
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, threads = p->threads;
  ArenaLayout& arena = p->arena;
  SessionBuffers& b = p->buffers;
  b.residual = arena.floats(R * D, kStepEmbed, kStepHead);
  if (norm_placement(c) == NormPlacement::Reversible) b.residual2 = arena.floats(R * D, kStepEmbed, kStepFeedForward);
  b.normed = arena.floats(R * D, kStepEmbed, kStepHead);
  if (!p->row_pipeline) {  // (the row pipeline has per-thread blocks of rows instead, below)
    // The sublayer's output before its residual add (XNNPACK has no accumulate; a module may
    // still read the input after the output projection).
    b.sublayer_out = arena.floats(R * D, kStepKeyInputs, kStepFeedForward);
    b.queries = arena.floats(R * HD, kStepKeyInputs, kStepAttention);
    b.attention_out = arena.floats(R * HD, kStepKeyInputs, kStepAttention);
    b.ff_hidden = arena.floats(R * c.ff_dim, kStepFeedForward, kStepFeedForward);
  }
  AttentionPlanning planning{model, o, *p, arena};
  if (Status st = attention.plan(planning); !st.ok()) return st;
  // Sinusoidal positions are computed once at creation and kept for every run.
  if (sinusoidal_positions(c)) b.sinusoids = arena.floats(T * D, kStepEmbed, kStepHead);
  if (c.head == HeadKind::Classifier) {
    b.pooled = arena.floats(D, kStepHead, kStepHead);
    b.pooled_dense = arena.floats(D, kStepHead, kStepHead);
    b.head_out = arena.floats(c.num_classes, kStepHead, kStepHead);
  } else if (c.head == HeadKind::Pooled) {
    b.pooled = arena.floats(D, kStepHead, kStepHead);
  } else if (c.head == HeadKind::LmLogits) {
    b.head_out = arena.floats(T * c.vocab_size, kStepHead, kStepHead);
  }
  if (p->q_stride) {
    // Rows of the largest int8 dense run. The row pipeline quantizes each thread's blocks into
    // that thread's own rows (short_run_rows of them; Inference::layer_rows); before and after
    // the blocks come the layers that make the keys and the head.
    uint64_t rows = attention.dense_rows(c, R);
    if (p->row_pipeline) {
      const uint64_t head_rows = c.head == HeadKind::LmLogits ? T : 1;
      rows = std::min(rows, std::max({threads * p->short_run_rows, attention.key_dense_rows(c, R), head_rows}));
    }
    b.quantized_rows = arena.request(rows * p->q_stride, kStepKeyInputs, kStepHead);
    b.quantized_scales = arena.floats(rows, kStepKeyInputs, kStepHead);
    b.smoothed_rows = arena.floats(rows * p->smoothed_stride, kStepKeyInputs, kStepHead);
  }
  if (p->row_pipeline)
    b.row_blocks = arena.floats(threads * p->short_run_rows * (2 * HD + c.ff_dim), kStepAttention, kStepFeedForward);
  p->arena_bytes = plan_arena(arena.requests) + 64;  // + 64: room to align a caller's buffer
  // Planned in 64 bits, used as size_t: a 32-bit build must refuse what it cannot address, or
  // posix_memalign would get the size cut short and run() would write past the arena.
  if (p->arena_bytes > uint64_t(PTRDIFF_MAX))
    return failure(LINFER_ERROR_OUT_OF_MEMORY, "the arena would need {} bytes, more than a {}-bit process can address",
                   kept(p->arena_bytes), kept(8 * sizeof(void*)));
  return plan;
}

ArenaBuffer ArenaLayout::request(uint64_t bytes, int first, int last) {
  if (bytes == 0) return {};  // empty requests take no room
  requests.push_back(ArenaRequest{bytes, first, last});
  return {requests.size() - 1};
}

uint64_t forward_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, F = c.ff_dim, p = c.num_global_tokens, R = T + p;
  uint64_t layer = 2 * R * D * HD + 2 * R * HD * D + 2 * 2 * R * D * F;  // Q, out, feed-forward
  if (const AttentionKindInfo* kind = attention_kind_info(c.attention_kind)) layer += kind->layer_flops(c, T);
  uint64_t total = layer * c.num_layers;
  if (c.head == HeadKind::LmLogits) total += 2 * T * D * c.vocab_size;
  return total;
}

}  // namespace linfer::rt
