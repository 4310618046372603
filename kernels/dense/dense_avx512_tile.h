// SPDX-License-Identifier: Apache-2.0
// What the AVX-512 dense kernels (dense_{f32,f16}_avx512.cc, dense_int8_{avx512vnni,amx}.cc) share:
// the register tile shape, the cache blocking that walks the tiles, the output-channel masks and
// the epilogue. x86-64 only; every function carries its target attribute.
#pragma once

#if defined(__x86_64__)
#include <algorithm>
#include <cstddef>

#include "avx512_intrinsics.h"
#include "dense/dense_internal.h"

#define LINFER_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

namespace linfer::kernels::dense::avx512 {

// One register tile: 6 rows x 4 panels of 16 output channels, 24 accumulators of the 32 zmm
// registers; every weight vector loaded feeds 6 rows, every broadcast 4 panels, and 24
// independent chains hide the FMA / vpdpbusd latency. Smaller tiles reuse it with repeated row
// or panel pointers and drop the extra results: a full-speed tile costs less than a slower
// kernel per shape.
constexpr size_t kRows = 6, kPanels = 4, kChannels = kPanels * kPanelRows;

// Lanes [0, n) of a 16-lane vector (all of them for n >= 16).
inline __mmask16 first_lanes(size_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

// The tile's pointers: rows [0, R) at `stride` apart, the missing ones repeating the last.
template <class T>
void tile_pointers(T* base, size_t stride, size_t R, T* (&out)[kRows]) {
  for (size_t r = 0; r < kRows; ++r) out[r] = base + std::min(r, R - 1) * stride;
}

// Per-channel values [n, n + 16) as a vector; lanes past the array's end (mask) read as zero.
LINFER_AVX512 inline __m512 load_channels(const float* values, size_t n, __mmask16 mask) {
  return values ? _mm512_maskz_loadu_ps(mask, values + n) : _mm512_setzero_ps();
}

// The register epilogue of one output vector (bias already in v): ReLU, then the residual add,
// then the store of the lanes in mask.
LINFER_AVX512 inline void store_output(float* dst, __m512 v, __mmask16 mask, DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
  if (e.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, dst));
  _mm512_mask_storeu_ps(dst, mask, v);
}

// The dequantization of the u8 x s8 kernels (VNNI, AMX) for the 16 channels from n: their
// integer sums are of q + 128, so 128 x each channel's weight sum comes off; then the row's and
// the channels' scales, the bias and the epilogue (store_u8_row).
struct U8Channels {
  __m512i s128;
  __m512 scales, bias;
  __mmask16 store;  // the lanes of [n, n_stop)
};
LINFER_AVX512 inline U8Channels u8_channels(const DenseWeights& w, size_t n, size_t n_stop) {
  const __mmask16 valid = first_lanes(w.out - n);
  return {_mm512_slli_epi32(_mm512_maskz_loadu_epi32(valid, w.sums + n), 7), _mm512_maskz_loadu_ps(valid, w.scales + n),
          load_channels(w.bias, n, valid), first_lanes(n_stop - n)};
}
LINFER_AVX512 inline void store_u8_row(const U8Channels& c, __m512i sums, float x_scale, float* dst, DenseEpilogue e) {
  const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(sums, c.s128));
  store_output(dst, _mm512_fmadd_ps(v, _mm512_mul_ps(c.scales, _mm512_set1_ps(x_scale)), c.bias), c.store, e);
}

// acc += a * b. Inline asm, as vpdpbusd in dense_int8_avx512vnni.cc: with the intrinsic GCC 12
// shuffles the accumulators through other registers and the stack.
LINFER_AVX512 inline void fma(__m512& acc, __m512 a, __m512 b) {
  __asm__("vfmadd231ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// The f32 and f16 kernels: Weights describes the element type of the panels and how 16 of them
// become a vector (Weights::load(panel, k)).
struct F32Weights {
  using T = float;
  LINFER_AVX512 static __m512 load(const float* panel, size_t k) { return _mm512_load_ps(panel + k * 16); }
};
struct F16Weights {
  using T = uint16_t;
  LINFER_AVX512 static __m512 load(const uint16_t* panel, size_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + k * 16)));
  }
};

