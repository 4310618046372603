// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on ARMv8.0 NEON without the dot product (Cortex-A72: Raspberry
// Pi 4), and the activation quantizer of both Arm int8 kernels (quantize_s8_neon).
// Arithmetic: SMULL / SMULL2 multiply 8 weight bytes by 8 input bytes into int16; SMLAL / SMLAL2
// add the products of the next group of 4 inputs (two products of values in [-127, 127] fit an
// int16: linfer/types/int8.h); SADALP adds neighbouring int16 pairs into the int32
// accumulators. An accumulator thus holds 2 channels x 2 partial sums, folded by ADDP at the
// end; the sums are exact, and dequantized as the reference does.
// Tile: 2 rows x one panel of 16 output channels: 16 int32 accumulators (8 per row), one
// 16-byte weight vector (4 channels x 4 inputs) per group serves both rows, each row's group of
// 4 inputs is broadcast to a vector (one LD1R). Per 2 groups (one loop iteration): 2 weight loads
// (4-register LD1), 4 broadcasts, 32 SMULL/SMLAL(2), 16 SADALP, 2 loop instructions: 56
// instructions for 256 MACs (68 with 16-byte weight loads, LDR + DUP broadcasts and address
// arithmetic, before issue 37). The multiplies are the bottleneck: SMULL / SMLAL
// issue on one pipe only (F0 on the A72, V0 on the A76), 8 products each, so the peak of this
// scheme is 8 MACs per cycle; SADALP and the input broadcasts go to the other pipe.
// llvm-mca on the inner loop (2 groups of 4 inputs = 32 SMULL/SMLAL(2) = 256 MACs, GCC 12 -O3):
//   cortex-a72 (LLVM's Cortex-A57 model, LLVM 14 and 19): 32.0 cycles, 8.0 MACs per cycle = 100%
//     of the one multiply pipe
//   cortex-a76 (LLVM 19's neoverse-n1 model): 32.0 cycles, 8.0 MACs/cycle = 100% of the same
//     scheme, 25% of SDOT's 32 (dense_int8_neondot.cc is the A76's kernel)
//   1 row: 100% on both.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dense/dense_neon.h"
#include "linfer/types/int8.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 2;

// The multiplies and accumulations as volatile inline asm: with the intrinsics GCC 12's
// pre-allocation scheduler starts all 16 products of an iteration before the first SADALP and
// spills 6 accumulators to the stack on every iteration; volatile asm keeps the program order
// (the cores reorder within their windows anyway), so few temporaries are live at a time.
inline void smull_lo(int16x8_t& p, int8x16_t w, int8x16_t a) {
  __asm__ volatile("smull %0.8h, %1.8b, %2.8b" : "=w"(p) : "w"(w), "w"(a));
}
inline void smull_hi(int16x8_t& p, int8x16_t w, int8x16_t a) {
  __asm__ volatile("smull2 %0.8h, %1.16b, %2.16b" : "=w"(p) : "w"(w), "w"(a));
}
inline void smlal_lo(int16x8_t& p, int8x16_t w, int8x16_t a) {
  __asm__ volatile("smlal %0.8h, %1.8b, %2.8b" : "+w"(p) : "w"(w), "w"(a));
}
inline void smlal_hi(int16x8_t& p, int8x16_t w, int8x16_t a) {
  __asm__ volatile("smlal2 %0.8h, %1.16b, %2.16b" : "+w"(p) : "w"(w), "w"(a));
}
inline void sadalp(int32x4_t& acc, int16x8_t p) { __asm__ volatile("sadalp %0.4s, %1.8h" : "+w"(acc) : "w"(p)); }

// Rows [r, r + R) x channels [n, n_stop) (at most 16), R <= 2.
template <int R>
void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n, size_t n_stop,
          DenseEpilogue e) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const int8_t* b = static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * kg * 64;
  const int8_t* q0 = in.q + r * in.q_stride;
  const int8_t* q1 = R > 1 ? q0 + in.q_stride : q0;
  // c<i><j>: row i, channels 2j, 2j + 1 of the panel, 2 partial sums each.
  int32x4_t c00 = vdupq_n_s32(0), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00, c06 = c00, c07 = c00,
            c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00, c16 = c00, c17 = c00;
  // Weight vector j (channels 4j..4j+3) of groups g (wa<j>) and g + 1 (wb<j>) times both rows.
  // The loads are inline asm with post-increment addressing: each group's 64 weight bytes in one
  // 4-register LD1 (into v24..v27 and v28..v31: LD1 needs consecutive registers, and a local
  // register variable is honoured in asm operands), each row's group of 4 inputs broadcast by one
  // LD1R; GCC 12 would add an ADD per load and an LDR + DUP per broadcast.
  const int8_t* wp = b;
  const int8_t *p0 = q0, *p1 = q1;
  register int8x16_t wa0 __asm__("v24"), wa1 __asm__("v25"), wa2 __asm__("v26"), wa3 __asm__("v27");
  register int8x16_t wb0 __asm__("v28"), wb1 __asm__("v29"), wb2 __asm__("v30"), wb3 __asm__("v31");
