#include "plan.h"

#if LINFER_THREADS
#include <sched.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "arena_plan.h"
#include "dense_layer.h"

namespace linfer::rt {
namespace {

// Steps of a run, for buffer lifetimes.
enum Step { kEmbed = 0, kAttention = 1, kFeedForward = 2, kHead = 3 };

// An enum field's value as written by a C caller, read as its integer bytes: loading a value
// outside the enumerators through the C++ enum type is undefined behaviour (UBSan's -fsanitize=enum).
template <class Enum>
int raw_value(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized here");
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

// A message, or "" when the options are in range.
std::string options_out_of_range(const EncoderConfig& c, const linfer_session_options& o) {
  if (o.max_seq_len > c.max_seq_len)
    return "max_seq_len " + std::to_string(o.max_seq_len) + " exceeds the model's n = " +
           std::to_string(c.max_seq_len);
  if (o.num_threads > 256) return "num_threads " + std::to_string(o.num_threads) + " exceeds 256";
  if (o.arena && o.arena_size == 0) return "an arena pointer was given with arena_size 0";
  const int dense_path = raw_value(o.dense_path), row_pipeline = raw_value(o.row_pipeline);
  const int thread_wait = raw_value(o.thread_wait), max_isa = raw_value(o.max_isa);
  if (dense_path != LINFER_DENSE_AUTO && dense_path != LINFER_DENSE_XNNPACK)
    return "dense_path " + std::to_string(dense_path) + " is not a linfer_dense_path";
  if (row_pipeline != LINFER_PIPELINE_AUTO && row_pipeline != LINFER_PIPELINE_OFF &&
      row_pipeline != LINFER_PIPELINE_ON)
    return "row_pipeline " + std::to_string(row_pipeline) + " is not a linfer_row_pipeline";
  if (thread_wait != LINFER_WAIT_AUTO && thread_wait != LINFER_WAIT_SPIN && thread_wait != LINFER_WAIT_YIELD)
    return "thread_wait " + std::to_string(thread_wait) + " is not a linfer_thread_wait";
  if (o.pipeline_block_rows > 4096)
    return "pipeline_block_rows " + std::to_string(o.pipeline_block_rows) + " exceeds 4096";
  if (max_isa < int(LINFER_ISA_AUTO) || max_isa > int(LINFER_ISA_X86_SSE4))
    return "max_isa " + std::to_string(max_isa) + " is not a linfer_isa";
  return "";
}

// Options that need what this build may leave out: refused with the build option that brings it.
std::string left_out_of_build(const linfer_session_options& o) {
#if !LINFER_WITH_XNNPACK
  if (o.dense_path == LINFER_DENSE_XNNPACK)
    return "dense_path LINFER_DENSE_XNNPACK: this build has no XNNPACK (configure with "
           "-DLINFER_WITH_XNNPACK=ON)";
#endif
#if !LINFER_THREADS
  if (o.num_threads > 1)
    return "num_threads " + std::to_string(o.num_threads) +
           ": this build runs on the calling thread only (configure with -DLINFER_THREADS=ON)";
#endif
  (void)o;
  return "";
}

// The kernels' cap for the option; an instruction set of another architecture leaves the
// portable kernels only.
kernels::Isa isa_cap(linfer_isa isa) {
  using kernels::Isa;
  switch (isa) {
    case LINFER_ISA_AUTO: return kernels::best_isa();
    case LINFER_ISA_GENERIC: return Isa::Generic;
    case LINFER_ISA_X86_SSE4: return Isa::X86Sse4;
    case LINFER_ISA_X86_AVX2: return Isa::X86Avx2;
    case LINFER_ISA_X86_AVXVNNI: return Isa::X86AvxVnni;
    case LINFER_ISA_X86_AVX512: return Isa::X86Avx512;
    case LINFER_ISA_X86_AVX512_VNNI: return Isa::X86Avx512Vnni;
    case LINFER_ISA_ARM_NEON: return Isa::ArmNeon;
    case LINFER_ISA_ARM_NEON_DOT: return Isa::ArmNeonDot;
  }
  return Isa::Generic;
}

// Floats of attention scratch per thread.
size_t scratch_stride(const EncoderConfig& c, uint64_t T) {
  if (c.attention_kind == AttentionKind::LinearElu) return c.head_dim + 16;
  if (c.attention_kind == AttentionKind::Performer) return kernels::favor_scratch_floats(c.num_features) + 16;
  if (c.attention_kind == AttentionKind::Lsh) {
    // The larger of a hash block's rotated values and the chunk attention's: two gathered chunks
    // (a chunk and the one before it), o [b x dh], lse, and the kernel's scores.
    const uint64_t b = c.bucket_size, dh = c.head_dim;
    const uint64_t hash = kLshHashRows * lsh_half_buckets(c, T);
    const uint64_t chunk = 2 * lsh_slot_floats(c) + b * dh + b + kernels::lsh_chunk_scratch_floats(b, 2 * b);
    return std::max(hash, chunk) + 16;
  }
  const uint64_t keys = c.attention_kind == AttentionKind::Linformer ? c.proj_len : T + c.num_global_tokens;
  return kernels::attention_f32_scratch_floats(keys, c.head_dim) + 16;
}

// Whether the layers run as one row pipeline (Session::layer_rows): softmax attention (Linformer,
// full, or a sliding window without global rows: every row's output needs only its own query and
// the keys computed before the blocks) with every dense layer on the own kernels, which any thread
// can run on any rows, and (automatic choice) a layer's Q, output and feed-forward weights small
// enough (8 MiB) to stay in the last-level cache while every block of rows passes through all of
// them. Measured (2 threads, f32): S (2.5 MiB per layer) runs 0-2% faster at n = 512, 3% at
// 2048, 6-9% at 8192, with an arena of 24 MiB instead of 56 at 8192; M (23.6 MiB) runs 7% slower,
// because each block then streams the whole layer from memory, where operator by operator one
// matrix (9 MiB) is reused.
bool use_row_pipeline(const LoadedModel& m, const linfer_session_options& o, bool xnnpack) {
  const EncoderConfig& c = m.desc.config;
  if (o.row_pipeline == LINFER_PIPELINE_OFF || xnnpack) return false;
  const bool local = c.attention_kind == AttentionKind::SlidingWindow && c.global_positions == 0;
  if (c.attention_kind != AttentionKind::Linformer && c.attention_kind != AttentionKind::FullSoftmax && !local)
    return false;
  const LayerWeights& l = m.desc.layers[0];
  const uint64_t bytes = l.q.weight.bytes() + l.out.weight.bytes() + l.fc1.weight.bytes() + l.fc2.weight.bytes();
  return o.row_pipeline == LINFER_PIPELINE_ON || bytes <= (8u << 20);
}

// Rows per block of the row pipeline: a block's Q, attention output and feed-forward hidden
// rows (2 HD + F floats each) take about 512 KiB, half of a core's L2 on current x86 cores; a
// multiple of kRowQuantum, which every dense kernel's tile height divides. (Any block size keeps
// outputs independent of the thread count: blocks start on one grid for all threads.)
size_t row_block(const EncoderConfig& c, const linfer_session_options& o) {
  if (o.pipeline_block_rows) return o.pipeline_block_rows;
  const size_t per_row = (2 * size_t(c.num_heads) * c.head_dim + c.ff_dim) * sizeof(float);
  return std::clamp<size_t>((512 * 1024) / per_row / kRowQuantum * kRowQuantum, kRowQuantum, 4 * kRowQuantum);
}

uint64_t align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// Whether any projection E / F has this dtype.
bool projections_of(const EncoderDescription& d, DType dtype) {
  bool any = d.shared_proj.present() && d.shared_proj.dtype == dtype;
  for (const LayerWeights& l : d.layers)
    for (const WeightView* w : {&l.proj_k, &l.proj_v})
      any = any || (w->present() && w->dtype == dtype);
  return any;
}

}  // namespace

Result<ExecutionPlan> make_execution_plan(const LoadedModel& model, const linfer_session_options& o) {
  const EncoderDescription& d = model.desc;
  const EncoderConfig& c = d.config;
  if (std::string e = options_out_of_range(c, o); !e.empty()) return invalid_argument(std::move(e));
  if (std::string e = left_out_of_build(o); !e.empty()) return unsupported(std::move(e));
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
      cpu_set_t cpus;
      p->yield_workers = sched_getaffinity(0, sizeof cpus, &cpus) == 0 &&
                         p->threads > uint32_t(CPU_COUNT(&cpus));
    }
  }
#endif

