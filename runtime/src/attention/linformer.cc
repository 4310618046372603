// SPDX-License-Identifier: Apache-2.0
// Linformer (Wang et al. 2020): keys and values compressed along the sequence to k rows,
// K' = E X W_k^T, V' = F X W_v^T. An input of n >= k rows is compressed first (E X is k x D), so
// that K and V are projected on k rows instead of n; a shorter one is projected first, on its n
// rows, and the projections compressed (E (X W^T): n < k rows through the dense layers).
// f16 projections are widened a few rows at a time; int8 ones compress on the int8 dense kernel,
// and then the products Q K'^T and P V' run on it too.
#include <algorithm>
#include <cmath>

#include "attention/softmax_attention.h"
#include "linfer/format/kinds/linformer.h"
#include "model_options.h"
#include "weight_rows.h"

// Without int8 dense kernels every projection is widened to f32: a build that leaves out both
// could load no Linformer model.
#if !LINFER_DENSE_INT8 && !LINFER_OPTION_FLOAT_PROJECTIONS
#error "-DLINFER_MODEL_OPTIONS: the Linformer without int8 dense kernels needs float_projections"
#endif

namespace linfer::rt {
namespace {

uint64_t align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// Whether any projection E / F has this dtype.
bool projections_of(const EncoderDescription& d, DType dtype) {
  using T = LinformerTensors;
  const WeightView& shared = d.kind_tensors[T::kSharedProj];
  bool any = shared.present() && shared.dtype == dtype;
  for (const LayerWeights& l : d.layers)
    for (const WeightView* w : {&l.kind_tensors[T::kProjK], &l.kind_tensors[T::kProjV]})
      any = any || (w->present() && w->dtype == dtype);
  return any;
}

// Whether the sequence compression runs on the int8 dense kernel for inputs of up to max_len
// rows: every projection E / F int8 (a file from the converter), at most 65,536 positions (the
// x86 kernels' int32 sums of (q + 128) * w stay below 2^31) and int8 kernels built. Else the
// projections are widened to f32 (float_projections).
bool int8_compression(const EncoderDescription& d, uint64_t max_len) {
  return projections_of(d, DType::I8) && !projections_of(d, DType::F16) && !projections_of(d, DType::F32) &&
         max_len <= 65536 && kernels::dense_dtype_built(DType::I8);
}

// The distinct E (and F) per layer (linformer_projection_groups), as this build runs them.
uint32_t projection_groups(const EncoderConfig& c) {
  return kPerHeadProjectionsBuilt ? linformer_projection_groups(c) : 1;
}

// At load: the model options a Linformer may need that a build may leave out (-DLINFER_MODEL_OPTIONS).
Status options_built(const EncoderDescription& d) {
  if (!kFloatProjectionsBuilt && !int8_compression(d, d.config.max_seq_len))
    return option_not_built("float_projections (Linformer projections not all int8, or n above 65536)");
  if (!kPerHeadProjectionsBuilt && linformer_projection_groups(d.config) > 1)
    return option_not_built("per_head_projections (Linformer projection sharing none)");
  return {};
}

class LinformerAttention final : public SoftmaxAttention {
 public:
  bool has_row_pipeline(const EncoderConfig&) const override { return true; }
  uint64_t dense_rows(const EncoderConfig& c, uint64_t rows) const override {
    return std::max<uint64_t>(rows, linformer_fields(c).proj_len);  // K' and V' on k rows
  }
  uint64_t key_dense_rows(const EncoderConfig& c, uint64_t) const override { return linformer_fields(c).proj_len; }
  Status plan(AttentionPlanning& p) override;
  void bind(const Arena& arena) override;
  Status prepare_layers(const LayerContext& s) override {
    // The layers get no bias: the attention adds it to K' and V', after the compression in
    // either order (placement "after": through E, rowsum(E) * b; "before": b on every row).
    // Per-head projections give each head its own compressed input, so each kv head gets the
    // layer for its group of rows of W.
    return prepare_kv_layers(s, true, false);
  }
  bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) override {
    return run_softmax(s, layer, in, T, residual);
  }

