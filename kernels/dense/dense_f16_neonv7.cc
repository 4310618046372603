// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on 32-bit ARMv7 NEON with VFPv4 (Cortex-A7: Raspberry Pi 2;
// A53 and A72 under a 32-bit OS: Pi 3 and 4): the weights stay f16 in memory and are widened in
// registers (VCVT.F32.F16, which VFPv4 brings to NEON), arithmetic is f32 (VFMA).
// Tile: 4 rows x half a panel (8 output channels), as dense_f32_neonv7.cc, with the panel's 8
// halves of an input loaded as one q register and widened into 2 (VCVT.F32.F16 q, d). Inputs are
// loaded 2 at a time (d registers) and broadcast by VDUP: 8 accumulators, 2 widened weights, the
// f16 vector, 2 input pairs of 4 rows and 1 broadcast stay within the 16 q registers.
// llvm-mca-14 on the inner loop (4 inputs x 4 rows x 8 channels = 32 VFMA.F32 = 128 MACs + 8
// VCVT, GCC 12 -O3, Thumb-2), a model figure: cortex-a72 (LLVM's Cortex-A57 model; none exists
// for the A7 or A53 in 32-bit mode): 29.0 cycles, 4.4 MACs/cycle = 55% of the model's 2 VFMA.F32 q
// per cycle; the FP pipes bound it (32 VFMA + 16 VDUP + 8 VCVT = 28 cycles). 3 rows 22.7 cycles
// (4.2 MACs/cycle), 2 rows 17.4 (3.7), 1 row 12.5 (2.6).
#if defined(__arm__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dense/dense_neonv7.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 4;

// acc += w * v (VFMA); volatile inline asm as in dense_f32_neonv7.cc.
LINFER_NEONV7 inline void fma(float32x4_t& acc, float32x4_t w, float32x4_t v) {
  __asm__ volatile("vfma.f32 %q0, %q1, %q2" : "+w"(acc) : "w"(w), "w"(v));
}

// 4 halves to floats. Inline asm: arm_neon.h declares vcvt_f32_f16 and float16x4_t only with
// -mfp16-format=ieee, a flag for the whole file; the bits go in as a d register instead.
LINFER_NEONV7 inline float32x4_t widen(uint16x4_t h) {
  float32x4_t f;
  __asm__("vcvt.f32.f16 %q0, %P1" : "=w"(f) : "w"(h));
  return f;
}

