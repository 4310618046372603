// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on AVX2 without VNNI (Haswell to Comet Lake, Zen 1-3): 16-bit
// products with vpmaddwd. The activations are quantized straight to int16 (so no correction is
// needed), each 16 weight bytes sign-extended to 16 words as they are loaded; vpmaddwd sums two
// products per 32-bit lane, exactly (|q| <= 127). Tile: 6 rows x 8 channels (half a panel),
// 12 accumulators of 4 channels x 2 partial sums, folded at the end.
#include <cstring>

#include "dense/dense_avx2_tile.h"

namespace linfer::kernels::dense {
namespace {

using avx2::kRows;

// acc += madd(w, a), accumulator kept in its register.
LINFER_AVX2 inline void madd_add(__m256i& acc, __m256i w, __m256i a) {
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(w, a));
}

// Channels [c, c + 8) of a 16-channel panel for rows [r, r + R): the integer sums, in channel
// order, per row.
LINFER_AVX2 void half_panel_sums(const int8_t* panel, size_t kg, size_t half, const int16_t* const (&a)[kRows],
                                 __m256i (&sums)[kRows]) {
  const int16_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
          c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (size_t g = 0; g < kg; ++g) {
    const int8_t* wg = panel + g * 64 + half * 32;
    // Channels c..c+3 and c+4..c+7, 4 inputs each, as int16.
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(wg))),
                  w1 = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(wg + 16)));
#define LINFER_MADD_ROW(i)                                \
  {                                                       \
    int64_t v;                                            \
    std::memcpy(&v, a##i + g * 4, 8);                     \
    const __m256i av = _mm256_set1_epi64x(v);             \
    madd_add(c##i##0, w0, av), madd_add(c##i##1, w1, av); \
  }
    LINFER_MADD_ROW(0) LINFER_MADD_ROW(1) LINFER_MADD_ROW(2) LINFER_MADD_ROW(3) LINFER_MADD_ROW(4) LINFER_MADD_ROW(5)
#undef LINFER_MADD_ROW
  }
  // Each accumulator holds, per channel, two partial sums side by side; hadd folds the pairs,
  // the permute restores channel order (hadd works within 128-bit lanes).
  const __m256i acc[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (size_t i = 0; i < kRows; ++i) sums[i] = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][0], acc[i][1]), 0xD8);
}

LINFER_AVX2 void tile(const DenseWeights& w, const DenseInput& in, size_t r, size_t R, float* y, size_t y_stride,
                      size_t n, size_t n_stop, DenseEpilogue e) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / 4;
  const int8_t* panel = static_cast<const int8_t*>(w.panels) + (n / 16) * kg * 64;
  const int16_t* a[kRows];
  avx2::tile_pointers(reinterpret_cast<const int16_t*>(in.q + r * in.q_stride), in.q_stride / 2, R, a);
  __m256i lo[kRows], hi[kRows];
  half_panel_sums(panel, kg, 0, a, lo);
  if (n_stop - n > 8)
    half_panel_sums(panel, kg, 1, a, hi);
  else
    for (auto& v : hi) v = _mm256_setzero_si256();
  for (size_t i = 0; i < R; ++i)
    avx2::store_int8_outputs(w, n, n_stop, lo[i], hi[i], in.q_scales[r + i], y + (r + i) * y_stride + n, e);
}

}  // namespace

LINFER_DENSE_RUN(run_int8_avx2) {
  // Blocks of about 24 KiB of quantized rows (2 bytes per input here).
  const size_t row_block = std::max(kRows, (24 * 1024) / in.q_stride / kRows * kRows);
  for_each_tile<kRows, kPanelRows>(
      rows, row_block, n_begin, n_end, y, y_stride, e.activation,
      [&](size_t r, size_t R, size_t n, size_t n_stop) { tile(w, in, r, R, y, y_stride, n, n_stop, e); });
}

LINFER_DENSE_QUANTIZE(quantize_s16_avx2) {
  avx2::quantize_rows<avx2::S16Form>(x, x_stride, rows, k, q, q_stride, scales);
}

}  // namespace linfer::kernels::dense