  // Dense layers: which dtypes occur, the kernel for each, the widest int8 input.
  p->max_isa = isa_cap(o.max_isa);
  bool has[3] = {false, false, false};
  size_t widest_int8_input = 0;
  for_each_weight(d, [&](const std::string& name, const WeightView& w) {
    if (!w.present() || !is_dense_weight(name)) return;
    has[size_t(w.dtype)] = true;
    if (w.dtype == DType::I8) widest_int8_input = std::max<size_t>(widest_int8_input, w.shape[1]);
  });
  for (DType t : {DType::F32, DType::F16, DType::I8})
    if (has[size_t(t)]) p->dense_kernel[size_t(t)] = &kernels::select_dense_kernel(t, p->max_isa);
  p->xnnpack = o.dense_path == LINFER_DENSE_XNNPACK && (has[size_t(DType::F32)] || has[size_t(DType::F16)]);
  if (has[size_t(DType::I8)]) {
    // One stride for every layer (the widest input), so that rows [a, b) of one layer and rows
    // [c, d) of another never share bytes when the ranges are disjoint: threads of the row
    // pipeline quantize different layers' inputs at the same time.
    p->q_stride = (int8_padded_inputs(uint32_t(widest_int8_input)) * p->kernel_for(DType::I8).q_bytes + 63) / 64 * 64;
  }
  p->row_pipeline = use_row_pipeline(model, o, p->xnnpack);
  p->row_block = row_block(c, o);
  p->scratch_stride = scratch_stride(c, p->max_len);
  // int8 projections compress on the int8 kernel when they all are int8 (a file from the
  // converter); a file that mixes dtypes widens its f16 and int8 ones.
  const bool int8_proj = projections_of(d, DType::I8), f16_proj = projections_of(d, DType::F16);
  // (Up to 65,536 positions: the x86 kernels' int32 sums of (q + 128) * w stay below 2^31.)
  p->int8_compression = c.attention_kind == AttentionKind::Linformer && int8_proj && !f16_proj &&
                        !projections_of(d, DType::F32) && p->max_len <= 65536;
  p->widen_projections = f16_proj || (int8_proj && !p->int8_compression);
  if (p->int8_compression) {
    if (!p->dense_kernel[size_t(DType::I8)])
      p->dense_kernel[size_t(DType::I8)] = &kernels::select_dense_kernel(DType::I8, p->max_isa);
    p->comp_q_stride = align64(int8_padded_inputs(p->max_len) * p->kernel_for(DType::I8).q_bytes);
    p->int8_attention = true;
    const uint64_t keys = c.proj_len, dh = c.head_dim;
    ExecutionPlan::HeadLayout& h = p->head_layout;
    h.v_panels = panel_count(keys) * panel_bytes(DType::I8, dh);  // multiples of 64 bytes
    h.k_scales = h.v_panels + panel_count(dh) * panel_bytes(DType::I8, keys);
    h.k_sums = h.k_scales + align64(keys * 4);
    h.v_scales = h.k_sums + align64(keys * 4);
    h.v_sums = h.v_scales + align64(dh * 4);
    h.bytes = h.v_sums + align64(dh * 4);
    p->attn_block = std::max<size_t>(kAttentionRowBlock, p->row_block);
    p->attn_q_stride = align64(int8_padded_inputs(std::max(keys, dh)) * p->kernel_for(DType::I8).q_bytes);
    p->attn_q_offset = align64(p->attn_block * keys * 4);
    p->attn_scales_offset = p->attn_q_offset + p->attn_block * p->attn_q_stride;
    p->attn_int8_stride = p->attn_scales_offset + align64(p->attn_block * 4);
  }