 private:
  size_t make_keys(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) override;
  void head_keys_ready(size_t s, size_t keys, const float* v, size_t v_stride) override;
  void attention_rows(LayerContext& s, size_t h, size_t keys, const float* q, float* o, size_t rows, size_t worker,
                      KeyWindow window, size_t first_row) override;

  bool linformer_kv(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T);
  // Whether this layer's K' and V' are made projection first: E (X W^T) on an input shorter than k.
  bool projects_first(const LayerContext& s, size_t T) const;
  bool project_then_compress(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T,
                             const WeightView* const proj[2], const bool need_sum[2]);
  // comp rows [row_begin, row_end) = E[rows, :T] in, `cols` columns (in: T rows, `cols` apart).
  void compress(const LayerContext& s, const WeightView& E, const float* in, size_t cols, size_t T, float* comp,
                size_t row_begin, size_t row_end, float* rowsum, size_t worker);
  // The compression of `projections` inputs on the int8 kernel (E[kv], kv = 0 K, 1 V, each of
  // in's `cols` columns; rowsum[kv] null or where their row sums go).
  void compress_int8(const LayerContext& s, const WeightView* const E[2], size_t projections, const float* in,
                     size_t cols, size_t T, float* const comp[2], float* const rowsum[2]);
  // The int8 attention's weights of distinct K/V head s: K'^T (keys output channels of head_dim
  // inputs) and V' (head_dim channels of `keys` inputs) as int8 panels with their scales and sums.
  struct HeadInt8 {
    int8_t *k_panels, *v_panels;
    float *k_scales, *v_scales;
    int32_t *k_sums, *v_sums;
  };
  HeadInt8 head_int8(size_t s) const;

  // Plan.
  bool widen_projections_ = false;  // E / F are f16: widened kProjRowsPerStep rows at a time
  // E / F are int8: the compression runs on the int8 dense kernel, E's rows as its input (in its
  // form, comp_q_stride_ bytes apart) and X's columns quantized into panels as its weights.
  bool int8_compression_ = false;
  // The f32 paths (the f32 compression, the f32 attention kernel) where the build has them.
  bool float_path() const { return kFloatProjectionsBuilt && !int8_compression_; }
  size_t comp_q_stride_ = 0;
  // In the same models the attention's products Q K'^T and P V' run on the int8 kernel too: K'^T
  // and V' of each distinct head packed per run as int8 weights (head_panels_: per head K'^T's
  // panels at 0, then V''s, the scales and sums of each at these offsets, `bytes` in all), a
  // thread's rows quantized attn_block_ at a time (attention_int8_: attn_int8_stride_ bytes per
  // thread: scores at 0, quantized Q or P rows attn_q_stride_ bytes apart at attn_q_offset_, their
  // scales at attn_scales_offset_).
  struct HeadLayout {
    size_t v_panels = 0, k_scales = 0, k_sums = 0, v_scales = 0, v_sums = 0, bytes = 0;
  } head_layout_;
  size_t attn_block_ = 0, attn_q_stride_ = 0, attn_q_offset_ = 0, attn_scales_offset_ = 0, attn_int8_stride_ = 0;
  const kernels::DenseKernel* int8_kernel_ = nullptr;
  size_t head_dim_ = 0;

