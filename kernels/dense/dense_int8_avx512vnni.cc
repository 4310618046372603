// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on AVX-512 VNNI, activations quantized per row at run time:
//   y[r][n] = s_x[r] * s_w[n] * sum_k qx[r][k] * qw[n][k] + b[n]
// vpdpbusd multiplies unsigned by signed bytes, so the activations are stored as q + 128 and
// 128 * sum_k qw[n][k] (the panel's channel sums) is subtracted. The 6 x 64 register tile of
// dense_avx512_tile.h, 24 int32 accumulators: about 95% of the vpdpbusd peak in its inner loop.
#include <cstring>

#include "dense/dense_avx512_tile.h"

#define LINFER_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,f16c,fma")))

namespace linfer::kernels::dense {
namespace {

using avx512::kPanels;
using avx512::kRows;

// acc += u8 x s8 dot products. Inline asm instead of _mm512_dpbusd_epi32: with the intrinsic
// GCC 12 copies every accumulator to another register and to the stack on each step (measured:
// 39% of the vpdpbusd peak); the tied "+v" operand keeps each accumulator in one register.
LINFER_VNNI inline void dpbusd(__m512i& acc, __m512i a_u8, __m512i w_s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a_u8), "v"(w_s8));
}

LINFER_VNNI inline __m512i broadcast_u8x4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The register tile over the kg groups of 4 inputs: 6 quantized rows times 4 panels of 16
// output channels, the 24 accumulators as named variables (GCC keeps an array of them on the
// stack), 4 weight vectors and one broadcast per row and step.
LINFER_VNNI inline void vnni_tile_6x4(const int8_t* const (&a)[6], const int8_t* const (&b)[4], size_t kg,
                                      __m512i (&acc)[6][4], PrefetchShare prefetch) {
  const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  const int8_t *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
#define LINFER_ACC_ROW(r)                                                                                       \
  __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512(), c##r##2 = _mm512_setzero_si512(), \
          c##r##3 = _mm512_setzero_si512();
#define LINFER_DOT_ROW(r)                                                                               \
  {                                                                                                     \
    const __m512i av = broadcast_u8x4(a##r + g * 4);                                                    \
    dpbusd(c##r##0, av, w0), dpbusd(c##r##1, av, w1), dpbusd(c##r##2, av, w2), dpbusd(c##r##3, av, w3); \
  }
#define LINFER_STORE_ROW(r) acc[r][0] = c##r##0, acc[r][1] = c##r##1, acc[r][2] = c##r##2, acc[r][3] = c##r##3;
  LINFER_ACC_ROW(0)
  LINFER_ACC_ROW(1)
  LINFER_ACC_ROW(2) LINFER_ACC_ROW(3) LINFER_ACC_ROW(4) LINFER_ACC_ROW(5) for (size_t g = 0; g < kg; ++g) {
    if (g < prefetch.lines) _mm_prefetch(prefetch.line + g * 64, _MM_HINT_T1);  // a line a step
    const size_t o = g * 64;
    const __m512i w0 = _mm512_load_si512(reinterpret_cast<const void*>(b0 + o)),
                  w1 = _mm512_load_si512(reinterpret_cast<const void*>(b1 + o)),
                  w2 = _mm512_load_si512(reinterpret_cast<const void*>(b2 + o)),
                  w3 = _mm512_load_si512(reinterpret_cast<const void*>(b3 + o));
    LINFER_DOT_ROW(0) LINFER_DOT_ROW(1) LINFER_DOT_ROW(2) LINFER_DOT_ROW(3) LINFER_DOT_ROW(4) LINFER_DOT_ROW(5)
  }
  LINFER_STORE_ROW(0)
  LINFER_STORE_ROW(1) LINFER_STORE_ROW(2) LINFER_STORE_ROW(3) LINFER_STORE_ROW(4) LINFER_STORE_ROW(5)
#undef LINFER_ACC_ROW
#undef LINFER_DOT_ROW
#undef LINFER_STORE_ROW
}

// Rows [0, R) (R <= 6), output channels [n0, n_stop) (at most 64): integer dot products, then
// dequantization, bias, ReLU and accumulate in registers.
LINFER_VNNI void tile(const DenseWeights& w, const int8_t* qx, size_t q_stride, const float* xs, size_t R, float* y,
                      size_t y_stride, size_t n0, size_t n_stop, DenseEpilogue e, TileSlice slice) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / 4, NP = (n_stop - n0 + 15) / 16;
  const int8_t* a[kRows];
  avx512::tile_pointers(qx, q_stride, R, a);
  const int8_t* panels = static_cast<const int8_t*>(w.panels);
  const int8_t* b[kPanels];
  for (size_t j = 0; j < kPanels; ++j) b[j] = panels + (n0 / 16 + std::min(j, NP - 1)) * kg * 64;
  __m512i acc[kRows][kPanels];
  vnni_tile_6x4(a, b, kg, acc, next_strip_share(panels, kg * 64, 0, kg * 64, n0 / 16 + kPanels, kPanels, w.out, slice));
  for (size_t j = 0; j < NP; ++j) {
    const size_t n = n0 + j * 16;
    const avx512::U8Channels c = avx512::u8_channels(w, n, n_stop);
    for (size_t r = 0; r < R; ++r) avx512::store_u8_row(c, acc[r][j], xs[r], y + r * y_stride + n, e);
  }
}

// 16 inputs times 1 / scale, as int8.h quantizes them, stored as q + 128. As in the reference: a
// NaN product (NaN or infinite input) quantizes to 0, an infinite one (a row of subnormals, whose
// 1 / scale overflows) to +-127. Clamped in float, then cvtps rounds to nearest even as nearbyint
// does.
LINFER_VNNI inline __m128i quantize16(__m512 x, __m512 inv_scale) {
  const __m512 p = _mm512_mul_ps(x, inv_scale);
  const __m512 clamped = _mm512_min_ps(_mm512_max_ps(p, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  const __m512i q = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(p, p, _CMP_ORD_Q), clamped);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(q, _mm512_set1_epi32(128)));
}

}  // namespace

