// SPDX-License-Identifier: Apache-2.0
// linfer kernels: the header of kernels/'s shared kernels. The tree is laid out by operation
// (elementwise/, gemm/, attention/, conv/, dense/), the file names say data type and instruction
// set:
//   <op>_ref.cc            portable scalar references, the oracles of the tests
//   <op>_hwy.cc            Highway kernels, compiled for AVX-512, AVX2, SSE4, NEON and scalar and
//                          dispatched at run time (functions named ..._hwy)
//   dense_<dtype>_<isa>.cc the dense-layer kernels, one per weight dtype and instruction set,
//                          chosen at run time by select_dense_kernel
//   dense_f32_xnnpack.cc   dense layers through XNNPACK operators (an explicit session option, in
//                          builds with XNNPACK)
// Every fast kernel has a reference with the same contract; tests/unit/test_kernels.cc compares
// each pair over odd sizes on every instruction set the CPU has. Kernels are single-threaded over
// the range they are given; the runtime splits work across its thread pool.
// The kernels that serve one attention kind only (its line of the table of kinds,
// schema/attention_kinds.txt, names their files) are built with that kind alone: each family is
// declared in a header of its own beside its sources (attention/<family>.h) and paired in a test
// file of its own (tests/unit/kernels/test_<family>_kernels.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "linfer/types/enums.h"  // DType
#include "linfer/types/status.h"

#if LINFER_WITH_XNNPACK
struct pthreadpool;  // <pthreadpool.h>, XNNPACK's threads
#endif

