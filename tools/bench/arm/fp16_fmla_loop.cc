// SPDX-License-Identifier: Apache-2.0
// PROTOTYPE, not a kernel of linfer (issue 37 item 4): the inner loop an f16 dense kernel with fp16
// arithmetic (ARMv8.2 FP16, FMLA .8H; Cortex-A76 = Raspberry Pi 5, HWCAP_ASIMDHP) would run,
// written only to be measured by llvm-mca (tools/bench/arm/mca.sh lists it as fp16_fmla_loop).
// Nothing builds or calls it; docs/quantization.md ("fp16 arithmetic on ARMv8.2 (Pi 5)") has the
// figures and the decision. The kernel made from it: kernels/dense/dense_f16_neonfp16.cc (with
// the input narrowing, remainders and an overflow guard; session option fp16_arithmetic).
// Tile: FP16_TILE_ROWS rows (8 by default; -DFP16_TILE_ROWS=4 for 4) x one panel of 16 output
// channels, 2 x R accumulators of 8 halves each. The weights are read as they lie in the f16
// panel (kernels/include/linfer/types/panel_layout.h: K rows of 16 halves per panel of 16
// channels): one 32-byte load per k step. The input rows must be f16 (a kernel would convert
// each row once, FCVTN, before the tiles: R x K conversions against R x K x N multiply-adds); each
// row's inputs are loaded 8 at a time and fed to FMLA by element, so one load
// serves 8 k steps. Every accumulator lane is one chain over all K (no f32 flushes): the
// "fp16_seq" scheme of tools/python/bench/fp16_arith_accuracy.py.
// Per 8 k steps: 8 weight loads (LDP q) + R input loads + 16 R FMLA .8H (128 R MACs) + the loop.
// llvm-mca (a proxy; GCC 12 -O3; cortex-a76 = LLVM 19's neoverse-n1 model): 8 rows 149 instructions,
// 64.01 cycles per 1024 MACs = 16 MACs/cycle, 100% of 2 x FMLA.8H; 4 rows 81, 32.01 per 512, 100%.
// dense_f16_neon (FCVTL + FMLA .4S): 90 instructions, 42.01 cycles per 256 MACs = 6.09 MACs/cycle.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstddef>

#ifndef FP16_TILE_ROWS
#define FP16_TILE_ROWS 8
#endif

#define FP16_ARITH __attribute__((target("arch=armv8.2-a+fp16")))

namespace {

// acc += w * a[L] in half precision, by element. Inline asm as neon::fmla_lane
// (kernels/dense/dense_neon.h): GCC 12 turns vfmaq_laneq_f16 into a DUP + FMLA when two FMLAs
// share the lane. The .h element form takes its vector from v0-v15 only ("x").
template <int L>
inline void fmla_lane_h(float16x8_t& acc, float16x8_t w, float16x8_t a) {
  __asm__ volatile("fmla %0.8h, %1.8h, %2.h[%3]" : "+w"(acc) : "w"(w), "x"(a), "i"(L));
}

// Named accumulators (c<row><half>): GCC 12 keeps an array of them on the stack here.
template <int R>
FP16_ARITH void tile(const float16_t* panel, size_t K, const float16_t* x, size_t x_stride, const float* bias, float* y,
                     size_t y_stride) {
  static_assert(R >= 1 && R <= 8, "1 to 8 rows");
  float16x8_t c00 = vdupq_n_f16(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
              c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  for (size_t k = 0; k + 8 <= K; k += 8) {  // K % 8 == 0 in this prototype (S: 256, 1024)
    const float16_t* xk = x + k;
    const float16x8_t v0 = vld1q_f16(xk), v1 = vld1q_f16(xk + (R > 1) * x_stride),
                      v2 = vld1q_f16(xk + (R > 2) * 2 * x_stride), v3 = vld1q_f16(xk + (R > 3) * 3 * x_stride),
                      v4 = vld1q_f16(xk + (R > 4) * 4 * x_stride), v5 = vld1q_f16(xk + (R > 5) * 5 * x_stride),
                      v6 = vld1q_f16(xk + (R > 6) * 6 * x_stride), v7 = vld1q_f16(xk + (R > 7) * 7 * x_stride);
    const float16_t* bk = panel + k * 16;
#define FP16_ROW(i, L)                 \
  if constexpr (i < R) {               \
    fmla_lane_h<L>(c##i##0, w0, v##i); \
    fmla_lane_h<L>(c##i##1, w1, v##i); \
  }
#define FP16_STEP(L)                                                                                         \
  {                                                                                                          \
    const float16x8_t w0 = vld1q_f16(bk + 16 * L), w1 = vld1q_f16(bk + 16 * L + 8);                          \
    FP16_ROW(0, L)                                                                                           \
    FP16_ROW(1, L) FP16_ROW(2, L) FP16_ROW(3, L) FP16_ROW(4, L) FP16_ROW(5, L) FP16_ROW(6, L) FP16_ROW(7, L) \
  }
    FP16_STEP(0) FP16_STEP(1) FP16_STEP(2) FP16_STEP(3) FP16_STEP(4) FP16_STEP(5) FP16_STEP(6) FP16_STEP(7)
#undef FP16_STEP
#undef FP16_ROW
  }
  // Epilogue in f32: widen, add the bias (an activation or residual would follow here).
  const float16x8_t acc[8][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                 {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int i = 0; i < R; ++i)
    for (int h = 0; h < 2; ++h) {
      float* out = y + i * y_stride + 8 * h;
      vst1q_f32(out, vaddq_f32(vcvt_f32_f16(vget_low_f16(acc[i][h])), vld1q_f32(bias + 8 * h)));
      vst1q_f32(out + 4, vaddq_f32(vcvt_high_f32_f16(acc[i][h]), vld1q_f32(bias + 8 * h + 4)));
    }
}

}  // namespace

// One tile; exported so that the compiler keeps it.
extern "C" FP16_ARITH void fp16_fmla_tile(const float16_t* panel, size_t K, const float16_t* x, size_t x_stride,
                                          const float* bias, float* y, size_t y_stride) {
  tile<FP16_TILE_ROWS>(panel, K, x, x_stride, bias, y, y_stride);
}
#endif  // __aarch64__
