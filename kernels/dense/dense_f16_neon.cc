// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on ARMv8.0 NEON (Cortex-A72: Raspberry Pi 4; Cortex-A76: Pi 5):
// the weights stay f16 in memory and are widened in registers (FCVTL / FCVTL2), arithmetic is
// f32 (no fp16 arithmetic, which the A72 lacks).
// Tile: 8 rows x half a panel (8 output channels), 16 accumulators, the two halves of a panel
// one after the other. The widening is what costs here: in llvm-mca's models an FCVTL takes an
// FP pipe for 3 cycles on the A72 and V0 for 2 cycles on the A76, so the tile maximises the
// FMLAs per widened weight vector: 8 rows (4 x 16 gets 4 and reaches 73% / 67% of the FMLA peak
// in the same models). Each row's inputs are loaded 4 at a time and fed to FMLA by element, so
// one input load serves 4 k steps; the next k step's weights are widened ahead of the current
// FMLAs. Registers: 16 accumulators + 8 inputs + 4 widened weights + the f16 vector.
// llvm-mca on the inner loop (4 k steps = 64 FMLA.4S = 256 MACs + 8 FCVTL, GCC 12 -O3):
//   cortex-a72 (LLVM's Cortex-A57 model): 76.0 cycles, 3.37 MACs/cycle = 84% of one FMLA.4S per
//     cycle (the 8 conversions cost 12 of the 76)
//   cortex-a76 (LLVM 19's neoverse-n1 model): 42.0 cycles, 6.1 MACs/cycle = 76% of 2 x FMLA.4S
// Fewer rows convert the same weights for fewer FMLAs: 4 rows 73% / 62%, 1 row 40% / 25%.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dense/dense_neon.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 8;

