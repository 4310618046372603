// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights and fp16 arithmetic (ARMv8.2 FP16: FMLA .8H, 8 half-precision
// multiply-adds per instruction; Cortex-A76 = Raspberry Pi 5, HWCAP_ASIMDHP). Opt-in only (session
// option fp16_arithmetic): the f16 sums change results by about 0.5% where dense_f16_neon (f32
// arithmetic) changes them by 0.04% (docs/quantization.md, "fp16 arithmetic on ARMv8.2").
// Reference: run_f16_ref (dense_ref.cc); tests/unit/test_kernels.cc compares the two with a
// tolerance derived from the f16 rounding of the inputs and of every partial sum.
// Tile: 8 rows x one panel of 16 output channels, 16 f16 accumulators (2 per row). The weights are
// FMLA's vector operand as they lie in the f16 panel (K rows of 16 halves); each row's inputs are
// loaded 8 f32 at a time, narrowed to f16 in registers (FCVTN + FCVTN2) and fed to FMLA by
// element, so one conversion serves 8 k steps x 16 channels. The narrowing is repeated for every
// panel the rows meet (4 instructions per row per 8 k steps, against 16 FMLAs): a per-block f16
// copy of the rows would need a scratch buffer that the DenseKernel contract does not have.
// Every accumulator lane is one chain over all K, rounded to f16 at each step; the accumulators
// are widened to f32 for the bias, ReLU / GELU and the store (the f32 kernels' epilogue).
// Overflow guard: f16 ends at 65504. A tile whose accumulators hold an inf or NaN at the end
// (an input beyond the f16 range converts to inf, a partial sum beyond it rounds to inf, and inf
// stays inf or becomes NaN) is computed again by dense_f16_neon, in f32, before anything is
// stored: a large activation costs time, never an inf. (Inputs smaller than 2^-14 lose bits as
// f16 subnormals; that is part of the accuracy measured, not guarded.)
// Only the functions that carry LINFER_FP16_ARITH contain fp16 instructions (as dotprod in
// dense_int8_neondot.cc: no per-file -march flag, so no inline function shared with other files
// gets them); dense_select.cc hands this kernel out only where the CPU reports ASIMDHP.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dense/dense_neon.h"

#define LINFER_FP16_ARITH __attribute__((target("arch=armv8.2-a+fp16")))

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 8;

// acc += w * a[L] in half precision (FMLA by element). Inline asm as neon::fmla_lane: GCC 12
// turns vfmaq_laneq_f16 into DUP + FMLA when two FMLAs share the lane. The .h element form takes
// its vector from v0-v15 only ("x").
template <int L>
LINFER_FP16_ARITH inline void fmla_lane_h(float16x8_t& acc, float16x8_t w, float16x8_t a) {
  __asm__ volatile("fmla %0.8h, %1.8h, %2.h[%3]" : "+w"(acc) : "w"(w), "x"(a), "i"(L));
}

// The 8 inputs at p as f16 (round to nearest; beyond 65504: inf, which the guard catches).
inline float16x8_t load_f16(const float* p) { return vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(p)), vld1q_f32(p + 4)); }

// Whether every lane of the R x 2 accumulators is finite: |c| < inf is false for inf and NaN.
template <int R>
LINFER_FP16_ARITH bool all_finite(const float16x8_t (&acc)[8][2]) {
  const float16x8_t inf = vreinterpretq_f16_u16(vdupq_n_u16(0x7c00));
  uint16x8_t ok = vdupq_n_u16(0xffff);
  for (int i = 0; i < R; ++i)
    for (int h = 0; h < 2; ++h) ok = vandq_u16(ok, vcaltq_f16(acc[i][h], inf));
  return vminvq_u16(ok) != 0;
}

// The f32 recomputation of a tile that left the f16 range: rows [r, r + R) x channels
// [n, n_stop) by dense_f16_neon. GELU is left out here because the walk applies it to the whole
// row block afterwards (for_each_tile).
__attribute__((noinline, cold)) void tile_f32(const DenseWeights& w, const DenseInput& in, size_t r, size_t R, float* y,
                                              size_t y_stride, size_t n, size_t n_stop, DenseEpilogue e) {
  DenseInput rows_in = in;
  rows_in.x = in.x + r * in.x_stride;
  DenseEpilogue no_gelu = e;
  if (e.activation == DenseActivation::GeluErf || e.activation == DenseActivation::GeluTanh)
    no_gelu.activation = DenseActivation::None;
  run_f16_neon(w, rows_in, R, y + r * y_stride, y_stride, n, n_stop, no_gelu);
}