#define LINFER_PAIR_ROW(i, j, lo, hi)                                           \
  if constexpr (i < R) {                                                        \
    int16x8_t pl, ph;                                                           \
    smull_lo(pl, wa##j, a##i), smlal_lo(pl, wb##j, b##i), sadalp(c##i##lo, pl); \
    smull_hi(ph, wa##j, a##i), smlal_hi(ph, wb##j, b##i), sadalp(c##i##hi, ph); \
  }
#define LINFER_PAIR(j, lo, hi) LINFER_PAIR_ROW(0, j, lo, hi) LINFER_PAIR_ROW(1, j, lo, hi)
  size_t g = kg / 2 * 2;
  for (const int8_t* const wp_stop = b + g * 64; wp != wp_stop;) {
    LINFER_NEON_LD1X4_ADVANCE("v24.16b - v27.16b", wa0, wa1, wa2, wa3, wp);
    LINFER_NEON_LD1X4_ADVANCE("v28.16b - v31.16b", wb0, wb1, wb2, wb3, wp);
    int8x16_t a0, b0, a1, b1;
    neon::broadcast_advance(a0, p0), neon::broadcast_advance(b0, p0);
    if constexpr (R > 1) neon::broadcast_advance(a1, p1), neon::broadcast_advance(b1, p1);
    LINFER_PAIR(0, 0, 1) LINFER_PAIR(1, 2, 3) LINFER_PAIR(2, 4, 5) LINFER_PAIR(3, 6, 7)
  }
#undef LINFER_PAIR
#undef LINFER_PAIR_ROW
  if (g < kg) {  // an odd last group
    const int8_t* wg = b + g * 64;
    const int8x16_t a0 = neon::broadcast_group(q0, g), a1 = neon::broadcast_group(q1, g);
#define LINFER_ONE_ROW(i, j, lo, hi)              \
  if constexpr (i < R) {                          \
    int16x8_t pl, ph;                             \
    smull_lo(pl, wa, a##i), sadalp(c##i##lo, pl); \
    smull_hi(ph, wa, a##i), sadalp(c##i##hi, ph); \
  }
#define LINFER_ONE(j, lo, hi)                                 \
  {                                                           \
    const int8x16_t wa = vld1q_s8(wg + 16 * j);               \
    LINFER_ONE_ROW(0, j, lo, hi) LINFER_ONE_ROW(1, j, lo, hi) \
  }
    LINFER_ONE(0, 0, 1) LINFER_ONE(1, 2, 3) LINFER_ONE(2, 4, 5) LINFER_ONE(3, 6, 7)
#undef LINFER_ONE
#undef LINFER_ONE_ROW
  }
  float scale_tail[kPanelRows], bias_tail[kPanelRows];
  const float* ws = channel_block(w.scales, n, w.out, scale_tail);
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  // Row by row, not through an array of both rows' sums indexed in a loop: GCC 12 keeps such an
  // array on the stack (8 stores and 8 loads per tile, and the epilogue called out of line).
  float* y0 = y + r * y_stride + n;
  const int32x4_t sums0[4] = {vpaddq_s32(c00, c01), vpaddq_s32(c02, c03), vpaddq_s32(c04, c05), vpaddq_s32(c06, c07)};
  neon::store_int8_outputs(sums0, in.q_scales[r], ws, bias, y0, n_stop - n, e);
  if constexpr (R > 1) {
    const int32x4_t sums1[4] = {vpaddq_s32(c10, c11), vpaddq_s32(c12, c13), vpaddq_s32(c14, c15), vpaddq_s32(c16, c17)};
    neon::store_int8_outputs(sums1, in.q_scales[r + 1], ws, bias, y0 + y_stride, n_stop - n, e);
  }
}

}  // namespace

LINFER_NEON_INT8_RUN(run_int8_neon, kRows)

// linfer/types/int8.h, 16 values at a time: the same amax (a NaN never replaces it: FMAXNM returns
// the number when one operand is NaN, which is the reference's `fabs(x) > amax` keeping amax),
// the same scalar scale and inverse, q = FCVTNS(x * inv) (round to nearest, ties to even, as
// nearbyint; NaN gives 0, out-of-range values saturate), clamped to [-127, 127] by saturating
// narrows (SQXTN to int16, then int8) and one SMAX with -127: the clamp of the reference for
// every int32, in 4 instructions per 16 values fewer than clamping each int32 vector.
LINFER_DENSE_QUANTIZE(quantize_s8_neon) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  const int8x16_t lo = vdupq_n_s8(-127);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    int8_t* qr = q + r * q_stride;
    float32x4_t m0 = vdupq_n_f32(0.0f), m1 = m0;
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
      m0 = vmaxnmq_f32(m0, vabsq_f32(vld1q_f32(xr + i)));
      m1 = vmaxnmq_f32(m1, vabsq_f32(vld1q_f32(xr + i + 4)));
    }
    // Lanes hold no NaN: FMAXV and FMAX are exact maxima here.
    float amax = vmaxvq_f32(vmaxq_f32(m0, m1));
    for (; i < k; ++i) amax = std::fabs(xr[i]) > amax ? std::fabs(xr[i]) : amax;
    const float scale = amax / 127.0f;
    const float inv = amax > 0.0f ? 1.0f / scale : 0.0f;
    const float32x4_t vinv = vdupq_n_f32(inv);
    auto convert4 = [&](const float* p) { return vcvtnq_s32_f32(vmulq_f32(vld1q_f32(p), vinv)); };
    for (i = 0; i + 16 <= k; i += 16) {
      const int16x8_t h0 = vqmovn_high_s32(vqmovn_s32(convert4(xr + i)), convert4(xr + i + 4));
      const int16x8_t h1 = vqmovn_high_s32(vqmovn_s32(convert4(xr + i + 8)), convert4(xr + i + 12));
      vst1q_s8(qr + i, vmaxq_s8(vqmovn_high_s16(vqmovn_s16(h0), h1), lo));
    }
    for (; i < k; ++i) qr[i] = quantize_int8(xr[i], inv);
    std::memset(qr + k, 0, padded - k);
    scales[r] = amax > 0.0f ? scale : 0.0f;
  }
}

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
