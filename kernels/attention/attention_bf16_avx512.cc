// SPDX-License-Identifier: Apache-2.0
// Softmax attention with the weighted sum of the values in bf16, on x86 AVX-512 BF16 (kernels.h,
// "bf16 values"): every vdpbf16ps multiplies 16 pairs of bf16 and adds both products of a pair to
// an f32 lane, 32 multiply-adds per instruction where an f32 FMA does 16; on AMD Zen 4 both issue
// one 512-bit instruction per cycle, so P V takes half the time. The scores stay f32 (FMA): in
// bf16 too, all-MiniLM-L6-v2 int8's retrieval top-1 equal to f32's fell from 99.4% to
// 98.7-98.9% (docs/performance.md). The softmax is attention_hwy.cc's; the probabilities are
// rounded to bf16 once per block of keys, the values once per head (attention_bf16_pack_values),
// centered on their mean, which comes back in f32 at the end (the probabilities sum to 1): the
// rounding then scales with how far the values spread, not with their common offset.
#include "kernels.h"

#if defined(__x86_64__)
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "avx512_intrinsics.h"

#define LINFER_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))

namespace linfer::kernels {
namespace {

constexpr size_t kRows = 8;      // query rows per tile: 16 accumulators for 2 vectors per row
constexpr size_t kKeyStep = 32;  // keys per score tile: 2 vectors (attention_bf16_padded_keys)

// acc += the pairwise products of a and b. Inline asm, as the dense kernels' vpdpbusd: with the
// intrinsic GCC 12 moves the accumulators through other registers.
LINFER_BF16 inline void dpbf16(__m512& acc, __m512i a, __m512i b) {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}
LINFER_BF16 inline void fma(__m512& acc, __m512 a, __m512 b) {
  __asm__("vfmadd231ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// The register tile of both products: for each step i < steps, two vectors b[i * b_step + (0..31)]
// times the broadcast a[r][i] of each of the 8 rows, added to acc: bf16 pairs (T = uint32_t,
// vdpbf16ps) or floats (FMA). The 16 accumulators are named variables: GCC keeps an array of them
// on the stack.
template <class T>
LINFER_BF16 inline void product_tile_8x2(const T* const (&a)[8], const T* b, size_t b_step, size_t steps,
                                         __m512 (&acc)[8][2]) {
  constexpr bool kBf16 = std::is_same_v<T, uint32_t>;
  const T *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
#define LINFER_ACC_ROW(r) __m512 c##r##0 = acc[r][0], c##r##1 = acc[r][1]
#define LINFER_DOT_ROW(r)                                               \
  if constexpr (kBf16) {                                                \
    const __m512i av = _mm512_set1_epi32(int(a##r[i]));                 \
    dpbf16(c##r##0, av, __m512i(w0)), dpbf16(c##r##1, av, __m512i(w1)); \
  } else {                                                              \
    const __m512 av = _mm512_set1_ps(float(a##r[i]));                   \
    fma(c##r##0, av, __m512(w0)), fma(c##r##1, av, __m512(w1));         \
  }                                                                     \
  static_assert(true)
#define LINFER_STORE_ROW(r) acc[r][0] = c##r##0, acc[r][1] = c##r##1
  LINFER_ACC_ROW(0);
  LINFER_ACC_ROW(1);
  LINFER_ACC_ROW(2);
  LINFER_ACC_ROW(3);
  LINFER_ACC_ROW(4);
  LINFER_ACC_ROW(5);
  LINFER_ACC_ROW(6);
  LINFER_ACC_ROW(7);
  for (size_t i = 0; i < steps; ++i, b += b_step) {
    const __m512 w0 = _mm512_loadu_ps(b), w1 = _mm512_loadu_ps(b + 16);
    LINFER_DOT_ROW(0);
    LINFER_DOT_ROW(1);
    LINFER_DOT_ROW(2);
    LINFER_DOT_ROW(3);
    LINFER_DOT_ROW(4);
    LINFER_DOT_ROW(5);
    LINFER_DOT_ROW(6);
    LINFER_DOT_ROW(7);
  }
  LINFER_STORE_ROW(0);
  LINFER_STORE_ROW(1);
  LINFER_STORE_ROW(2);
  LINFER_STORE_ROW(3);
  LINFER_STORE_ROW(4);
  LINFER_STORE_ROW(5);
  LINFER_STORE_ROW(6);
  LINFER_STORE_ROW(7);
#undef LINFER_ACC_ROW
#undef LINFER_DOT_ROW
#undef LINFER_STORE_ROW
}

// 32 floats (lo: the first 16) as 16 bf16 pairs, rounded to nearest even; pair i is (x[2i], x[2i + 1]).
LINFER_BF16 inline __m512i pairs_of(__m512 lo, __m512 hi) { return __m512i(_mm512_cvtne2ps_pbh(hi, lo)); }

// 16 pairs (a[c], b[c]) of two rows' bf16, a in the low half.
LINFER_BF16 inline __m512i interleave_rows(__m512 a, __m512 b) {
  const __m512i lo = _mm512_cvtepu16_epi32(__m256i(_mm512_cvtneps_pbh(a)));
  const __m512i hi = _mm512_cvtepu16_epi32(__m256i(_mm512_cvtneps_pbh(b)));
  return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// mean[c] = the mean of x[j][c] over rows j < rows, for c < cols (a multiple of 16).
LINFER_BF16 void column_means(const float* x, size_t stride, size_t rows, size_t cols, float* mean) {
  const __m512 inv = _mm512_set1_ps(1.0f / float(rows));
  for (size_t c = 0; c < cols; c += 16) {
    __m512 sum = _mm512_setzero_ps();
    for (size_t j = 0; j < rows; ++j) sum = _mm512_add_ps(sum, _mm512_loadu_ps(x + j * stride + c));
    _mm512_storeu_ps(mean + c, _mm512_mul_ps(sum, inv));
  }
}

}  // namespace

LINFER_BF16 void attention_bf16_pack_values(const float* v, size_t v_stride, size_t keys, size_t head_dim, uint32_t* vp,
                                            float* v_mean) {
  const size_t padded = attention_bf16_padded_keys(keys);
  column_means(v, v_stride, keys, head_dim, v_mean);
  for (size_t j = 0; j < padded; j += 2)
    for (size_t c = 0; c < head_dim; c += 16) {
      const __m512 m = _mm512_loadu_ps(v_mean + c);
      const __m512 a = j < keys ? _mm512_sub_ps(_mm512_loadu_ps(v + j * v_stride + c), m) : _mm512_setzero_ps();
      const __m512 b =
          j + 1 < keys ? _mm512_sub_ps(_mm512_loadu_ps(v + (j + 1) * v_stride + c), m) : _mm512_setzero_ps();
      _mm512_storeu_si512(vp + (j / 2) * head_dim + c, interleave_rows(a, b));
    }
}

// Rows [r0, r0 + R) of one head (R <= kRows; the tile computes kRows, repeating the last row).
LINFER_BF16 static void attention_rows_bf16(const AttentionBf16Args& a, size_t r0, size_t R, float* scratch) {
  const size_t dh = a.head_dim, kps = attention_bf16_padded_keys(a.keys);
  const size_t block = std::min(kps, kAttentionKeyBlock);
  float* s = scratch;                                             // [kRows][block] scores, then e
  uint32_t* pp = reinterpret_cast<uint32_t*>(s + kRows * block);  // [kRows][block / 2] bf16 pairs of e
  float* acc_row = s + kRows * block + kRows * block / 2;         // [kRows][dh]
  const float* q_rows[kRows];
  const uint32_t* p_rows[kRows];
  float m[kRows], l[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    q_rows[r] = a.q + (r0 + std::min(r, R - 1)) * a.q_stride;
    p_rows[r] = pp + r * (block / 2);
    std::fill(acc_row + r * dh, acc_row + (r + 1) * dh, 0.0f);
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }
  const __m512 vscale = _mm512_set1_ps(a.scale);
  for (size_t j0 = 0; j0 < a.keys; j0 += block) {
    const size_t nb = std::min(block, a.keys - j0), nbp = std::min(block, kps - j0);  // nbp: a multiple of 32
    // Scores of 32 keys at a time: 2 vectors of K^T loaded per dimension, each feeding 8 rows.
    for (size_t j = 0; j < nbp; j += kKeyStep) {
      __m512 acc[kRows][2];
      for (size_t r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      product_tile_8x2(q_rows, a.kt + j0 + j, a.kt_stride, dh, acc);
      for (size_t r = 0; r < kRows; ++r) {
        _mm512_storeu_ps(s + r * block + j, _mm512_mul_ps(acc[r][0], vscale));
        _mm512_storeu_ps(s + r * block + j + 16, _mm512_mul_ps(acc[r][1], vscale));
      }
    }
    // Online softmax in f32, then the probabilities as bf16 pairs (0 for the padding keys).
    float correction[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      float* sr = s + r * block;
      __m512 vmax = _mm512_set1_ps(-INFINITY);
      size_t j = 0;
      for (; j + 16 <= nb; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(sr + j));
      float block_max = _mm512_reduce_max_ps(vmax);
      for (; j < nb; ++j) block_max = std::max(block_max, sr[j]);
      const float m_new = std::max(block_max, m[r]);
      correction[r] = std::exp(m[r] - m_new);  // 0 on the first block
      m[r] = m_new;
      l[r] = l[r] * correction[r] + exp_shifted_sum_f32_hwy(sr, nb, m_new);
      std::fill(sr + nb, sr + nbp, 0.0f);
      for (j = 0; j < nbp; j += 32)
        _mm512_storeu_si512(pp + r * (block / 2) + j / 2,
                            pairs_of(_mm512_loadu_ps(sr + j), _mm512_loadu_ps(sr + j + 16)));
    }
    // acc_row = acc_row * correction + P V, 32 channels at a time, a pair of keys per step.
    const uint32_t* vb = a.vp + (j0 / 2) * dh;
    for (size_t c = 0; c < dh; c += 32) {
      __m512 acc[kRows][2];
      for (size_t r = 0; r < kRows; ++r) {
        const __m512 corr = _mm512_set1_ps(correction[r]);
        acc[r][0] = _mm512_mul_ps(_mm512_loadu_ps(acc_row + r * dh + c), corr);
        acc[r][1] = _mm512_mul_ps(_mm512_loadu_ps(acc_row + r * dh + c + 16), corr);
      }
      product_tile_8x2(p_rows, vb + c, dh, nbp / 2, acc);
      for (size_t r = 0; r < kRows; ++r) {
        _mm512_storeu_ps(acc_row + r * dh + c, acc[r][0]);
        _mm512_storeu_ps(acc_row + r * dh + c + 16, acc[r][1]);
      }
    }
  }
  // o = acc / l + the values' mean.
  for (size_t r = 0; r < R; ++r) {
    const __m512 inv = _mm512_set1_ps(1.0f / l[r]);
    float* o = a.o + (r0 + r) * a.o_stride;
    for (size_t c = 0; c < dh; c += 16)
      _mm512_storeu_ps(o + c,
                       _mm512_fmadd_ps(_mm512_loadu_ps(acc_row + r * dh + c), inv, _mm512_loadu_ps(a.v_mean + c)));
  }
}

void attention_bf16_avx512(const AttentionBf16Args& a, size_t row_begin, size_t row_end, float* scratch) {
  for (size_t r = row_begin; r < row_end; r += kRows) attention_rows_bf16(a, r, std::min(kRows, row_end - r), scratch);
}

}  // namespace linfer::kernels
#endif
