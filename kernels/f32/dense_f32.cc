#include "f32/dense_f32.h"

#include <algorithm>
#include <cstdlib>

#include "dense_tiles.h"

namespace linfer::kernels {

bool f32_dense_fast_path_available() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
#else
  return false;
#endif
}

std::string pack_f32_weights(const float* w, const float* bias, size_t in, size_t out,
                             F32Weights* p) {
  p->in = in;
  p->out = out;
  p->out_padded = (out + 15) / 16 * 16;
  void* mem = nullptr;
  if (in == 0 || posix_memalign(&mem, 64, p->out_padded * in * sizeof(float)) != 0)
    return "out of memory packing f32 weights";
  p->packed.reset(static_cast<float*>(mem));
  p->bias.reset(new float[p->out_padded]());
  float* dst = p->packed.get();
  for (size_t nb = 0; nb < p->out_padded / 16; ++nb)
    for (size_t k = 0; k < in; ++k)
      for (size_t j = 0; j < 16; ++j) {
        const size_t n = nb * 16 + j;
        *dst++ = n < out ? w[n * in + k] : 0.0f;
      }
  for (size_t n = 0; n < out; ++n) p->bias[n] = bias ? bias[n] : 0.0f;
  return "";
}

void dense_f32_ref(const F32Weights& w, const float* x, size_t x_stride, size_t rows, float* y,
                   size_t y_stride, size_t n_begin, size_t n_end, DenseEpilogue e) {
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * y_stride;
    for (size_t n = n_begin; n < n_end; ++n) {
      const float* block = w.packed.get() + (n / 16) * w.in * 16 + n % 16;
      double acc = w.bias[n];
      for (size_t k = 0; k < w.in; ++k) acc += double(x[r * x_stride + k]) * block[k * 16];
      float v = float(acc);
      activation_f32_ref(&v, 1, e.activation);
      yr[n] = e.accumulate ? yr[n] + v : v;
    }
  }
}

#if defined(__x86_64__)
#define LINFER_AVX512 __attribute__((target("avx512f")))

namespace {
// acc += a * b. Inline asm for the same reason as vpdpbusd in int8/dense_int8.cc: with the
// intrinsic GCC 12 shuffles the accumulators through other registers and the stack.
LINFER_AVX512 inline void fma(__m512& acc, __m512 a, __m512 b) {
  __asm__("vfmadd231ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

using dense_tiles::kBlocks;
using dense_tiles::kRows;

// Rows of x per block: 256 KiB of them stay in L2 while every 64-channel strip of the weights
// passes (measured: 24 KiB blocks, sized for L1, stream the weights from L3 too often on M's
// 768 x 3072 layers: 8% slower there, no faster on S).
constexpr size_t kRowBlockBytes = 256 * 1024;

// acc[r][j] = sum_k a[r][k] * b[j][16 k .. 16 k + 16] over K steps (dense_tiles.h): the 24
// accumulators as named variables (GCC keeps an array of them on the stack), 4 weight vectors
// and one broadcast per row and step.
LINFER_AVX512 inline void fma_tile_6x4(const float* const (&a)[6], const float* const (&b)[4],
                                       size_t K, __m512 (&acc)[6][4]) {
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  const float *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
#define LINFER_ACC_ROW(r)                                                                      \
  __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps(),                         \
         c##r##2 = _mm512_setzero_ps(), c##r##3 = _mm512_setzero_ps();
#define LINFER_FMA_ROW(r)                                                                      \
  {                                                                                            \
    const __m512 av = _mm512_set1_ps(a##r[k]);                                                 \
    fma(c##r##0, av, w0), fma(c##r##1, av, w1), fma(c##r##2, av, w2), fma(c##r##3, av, w3);    \
  }
#define LINFER_STORE_ROW(r) \
  acc[r][0] = c##r##0, acc[r][1] = c##r##1, acc[r][2] = c##r##2, acc[r][3] = c##r##3;
  LINFER_ACC_ROW(0) LINFER_ACC_ROW(1) LINFER_ACC_ROW(2)
  LINFER_ACC_ROW(3) LINFER_ACC_ROW(4) LINFER_ACC_ROW(5)
  for (size_t k = 0; k < K; ++k) {
    const size_t o = k * 16;
    const __m512 w0 = _mm512_load_ps(b0 + o), w1 = _mm512_load_ps(b1 + o),
                 w2 = _mm512_load_ps(b2 + o), w3 = _mm512_load_ps(b3 + o);
    LINFER_FMA_ROW(0) LINFER_FMA_ROW(1) LINFER_FMA_ROW(2)
    LINFER_FMA_ROW(3) LINFER_FMA_ROW(4) LINFER_FMA_ROW(5)
  }
  LINFER_STORE_ROW(0) LINFER_STORE_ROW(1) LINFER_STORE_ROW(2)
  LINFER_STORE_ROW(3) LINFER_STORE_ROW(4) LINFER_STORE_ROW(5)
#undef LINFER_ACC_ROW
#undef LINFER_FMA_ROW
#undef LINFER_STORE_ROW
}

// Rows [0, R) of x and y (R <= 6), output channels [n0, n_end) (at most 64) from the packed
// strip starting at block n0 / 16; bias, ReLU and accumulate in registers.
LINFER_AVX512 void tile(const F32Weights& w, const float* x, size_t x_stride, size_t R, float* y,
                        size_t y_stride, size_t n0, size_t n_end, DenseEpilogue e) {
  const size_t K = w.in, NB = (n_end - n0 + 15) / 16;
  const float* a[kRows];
  dense_tiles::tile_pointers(x, x_stride, R, a);
  const float* b[kBlocks];
  for (size_t j = 0; j < kBlocks; ++j) b[j] = w.packed.get() + (n0 / 16 + std::min(j, NB - 1)) * K * 16;
  __m512 acc[kRows][kBlocks];
  fma_tile_6x4(a, b, K, acc);
  for (size_t j = 0; j < NB; ++j) {
    const size_t n = n0 + j * 16;
    const __mmask16 mask = dense_tiles::first_lanes(n_end - n);
    const __m512 bias = _mm512_loadu_ps(w.bias.get() + n);  // padded to a multiple of 16
    for (size_t r = 0; r < R; ++r)
      dense_tiles::store_output(y + r * y_stride + n, _mm512_add_ps(acc[r][j], bias), mask, e);
  }
}
}  // namespace

LINFER_AVX512 void dense_f32_avx512(const F32Weights& w, const float* x, size_t x_stride,
                                    size_t rows, float* y, size_t y_stride, size_t n_begin,
                                    size_t n_end, DenseEpilogue e) {
  const size_t row_block =
      std::max(kRows, kRowBlockBytes / (w.in * sizeof(float)) / kRows * kRows);
  dense_tiles::for_each_tile(rows, row_block, n_begin, n_end, y, y_stride, e.activation,
                             [&](size_t r, size_t R, size_t n, size_t n_stop) {
                               tile(w, x + r * x_stride, x_stride, R, y + r * y_stride, y_stride,
                                    n, n_stop, e);
                             });
}
#endif

}  // namespace linfer::kernels
