// linfer kernels. Every fast kernel (suffix _fast: Highway, dispatched at run time to AVX-512,
// AVX2, SSE4, NEON, SVE or scalar) has a portable scalar reference (suffix _ref) with the same
// signature; tests/unit/test_kernels.cpp compares the two over odd sizes. Kernels are single-
// threaded over the range they are given; the runtime splits work across its thread pool.
#pragma once

#include <cstddef>

namespace linfer::kernels {

// y[r] = (x[r] - mean) / sqrt(var + eps) * gamma + beta, for each of `rows` rows of `dim` values.
// x and y may alias.
void layernorm_f32_ref(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows,
                       size_t dim, const float* gamma, const float* beta, float eps);
void layernorm_f32_fast(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows,
                        size_t dim, const float* gamma, const float* beta, float eps);

// In place over n values.
void gelu_erf_f32_ref(float* x, size_t n);
void gelu_erf_f32_fast(float* x, size_t n);
void gelu_tanh_f32_ref(float* x, size_t n);
void gelu_tanh_f32_fast(float* x, size_t n);
void relu_f32_ref(float* x, size_t n);
void relu_f32_fast(float* x, size_t n);

// The epilogue of a dense layer: y = act(x W^T + b), or with accumulate y += act(x W^T + b) (the
// residual stream). The fast kernels take accumulate with None or Relu only (the runtime never
// asks for more).
enum class DenseActivation { None, Relu, GeluErf, GeluTanh };
struct DenseEpilogue {
  DenseActivation activation = DenseActivation::None;
  bool accumulate = false;
};
// Applies act to n values in place.
void activation_f32_ref(float* x, size_t n, DenseActivation act);
void activation_f32_fast(float* x, size_t n, DenseActivation act);

// Sum of n values (double accumulation in the reference).
float sum_f32_ref(const float* x, size_t n);
float sum_f32_fast(const float* x, size_t n);

// y[i] += x[i]
void add_f32_ref(float* y, const float* x, size_t n);
void add_f32_fast(float* y, const float* x, size_t n);

// C[M x N] = A[M x K] * B[K x N]; row strides lda, ldb, ldc (in floats). Overwrites C.
void gemm_f32_ref(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                  size_t ldb, float* C, size_t ldc);
void gemm_f32_fast(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                   size_t ldb, float* C, size_t ldc);

// One head of softmax attention: o[r] = softmax(scale * q[r] . kt[:, j] over j < keys) @ v, for
// rows [row_begin, row_end). kt is K transposed ([head_dim x keys], row stride kt_stride) so that
// scores vectorise over keys. The fast kernel walks the keys in blocks of kAttentionKeyBlock with
// an online softmax, so its scratch does not grow with the number of keys: the same kernel runs
// the Linformer's k compressed keys (one block) and full attention over all T keys.
struct AttentionHeadArgs {
  const float* q;   // [rows x head_dim], row stride q_stride
  size_t q_stride;
  const float* kt;  // [head_dim x keys], row stride kt_stride
  size_t kt_stride;
  const float* v;   // [keys x head_dim], row stride v_stride
  size_t v_stride;
  float* o;         // [rows x head_dim], row stride o_stride
  size_t o_stride;
  size_t head_dim;
  size_t keys;
  float scale;
};
constexpr size_t kAttentionKeyBlock = 256;
constexpr size_t kAttentionMaxRows = 8;  // rows the fast kernel takes at a time, at most
// Floats of scratch attention_f32_fast needs per call (the reference allocates its own).
size_t attention_f32_scratch_floats(size_t keys, size_t head_dim);
void attention_f32_ref(const AttentionHeadArgs& args, size_t row_begin, size_t row_end,
                       float* scratch);
void attention_f32_fast(const AttentionHeadArgs& args, size_t row_begin, size_t row_end,
                        float* scratch);

// Linear attention with phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), one head of head_dim d.
// State: S = sum_j phi(k_j) v_j^T ([d x d], row-major) and z = sum_j phi(k_j) ([d]).
// state: adds rows [0, rows) of k and v to (S, z).
void linear_attention_state_f32_ref(const float* k, size_t k_stride, const float* v,
                                    size_t v_stride, size_t rows, size_t d, float* S, float* z);
void linear_attention_state_f32_fast(const float* k, size_t k_stride, const float* v,
                                     size_t v_stride, size_t rows, size_t d, float* S, float* z);
// apply: o_i = phi(q_i)^T S / (phi(q_i) . z) for rows [0, rows). scratch: d floats.
void linear_attention_apply_f32_ref(const float* q, size_t q_stride, size_t rows, size_t d,
                                    const float* S, const float* z, float* o, size_t o_stride,
                                    float* scratch);
void linear_attention_apply_f32_fast(const float* q, size_t q_stride, size_t rows, size_t d,
                                     const float* S, const float* z, float* o, size_t o_stride,
                                     float* scratch);

// Depthwise 1-D convolution over the rows (same length, zero padding), added to y:
// y[t][c] += bias[c] + sum_{j<K} w[j][c] * x[t + j - (K-1)/2][c], for rows [row_begin, row_end)
// of a T-row input. w is tap-major ([K x channels]) so that the channels vectorise.
void conv_depthwise_add_f32_ref(const float* x, size_t T, size_t channels, const float* w, size_t K,
                                const float* bias, float* y, size_t row_begin, size_t row_end);
void conv_depthwise_add_f32_fast(const float* x, size_t T, size_t channels, const float* w,
                                 size_t K, const float* bias, float* y, size_t row_begin,
                                 size_t row_end);

// Name of the instruction set the fast kernels dispatch to on this CPU (e.g. "AVX3", "NEON").
const char* fast_kernel_target();

}  // namespace linfer::kernels