LINFER_DENSE_RUN(run_int8_avx512vnni) {
  // Blocks of about 24 KiB of quantized rows: they stay in L1 while the strips pass. But at least
  // 30 rows: each pass of the weights (from L3 on a large layer) must serve enough rows; at
  // 3072 inputs 24 KiB is one tile of 6 rows (M's feed-forward 2 at 512 rows: 305 GOP/s with 6,
  // 450 with 30, linfer-kernel-bench --rows 512).
  const size_t row_block = std::max<size_t>(30, (24 * 1024) / in.q_stride) / kRows * kRows;
  for_each_tile<kRows, avx512::kChannels>(
      rows, row_block, n_begin, n_end, y, y_stride, e.activation, [&](size_t r, size_t R, size_t n, size_t n_stop) {
        tile(w, in.q + r * in.q_stride, in.q_stride, in.q_scales + r, R, y + r * y_stride, y_stride, n, n_stop, e,
             tile_slice<kRows>(r, rows, row_block));
      });
}

// linfer/types/int8.h's convention, 16 values at a time, stored as q + 128.
LINFER_VNNI LINFER_DENSE_QUANTIZE(quantize_u8_avx512) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    uint8_t* qr = reinterpret_cast<uint8_t*>(q + r * q_stride);
    __m512 vmax = _mm512_setzero_ps(), m1 = vmax, m2 = vmax, m3 = vmax;
    size_t i = 0;
    // max_ps returns its second operand when either is NaN: NaN inputs are ignored, as in int8.h.
    // Four running maxima: one waits for each max's latency (a third of this function's time).
    for (; i + 64 <= k; i += 64) {
      vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xr + i)), vmax);
      m1 = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xr + i + 16)), m1);
      m2 = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xr + i + 32)), m2);
      m3 = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xr + i + 48)), m3);
    }
    vmax = _mm512_max_ps(_mm512_max_ps(vmax, m1), _mm512_max_ps(m2, m3));
    for (; i + 16 <= k; i += 16) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xr + i)), vmax);
    if (i < k) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(avx512::first_lanes(k - i), xr + i)), vmax);
    const float amax = _mm512_reduce_max_ps(vmax);
    const float scale = amax / 127.0f;
    const __m512 vinv = _mm512_set1_ps(amax > 0.0f ? 1.0f / scale : 0.0f);
    // (A masked narrowing store, vpmovdb to memory, was a third of this function's time on an
    // AMD EPYC: the whole vectors narrow in a register and store plainly.)
    for (i = 0; i + 16 <= k; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + i), quantize16(_mm512_loadu_ps(xr + i), vinv));
    if (i < k) {
      const __mmask16 m = avx512::first_lanes(k - i);
      _mm_mask_storeu_epi8(qr + i, m, quantize16(_mm512_maskz_loadu_ps(m, xr + i), vinv));
    }
    for (i = k; i < padded; ++i) qr[i] = 128;
    scales[r] = amax > 0.0f ? scale : 0.0f;
  }
}

}  // namespace linfer::kernels::dense