// Rows [r, r + R) x channels [n, n_stop) (one panel, at most 16 channels), R <= 8. Accumulators
// c<row><half>: half 0 holds channels 0-7 of the panel, half 1 channels 8-15.
template <int R>
LINFER_FP16_ARITH void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n,
                            size_t n_stop, DenseEpilogue e) {
  const size_t K = w.in;
  const float16_t* b =
      reinterpret_cast<const float16_t*>(static_cast<const uint16_t*>(w.panels)) + (n / kPanelRows) * K * kPanelRows;
  const size_t xs = in.x_stride;
  const float* a0 = in.x + r * xs;
  const float* a1 = R > 1 ? a0 + xs : a0;
  const float* a2 = R > 2 ? a1 + xs : a0;
  const float* a3 = R > 3 ? a2 + xs : a0;
  const float* a4 = R > 4 ? a3 + xs : a0;
  const float* a5 = R > 5 ? a4 + xs : a0;
  const float* a6 = R > 6 ? a5 + xs : a0;
  const float* a7 = R > 7 ? a6 + xs : a0;
  float16x8_t c00 = vreinterpretq_f16_u16(vdupq_n_u16(0)), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
              c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00,
              c71 = c00;
#define LINFER_ROW(i, L)               \
  if constexpr (i < R) {               \
    fmla_lane_h<L>(c##i##0, w0, v##i); \
    fmla_lane_h<L>(c##i##1, w1, v##i); \
  }
#define LINFER_STEP(L)                                                                                    \
  {                                                                                                       \
    const float16x8_t w0 = vld1q_f16(bk + 16 * (L)), w1 = vld1q_f16(bk + 16 * (L) + 8);                   \
    LINFER_ROW(0, L)                                                                                      \
    LINFER_ROW(1, L)                                                                                      \
    LINFER_ROW(2, L) LINFER_ROW(3, L) LINFER_ROW(4, L) LINFER_ROW(5, L) LINFER_ROW(6, L) LINFER_ROW(7, L) \
  }
  size_t k = 0;
  for (; k + 8 <= K; k += 8) {
    float16x8_t v0 = load_f16(a0 + k), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0, v6 = v0, v7 = v0;
    if constexpr (R > 1) v1 = load_f16(a1 + k);
    if constexpr (R > 2) v2 = load_f16(a2 + k);
    if constexpr (R > 3) v3 = load_f16(a3 + k);
    if constexpr (R > 4) v4 = load_f16(a4 + k);
    if constexpr (R > 5) v5 = load_f16(a5 + k);
    if constexpr (R > 6) v6 = load_f16(a6 + k);
    if constexpr (R > 7) v7 = load_f16(a7 + k);
    const float16_t* bk = b + k * kPanelRows;
    LINFER_STEP(0)
    LINFER_STEP(1) LINFER_STEP(2) LINFER_STEP(3) LINFER_STEP(4) LINFER_STEP(5) LINFER_STEP(6) LINFER_STEP(7)
  }
  for (; k < K; ++k) {  // the last K % 8 inputs, one at a time in lane 0
    const float16x8_t v0 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a0[k])), vcvt_f16_f32(vdupq_n_f32(0.0f)));
    float16x8_t v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0, v6 = v0, v7 = v0;
    if constexpr (R > 1) v1 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a1[k])), vget_low_f16(v0));
    if constexpr (R > 2) v2 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a2[k])), vget_low_f16(v0));
    if constexpr (R > 3) v3 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a3[k])), vget_low_f16(v0));
    if constexpr (R > 4) v4 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a4[k])), vget_low_f16(v0));
    if constexpr (R > 5) v5 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a5[k])), vget_low_f16(v0));
    if constexpr (R > 6) v6 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a6[k])), vget_low_f16(v0));
    if constexpr (R > 7) v7 = vcombine_f16(vcvt_f16_f32(vdupq_n_f32(a7[k])), vget_low_f16(v0));
    const float16_t* bk = b + k * kPanelRows;
    LINFER_STEP(0)
  }
#undef LINFER_STEP
#undef LINFER_ROW
  const float16x8_t acc[8][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                 {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  if (!all_finite<R>(acc)) return tile_f32(w, in, r, R, y, y_stride, n, n_stop, e);
  float bias_tail[kPanelRows];
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  float32x4_t bv[4];
  for (int j = 0; j < 4; ++j) bv[j] = vld1q_f32(bias + 4 * j);
  for (int i = 0; i < R; ++i) {
    float32x4_t out[4] = {
        vaddq_f32(vcvt_f32_f16(vget_low_f16(acc[i][0])), bv[0]), vaddq_f32(vcvt_high_f32_f16(acc[i][0]), bv[1]),
        vaddq_f32(vcvt_f32_f16(vget_low_f16(acc[i][1])), bv[2]), vaddq_f32(vcvt_high_f32_f16(acc[i][1]), bv[3])};
    neon::store_outputs(y + (r + i) * y_stride + n, out, n_stop - n, e);
  }
}

}  // namespace

LINFER_NEON_FLOAT_RUN(run_f16_neonfp16, kRows)

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