  // Buffers.
  ArenaBuffer compressed_k_buf_, compressed_v_buf_, row_sums_buf_, widened_rows_buf_, head_panels_buf_,
      attention_int8_buf_, column_panels_buf_, column_scales_buf_, column_sums_buf_, projection_rows_buf_;
  float* compressed_k_ = nullptr;      // E X per group, k x dim each
  float* compressed_v_ = nullptr;      // F X (separate F only)
  float* row_sums_ = nullptr;          // rowsum(E) (and F's) over the input's T columns: biases through E
  float* widened_rows_ = nullptr;      // f16 projections: per thread, rows of E widened to f32
  uint8_t* head_panels_ = nullptr;     // int8 attention: K'^T and V' per distinct head (HeadLayout)
  uint8_t* attention_int8_ = nullptr;  // int8 attention: per thread, scores and quantized rows
  int8_t* column_panels_ = nullptr;    // int8 compression: X's columns as int8 panels,
  float* column_scales_ = nullptr;     // their scales
  int32_t* column_sums_ = nullptr;     // and sums;
  int8_t* projection_rows_ = nullptr;  // E's (and F's) rows in the int8 kernel's input form
};

Status LinformerAttention::plan(AttentionPlanning& ap) {
  const EncoderDescription& d = ap.model.desc;
  const EncoderConfig& c = d.config;
  ExecutionPlan* const p = &ap.plan;
  head_dim_ = c.head_dim;
  per_head_ = projection_groups(c) > 1;
  // int8 projections compress on the int8 kernel when they all are int8 (a file from the
  // converter); f32 ones are read as they are, f16 and a mix of dtypes widened (float_projections).
  int8_compression_ = !kFloatProjectionsBuilt || int8_compression(d, p->max_len);
  widen_projections_ = !int8_compression_ && (projections_of(d, DType::F16) || projections_of(d, DType::I8));
  if (int8_compression_) {
    if (!p->dense_kernel[size_t(DType::I8)])
      p->dense_kernel[size_t(DType::I8)] = &kernels::select_dense_kernel(DType::I8, p->max_isa);
    int8_kernel_ = &p->kernel_for(DType::I8);
    comp_q_stride_ = align64(int8_padded_inputs(p->max_len) * p->kernel_for(DType::I8).q_bytes);
    const uint64_t keys = linformer_fields(c).proj_len, dh = c.head_dim;
    HeadLayout& h = head_layout_;
    h.v_panels = panel_count(keys) * panel_bytes(DType::I8, dh);  // multiples of 64 bytes
    h.k_scales = h.v_panels + panel_count(dh) * panel_bytes(DType::I8, keys);
    h.k_sums = h.k_scales + align64(keys * 4);
    h.v_scales = h.k_sums + align64(keys * 4);
    h.v_sums = h.v_scales + align64(dh * 4);
    h.bytes = h.v_sums + align64(dh * 4);
    attn_block_ = std::max<size_t>(kAttentionRowBlock, p->row_block);
    attn_q_stride_ = align64(int8_padded_inputs(std::max(keys, dh)) * p->kernel_for(DType::I8).q_bytes);
    attn_q_offset_ = align64(attn_block_ * keys * 4);
    attn_scales_offset_ = attn_q_offset_ + attn_block_ * attn_q_stride_;
    attn_int8_stride_ = attn_scales_offset_ + align64(attn_block_ * 4);
  }

  // Buffers: the compressed input per group (E X, F X), K' and V' (k rows per distinct head),
  // the row sums, and the paths' own.
  const uint64_t D = c.dim, k = linformer_fields(c).proj_len, G = projection_groups(c),
                 S = G == 1 ? c.kv_heads : c.num_heads, threads = p->threads;
  // Columns of the compressed rows: D, or with the projection first (G = 1) the K/V width.
  const uint64_t cols = std::max<uint64_t>(D, uint64_t(c.kv_heads) * c.head_dim);
  // Lifetimes (ArenaStep): the compression's buffers serve the key inputs step only, E X until K'
  // and V' are made, and with the int8 attention K', V' and K'^T only until their panels are
  // packed: the steps' buffers share bytes (with the row pipeline's own quantized rows, the
  // microcontroller model's arena at n = 128 went from 172.6 KB to 115.9 KB on a Cortex-M).
  ArenaLayout& a = ap.arena;
  const int inputs = kStepKeyInputs, keys = kStepKeys, attend = kStepAttention;
  // (With the projection first, X W^T of the n < k rows goes where E X goes, so the same bytes.)
  compressed_k_buf_ = a.floats(G * k * cols, inputs, keys);
  if (linformer_has_separate_proj_v(c)) compressed_v_buf_ = a.floats(G * k * cols, inputs, keys);
  request_keys(ap, k, S, true, keys, int8_compression_ ? keys : attend);
  row_sums_buf_ = a.floats(2 * G * k, inputs, keys);
  request_scratch(ap, scratch_floats(k, c));
  // With the projection first, f16 rows of E are widened while K' and V' are written (keys step).
  if (widen_projections_) widened_rows_buf_ = a.floats(threads * kProjRowsPerStep * c.max_seq_len, inputs, keys);
  if (int8_compression_) {
    const uint64_t rows = (linformer_has_separate_proj_v(c) ? 2 : 1) * G * k;  // E's rows, then F's
    column_panels_buf_ = a.request(panel_count(uint32_t(cols)) * panel_bytes(DType::I8, p->max_len), inputs, inputs);
    column_scales_buf_ = a.floats(cols, inputs, inputs);
    column_sums_buf_ = a.floats(cols, inputs, inputs);  // int32
    projection_rows_buf_ = a.request(rows * comp_q_stride_, inputs, inputs);
  }
  if (int8_compression_) {  // the int8 attention
    head_panels_buf_ = a.request(S * head_layout_.bytes, keys, attend);
    attention_int8_buf_ = a.request(threads * attn_int8_stride_, attend, attend);
  }
  return {};
}

void LinformerAttention::bind(const Arena& arena) {
  SoftmaxAttention::bind(arena);
  compressed_k_ = arena.at(compressed_k_buf_);
  compressed_v_ = arena.at(compressed_v_buf_);
  row_sums_ = arena.at(row_sums_buf_);
  widened_rows_ = arena.at(widened_rows_buf_);
  head_panels_ = arena.at<uint8_t>(head_panels_buf_);
  attention_int8_ = arena.at<uint8_t>(attention_int8_buf_);
  column_panels_ = arena.at<int8_t>(column_panels_buf_);
  column_scales_ = arena.at(column_scales_buf_);
  column_sums_ = arena.at<int32_t>(column_sums_buf_);
  projection_rows_ = arena.at<int8_t>(projection_rows_buf_);
}

// The fewest kProjRowsPerStep steps of a compression chunk when its rows are cut into more chunks
// than threads: each chunk's product reads all of the input (T x D), so 32 rows at least.
constexpr size_t kCompressChunkSteps = 8;

// comp rows [row_begin, row_end) = E[rows, :T] in, for rows of the stacked [G*k x n] projection E
// (rowsum: their sums over the first T columns, when asked). An f32 E is read in place; f16 and
// int8 rows are widened kProjRowsPerStep at a time into the thread's scratch (worker), a cost of
// one conversion per multiply-add row of D.
void LinformerAttention::compress(const LayerContext& s, const WeightView& E, const float* in, size_t D, size_t T,
                                  float* comp, size_t row_begin, size_t row_end, float* rowsum, size_t worker) {
  const size_t n = s.config().max_seq_len;
  if (E.dtype == DType::F32) {
    kernels::gemm_f32_hwy(row_end - row_begin, D, T, f32_data(E) + row_begin * n, n, in, D, comp + row_begin * D, D);
    if (rowsum)
      for (size_t r = row_begin; r < row_end; ++r) rowsum[r] = kernels::sum_f32_hwy(f32_data(E) + r * n, T);
    return;
  }
  float* rows = widened_rows_ + worker * kProjRowsPerStep * n;
  for (size_t r0 = row_begin; r0 < row_end; r0 += kProjRowsPerStep) {
    const size_t m = std::min(kProjRowsPerStep, row_end - r0);
    for (size_t i = 0; i < m; ++i) widen_weight_row(E, uint32_t(r0 + i), T, 1.0f, rows + i * T);
    kernels::gemm_f32_hwy(m, D, T, rows, T, in, D, comp + r0 * D, D);
    if (rowsum)
      for (size_t i = 0; i < m; ++i) rowsum[r0 + i] = kernels::sum_f32_hwy(rows + i * T, T);
  }
}

// The same products for int8 projections, on the int8 dense kernel: comp = E X is a dense layer
// whose input rows are E's (int8 already: only copied into the kernel's form) and whose weights
// are X's columns, quantized one scale per column (the activations' per-channel ranges) and
// packed into panels per run. Two parallel regions: the packing and the copies (items of 16
// columns or 16 rows), then the products (rows split at kRowQuantum, as every dense layer).
void LinformerAttention::compress_int8(const LayerContext& s, const WeightView* const E[2], size_t projections,
                                       const float* in, size_t D, size_t T, float* const comp[2],
                                       float* const rowsum[2]) {
  const EncoderConfig& c = s.config();
  const size_t rows = projection_groups(c) * linformer_fields(c).proj_len, stride = comp_q_stride_;
  const kernels::DenseKernel& kernel = *int8_kernel_;
  const size_t panels = panel_count(uint32_t(D)), row_items = (projections * rows + 15) / 16;
  auto prepare = [&](size_t item, size_t) {
    if (item < panels) {
      kernels::pack_columns_int8_hwy(in, D, T, D, item * 16, std::min(D, item * 16 + 16), column_panels_,
                                     column_scales_, column_sums_);
      return;
    }
    const size_t r_begin = (item - panels) * 16, r_end = std::min(projections * rows, r_begin + 16);
    // E's rows come from the model's mapping, usually from memory, a row stride (n bytes) apart:
    // one row at a time, each copy waited for its lines (4% of M's int8 run at n = 128).
    for (size_t r = r_begin; r < r_end && !LINFER_BARE_METAL; ++r)
      for (size_t i = 0; i < T; i += 64)
        __builtin_prefetch(static_cast<const int8_t*>(E[r / rows]->data) + (r % rows) * E[r / rows]->shape.back() + i);
    for (size_t r = r_begin; r < r_end; ++r) {
      const WeightView& w = *E[r / rows];
      const size_t row = r % rows;
      int32_t sum = 0;
      float* sums = rowsum[r / rows];
      kernels::int8_rows_to_input(kernel, static_cast<const int8_t*>(w.data) + row * w.shape.back(), 0, 1, T,
                                  projection_rows_ + r * stride, stride, sums ? &sum : nullptr);
      if (sums) sums[row] = float(sum) * w.scales[row];
    }
  };
  s.workers().chunks(panels + row_items, prepare);
  const kernels::DenseWeights x_columns{DType::I8, T, D, column_panels_, column_scales_, column_sums_, nullptr};
  auto products = [&](size_t b, size_t e, size_t) {
    for (size_t kv = 0; kv < projections; ++kv) {
      const size_t lo = std::max(b, kv * rows), hi = std::min(e, (kv + 1) * rows);
      if (lo >= hi) continue;
      const kernels::DenseInput input{nullptr, 0, projection_rows_ + lo * stride, stride,
                                      E[kv]->scales + (lo - kv * rows)};
      kernel.run(x_columns, input, hi - lo, comp[kv] + (lo - kv * rows) * D, D, 0, D, {});
    }
  };
  s.workers().balanced_ranges(projections * rows, kRowQuantum, kMinChunkRows / kRowQuantum, products);
}

// Multiply-adds of one layer's K' and V' made compression first and projection first, for T
// input rows (G = 1: each projection's rows are k x T, the dense layers D x KV). With one E for
// both, E X is made once.
struct KvCosts {
  uint64_t compression_first, projection_first;
};
KvCosts kv_costs(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, k = linformer_fields(c).proj_len, KV = uint64_t(c.kv_heads) * c.head_dim;
  return {k * T * D * (linformer_has_separate_proj_v(c) ? 2 : 1) + 2 * k * D * KV, 2 * (T * D * KV + k * T * KV)};
}

// The projection first when it takes fewer multiply-adds (T below about k), with one compression
// for all heads (G = 1; per-head projections keep the compression first). The int8 compression
// with one E for K and V keeps it too: its buffers have room for one projection's X W^T only
// (the key inputs step's buffers may share bytes with keys_ and values_).
bool LinformerAttention::projects_first(const LayerContext& s, size_t T) const {
  const EncoderConfig& c = s.config();
  const KvCosts cost = kv_costs(c, T);
  return cost.projection_first < cost.compression_first && projection_groups(c) == 1 &&
         (linformer_has_separate_proj_v(c) || float_path());
}

// K' = E (X W_k^T) and V' = F (X W_v^T) on an input of T < k rows (the biases after, as with
// the compression first). X W^T of K goes to compressed_k_, of V to compressed_v_ or, with
// one E (f32 and f16 only), to keys_, V' being made from it before K'. The int8 compression
// writes K' (V') over the X W^T whose columns it has packed, and K' and V' are copied to keys_ and
// values_ after both compressions: its own buffers live in the key inputs step only.
bool LinformerAttention::project_then_compress(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T,
                                               const WeightView* const proj[2], const bool need_sum[2]) {
  const EncoderConfig& c = s.config();
  const KvLayers& ops = kv_[layer.index];
  const size_t k = linformer_fields(c).proj_len, KV = size_t(c.kv_heads) * c.head_dim;
  const bool separate_v = linformer_has_separate_proj_v(c);
  float* const dst[2] = {keys_, values_};
  float* const projected[2] = {compressed_k_, separate_v ? compressed_v_ : keys_};
  for (int kv : {1, 0}) {
    if (!s.run_dense(kv == 0 ? ops.k[0] : ops.v[0], T, in, projected[kv])) return false;
    float* const sums = need_sum[kv] ? row_sums_ + (separate_v ? kv * k : 0) : nullptr;
    const auto t = s.now();
    if (!float_path()) {
      const WeightView* const E[2] = {proj[kv], nullptr};
      float* const comp[2] = {projected[kv], nullptr};
      float* const rowsum[2] = {sums, nullptr};
      compress_int8(s, E, 1, projected[kv], KV, T, comp, rowsum);
    } else {
      s.workers().balanced_ranges(k, kProjRowsPerStep, kCompressChunkSteps, [&](size_t b, size_t e, size_t worker) {
        compress(s, *proj[kv], projected[kv], KV, T, dst[kv], b, e, sums, worker);
      });
    }
    s.lap(LINFER_OP_COMPRESS, t);
  }
  if (!float_path())
    for (int kv = 0; kv < 2; ++kv) std::copy(projected[kv], projected[kv] + k * KV, dst[kv]);
  return true;
}

// Linformer keys and values: K' = E X W_k^T (+ biases), V' likewise, k rows per group.
bool LinformerAttention::linformer_kv(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) {
  const EncoderConfig& c = s.config();
  const LayerWeights& w = layer.w;
  const KvLayers& ops = kv_[layer.index];
  const size_t D = c.dim, H = c.num_heads, dh = c.head_dim, kvh = c.kv_heads, k = linformer_fields(c).proj_len,
               G = projection_groups(c);
  const bool per_head = G > 1;

  const bool layerwise = linformer_fields(c).projection_sharing == ProjectionSharing::Layerwise;
  using T_ = LinformerTensors;
  const WeightView* const model = s.model().desc.kind_tensors;
  const WeightView& E = layerwise ? model[T_::kSharedProj] : w.kind_tensors[T_::kProjK];
  const WeightView& Eb = layerwise ? model[T_::kSharedProjBias] : w.kind_tensors[T_::kProjKBias];
  const bool separate_v = linformer_has_separate_proj_v(c);
  const WeightView& Fv = separate_v ? w.kind_tensors[T_::kProjV] : E;
  const WeightView& Fb = separate_v ? w.kind_tensors[T_::kProjVBias] : Eb;
  // With placement "after", a K/V bias b reaches the compressed rows as rowsum(E)[r] * b; with
  // "before" it is the projection's own, b on every compressed row.
  const bool after = linformer_fields(c).projection_placement == ProjectionPlacement::After;
  const bool bias_through[2] = {after && w.k.bias.present(), after && w.v.bias.present()};
  const bool bias_plain[2] = {!after && w.k.bias.present(), !after && w.v.bias.present()};
  const size_t rows = G * k;  // all groups' compressed rows
  // Row sums of E (kv 0) and F (kv 1): with one E for both, E's serve both biases.
  const bool need_sum[2] = {bias_through[0] || (!separate_v && bias_through[1]),
                            bias_through[1] || (!separate_v && bias_through[0])};
  const WeightView* const proj[2] = {&E, &Fv};
  if (projects_first(s, T)) {
    if (!project_then_compress(s, layer, in, T, proj, need_sum)) return false;
  } else {
    // Compress the input along the sequence first: comp = E[:, :T] X (k x D per group). K and V
    // are then projected on k rows instead of T (the reassociation E (X W) = (E X) W).
    // E's rows, then F's when separate, as one range split across threads (one parallel region).
    // Row r of group g is row (g*k + r) of the stacked [G*k x n] projection.
    const auto t = s.now();
    if (!float_path()) {
      float* const comp[2] = {compressed_k_, compressed_v_};
      float* const sums[2] = {need_sum[0] ? row_sums_ : nullptr, need_sum[1] ? row_sums_ + rows : nullptr};
      compress_int8(s, proj, separate_v ? 2 : 1, in, D, T, comp, sums);
    } else {
      auto compress_rows = [&](size_t b, size_t e, size_t worker) {
        for (int kv = 0; kv < 2; ++kv) {
          const size_t lo = std::max(b, kv * rows), hi = std::min(e, (kv + 1) * rows);
          if (lo >= hi) continue;
          compress(s, *proj[kv], in, D, T, kv == 0 ? compressed_k_ : compressed_v_, lo - kv * rows, hi - kv * rows,
                   need_sum[kv] ? row_sums_ + kv * rows : nullptr, worker);
        }
      };
      s.workers().balanced_ranges((separate_v ? 2 : 1) * rows, kProjRowsPerStep, kCompressChunkSteps, compress_rows);
    }
    s.lap(LINFER_OP_COMPRESS, t);
    // K' and V' = comp W^T, per group.
    const float* comp_v = separate_v ? compressed_v_ : compressed_k_;
    for (int kv = 0; kv < 2; ++kv) {
      const float* comp = kv == 0 ? compressed_k_ : comp_v;
      float* dst = kv == 0 ? keys_ : values_;
      const std::vector<DenseLayer>& list = kv == 0 ? ops.k : ops.v;
      if (!per_head) {
        if (!s.run_dense(list[0], k, comp, dst)) return false;
      } else {
        for (size_t h = 0; h < H; ++h)
          if (!s.run_dense(list[kvh == 1 ? 0 : h], k, comp + h * k * D, dst + h * k * dh)) return false;
      }
    }
  }

  // The biases (the dense layers add none): the K/V bias b plain or through E (rowsum(E)[r] * b),
  // and E's own (p[r]).
  const float* rowsum_v = row_sums_ + (separate_v ? rows : 0);
  const size_t kp_stride = per_head ? dh : kvh * dh;  // row stride of K'/V'
  for (int kv = 0; kv < 2; ++kv) {
    const WeightView& pb = kv == 0 ? Eb : Fb;
    if (!bias_through[kv] && !bias_plain[kv] && !pb.present()) continue;
    const auto t = s.now();
    float* dst = kv == 0 ? keys_ : values_;
    const float* b = bias_through[kv] || bias_plain[kv] ? f32_data(kv == 0 ? w.k.bias : w.v.bias) : nullptr;
    const float* sums = bias_through[kv] ? (kv == 0 ? row_sums_ : rowsum_v) : nullptr;
    for (size_t g = 0; g < G; ++g) {
      // This group's K'/V' rows, its columns, and the slice of b they take.
      const size_t cols = per_head ? dh : kvh * dh;
      const float* bg = b && per_head && kvh > 1 ? b + g * dh : b;
      float* rows_g = dst + (per_head ? g * k * dh : 0);
      if (bias_plain[kv])
        for (size_t r = 0; r < k; ++r) kernels::add_f32_hwy(rows_g + r * kp_stride, bg, cols);
      if (bias_through[kv] || pb.present())
        kernels::add_rank1_f32_hwy(rows_g, kp_stride, k, cols, sums ? sums + g * k : nullptr, bg,
                                   pb.present() ? f32_data(pb) + g * k : nullptr);
    }
    s.lap(LINFER_OP_ELEMENTWISE, t);
  }
  return true;
}

// The keys are the k compressed rows (no rotary positions: the compression mixes positions).
size_t LinformerAttention::make_keys(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T) {
  if (!linformer_kv(s, layer, in, T)) return 0;
  const size_t keys = linformer_fields(s.config()).proj_len;
  prepare_keys(s, keys);
  return keys;
}

// Head s's block of the head panels (HeadLayout).
LinformerAttention::HeadInt8 LinformerAttention::head_int8(size_t s) const {
  const HeadLayout& l = head_layout_;
  uint8_t* p = head_panels_ + s * l.bytes;
  return {reinterpret_cast<int8_t*>(p),
          reinterpret_cast<int8_t*>(p + l.v_panels),
          reinterpret_cast<float*>(p + l.k_scales),
          reinterpret_cast<float*>(p + l.v_scales),
          reinterpret_cast<int32_t*>(p + l.k_sums),
          reinterpret_cast<int32_t*>(p + l.v_sums)};
}

// int8 attention: K'^T (from keys_t_: each key's head_dim values are a column) and V' (v: each
// channel's values over the keys are a column) of head s as int8 weights, one scale per key and
// per channel.
void LinformerAttention::head_keys_ready(size_t s, size_t keys, const float* v, size_t v_stride) {
  if (float_path()) return;
  const size_t dh = head_dim_;
  const HeadInt8 h = head_int8(s);
  kernels::pack_columns_int8_hwy(keys_t_ + s * dh * keys, keys, dh, keys, 0, keys, h.k_panels, h.k_scales, h.k_sums);
  kernels::pack_columns_int8_hwy(v, v_stride, keys, dh, 0, dh, h.v_panels, h.v_scales, h.v_sums);
}

void LinformerAttention::attention_rows(LayerContext& s, size_t h, size_t keys, const float* q, float* o, size_t rows,
                                        size_t worker, KeyWindow window, size_t first_row) {
  if (float_path()) {
    SoftmaxAttention::attention_rows(s, h, keys, q, o, rows, worker, window, first_row);
    return;
  }
  // int8: scores = Q K'^T on the int8 kernel (Q's rows quantized as any dense input), then P V'
  // on the int8 kernel, P's rows quantized as they are computed (each row's largest probability
  // is its scale's 127).
  const size_t dh = head_dim_, HD = s.config().num_heads * dh;
  const size_t B = attn_block_, qs = attn_q_stride_;
  uint8_t* base = attention_int8_ + worker * attn_int8_stride_;
  float* scores = reinterpret_cast<float*>(base);
  int8_t* qrows = reinterpret_cast<int8_t*>(base + attn_q_offset_);
  float* qscales = reinterpret_cast<float*>(base + attn_scales_offset_);
  const kernels::DenseKernel& kernel = *int8_kernel_;
  const HeadInt8 hw = head_int8(kv_head(s.config(), h));
  const kernels::DenseWeights kt{DType::I8, dh, keys, hw.k_panels, hw.k_scales, hw.k_sums, nullptr};
  const kernels::DenseWeights v{DType::I8, keys, dh, hw.v_panels, hw.v_scales, hw.v_sums, nullptr};
  const float scale = 1.0f / std::sqrt(float(dh));
  for (size_t r0 = 0; r0 < rows; r0 += B) {
    const size_t n = std::min(B, rows - r0);
    kernel.quantize(q + r0 * HD + h * dh, HD, n, dh, qrows, qs, qscales);
    kernel.run(kt, {nullptr, 0, qrows, qs, qscales}, n, scores, keys, 0, keys, {});
    kernels::softmax_quantize_rows_hwy(scores, keys, n, keys, scale, kernels::int8_form(kernel), qrows, qs, qscales);
    kernel.run(v, {nullptr, 0, qrows, qs, qscales}, n, o + r0 * HD + h * dh, HD, 0, dh, {});
  }
}

uint64_t linformer_layer_flops(const EncoderConfig& c, uint64_t T) {
  const uint64_t D = c.dim, HD = uint64_t(c.num_heads) * c.head_dim, k = linformer_fields(c).proj_len,
                 G = projection_groups(c), KV = uint64_t(c.kv_heads) * c.head_dim;
  const uint64_t kv_width = G == 1 ? KV : HD;
  uint64_t flops = 2 * G * k * T * D * (linformer_has_separate_proj_v(c) ? 2 : 1);  // E X (and F X)
  flops += 2 * 2 * k * D * kv_width;                                                // K', V'
  if (G == 1) {
    // The cheaper order (projects_first; an int8 model with one E keeps the compression first).
    const KvCosts cost = kv_costs(c, T);
    flops = 2 * std::min(cost.compression_first, cost.projection_first);
  }
  flops += 2 * 2 * T * k * HD;  // scores, P V'
  return flops;
}

}  // namespace

extern const AttentionKindInfo kLinformerAttention = {
    AttentionKind::Linformer, [] { return std::unique_ptr<AttentionModule>(new LinformerAttention()); },
    linformer_layer_flops, nullptr, options_built};

}  // namespace linfer::rt