// Rows [r, r + R) x channels [c, c + 8) of the panel at `panel` (c = 0 or 8), R <= 8; the
// results of the channels [c, c + count) are stored at y + c. The 16 accumulators c<t><v> form
// 8 slots t of 2 vectors v. Row i's products of lane L (input k + L) go to slot
// (L % S) * R + i: with 4 rows or fewer, S = min(4, 8 / R) sets of accumulators take turns
// over the lanes, so that a chain gets at most 2 FMLAs per iteration; they are added up at
// the end.
template <int R>
void half_tile(const uint16_t* panel, size_t K, size_t c, const float* x, size_t x_stride, const float* bias, float* y,
               size_t y_stride, size_t count, DenseEpilogue e) {
  constexpr int S = R == 1 ? 4 : R <= 4 ? 8 / R : 1;
  const float16_t* b = reinterpret_cast<const float16_t*>(panel) + c;
  const float* a0 = x;
  const float* a1 = R > 1 ? a0 + x_stride : a0;
  const float* a2 = R > 2 ? a1 + x_stride : a0;
  const float* a3 = R > 3 ? a2 + x_stride : a0;
  const float* a4 = R > 4 ? a3 + x_stride : a0;
  const float* a5 = R > 5 ? a4 + x_stride : a0;
  const float* a6 = R > 6 ? a5 + x_stride : a0;
  const float* a7 = R > 7 ? a6 + x_stride : a0;
  float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
              c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
#define LINFER_FMLA2(t, L, v) neon::fmla_lane<L>(c##t##0, w0, v), neon::fmla_lane<L>(c##t##1, w1, v);
#define LINFER_ROW(i, L)               \
  if constexpr (i < R) {               \
    constexpr int t = (L % S) * R + i; \
    if constexpr (t == 0) {            \
      LINFER_FMLA2(0, L, v##i)         \
    } else if constexpr (t == 1) {     \
      LINFER_FMLA2(1, L, v##i)         \
    } else if constexpr (t == 2) {     \
      LINFER_FMLA2(2, L, v##i)         \
    } else if constexpr (t == 3) {     \
      LINFER_FMLA2(3, L, v##i)         \
    } else if constexpr (t == 4) {     \
      LINFER_FMLA2(4, L, v##i)         \
    } else if constexpr (t == 5) {     \
      LINFER_FMLA2(5, L, v##i)         \
    } else if constexpr (t == 6) {     \
      LINFER_FMLA2(6, L, v##i)         \
    } else {                           \
      LINFER_FMLA2(7, L, v##i)         \
    }                                  \
  }
  // One k step: the 8 weights of input k, widened, times lane L of each row's inputs. The
  // next step's weights are loaded and widened first (x0, x1), so that the conversions overlap
  // this step's FMLAs instead of waiting at its head.
#define LINFER_STEP(L)                                                                                    \
  {                                                                                                       \
    const float32x4_t w0 = x0, w1 = x1;                                                                   \
    if constexpr (L < 3) {                                                                                \
      const float16x8_t h = vld1q_f16(bk + 16 * (L + 1));                                                 \
      x0 = vcvt_f32_f16(vget_low_f16(h)), x1 = vcvt_high_f32_f16(h);                                      \
    }                                                                                                     \
    LINFER_ROW(0, L)                                                                                      \
    LINFER_ROW(1, L)                                                                                      \
    LINFER_ROW(2, L) LINFER_ROW(3, L) LINFER_ROW(4, L) LINFER_ROW(5, L) LINFER_ROW(6, L) LINFER_ROW(7, L) \
  }
  size_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const float32x4_t v0 = vld1q_f32(a0 + k), v1 = vld1q_f32(a1 + k), v2 = vld1q_f32(a2 + k), v3 = vld1q_f32(a3 + k),
                      v4 = vld1q_f32(a4 + k), v5 = vld1q_f32(a5 + k), v6 = vld1q_f32(a6 + k), v7 = vld1q_f32(a7 + k);
    const float16_t* bk = b + k * kPanelRows;
    const float16x8_t h = vld1q_f16(bk);
    float32x4_t x0 = vcvt_f32_f16(vget_low_f16(h)), x1 = vcvt_high_f32_f16(h);
    LINFER_STEP(0) LINFER_STEP(1) LINFER_STEP(2) LINFER_STEP(3)
  }
  for (; k < K; ++k) {  // the last K % 4 inputs, lane 0 (slots of set 0)
    const float32x4_t v0 = vld1q_dup_f32(a0 + k), v1 = vld1q_dup_f32(a1 + k), v2 = vld1q_dup_f32(a2 + k),
                      v3 = vld1q_dup_f32(a3 + k), v4 = vld1q_dup_f32(a4 + k), v5 = vld1q_dup_f32(a5 + k),
                      v6 = vld1q_dup_f32(a6 + k), v7 = vld1q_dup_f32(a7 + k);
    const float16x8_t h = vld1q_f16(b + k * kPanelRows);
    const float32x4_t w0 = vcvt_f32_f16(vget_low_f16(h)), w1 = vcvt_high_f32_f16(h);
    LINFER_ROW(0, 0)
    LINFER_ROW(1, 0)
    LINFER_ROW(2, 0) LINFER_ROW(3, 0) LINFER_ROW(4, 0) LINFER_ROW(5, 0) LINFER_ROW(6, 0) LINFER_ROW(7, 0)
  }
#undef LINFER_STEP
#undef LINFER_ROW
#undef LINFER_FMLA2
  float32x4_t acc[8][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                           {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int s = 1; s < S; ++s)
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < 2; ++v) acc[i][v] = vaddq_f32(acc[i][v], acc[s * R + i][v]);
  const float32x4_t b0 = vld1q_f32(bias + c), b1 = vld1q_f32(bias + c + 4);
  for (int i = 0; i < R; ++i) {
    float32x4_t out[2] = {vaddq_f32(acc[i][0], b0), vaddq_f32(acc[i][1], b1)};
    neon::store_outputs(y + i * y_stride + c, out, count, e);
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

LINFER_NEON_FLOAT_RUN(run_f16_neon, kRows)

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
