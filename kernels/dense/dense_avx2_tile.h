// SPDX-License-Identifier: Apache-2.0
// What the AVX2 dense kernels (dense_{f32,f16}_avx2.cc, dense_int8_avxvnni.cc,
// dense_int8_avx2.cc) share: a register tile of 6 rows x one panel of 16 output channels (two
// ymm vectors per row: 12 accumulators of the 16 registers), the walk over the tiles, the
// epilogue and the quantizers. x86-64 only; every function carries its target attribute.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "dense/dense_internal.h"
#include "linfer/types/int8.h"

#define LINFER_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace linfer::kernels::dense::avx2 {

constexpr size_t kRows = 6;

// The tile's row pointers: rows [0, R) at `stride` apart, the missing ones repeating the last.
template <class T>
void tile_pointers(T* base, size_t stride, size_t R, T* (&out)[kRows]) {
  for (size_t r = 0; r < kRows; ++r) out[r] = base + std::min(r, R - 1) * stride;
}

// Stores 16 outputs (v0: channels 0-7, v1: 8-15; bias already added) with ReLU and accumulate;
// only the first `count` channels when the panel is partial.
LINFER_AVX2 inline void store_outputs(float* dst, __m256 v0, __m256 v1, size_t count, DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu) {
    v0 = _mm256_max_ps(v0, _mm256_setzero_ps());
    v1 = _mm256_max_ps(v1, _mm256_setzero_ps());
  }
  if (count >= 16) {
    if (e.accumulate) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(dst));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(dst + 8));
    }
    _mm256_storeu_ps(dst, v0);
    _mm256_storeu_ps(dst + 8, v1);
    return;
  }
  alignas(32) float tmp[16];
  _mm256_store_ps(tmp, v0);
  _mm256_store_ps(tmp + 8, v1);
  for (size_t j = 0; j < count; ++j) dst[j] = e.accumulate ? dst[j] + tmp[j] : tmp[j];
}

// acc += a * b, in inline asm so that GCC keeps each accumulator in its register ("x": the 16
// registers AVX2 has).
LINFER_AVX2 inline void fma(__m256& acc, __m256 a, __m256 b) {
  __asm__("vfmadd231ps %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
}

struct F32Weights {
  using T = float;
  LINFER_AVX2 static __m256 load(const float* p) { return _mm256_load_ps(p); }
};
struct F16Weights {
  using T = uint16_t;
  LINFER_AVX2 static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};

// Rows [r, r + R) x channels [n, n_stop) of an f32 / f16 kernel over inputs [k0, k0 + kn) (a K
// block of for_each_k_block_tile): 6 rows x 16 channels, 12 accumulators as named variables, 2
// weight vectors and one broadcast per row and input.
template <class Weights>
LINFER_AVX2 void float_tile(const DenseWeights& w, const DenseInput& in, size_t r, size_t R, float* y, size_t y_stride,
                            size_t n, size_t n_stop, size_t k0, size_t kn, bool last_block, DenseEpilogue e,
                            TileSlice slice) {
  using T = typename Weights::T;
  const T* b = static_cast<const T*>(w.panels) + (n / 16) * w.in * 16 + k0 * 16;
  // This tile's share of the next strip's weights (a strip is one panel here), to prefetch.
  const PrefetchShare prefetch =
      next_k_block_strip_share(w.panels, w.in, 16 * sizeof(T), n / 16 + 1, 1, w.out, k0, kn, slice);
  const float* a[kRows];
  tile_pointers(in.x + r * in.x_stride + k0, in.x_stride, R, a);
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
         c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (size_t k = 0; k < kn; ++k) {
    if (k < 2 * prefetch.lines && k % 2 == 0) _mm_prefetch(prefetch.line + k * 32, _MM_HINT_T1);
    const __m256 w0 = Weights::load(b + k * 16), w1 = Weights::load(b + k * 16 + 8);
#define LINFER_FMA_ROW(i)                       \
  {                                             \
    const __m256 av = _mm256_set1_ps(a##i[k]);  \
    fma(c##i##0, av, w0), fma(c##i##1, av, w1); \
  }
    LINFER_FMA_ROW(0) LINFER_FMA_ROW(1) LINFER_FMA_ROW(2) LINFER_FMA_ROW(3) LINFER_FMA_ROW(4) LINFER_FMA_ROW(5)
#undef LINFER_FMA_ROW
  }
  float bias_tail[16];
  const float* bias = channel_block(k0 == 0 ? w.bias : nullptr, n, w.out, bias_tail);
  const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
  const __m256 acc[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  // After the first block y holds the partial sums: they are added before ReLU, unlike a residual.
  const DenseEpilogue block_e{last_block ? e.activation : DenseActivation::None, k0 == 0 && e.accumulate};
  const size_t count = n_stop - n;
  for (size_t i = 0; i < R; ++i) {
    float* dst = y + (r + i) * y_stride + n;
    __m256 v0 = _mm256_add_ps(acc[i][0], b0), v1 = _mm256_add_ps(acc[i][1], b1);
    if (k0 > 0) {
      float partial_tail[16];
      const float* partial = channel_block(dst, 0, count, partial_tail);
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(partial));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(partial + 8));
    }
    store_outputs(dst, v0, v1, count, block_e);
  }
}

// The whole f32 / f16 kernel (DenseKernel::run): blocks of 1 MiB of rows' inputs, K blocks above
// 2048 inputs. Measured on AMD Zen 3 (512 KiB L2), one thread, against blocks of 256 KiB of whole
// rows: M's 3072 x 768 layer 40-53 -> 63-64 GFLOP/s (`linfer-kernel-bench --rows 128 --cold`),
// the benchmark suite's M 11-12% faster at n = 128 and 512; MiniLM (1536-input layers) and S
// within 1%.
template <class Weights>
void run_float(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
               size_t n_end, DenseEpilogue e) {
  for_each_k_block_tile<kRows, kPanelRows, 1024 * 1024, 2048>(
      w.in, rows, n_begin, n_end, y, y_stride, e,
      [&](size_t r, size_t R, size_t n, size_t n_stop, size_t k0, size_t kn, bool last_block, TileSlice slice) {
        float_tile<Weights>(w, in, r, R, y, y_stride, n, n_stop, k0, kn, last_block, e, slice);
      });
}

// The int8 epilogue of one row of 16 channels: acc0/acc1 hold the integer sums of channels 0-7
// and 8-15 (already corrected), dequantized as fma(float(sum), s_x * s_w, bias).
LINFER_AVX2 inline void store_int8_outputs(const DenseWeights& w, size_t n, size_t n_stop, __m256i acc0, __m256i acc1,
                                           float x_scale, float* dst, DenseEpilogue e) {
  float scale_tail[16], bias_tail[16];
  const float* ws = channel_block(w.scales, n, w.out, scale_tail);
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  const __m256 xs = _mm256_set1_ps(x_scale);
  const __m256 v0 =
      _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0), _mm256_mul_ps(_mm256_loadu_ps(ws), xs), _mm256_loadu_ps(bias));
  const __m256 v1 =
      _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1), _mm256_mul_ps(_mm256_loadu_ps(ws + 8), xs), _mm256_loadu_ps(bias + 8));
  store_outputs(dst, v0, v1, n_stop - n, e);
}