  // The arena: buffers placed by lifetime (greedy, largest first).
  const uint64_t T = p->max_len, R = T + c.num_global_tokens;  // GiveTake's tokens ride as rows
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, k = c.proj_len,
                 G = c.projection_groups(), S = G == 1 ? c.kv_heads : c.num_heads,
                 dh = c.head_dim, F4 = sizeof(float), threads = p->threads;
  std::vector<ArenaRequest> req(size_t(Buffer::Count), ArenaRequest{0, 0, 0});
  auto floats = [&](Buffer b, uint64_t n, int first, int last) { req[size_t(b)] = {n * F4, first, last}; };
  floats(Buffer::X, R * D, kEmbed, kHead);
  if (c.norm_placement == NormPlacement::Reversible) floats(Buffer::X2, R * D, kEmbed, kFeedForward);
  floats(Buffer::H, R * D, kEmbed, kHead);
  if (p->row_pipeline) {  // per-thread blocks of rows instead of whole-sequence buffers
    floats(Buffer::RowBlocks, threads * p->row_block * (2 * HD + c.ff_dim), kAttention, kFeedForward);
  } else {
    // Sub: a sublayer's output before its residual add (XNNPACK has no accumulate; GiveTake's
    // convolution still reads the input after the output projection).
    floats(Buffer::Sub, R * D, kAttention, kFeedForward);
    floats(Buffer::Q, R * HD, kAttention, kAttention);
    floats(Buffer::Attn, R * HD, kAttention, kAttention);
    floats(Buffer::FF, R * c.ff_dim, kFeedForward, kFeedForward);
  }
  // Keys per head: the Linformer's k compressed rows, or all T rows (and GiveTake's tokens).
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  const uint64_t keys = linformer ? k : R;
  if (linformer) {
    floats(Buffer::CompK, G * k * D, kAttention, kAttention);
    if (c.has_separate_proj_v()) floats(Buffer::CompV, G * k * D, kAttention, kAttention);
    floats(Buffer::RowSum, 2 * G * k, kAttention, kAttention);
    if (p->widen_projections) floats(Buffer::ProjRows, threads * kProjRowsPerStep * c.max_seq_len, kAttention, kAttention);
    if (p->int8_attention) {
      req[size_t(Buffer::HeadPanels)] = {S * p->head_layout.bytes, kAttention, kAttention};
      req[size_t(Buffer::AttnInt8)] = {threads * p->attn_int8_stride, kAttention, kAttention};
    }
    if (p->int8_compression) {
      const uint64_t rows = (c.has_separate_proj_v() ? 2 : 1) * G * k;  // E's rows, then F's
      req[size_t(Buffer::CompPanels)] = {panel_count(c.dim) * panel_bytes(DType::I8, p->max_len), kAttention, kAttention};
      floats(Buffer::CompScales, D, kAttention, kAttention);
      floats(Buffer::CompSums, D, kAttention, kAttention);  // int32
      req[size_t(Buffer::CompRows)] = {rows * p->comp_q_stride, kAttention, kAttention};
    }
  }
  const bool lsh = c.attention_kind == AttentionKind::Lsh;  // (its keys are its queries: no KP)
  if (!lsh) floats(Buffer::KP, keys * S * dh, kAttention, kAttention);
  floats(Buffer::VP, keys * S * dh, kAttention, kAttention);
  const bool linear = linear_state_floats(c) > 0;
  if (linear) floats(Buffer::LinearState, S * linear_state_floats(c), kAttention, kAttention);  // per kv head
  if (linear && c.causal == CausalMode::Causal)
    floats(Buffer::CarriedState, uint64_t(c.num_layers) * S * linear_state_floats(c), kEmbed, kHead);
  if (!linear && !lsh) floats(Buffer::KT, S * dh * keys, kAttention, kAttention);
  if (lsh) {  // per head and round the sorted rows; per head and row the rounds' running max and sum
    req[size_t(Buffer::LshSorted)] = {uint64_t(c.num_heads) * c.num_hashes * T * 4, kAttention, kAttention};
    floats(Buffer::LshMerge, 2 * uint64_t(c.num_heads) * T, kAttention, kAttention);
    req[size_t(Buffer::LshIndex)] = {threads * lsh_index_words(c, T) * 4, kAttention, kAttention};
  }
  floats(Buffer::Scratch, threads * p->scratch_stride, kAttention, kAttention);
  // Sinusoidal positions are computed once at creation and kept for every run.
  if (c.positions == PositionKind::Sinusoidal) floats(Buffer::Positions, T * D, kEmbed, kHead);
  if (c.head == HeadKind::Classifier) {
    floats(Buffer::Pooled, D, kHead, kHead);
    floats(Buffer::Pooled2, D, kHead, kHead);
    floats(Buffer::Out, c.num_classes, kHead, kHead);
  } else if (c.head == HeadKind::LmLogits) {
    floats(Buffer::Out, T * c.vocab_size, kHead, kHead);
  }
  if (p->q_stride) {
    const uint64_t rows = std::max<uint64_t>(R, k);
    req[size_t(Buffer::QX)] = {rows * p->q_stride, kAttention, kHead};
    floats(Buffer::QScales, rows, kAttention, kHead);
  }
  // Empty requests take no room.
  std::vector<ArenaRequest> used;
  std::vector<size_t> index;
  for (size_t i = 0; i < req.size(); ++i)
    if (req[i].bytes) {
      used.push_back(req[i]);
      index.push_back(i);
    }
  p->arena_bytes = plan_arena(used) + 64;  // + 64: room to align a caller's buffer
  // Planned in 64 bits, used as size_t: a 32-bit build must refuse what it cannot address, or
  // posix_memalign would get the size cut short and run() would write past the arena.
  if (p->arena_bytes > uint64_t(PTRDIFF_MAX))
    return Status(LINFER_ERROR_OUT_OF_MEMORY, "the arena would need " + std::to_string(p->arena_bytes) +
                                                  " bytes, more than a " + std::to_string(8 * sizeof(void*)) +
                                                  "-bit process can address");
  for (size_t j = 0; j < used.size(); ++j) {
    p->offset[index[j]] = used[j].offset;
    p->bytes[index[j]] = used[j].bytes;
  }
  return plan;
}

