// SPDX-License-Identifier: Apache-2.0
// Dense layers with f32 weights on 32-bit ARMv7 NEON with VFPv4 (Cortex-A7: Raspberry Pi 2;
// A53 and A72 under a 32-bit OS: Pi 3 and 4).
// Tile: 4 rows x half a panel (8 output channels), 8 accumulators, the two halves of a panel one
// after the other. ARMv7 has 16 q registers, not 32, and no FMA by element (VFMA takes whole
// vectors; VMLA by scalar does not fuse), so each input is broadcast to a register of its own:
// every row's inputs are loaded 4 at a time (VLD1) and broadcast by VDUP from a d-register lane,
// so one load serves 4 inputs (VLD1 to all lanes instead: 3 micro-ops per input, 10 cycles per
// input step in the model below against 6.5). Registers: 8 accumulators, 2 weight vectors, 4
// rows x 4 inputs, 1 broadcast. A full panel per row (16 channels, 16 accumulators) does not
// fit; 4 x 8 gives each weight vector 4 rows and each broadcast 2 FMAs.
// llvm-mca-14 on the inner loop (4 inputs x 4 rows x 8 channels = 32 VFMA.F32 = 128 MACs, GCC 12
// -O3, Thumb-2), a model figure: cortex-a72 (LLVM's Cortex-A57 model; LLVM has no scheduling
// model for the Cortex-A7 or A53 in 32-bit mode): 26.0 cycles, 4.9 MACs/cycle = 62% of the model's
// 2 VFMA.F32 q per cycle; the FP pipes bound it (32 VFMA + 16 VDUP = 24 cycles), then dispatch
// (78 micro-ops, 3 per cycle). 3 rows 22.0 cycles (4.4 MACs/cycle), 2 rows 17.0 (3.8), 1 row 12.0
// (2.7).
#if defined(__arm__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>

#include "dense/dense_neonv7.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 4;

// acc += w * v (VFMA), in volatile inline asm on named accumulators: with vfmaq_f32 GCC 12
// copies accumulators between registers inside the loop (VMOV) and, with non-volatile asm, hoists
// the loads of a whole iteration ahead of the FMAs and runs out of the 16 q registers.
LINFER_NEONV7 inline void fma(float32x4_t& acc, float32x4_t w, float32x4_t v) {
  __asm__ volatile("vfma.f32 %q0, %q1, %q2" : "+w"(acc) : "w"(w), "w"(v));
}

// Input L (0-3) of a vector of 4 inputs, in every lane (VDUP by scalar).
template <int L>
LINFER_NEONV7 inline float32x4_t broadcast(float32x4_t x) {
  return vdupq_lane_f32(L < 2 ? vget_low_f32(x) : vget_high_f32(x), L % 2);
}

// Rows [0, R) of x x channels [c, c + 8) of the panel (c = 0 or 8), R <= 4; the results of the
// channels [c, c + count) are stored at y + c. The 8 accumulators c<t><v> form 4 slots t of 2
// vectors v. Row i's products of input k go to slot (k % S) * R + i: with fewer than 3 rows,
// S = 4 / R sets of accumulators take turns over the inputs, so that each chain waits 4 FMAs or
// more between its own (a 1-row tile would otherwise wait on the FMA latency); the sets are
// added up at the end.
template <int R>
LINFER_NEONV7 void half_tile(const float* panel, size_t K, size_t c, const float* x, size_t x_stride, const float* bias,
                             float* y, size_t y_stride, size_t count, DenseEpilogue e) {
  constexpr int S = R <= 2 ? 4 / R : 1;
  const float* b = panel + c;
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
  // One input, lane L of the current 4: the panel's 8 weights of that input times each row's
  // input, broadcast.
#define LINFER_STEP(L)                                                                                       \
  {                                                                                                          \
    const float32x4_t w0 = vld1q_f32(b), w1 = vld1q_f32(b + 4);                                              \
    b += kPanelRows;                                                                                         \
    LINFER_ROW(0, L, broadcast<L>(x0))                                                                       \
    LINFER_ROW(1, L, broadcast<L>(x1)) LINFER_ROW(2, L, broadcast<L>(x2)) LINFER_ROW(3, L, broadcast<L>(x3)) \
  }
  size_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const float32x4_t x0 = vld1q_f32(a0 + k), x1 = vld1q_f32(a1 + k), x2 = vld1q_f32(a2 + k), x3 = vld1q_f32(a3 + k);
    LINFER_STEP(0) LINFER_STEP(1) LINFER_STEP(2) LINFER_STEP(3)
  }
  for (; k < K; ++k) {  // the last K % 4 inputs, one at a time (slots of set 0)
    const float32x4_t x0 = vld1q_dup_f32(a0 + k), x1 = vld1q_dup_f32(a1 + k), x2 = vld1q_dup_f32(a2 + k),
                      x3 = vld1q_dup_f32(a3 + k);
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
  const float* panel = static_cast<const float*>(w.panels) + (n / kPanelRows) * K * kPanelRows;
  float bias_tail[kPanelRows];
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  const float* x = in.x + r * in.x_stride;
  float* yr = y + r * y_stride + n;
  const size_t count = n_stop - n;
  half_tile<R>(panel, K, 0, x, in.x_stride, bias, yr, y_stride, std::min<size_t>(count, 8), e);
  if (count > 8) half_tile<R>(panel, K, 8, x, in.x_stride, bias, yr, y_stride, count - 8, e);
}

}  // namespace

LINFER_DENSE_RUN(run_f32_neonv7) {
  neon::run_tiles<int(kRows)>(rows, neonv7::kFloatRowBlockBytes, w.in * sizeof(float), n_begin, n_end, y, y_stride,
                              e.activation, [&](size_t r, auto rows_c, size_t n, size_t n_stop) {
                                tile<decltype(rows_c)::value>(w, in, r, y, y_stride, n, n_stop, e);
                              });
}

}  // namespace linfer::kernels::dense
#endif  // __arm__
