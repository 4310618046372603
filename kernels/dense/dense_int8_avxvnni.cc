// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on AVX-VNNI (the VEX-encoded vpdpbusd on 256-bit vectors:
// Intel Alder Lake and later, N100-class edge boxes, AMD Zen 4/5). Same arithmetic as the
// AVX-512 VNNI kernel: activations as q + 128, 128 * channel sum subtracted. Tile: 6 rows x one
// panel of 16 channels, 12 accumulators.
#include <cstring>

#include "dense/dense_avx2_tile.h"

#define LINFER_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

namespace linfer::kernels::dense {
namespace {

using avx2::kRows;

// acc += u8 x s8 dot products, VEX-encoded; inline asm keeps each accumulator in its register.
LINFER_AVXVNNI inline void dpbusd(__m256i& acc, __m256i a_u8, __m256i w_s8) {
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a_u8), "x"(w_s8));
}

LINFER_AVXVNNI void tile(const DenseWeights& w, const DenseInput& in, size_t r, size_t R, float* y, size_t y_stride,
                         size_t n, size_t n_stop, DenseEpilogue e) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / 4;
  const int8_t* b = static_cast<const int8_t*>(w.panels) + (n / 16) * kg * 64;
  const int8_t* a[kRows];
  avx2::tile_pointers(in.q + r * in.q_stride, in.q_stride, R, a);
  const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
          c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (size_t g = 0; g < kg; ++g) {
    const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + g * 64)),
                  w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + g * 64 + 32));
#define LINFER_DOT_ROW(i)                             \
  {                                                   \
    int32_t v;                                        \
    std::memcpy(&v, a##i + g * 4, 4);                 \
    const __m256i av = _mm256_set1_epi32(v);          \
    dpbusd(c##i##0, av, w0), dpbusd(c##i##1, av, w1); \
  }
    LINFER_DOT_ROW(0) LINFER_DOT_ROW(1) LINFER_DOT_ROW(2) LINFER_DOT_ROW(3) LINFER_DOT_ROW(4) LINFER_DOT_ROW(5)
#undef LINFER_DOT_ROW
  }
  int32_t sum_tail[16];
  const int32_t* sums = channel_block(w.sums, n, w.out, sum_tail);
  const __m256i s0 = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums)), 7),
                s1 = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + 8)), 7);
  const __m256i acc[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (size_t i = 0; i < R; ++i)
    avx2::store_int8_outputs(w, n, n_stop, _mm256_sub_epi32(acc[i][0], s0), _mm256_sub_epi32(acc[i][1], s1),
                             in.q_scales[r + i], y + (r + i) * y_stride + n, e);
}

}  // namespace

LINFER_DENSE_RUN(run_int8_avxvnni) {
  // Blocks of about 24 KiB of quantized rows: they stay in L1 while the panels pass.
  const size_t row_block = std::max(kRows, (24 * 1024) / in.q_stride / kRows * kRows);
  for_each_tile<kRows, kPanelRows>(
      rows, row_block, n_begin, n_end, y, y_stride, e.activation,
      [&](size_t r, size_t R, size_t n, size_t n_stop) { tile(w, in, r, R, y, y_stride, n, n_stop, e); });
}

LINFER_DENSE_QUANTIZE(quantize_u8_avx2) {
  avx2::quantize_rows<avx2::U8Form>(x, x_stride, rows, k, q, q_stride, scales);
}

}  // namespace linfer::kernels::dense