// Rows [0, R) of x x channels [c, c + 8) of the panel (c = 0 or 8), R <= 4; the results of the
// channels [c, c + count) are stored at y + c. The 8 accumulators c<t><v> form 4 slots t of 2
// vectors v. Row i's products of input k go to slot (k % S) * R + i: with fewer than 3 rows,
// S = 4 / R sets of accumulators take turns over the inputs (dense_f32_neonv7.cc).
template <int R>
LINFER_NEONV7 void half_tile(const uint16_t* panel, size_t K, size_t c, const float* x, size_t x_stride,
                             const float* bias, float* y, size_t y_stride, size_t count, DenseEpilogue e) {
  constexpr int S = R <= 2 ? 4 / R : 1;
  const uint16_t* b = panel + c;
  const float* a0 = x;
  const float* a1 = R > 1 ? a0 + x_stride : a0;
  const float* a2 = R > 2 ? a1 + x_stride : a0;
  const float* a3 = R > 3 ? a2 + x_stride : a0;
  float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
#define LINFER_FMA2(t, v) fma(c##t##0, w0, v), fma(c##t##1, w1, v);
#define LINFER_ROW(i, L, v_expr)       \
  if constexpr (i < R) {               \
    constexpr int t = (L % S) * R + i; \
    const float32x4_t v = v_expr;      \
    if constexpr (t == 0) {            \
      LINFER_FMA2(0, v)                \
    } else if constexpr (t == 1) {     \
      LINFER_FMA2(1, v)                \
    } else if constexpr (t == 2) {     \
      LINFER_FMA2(2, v)                \
    } else {                           \
      LINFER_FMA2(3, v)                \
    }                                  \
  }
  // One input, lane L of the current 2: the panel's 8 weights of that input, widened, times each
  // row's input, broadcast.
#define LINFER_STEP(L)                                                                      \
  {                                                                                         \
    const uint16x8_t h = vld1q_u16(b);                                                      \
    b += kPanelRows;                                                                        \
    const float32x4_t w0 = widen(vget_low_u16(h)), w1 = widen(vget_high_u16(h));            \
    LINFER_ROW(0, L, vdupq_lane_f32(x0, L % 2))                                             \
    LINFER_ROW(1, L, vdupq_lane_f32(x1, L % 2))                                             \
    LINFER_ROW(2, L, vdupq_lane_f32(x2, L % 2)) LINFER_ROW(3, L, vdupq_lane_f32(x3, L % 2)) \
  }
  // Inputs 2 at a time (d registers): 4 rows x 4 inputs in q registers would leave too few of the
  // 16 for the f16 weights and their widened forms.
  size_t k = 0;
  for (; k + 4 <= K; k += 4) {
    {
      const float32x2_t x0 = vld1_f32(a0 + k), x1 = vld1_f32(a1 + k), x2 = vld1_f32(a2 + k), x3 = vld1_f32(a3 + k);
      LINFER_STEP(0) LINFER_STEP(1)
    }
    {
      const float32x2_t x0 = vld1_f32(a0 + k + 2), x1 = vld1_f32(a1 + k + 2), x2 = vld1_f32(a2 + k + 2),
                        x3 = vld1_f32(a3 + k + 2);
      LINFER_STEP(2) LINFER_STEP(3)
    }
  }
  for (; k < K; ++k) {  // the last K % 4 inputs, one at a time (slots of set 0)
    const float32x2_t x0 = vld1_dup_f32(a0 + k), x1 = vld1_dup_f32(a1 + k), x2 = vld1_dup_f32(a2 + k),
                      x3 = vld1_dup_f32(a3 + k);
    LINFER_STEP(0)
  }
#undef LINFER_STEP
#undef LINFER_ROW
#undef LINFER_FMA2
  float32x4_t acc[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int s = 1; s < S; ++s)
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < 2; ++v) acc[i][v] = vaddq_f32(acc[i][v], acc[s * R + i][v]);
  const float32x4_t b0 = vld1q_f32(bias + c), b1 = vld1q_f32(bias + c + 4);
  for (int i = 0; i < R; ++i) {
    float32x4_t out[2] = {vaddq_f32(acc[i][0], b0), vaddq_f32(acc[i][1], b1)};
    neonv7::store_outputs(y + i * y_stride + c, out, count, e);
  }
}

// Rows [r, r + R) x channels [n, n_stop) (at most 16): the panel's two halves.
template <int R>
void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n, size_t n_stop,
          DenseEpilogue e) {
  const size_t K = w.in;
  const uint16_t* panel = static_cast<const uint16_t*>(w.panels) + (n / kPanelRows) * K * kPanelRows;
  float bias_tail[kPanelRows];
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  const float* x = in.x + r * in.x_stride;
  float* yr = y + r * y_stride + n;
  const size_t count = n_stop - n;
  half_tile<R>(panel, K, 0, x, in.x_stride, bias, yr, y_stride, std::min<size_t>(count, 8), e);
  if (count > 8) half_tile<R>(panel, K, 8, x, in.x_stride, bias, yr, y_stride, count - 8, e);
}

}  // namespace

LINFER_DENSE_RUN(run_f16_neonv7) {
  neon::run_tiles<int(kRows)>(rows, neonv7::kFloatRowBlockBytes, w.in * sizeof(float), n_begin, n_end, y, y_stride,
                              e.activation, [&](size_t r, auto rows_c, size_t n, size_t n_stop) {
                                tile<decltype(rows_c)::value>(w, in, r, y, y_stride, n, n_stop, e);
                              });
}

}  // namespace linfer::kernels::dense
#endif  // __arm__
