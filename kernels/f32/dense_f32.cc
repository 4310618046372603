#include "f32/dense_f32.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
// GCC 12 warns about the deliberately undefined pass-through operand of the AVX-512 intrinsics
// once they are inlined into target-attribute functions (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

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

// The main 6 x 4 tile (6 rows x 64 output channels): 24 accumulators as named variables (GCC
// keeps an array of them on the stack), 4 weight vectors and one broadcast per row and step.
LINFER_AVX512 inline void fma_loop_6x4(const float* base, size_t block_stride, size_t K,
                                       const float* x, size_t x_stride, __m512 (&acc)[6][4]) {
#define LINFER_ACC_ROW(r)                                                                      \
  __m512 a##r##0 = _mm512_setzero_ps(), a##r##1 = _mm512_setzero_ps(),                         \
         a##r##2 = _mm512_setzero_ps(), a##r##3 = _mm512_setzero_ps();
#define LINFER_FMA_ROW(r)                                                                      \
  {                                                                                            \
    const __m512 av = _mm512_set1_ps(x[r * x_stride + k]);                                     \
    fma(a##r##0, av, w0), fma(a##r##1, av, w1), fma(a##r##2, av, w2), fma(a##r##3, av, w3);    \
  }
#define LINFER_STORE_ROW(r) \
  acc[r][0] = a##r##0, acc[r][1] = a##r##1, acc[r][2] = a##r##2, acc[r][3] = a##r##3;
  LINFER_ACC_ROW(0) LINFER_ACC_ROW(1) LINFER_ACC_ROW(2)
  LINFER_ACC_ROW(3) LINFER_ACC_ROW(4) LINFER_ACC_ROW(5)
  for (size_t k = 0; k < K; ++k) {
    const float* wp = base + k * 16;
    const __m512 w0 = _mm512_load_ps(wp);
    const __m512 w1 = _mm512_load_ps(wp + block_stride);
    const __m512 w2 = _mm512_load_ps(wp + 2 * block_stride);
    const __m512 w3 = _mm512_load_ps(wp + 3 * block_stride);
    LINFER_FMA_ROW(0) LINFER_FMA_ROW(1) LINFER_FMA_ROW(2)
    LINFER_FMA_ROW(3) LINFER_FMA_ROW(4) LINFER_FMA_ROW(5)
  }
  LINFER_STORE_ROW(0) LINFER_STORE_ROW(1) LINFER_STORE_ROW(2)
  LINFER_STORE_ROW(3) LINFER_STORE_ROW(4) LINFER_STORE_ROW(5)
#undef LINFER_ACC_ROW
#undef LINFER_FMA_ROW
#undef LINFER_STORE_ROW
}

// R rows x NB blocks of 16 output channels; bias, ReLU and accumulate applied in registers.
template <int R, int NB>
LINFER_AVX512 inline void f32_tile(const F32Weights& w, const float* x, size_t x_stride, float* y,
                                   size_t y_stride, size_t nb0, size_t n_end, DenseEpilogue e) {
  const size_t K = w.in, block_stride = K * 16;
  const float* base = w.packed.get() + nb0 * block_stride;
  __m512 acc[R][NB];
  if constexpr (R == 6 && NB == 4) {
    fma_loop_6x4(base, block_stride, K, x, x_stride, acc);
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_ps();
    for (size_t k = 0; k < K; ++k) {
      __m512 wv[NB];
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b) wv[b] = _mm512_load_ps(base + b * block_stride + k * 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(x[r * x_stride + k]);
#pragma GCC unroll 4
        for (int b = 0; b < NB; ++b) fma(acc[r][b], av, wv[b]);
      }
    }
  }
  const bool relu = e.activation == DenseActivation::Relu;
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) {
    const size_t n0 = (nb0 + b) * 16;
    const __m512 bias = _mm512_loadu_ps(w.bias.get() + n0);
    const size_t valid = std::min<size_t>(16, n_end - n0);
    const __mmask16 mask = valid == 16 ? __mmask16(0xffff) : __mmask16((1u << valid) - 1);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* dst = y + r * y_stride + n0;
      __m512 out = _mm512_add_ps(acc[r][b], bias);
      if (relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
      if (e.accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(mask, dst));
      _mm512_mask_storeu_ps(dst, mask, out);
    }
  }
}

constexpr int kTileRows = 6, kTileBlocks = 4;

template <int R>
LINFER_AVX512 inline void f32_tile_blocks(int nb, const F32Weights& w, const float* x,
                                          size_t x_stride, float* y, size_t y_stride, size_t nb0,
                                          size_t n_end, DenseEpilogue e) {
  switch (nb) {
    case 4: f32_tile<R, 4>(w, x, x_stride, y, y_stride, nb0, n_end, e); break;
    case 3: f32_tile<R, 3>(w, x, x_stride, y, y_stride, nb0, n_end, e); break;
    case 2: f32_tile<R, 2>(w, x, x_stride, y, y_stride, nb0, n_end, e); break;
    default: f32_tile<R, 1>(w, x, x_stride, y, y_stride, nb0, n_end, e); break;
  }
}
}  // namespace

LINFER_AVX512 void dense_f32_avx512(const F32Weights& w, const float* x, size_t x_stride,
                                    size_t rows, float* y, size_t y_stride, size_t n_begin,
                                    size_t n_end, DenseEpilogue e) {
  // A block of rows (about 24 KiB of x, in L1) meets every strip of 64 output channels in turn,
  // the register tiles walking down the rows; then the block's outputs, still in L1/L2, get the
  // activations that do not fit in the register epilogue (GELU).
  const size_t nb_begin = n_begin / 16, nb_end = (n_end + 15) / 16;
  const size_t row_block =
      std::max<size_t>(kTileRows, (24 * 1024) / (w.in * sizeof(float)) / kTileRows * kTileRows);
  const bool gelu = e.activation == DenseActivation::GeluErf ||
                    e.activation == DenseActivation::GeluTanh;
  for (size_t r0 = 0; r0 < rows; r0 += row_block) {
    const size_t r_end = std::min(rows, r0 + row_block);
    for (size_t nb = nb_begin; nb < nb_end; nb += kTileBlocks) {
      const int nblocks = int(std::min<size_t>(kTileBlocks, nb_end - nb));
      for (size_t r = r0; r < r_end; r += kTileRows) {
        const float* xr = x + r * x_stride;
        float* yr = y + r * y_stride;
        switch (std::min<size_t>(kTileRows, r_end - r)) {
          case 6: f32_tile_blocks<6>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
          case 5: f32_tile_blocks<5>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
          case 4: f32_tile_blocks<4>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
          case 3: f32_tile_blocks<3>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
          case 2: f32_tile_blocks<2>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
          default: f32_tile_blocks<1>(nblocks, w, xr, x_stride, yr, y_stride, nb, n_end, e); break;
        }
      }
    }
    if (gelu)
      for (size_t r = r0; r < r_end; ++r)
        activation_f32_fast(y + r * y_stride + n_begin, n_end - n_begin, e.activation);
  }
}
#endif

}  // namespace linfer::kernels