// The two forms the AVX2 int8 kernels read quantized inputs in: bytes q + 128 (AVX-VNNI's
// unsigned operand) and int16 q (vpmaddwd's operands). put8 stores 8 int32 values in [-127, 127].
struct U8Form {
  using T = uint8_t;
  LINFER_AVX2 static void put8(uint8_t* q, __m256i v) {
    v = _mm256_add_epi32(v, _mm256_set1_epi32(128));
    const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packus_epi16(w16, w16));
  }
  static void put1(uint8_t* q, int v) { *q = uint8_t(v + 128); }
  static constexpr uint8_t kZero = 128;
};
struct S16Form {
  using T = int16_t;
  LINFER_AVX2 static void put8(int16_t* q, __m256i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q),
                     _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
  }
  static void put1(int16_t* q, int v) { *q = int16_t(v); }
  static constexpr int16_t kZero = 0;
};

// Rows quantized (linfer/types/int8.h) into Form, q_stride bytes apart, padded with zero values
// to int8_padded_inputs(k) inputs (DenseKernel::quantize).
template <class Form>
LINFER_AVX2 void quantize_rows(const float* x, size_t x_stride, size_t rows, size_t k, int8_t* q, size_t q_stride,
                               float* scales) {
  using T = typename Form::T;
  const size_t padded = int8_padded_inputs(uint32_t(k));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    T* qr = reinterpret_cast<T*>(q + r * q_stride);
    __m256 vmax = _mm256_setzero_ps();
    size_t i = 0;
    // max_ps returns its second operand when either is NaN: NaN inputs are ignored, as in int8.h.
    for (; i + 8 <= k; i += 8) vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xr + i), abs_mask), vmax);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vmax);
    float amax = 0.0f;
    for (float v : lanes) amax = v > amax ? v : amax;
    for (; i < k; ++i) amax = std::fabs(xr[i]) > amax ? std::fabs(xr[i]) : amax;
    const float scale = amax / 127.0f;
    const float inv = amax > 0.0f ? 1.0f / scale : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= k; i += 8) {
      // As in the reference: a NaN product (NaN or infinite input) quantizes to 0, an infinite
      // one (a row of subnormals, whose 1 / scale overflows) to +-127. Clamped in float, then
      // cvtps rounds to nearest even as nearbyint does.
      const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(xr + i), vinv);
      const __m256 ordered = _mm256_cmp_ps(p, p, _CMP_ORD_Q);
      const __m256 clamped = _mm256_min_ps(_mm256_max_ps(p, lo), hi);
      Form::put8(qr + i, _mm256_and_si256(_mm256_cvtps_epi32(clamped), _mm256_castps_si256(ordered)));
    }
    for (; i < k; ++i) Form::put1(qr + i, quantize_int8(xr[i], inv));
    for (i = k; i < padded; ++i) qr[i] = Form::kZero;
    scales[r] = amax > 0.0f ? scale : 0.0f;
  }
}

}  // namespace linfer::kernels::dense::avx2
#endif