// acc[r][j] = sum_k a[r][k] * panel_j[k][0..16) over K steps: the 24 accumulators as named
// variables (GCC keeps an array of them on the stack), 4 weight vectors and one broadcast per
// row and step.
template <class Weights>
LINFER_AVX512 inline void fma_tile_6x4(const float* const (&a)[6], const typename Weights::T* const (&b)[4], size_t K,
                                       __m512 (&acc)[6][4], PrefetchShare prefetch) {
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  const typename Weights::T *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
#define LINFER_ACC_ROW(r)                                                                             \
  __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps(), c##r##2 = _mm512_setzero_ps(), \
         c##r##3 = _mm512_setzero_ps();
#define LINFER_FMA_ROW(r)                                                                   \
  {                                                                                         \
    const __m512 av = _mm512_set1_ps(a##r[k]);                                              \
    fma(c##r##0, av, w0), fma(c##r##1, av, w1), fma(c##r##2, av, w2), fma(c##r##3, av, w3); \
  }
#define LINFER_STORE_ROW(r) acc[r][0] = c##r##0, acc[r][1] = c##r##1, acc[r][2] = c##r##2, acc[r][3] = c##r##3;
  LINFER_ACC_ROW(0)
  LINFER_ACC_ROW(1)
  LINFER_ACC_ROW(2) LINFER_ACC_ROW(3) LINFER_ACC_ROW(4) LINFER_ACC_ROW(5) for (size_t k = 0; k < K; ++k) {
    // A line of the prefetch every second step: spread over the tile, not a burst for the fill
    // buffers to queue.
    if (k < 2 * prefetch.lines && k % 2 == 0) _mm_prefetch(prefetch.line + k * 32, _MM_HINT_T1);
    const __m512 w0 = Weights::load(b0, k), w1 = Weights::load(b1, k), w2 = Weights::load(b2, k),
                 w3 = Weights::load(b3, k);
    LINFER_FMA_ROW(0) LINFER_FMA_ROW(1) LINFER_FMA_ROW(2) LINFER_FMA_ROW(3) LINFER_FMA_ROW(4) LINFER_FMA_ROW(5)
  }
  LINFER_STORE_ROW(0)
  LINFER_STORE_ROW(1) LINFER_STORE_ROW(2) LINFER_STORE_ROW(3) LINFER_STORE_ROW(4) LINFER_STORE_ROW(5)
#undef LINFER_ACC_ROW
#undef LINFER_FMA_ROW
#undef LINFER_STORE_ROW
}

// Rows [r, r + R) x output channels [n0, n_stop) (at most 64) of an f32 / f16 kernel, over inputs
// [k0, k0 + kn). The first K block (k0 = 0) adds the bias and, if e.accumulate, y; later ones add
// y (the partial sums so far); the last (last_block) applies ReLU.
template <class Weights>
LINFER_AVX512 void float_tile(const DenseWeights& w, const DenseInput& in, size_t r, size_t R, float* y,
                              size_t y_stride, size_t n0, size_t n_stop, size_t k0, size_t kn, bool last_block,
                              DenseEpilogue e, TileSlice slice) {
  using T = typename Weights::T;
  const size_t K = w.in, NP = (n_stop - n0 + 15) / 16;  // panels in this strip
  const T* panels = static_cast<const T*>(w.panels);
  const float* a[kRows];
  tile_pointers(in.x + r * in.x_stride + k0, in.x_stride, R, a);
  const T* b[kPanels];
  for (size_t j = 0; j < kPanels; ++j) b[j] = panels + (n0 / 16 + std::min(j, NP - 1)) * K * 16 + k0 * 16;
  // This tile's share of the next strip's weights, to prefetch.
  const PrefetchShare share =
      next_k_block_strip_share(panels, K, 16 * sizeof(T), n0 / 16 + kPanels, kPanels, w.out, k0, kn, slice);
  __m512 acc[kRows][kPanels];
  fma_tile_6x4<Weights>(a, b, kn, acc, share);
  float* yr = y + r * y_stride;
  // After the first block y holds the partial sums: they are added before ReLU, unlike a residual.
  const DenseEpilogue block_e{last_block ? e.activation : DenseActivation::None, k0 == 0 && e.accumulate};
  for (size_t j = 0; j < NP; ++j) {
    const size_t n = n0 + j * 16;
    const __mmask16 mask = first_lanes(n_stop - n);
    const __m512 bias = k0 == 0 ? load_channels(w.bias, n, first_lanes(w.out - n)) : _mm512_setzero_ps();
    for (size_t i = 0; i < R; ++i) {
      float* dst = yr + i * y_stride + n;
      __m512 v = _mm512_add_ps(acc[i][j], bias);
      if (k0 > 0) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, dst));
      store_output(dst, v, mask, block_e);
    }
  }
}

// The whole f32 / f16 kernel (DenseKernel::run): blocks of 256 KiB of rows' inputs (measured: 24
// KiB blocks, sized for L1, stream the weights from L3 too often on M's 768 x 3072 layers: 8% slower
// there, no faster on S), K blocks above 1024 inputs (1024: one block measured faster; M's 3072: 6
// blocks, 14-28% faster).
template <class Weights>
void run_float(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
               size_t n_end, DenseEpilogue e) {
  for_each_k_block_tile<kRows, kChannels, 256 * 1024, 1024>(
      w.in, rows, n_begin, n_end, y, y_stride, e,
      [&](size_t r, size_t R, size_t n, size_t n_stop, size_t k0, size_t kn, bool last_block, TileSlice slice) {
        float_tile<Weights>(w, in, r, R, y, y_stride, n, n_stop, k0, kn, last_block, e, slice);
      });
}

}  // namespace linfer::kernels::dense::avx512
#endif