uint64_t forward_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, k = c.proj_len,
                 G = c.projection_groups(), F = c.ff_dim, dh = c.head_dim,
                 KV = uint64_t(c.kv_heads) * dh, p = c.num_global_tokens, R = T + p;
  uint64_t layer = 2 * R * D * HD + 2 * R * HD * D + 2 * 2 * R * D * F;  // Q, out, feed-forward
  switch (c.attention_kind) {
    case AttentionKind::Linformer: {
      const uint64_t kv_width = G == 1 ? KV : HD;
      layer += 2 * G * k * T * D * (c.has_separate_proj_v() ? 2 : 1);  // E X (and F X)
      layer += 2 * 2 * k * D * kv_width;                                // K', V'
      layer += 2 * 2 * T * k * HD;                                      // scores, P V'
      break;
    }
    case AttentionKind::FullSoftmax:
      layer += 2 * 2 * T * D * KV + 2 * 2 * T * T * HD;  // K, V; scores, P V
      break;
    case AttentionKind::LinearElu:
      layer += 2 * 2 * T * D * KV + 2 * T * dh * KV + 2 * T * dh * HD;  // K, V; state; apply
      break;
    case AttentionKind::Performer: {
      const uint64_t m = c.num_features;  // features of K and Q, state, apply
      layer += 2 * 2 * T * D * KV + 2 * T * m * KV + 2 * T * m * HD + 2 * T * m * KV + 2 * T * m * HD;
      break;
    }
    case AttentionKind::SlidingWindow: {
      // Keys a non-global row sees (its window within the input, and the global rows), summed.
      const uint64_t g = std::min<uint64_t>(c.global_positions, T), w = c.window_radius;
      uint64_t seen = 0;
      for (uint64_t i = g; i < T; ++i) seen += std::min(T, i + w + 1) - std::max(g, i >= w ? i - w : 0) + g;
      layer += 2 * 2 * T * D * KV + 2 * 2 * seen * HD;  // K, V; scores, P V
      layer += 2 * 2 * g * T * HD;                      // the global rows over every key
      // (with global projections, their Q on g rows and K, V on T rows once more: not counted)
      break;
    }
    case AttentionKind::BlockSparse: {
      // Keys each query block sees (random blocks counted as if every one existed), times its rows.
      uint64_t seen = 0;
      uint32_t spans[2 * kMaxBlockSparseSpans];
      const uint64_t blocks = block_sparse_blocks(c, T), b = c.block_size;
      for (uint64_t i = 0; i < blocks; ++i) {
        const uint64_t rows = std::min(T, (i + 1) * b) - i * b;
        if (block_sparse_is_global(c, T, i)) {
          seen += rows * T;
          continue;
        }
        const size_t n = block_sparse_key_spans(c, nullptr, T, i, spans);
        uint64_t keys = uint64_t(c.num_random_blocks) * b;
        for (size_t s = 0; s < n; ++s) keys += spans[2 * s + 1] - spans[2 * s];
        seen += rows * keys;
      }
      layer += 2 * 2 * T * D * KV + 2 * 2 * seen * HD;  // K, V; scores, P V
      break;
    }
    case AttentionKind::Lsh: {
      // V (the queries are the keys); per round the hash (T rows against the half-bucket
      // rotation columns: y = x R, -y is free) and each row against its chunk and the one before
      // (scores, P V).
      const uint64_t half = lsh_half_buckets(c, T), b = c.bucket_size, rounds = c.num_hashes;
      layer += 2 * T * D * KV;
      layer += rounds * (2 * T * dh * half * c.num_heads + 2 * 2 * T * std::min<uint64_t>(2 * b, 2 * T) * HD);
      break;
    }
    case AttentionKind::GiveTake:
      layer += 2 * R * D * KV + 2 * T * D * KV;  // K (sequence and tokens), V
      layer += 2 * 2 * p * T * HD * 2;           // take and give: scores and weighted sums
      break;
  }
  uint64_t total = layer * c.num_layers;
  if (c.head == HeadKind::LmLogits) total += 2 * T * D * c.vocab_size;
  return total;
}

}  // namespace linfer::rt
