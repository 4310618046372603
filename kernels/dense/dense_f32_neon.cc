// SPDX-License-Identifier: Apache-2.0
// Dense layers with f32 weights on ARMv8.0 NEON (Cortex-A72: Raspberry Pi 4; Cortex-A76: Pi 5).
// Tile: 4 rows x one panel of 16 output channels, 16 accumulators. Each row's inputs are loaded
// 4 at a time (one q register) and fed to FMLA by element, so one input load serves 4 k steps;
// each weight vector serves the 4 rows, and a k step's 16 weights come in one 4-register LD1.
// Per 8 k steps (one loop iteration): 8 input loads + 8 weight loads (all post-increment: no
// address arithmetic) + 2 loop instructions for 128 FMLAs, 146 instructions in all (82 per 64
// FMLAs before the 4-register loads and the 8-step loop: the Pi 4's instruction count was the
// gap to ONNX Runtime, issue 37). 16 independent chains cover the FMLA latency x throughput
// (A72: 7 x 1 FMLA.4S per cycle; A76: 4 x 2), and 16 accumulators + 4 inputs + 4 weights leave
// registers to spare. Fewer rows (the remainder) use the same code with fewer accumulators and,
// below 3 rows, 4 / R sets of them taking turns over the lanes (no padded 4-row tile).
// llvm-mca on the inner loop (8 k steps = 128 FMLA.4S = 512 MACs, GCC 12 -O3,
// tools/bench/arm/mca.sh):
//   cortex-a72 (LLVM's Cortex-A57 model, LLVM 14 and 19): 128.0 cycles, 4.0 MACs/cycle = 100% of
//     one FMLA.4S per cycle (the model's Q-form FMLA holds one of the two 64-bit-wide FP pipes
//     for 2 cycles; 50% of a nominal 2 x FMLA.4S per cycle)
//   cortex-a76 (LLVM 19's neoverse-n1 model: same core; LLVM's "cortex-a76" is the A57 model):
//     64.0 cycles, 8.0 MACs/cycle = 100% of 2 x FMLA.4S
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>

#include "dense/dense_neon.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 4;

// Rows [r, r + R) x channels [n, n_stop) (at most 16), R <= 4. The 16 accumulators c<t><v>
// form 4 slots t of 4 vectors v (16 channels). Row i's products of lane L (input k + L) go to
// slot (L % S) * R + i: with fewer than 3 rows, S = 4 / R sets of accumulators take turns over
// the lanes, so that each chain still gets at most 2 FMLAs per iteration (a 1- or 2-row tile
// would otherwise wait on the FMLA latency); the sets are added up at the end.
template <int R>
void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n, size_t n_stop,
          DenseEpilogue e) {
  constexpr int S = R <= 2 ? 4 / R : 1;
  const size_t K = w.in;
  const float* b = static_cast<const float*>(w.panels) + (n / kPanelRows) * K * kPanelRows;
  const float* a0 = in.x + r * in.x_stride;
  const float* a1 = R > 1 ? a0 + in.x_stride : a0;
  const float* a2 = R > 2 ? a1 + in.x_stride : a0;
  const float* a3 = R > 3 ? a2 + in.x_stride : a0;
  float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00,
              c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
#define LINFER_FMLA4(t, L, v)                                                                                 \
  neon::fmla_lane<L>(c##t##0, w0, v), neon::fmla_lane<L>(c##t##1, w1, v), neon::fmla_lane<L>(c##t##2, w2, v), \
      neon::fmla_lane<L>(c##t##3, w3, v);
#define LINFER_ROW(i, L)               \
  if constexpr (i < R) {               \
    constexpr int t = (L % S) * R + i; \
    if constexpr (t == 0) {            \
      LINFER_FMLA4(0, L, v##i)         \
    } else if constexpr (t == 1) {     \
      LINFER_FMLA4(1, L, v##i)         \
    } else if constexpr (t == 2) {     \
      LINFER_FMLA4(2, L, v##i)         \
    } else {                           \
      LINFER_FMLA4(3, L, v##i)         \
    }                                  \
  }
  // One k step: the panel's 16 weights of input k times lane L of each row's inputs. The loads
  // are inline asm with post-increment addressing, one 4-register LD1 per k step and one LDR
  // per row and 4 k steps, with no address arithmetic: GCC 12 turns vld1q_f32_x4 and running
  // pointers into an ADD per load. LD1 of 4 registers needs 4 consecutive ones: w0..w3 are
  // bound to v28..v31 (a local register variable is honoured in asm operands).
  const float* bp = b;
  const float *p0 = a0, *p1 = a1, *p2 = a2, *p3 = a3;
  register float32x4_t w0 __asm__("v28"), w1 __asm__("v29"), w2 __asm__("v30"), w3 __asm__("v31");
#define LINFER_STEP(L)                                                  \
  {                                                                     \
    LINFER_NEON_LD1X4_ADVANCE("v28.4s - v31.4s", w0, w1, w2, w3, bp);   \
    LINFER_ROW(0, L) LINFER_ROW(1, L) LINFER_ROW(2, L) LINFER_ROW(3, L) \
  }
#define LINFER_STEP4                                                                                                \
  {                                                                                                                 \
    float32x4_t v0, v1, v2, v3;                                                                                     \
    neon::load_advance(v0, p0), neon::load_advance(v1, p1), neon::load_advance(v2, p2), neon::load_advance(v3, p3); \
    LINFER_STEP(0) LINFER_STEP(1) LINFER_STEP(2) LINFER_STEP(3)                                                     \
  }
  // The full tile takes 8 k steps per iteration: the loop's own instructions (compare, branch)
  // once per 128 FMLAs; the remainder tiles (fewer rows, rarely run) 4, for less code.
  constexpr size_t kSteps = R == int(kRows) ? 8 : 4;
  size_t k = K / kSteps * kSteps;
  for (const float* const p0_stop = a0 + k; p0 != p0_stop;) {
    LINFER_STEP4
    if constexpr (kSteps == 8) LINFER_STEP4
  }
  if (kSteps == 8 && k + 4 <= K) {
    LINFER_STEP4
    k += 4;
  }
  for (; k < K; ++k) {  // the last K % 4 inputs, lane 0 (slots of set 0)
    const float32x4_t v0 = vld1q_dup_f32(p0++), v1 = vld1q_dup_f32(p1++), v2 = vld1q_dup_f32(p2++),
                      v3 = vld1q_dup_f32(p3++);
    LINFER_STEP(0)
  }
#undef LINFER_STEP4
#undef LINFER_STEP
#undef LINFER_ROW
#undef LINFER_FMLA4
  float32x4_t acc[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}};
  for (int s = 1; s < S; ++s)
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < 4; ++v) acc[i][v] = vaddq_f32(acc[i][v], acc[s * R + i][v]);
  float bias_tail[kPanelRows];
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  const float32x4_t b0 = vld1q_f32(bias), b1 = vld1q_f32(bias + 4), b2 = vld1q_f32(bias + 8), b3 = vld1q_f32(bias + 12);
  for (int i = 0; i < R; ++i) {
    float32x4_t v[4] = {vaddq_f32(acc[i][0], b0), vaddq_f32(acc[i][1], b1), vaddq_f32(acc[i][2], b2),
                        vaddq_f32(acc[i][3], b3)};
    neon::store_outputs(y + (r + i) * y_stride + n, v, n_stop - n, e);
  }
}

}  // namespace

LINFER_NEON_FLOAT_RUN(run_f32_neon, kRows)

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