namespace linfer::kernels {

// ---------------------------------------------------------------------------------------------
// Element-wise and row kernels (elementwise/)

// y[r] = (x[r] - mean) / sqrt(var + eps) * gamma + beta, for each of `rows` rows of `dim` values.
// x and y may alias.
void layernorm_f32_ref(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows, size_t dim,
                       const float* gamma, const float* beta, float eps);
void layernorm_f32_hwy(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows, size_t dim,
                       const float* gamma, const float* beta, float eps);

// In place over n values. An element's result does not depend on its position in the range.
void gelu_erf_f32_ref(float* x, size_t n);
void gelu_erf_f32_hwy(float* x, size_t n);
void gelu_tanh_f32_ref(float* x, size_t n);
void gelu_tanh_f32_hwy(float* x, size_t n);
void relu_f32_ref(float* x, size_t n);
void relu_f32_hwy(float* x, size_t n);

// The epilogue of a dense layer: y = act(x W^T + b), or with accumulate y += act(x W^T + b) (the
// residual stream). The dense kernels take None, Relu, GeluErf and GeluTanh, accumulate with None
// or Relu only; the runtime applies Tanh (a classifier head) as a pass of its own.
enum class DenseActivation { None, Relu, GeluErf, GeluTanh, Tanh };
struct DenseEpilogue {
  DenseActivation activation = DenseActivation::None;
  bool accumulate = false;
};
// Applies act to n values in place.
void activation_f32_ref(float* x, size_t n, DenseActivation act);
void activation_f32_hwy(float* x, size_t n, DenseActivation act);

// Sum of n values (double accumulation in the reference).
float sum_f32_ref(const float* x, size_t n);
float sum_f32_hwy(const float* x, size_t n);

// y[i] += x[i]
void add_f32_ref(float* y, const float* x, size_t n);
void add_f32_hwy(float* y, const float* x, size_t n);

// y[r * y_stride + c] = x[r * x_stride + c] * s[c] for r < rows, c < cols: an int8 dense layer's
// input rows times its input scales (activation smoothing) before they are quantized.
void mul_channels_f32_ref(const float* x, size_t x_stride, size_t rows, size_t cols, const float* s, float* y,
                          size_t y_stride);
void mul_channels_f32_hwy(const float* x, size_t x_stride, size_t rows, size_t cols, const float* s, float* y,
                          size_t y_stride);

// out[c] = mean over rows r < rows of x[r * stride + c], c < cols (mean pooling).
void mean_rows_f32_ref(const float* x, size_t rows, size_t cols, size_t stride, float* out);
void mean_rows_f32_hwy(const float* x, size_t rows, size_t cols, size_t stride, float* out);

// y[r][c] += s[r] * b[c] + p[r] for rows r < rows, c < cols (row stride y_stride); s and b, or
// p, may be null (that term is then 0). Biases seen through a compression of the sequence E X: a
// K/V bias b seen through E adds rowsum(E)[r] * b, a bias of E itself adds p[r] to every channel.
void add_rank1_f32_ref(float* y, size_t y_stride, size_t rows, size_t cols, const float* s, const float* b,
                       const float* p);
void add_rank1_f32_hwy(float* y, size_t y_stride, size_t rows, size_t cols, const float* s, const float* b,
                       const float* p);

// y[i] = scale * x[i] for i < n, from f32, f16 (IEEE half bits) or int8 values: weights that
// stay f16 or int8 in memory (embeddings, projections E and F) widened where they are used.
void scale_f32_ref(const float* x, size_t n, float scale, float* y);
void scale_f32_hwy(const float* x, size_t n, float scale, float* y);
void convert_f16_to_f32_ref(const uint16_t* x, size_t n, float scale, float* y);
void convert_f16_to_f32_hwy(const uint16_t* x, size_t n, float scale, float* y);
void convert_int8_to_f32_ref(const int8_t* x, size_t n, float scale, float* y);
void convert_int8_to_f32_hwy(const int8_t* x, size_t n, float scale, float* y);

// dst[c][r] = src[r][c] for r < rows, c < cols (row strides in floats). Data movement only: the
// fast version walks cache-sized blocks in 4 x 4 tiles of vectors.
void transpose_f32_ref(const float* src, size_t src_stride, size_t rows, size_t cols, float* dst, size_t dst_stride);
void transpose_f32_hwy(const float* src, size_t src_stride, size_t rows, size_t cols, float* dst, size_t dst_stride);

// Rotary positions, adjacent pairs: in each of `heads` head_dim-wide heads of each row, elements
// (2i, 2i+1) = (a, b) become (a cos - b sin, b cos + a sin) with row r's angles from
// table + r * table_stride (head_dim / 2 sines, then as many cosines). A few multiply-adds per
// element next to a projection's hundreds: the portable loop is the reference and the fast path.
void rotate_pairs_f32(float* x, size_t x_stride, size_t rows, size_t heads, size_t head_dim, const float* table,
                      size_t table_stride);

// The sinusoidal position table: `rows` rows of dim values for the positions first, first + 1, ...;
// in row t, column i < dim / 2 is sin(pos w_i) and column dim / 2 + i cos(pos w_i), with
// w_i = base^(-2i / dim). The reference computes in double with the C library's pow, sin and cos.
void sinusoids_f32_ref(float* out, size_t rows, size_t dim, double first, double base);
#if LINFER_BARE_METAL
// Without the C library's pow, sin and cos (8 KB of a microcontroller's code): Highway's double
// Exp, Log (1 and 4 ULP), Sin and Cos (3 ULP for |pos w_i| <= kSinusoidMaxPosition), rounded to
// float as the reference is: the same floats but where double's few ULP cross a float's rounding
// boundary (the firmware's check, tests/cortex_m).
void sinusoids_f32_hwy(float* out, size_t rows, size_t dim, double first, double base);
constexpr double kSinusoidMaxPosition = 39000;
#endif

// Name of the instruction set the Highway kernels dispatch to on this thread (e.g. "AVX3",
// "NEON"); hwy_kernel_target(Isa), below, under a cap.
const char* hwy_kernel_target();

// ---------------------------------------------------------------------------------------------
// Matrix product (gemm/): e.g. a compression of the sequence, E X.

// C[M x N] = A[M x K] * B[K x N] (accumulate: C += A B); row strides lda, ldb, ldc (in floats).
// The fast one is also the register-blocked product other kernels build on.
void gemm_f32_ref(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb, float* C,
                  size_t ldc, bool accumulate = false);
void gemm_f32_hwy(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb, float* C,
                  size_t ldc, bool accumulate = false);

// The compression of int8 models runs on the int8 dense kernels: E's rows (int8 weights) are the
// kernel's input rows (int8_rows_to_input) and X's columns its weights, packed here (and K'^T's
// and V''s for the attention): columns [col_begin, col_end) of a [rows x cols] f32 matrix, whole
// panels (col_begin a multiple of 16, col_end too or cols), as the int8 weights of a dense layer
// with `cols` output channels of `rows` inputs. Each column is quantized by linfer/types/int8.h's
// convention (its own scale, like a weight row) and stored in panel layout
// (linfer/types/panel_layout.h; panels: panel_count(cols) x panel_bytes(I8, rows) bytes, padding
// zero), with its scale and the sum of its int8 values (cols entries each).
void pack_columns_int8_ref(const float* x, size_t x_stride, size_t rows, size_t cols, size_t col_begin, size_t col_end,
                           int8_t* panels, float* scales, int32_t* sums);
void pack_columns_int8_hwy(const float* x, size_t x_stride, size_t rows, size_t cols, size_t col_begin, size_t col_end,
                           int8_t* panels, float* scales, int32_t* sums);

// ---------------------------------------------------------------------------------------------
// Attention (attention/)

// One head of softmax attention: o[r] = softmax(scale * q[r] . kt[:, j] over j < keys) @ v, for
// rows [row_begin, row_end). kt is K transposed ([head_dim x keys], row stride kt_stride) so that
// scores vectorise over keys. The fast kernel walks the keys in blocks of kAttentionKeyBlock with
// an online softmax, so its scratch does not grow with the number of keys: the same kernel runs
// over a few keys (k compressed ones: one block) and over all T keys of a long input.
struct AttentionHeadArgs {
  const float* q;  // [rows x head_dim], row stride q_stride
  size_t q_stride;
  const float* kt;  // [head_dim x keys], row stride kt_stride
  size_t kt_stride;
  const float* v;  // [keys x head_dim], row stride v_stride
  size_t v_stride;
  float* o;  // [rows x head_dim], row stride o_stride
  size_t o_stride;
  size_t head_dim;
  size_t keys;
  float scale;
  // Windowed: query row r (sequence position first_row + r) sees the keys within window_radius
  // of its position, |first_row + r - j| <= window_radius, and the keys [0, global_keys), each
  // once. Every row must see at least one key. The fast kernel computes only the keys of the
  // rows' windows: O(window) per row, whatever the number of keys.
  bool windowed = false;
  size_t window_radius = 0;
  size_t global_keys = 0;
  size_t first_row = 0;
  // Key spans (not with windowed): a block of query rows sees a list of blocks of keys. When
  // key_span_count > 0, every row of the call sees the keys of the spans [key_spans[2s],
  // key_spans[2s + 1]) instead of all keys, and a key listed in n spans counts n times in the
  // softmax. Spans are not empty.
  const uint32_t* key_spans = nullptr;
  size_t key_span_count = 0;
};
constexpr size_t kAttentionKeyBlock = 256;
constexpr size_t kAttentionMaxRows = 8;  // rows the fast kernel takes at a time, at most
// Floats of scratch attention_f32_hwy needs per call (the reference allocates its own).
size_t attention_f32_scratch_floats(size_t keys, size_t head_dim);
void attention_f32_ref(const AttentionHeadArgs& args, size_t row_begin, size_t row_end, float* scratch);
void attention_f32_hwy(const AttentionHeadArgs& args, size_t row_begin, size_t row_end, float* scratch);
// x[i] = e^(x[i] - shift) for i < n, and their sum: the softmax's exponent of attention_f32_hwy
// (shift at least every x[i]: the row's maximum), for kernels that keep the rest of a softmax.
float exp_shifted_sum_f32_hwy(float* x, size_t n, float shift);

// Softmax attention whose weighted sum of the values runs in bf16 ("bf16 values"), for the int8
// models' full attention on x86 CPUs with AVX-512 BF16 (cpu_has(Isa::X86Avx512Bf16)): the scores
// and the softmax f32, the probabilities and the values (centered on their mean per channel,
// which is added back in f32) rounded to bf16 (8 significant bits, to nearest even), their
// products summed in f32. vdpbf16ps does 32 multiply-adds where an f32 FMA does 16; on AMD Zen 4
// both issue one per cycle. The values are packed once per head; head_dim a multiple of 32.
struct AttentionBf16Args {
  const float* q;  // [rows x head_dim], row stride q_stride
  size_t q_stride;
  const float* kt;  // [head_dim x kt_stride]: K transposed, zero from keys to the padded keys
  size_t kt_stride;
  const uint32_t* vp;   // attention_bf16_pack_values
  const float* v_mean;  // its means
  float* o;             // [rows x head_dim], row stride o_stride
  size_t o_stride;
  size_t head_dim;
  size_t keys;
  float scale;
};
// Keys padded to a multiple of 32 (the kernel's tile): kt_stride at least this.
inline size_t attention_bf16_padded_keys(size_t keys) { return (keys + 31) / 32 * 32; }
// v_mean[c] = the mean of v[j][c] over the keys, and vp[j][c] = the bf16 pair (v[2j][c] -
// v_mean[c], v[2j + 1][c] - v_mean[c]), the first in the low half, for j < padded keys / 2 (the
// pairs past the keys 0) and c < head_dim.
void attention_bf16_pack_values(const float* v, size_t v_stride, size_t keys, size_t head_dim, uint32_t* vp,
                                float* v_mean);
inline size_t attention_bf16_value_words(size_t keys, size_t head_dim) {
  return attention_bf16_padded_keys(keys) / 2 * head_dim;
}
size_t attention_bf16_scratch_floats(size_t keys, size_t head_dim);
void attention_bf16_ref(const AttentionBf16Args& args, size_t row_begin, size_t row_end, float* scratch);
void attention_bf16_avx512(const AttentionBf16Args& args, size_t row_begin, size_t row_end, float* scratch);

// The forms in which the int8 dense kernels read their quantized input rows (DenseKernel's
// q_bytes, q_unsigned and q_pairs): q as int8 (Arm, generic), q + 128 as uint8 (x86 VNNI), q as
// int16 (AVX2 without VNNI, WebAssembly SIMD128), q as int16 with the middle two of every group
// of four inputs swapped (q0 q2 q1 q3: SMLAD's pairs, dense_int8_dsp), or every group of four
// inputs as 8 bytes, max(q, 0) four times then max(-q, 0) four times (q = q+ - q-, both within 7
// bits: the operand WebAssembly's relaxed dot product reads the same on every engine,
// dense_int8_wasm_relaxed).
enum class Int8Form : uint8_t { S8, U8Offset, S16, S16Pairs, SplitU7 };

// Int8Form::SplitU7 from S16, in place (the same 2 bytes per input): each group of four int16
// q (8 bytes) becomes max(q, 0) as 4 bytes then max(-q, 0) as 4 bytes. |q| <= 127.
inline void s16_to_split_u7(int16_t* row, size_t padded) {
  for (size_t g = 0; g < padded; g += 4) {
    uint8_t b[8];
    for (size_t j = 0; j < 4; ++j) {
      const int v = row[g + j];
      b[j] = uint8_t(v > 0 ? v : 0);
      b[4 + j] = uint8_t(v < 0 ? -v : 0);
    }
    std::memcpy(row + g, b, 8);
  }
}
// Whether a form stores 2 bytes per input.
inline constexpr bool int8_form_two_bytes(Int8Form form) {
  return form == Int8Form::S16 || form == Int8Form::S16Pairs || form == Int8Form::SplitU7;
}

// Int8Form::S16Pairs from S16: swaps the middle two of each group of four of a row of `padded`
// (a multiple of 4) int16 values. Its own inverse.
inline void swap_middle_pairs(int16_t* row, size_t padded) {
  for (size_t g = 0; g < padded; g += 4) {
    const int16_t t = row[g + 1];
    row[g + 1] = row[g + 2];
    row[g + 2] = t;
  }
}

// The probabilities of an int8 attention over compressed keys, quantized for the int8 dense
// kernel that multiplies them by V', in two passes over the scores and without writing them back: with
// m_r = max_j x[r][j] and e_j = exp(scale * (x[r][j] - m_r)) (scale > 0), q[r][j] =
// round(127 * e_j) (the row's largest probability is 127, as the kernels' own quantizer would
// make it) and scales[r] = 1 / (127 * sum_j e_j), so p_j = q_j * scales[r]. Rows r < rows of
// n scores (row stride `stride`) go to q (q_stride bytes apart) in `form`, each padded to
// int8_padded_inputs(n) inputs of value 0. The fast kernel's e is within 2.7e-6 of exp's
// (relative), so a q may round one step apart from the reference's.
void softmax_quantize_rows_ref(const float* x, size_t stride, size_t rows, size_t n, float scale, Int8Form form,
                               int8_t* q, size_t q_stride, float* scales);
void softmax_quantize_rows_hwy(const float* x, size_t stride, size_t rows, size_t n, float scale, Int8Form form,
                               int8_t* q, size_t q_stride, float* scales);

// ---------------------------------------------------------------------------------------------
// Depthwise convolution (conv/)

// Depthwise 1-D convolution over the rows (same length, zero padding), added to y:
// y[t][c] += bias[c] + sum_{j<K} w[j][c] * x[t + j - (K-1)/2][c], for rows [row_begin, row_end)
// of a T-row input. w is tap-major ([K x channels]) so that the channels vectorise.
void conv_depthwise_add_f32_ref(const float* x, size_t T, size_t channels, const float* w, size_t K, const float* bias,
                                float* y, size_t row_begin, size_t row_end);
void conv_depthwise_add_f32_hwy(const float* x, size_t T, size_t channels, const float* w, size_t K, const float* bias,
                                float* y, size_t row_begin, size_t row_end);

// ---------------------------------------------------------------------------------------------
// Dense layers (dense/)

// Instruction sets the dense kernels are written for, ordered within each architecture: a kernel
// may run when the CPU has its set and the caller's cap is at or above it.
enum class Isa : uint8_t {
  Generic,     // portable C++ (auto-vectorised for the build's baseline)
  X86Sse4,     // SSE4.2: Highway's SSE4 target (the dense layers have no kernel of their own here)
  X86Avx2,     // AVX2, FMA, F16C
  X86AvxVnni,  // + AVX-VNNI (vpdpbusd on 256-bit vectors)
  X86Avx512,   // AVX-512 F, BW, DQ, VL
  X86Avx512Vnni,
  X86Avx512Bf16,  // + AVX-512 BF16 (vdpbf16ps: the int8 models' attention values; AMD Zen 4, Intel
                  // Cooper Lake, Sapphire Rapids and later)
  X86Amx,         // + AMX int8 tiles (TDPBUSD; Sapphire Rapids and later), when the OS grants their state
  ArmDsp,         // 32-bit Arm's DSP extension (SMLAD): Cortex-M4/M7/M33/M55, every ARMv7-A core
  ArmMve,         // Helium, the M-profile vector extension (VMLADAVA): Cortex-M55, M85 (bare metal only)
  ArmNeon,        // ARMv8.0 Advanced SIMD (Cortex-A72: Raspberry Pi 4); 32-bit Arm: NEON + VFPv4
  ArmNeonDot,     // + dot product (SDOT; Cortex-A76: Raspberry Pi 5)
  ArmNeonI8mm,    // + int8 matrix multiply (SMMLA, FEAT_I8MM; phones: Cortex-A510/A710/X2 and later)
  WasmSimd128,    // WebAssembly SIMD128: the baseline of the wasm build (no run-time detection there)
};
const char* to_string(Isa isa);
bool cpu_has(Isa isa);
// Whether a kernel written for `isa` may run under the cap `max` (same architecture, not above).
bool isa_within(Isa isa, Isa max);
// The best instruction set of this CPU (the cap that means "no cap").
Isa best_isa();

// The Highway kernels' instruction sets on the calling thread (hwy_targets.cc, which stands in for
// libhwy's dispatch functions): at most `max`'s, and what the CPU has. Per thread, so that each
// session's cap holds for its own runs; cheap when unchanged. hwy_cap: the thread's current cap.
void set_hwy_cap(Isa max);
Isa hwy_cap();
const char* hwy_kernel_target(Isa max);  // the target the cap gives; the thread's cap stays

// The weights of a dense layer as the kernels read them: one group of the panel layout of
// linfer/types/panel_layout.h (the runtime hands over one group at a time). Per-channel arrays have
// `out` entries, not padded: the kernels mask or copy the last panel's.
struct DenseWeights {
  DType dtype = DType::F32;
  size_t in = 0, out = 0;         // inputs K, output channels N
  const void* panels = nullptr;   // panel_count(N) panels of panel_bytes(dtype, K)
  const float* scales = nullptr;  // int8: per output channel
  const int32_t* sums = nullptr;  // int8: per output channel, the sum of its int8 weights
  const float* bias = nullptr;    // per output channel, or null
};

// The rows a dense kernel reads: f32 rows, and for int8 kernels the same rows as the kernel's own
// quantizer left them (q_stride bytes apart, one scale per row).
struct DenseInput {
  const float* x = nullptr;
  size_t x_stride = 0;  // floats
  const int8_t* q = nullptr;
  size_t q_stride = 0;  // bytes, at least int8_padded_inputs(K)
  const float* q_scales = nullptr;
};

// One dense kernel: op, weight dtype, instruction set.
struct DenseKernel {
  const char* name;  // e.g. "dense_int8_avx512vnni"
  DType dtype;       // of the weights it reads
  Isa isa;           // what it needs
  size_t q_bytes;    // int8: bytes per quantized input: 1, or 2 (int16 q: AVX2 without VNNI, wasm); else 0
  bool q_unsigned;   // int8 with q_bytes 1: inputs stored as q + 128 (x86 VNNI), else as q
  // int8 kernels: quantizes `rows` rows of k values (linfer/types/int8.h) in the form this
  // kernel reads (VNNI: q + 128 as bytes; AVX2, wasm: q as int16; Arm and generic: q), q_stride bytes
  // apart, and pads each row to int8_padded_inputs(k) inputs with zero values. Null for f32 and
  // f16 kernels.
  void (*quantize)(const float* x, size_t x_stride, size_t rows, size_t k, int8_t* q, size_t q_stride, float* scales);
  // y[r][n] = act(sum_k x[r][k] w[n][k] + b[n]) (or += with accumulate) for rows [0, rows) and
  // output channels [n_begin, n_end); n_begin is a multiple of 16.
  void (*run)(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
              size_t n_end, DenseEpilogue epilogue);
  bool q_pairs = false;  // int8 with q_bytes 2: each group of four inputs as q0 q2 q1 q3 (Int8Form::S16Pairs)
  bool q_split = false;  // int8 with q_bytes 2: each group of four inputs as q+ then q- bytes (Int8Form::SplitU7)
  // Rows a call needs for the kernel's speed (0: any): AMX's tiles reuse a strip of weights over
  // 128 rows, so the row pipeline gives it blocks of at least this many rows.
  size_t min_rows = 0;
};

// Rows that are int8 already (an int8 weight as a kernel's input rows: E in the compression of
// int8 models), written in the form `kernel` reads (what its quantize writes: q + 128, int16 q
// (in pairs' order) or q) at q_stride bytes apart, padded the same way to int8_padded_inputs(k). sums, if not null,
// receives each row's sum of its k values. Data movement only: one portable version.
void int8_rows_to_input(const DenseKernel& kernel, const int8_t* src, size_t src_stride, size_t rows, size_t k,
                        int8_t* q, size_t q_stride, int32_t* sums);
// Whether an int8 kernel of this build reads rows in this form: all of them but on a
// microcontroller, whose build has its core's one kernel (dense_select.cc); the code that writes
// the other forms folds away where the form is chosen at run time.
constexpr bool int8_form_built(Int8Form form) {
#if LINFER_BARE_METAL && defined(__ARM_FEATURE_MVE)
  return form == Int8Form::S8;  // Helium's
#elif LINFER_BARE_METAL && defined(__ARM_FEATURE_DSP)
  return form == Int8Form::S16Pairs;  // SMLAD's
#else
  return (void)form, true;
#endif
}
// The input form `kernel` (an int8 kernel) reads.
inline Int8Form int8_form(const DenseKernel& kernel) {
  if (kernel.q_bytes == 2)
    return kernel.q_split ? Int8Form::SplitU7 : kernel.q_pairs ? Int8Form::S16Pairs : Int8Form::S16;
  return kernel.q_unsigned ? Int8Form::U8Offset : Int8Form::S8;
}

// The scalar reference for weights of dtype: double accumulation for f32/f16; for int8 the exact
// integer sums of the same quantized rows, dequantized as every int8 kernel does
// (fma(float(sum), scale_x * scale_w, bias)), so int8 kernels must match it bit for bit.
const DenseKernel& dense_kernel_ref(DType dtype);
// Every kernel of this build for dtype, best first, the portable one last (tests, benchmarks).
// *count receives their number.
const DenseKernel* const* dense_kernels(DType dtype, size_t* count);
// Whether this build has dense kernels for dtype (LINFER_DTYPES; a model of another is refused).
bool dense_dtype_built(DType dtype);
// The best kernel for dtype that this CPU runs and `max` allows.
const DenseKernel& select_dense_kernel(DType dtype, Isa max);
// Whether the CPU has half-precision vector arithmetic (ARMv8.2 FP16: HWCAP_FPHP and
// HWCAP_ASIMDHP; Cortex-A55/A76 and later, not the A72). False on every other architecture.
bool cpu_has_fp16_arithmetic();
// The f16 kernel with fp16 arithmetic (dense_f16_neonfp16: f16 multiply-adds and accumulators,
// about 0.5% from the f32 result), kept out of dense_kernels() and select_dense_kernel because
// only an explicit opt-in (the session option fp16_arithmetic) may choose it. Null unless this
// build has it (aarch64), the CPU has fp16 arithmetic and `max` allows ArmNeonDot: a cap at
// ArmNeon (the Pi 4's level) or Generic means ARMv8.0 code, which has no fp16 arithmetic.
const DenseKernel* select_dense_f16_fp16_arithmetic(Isa max);

#if LINFER_WITH_XNNPACK
// Dense layers through XNNPACK's f32 fully connected operator (dense_f32_xnnpack.cc; builds with
// -DLINFER_WITH_XNNPACK=ON). The operator packs its own copy of the weights when it is created.
class XnnpackDense {
 public:
  XnnpackDense() = default;
  XnnpackDense(const XnnpackDense&) = delete;
  XnnpackDense& operator=(const XnnpackDense&) = delete;
  XnnpackDense(XnnpackDense&& other) noexcept { *this = static_cast<XnnpackDense&&>(other); }
  XnnpackDense& operator=(XnnpackDense&& other) noexcept;
  ~XnnpackDense();

  // weight [out x in] row-major f32, bias [out] or null. relu fuses max(0, .) into the output;
  // yield_workers lets the pool's threads sleep after each run instead of spinning.
  // *packed_bytes receives the bytes XNNPACK allocated for it. Fails with
  // LINFER_ERROR_OUT_OF_MEMORY (the message names the bytes of the allocation that failed) or
  // LINFER_ERROR_INTERNAL.
  err::Status create(size_t in, size_t out, const float* weight, const float* bias, bool relu, bool yield_workers,
                     size_t* packed_bytes);
  // Must only be called on a created operator with rows >= 1.
  bool run(size_t rows, const float* x, float* y, ::pthreadpool* pool) const;

  size_t inputs() const { return in_; }
  size_t outputs() const { return out_; }

 private:
  struct xnn_operator* op_ = nullptr;
  size_t in_ = 0, out_ = 0;
};

// Initialises XNNPACK once per process; fails with LINFER_ERROR_UNSUPPORTED (this CPU, likely).
err::Status initialize_xnnpack();
#endif  // LINFER_WITH_XNNPACK

}  // namespace linfer::kernels
