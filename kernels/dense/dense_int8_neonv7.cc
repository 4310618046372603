// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on 32-bit ARMv7 NEON (Cortex-A7: Raspberry Pi 2; A53 and A72
// under a 32-bit OS: Pi 3 and 4), and the activation quantizer they read (quantize_s8_neonv7).
// Arithmetic: VMULL.S8 multiplies 8 weight bytes (2 channels x 4 inputs) by the row's group of 4
// inputs (twice, one d register) into int16; VMLAL.S8 adds the products of the next group (two
// products of values in [-127, 127] fit an int16: linfer/types/int8.h); VPADAL.S16 adds
// neighbouring int16 pairs into the int32 accumulators. An accumulator thus holds 2 channels x 2
// partial sums, folded by VPADD at the end; the sums are exact, and dequantized as the reference
// does (the epilogue below keeps that true for subnormals, which NEON flushes).
// Tile: 1 row x one panel of 16 output channels: 8 int32 accumulators, the 2 weight vectors of a
// pair of groups, 1 product and the 2 input groups; 2 rows would need 16 accumulators, all of the
// 16 q registers. Each row reads the whole panel (K x 16 bytes: 12 KiB for 768 inputs), which the
// rows of a row block take in turn from L1 (from L2 for the widest layers).
// llvm-mca-14 on the inner loop (2 groups of 4 inputs x 16 channels = 16 VMULL/VMLAL = 128 MACs,
// GCC 12 -O3, Thumb-2), a model figure: cortex-a72 (LLVM's Cortex-A57 model, which issues the
// integer multiplies on one pipe; none exists for the A7 or A53 in 32-bit mode): 16.5 cycles,
// 7.75 MACs/cycle = 97% of one 8-lane multiply per cycle.
#if defined(__arm__)
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dense/dense_neonv7.h"
#include "linfer/types/int8.h"

namespace linfer::kernels::dense {
namespace {

// Lanes of v whose value is subnormal (nonzero, below 2^-126 in magnitude), from the bits: NEON
// compares would see them as zero.
LINFER_NEONV7 inline uint32x4_t subnormal(float32x4_t v) {
  const uint32x4_t m = vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x7fffffffu));
  return vandq_u32(vtstq_u32(m, m), vcltq_u32(m, vdupq_n_u32(0x00800000u)));
}

// The int8 epilogue of one row of 16 channels: sums[i] holds the exact integer sums of channels
// 4i..4i+3, dequantized as the reference does, fma(float(sum), x_scale * w_scale, bias) (VFMA:
// one rounding), then ReLU and accumulate. ARMv7 NEON flushes subnormal inputs and results to
// zero, so a row where a scale product, a result or an output is zero or subnormal (below 2^-126:
// the flush makes the two alike), a bias or an accumulated output is subnormal, or a result is NaN
// (NEON's ReLU keeps it, the reference's gives 0), is done again in scalar VFP code, which keeps
// subnormals: the reference's bits in every case, for a few compares per 16 outputs.
LINFER_NEONV7 inline void store_int8_outputs(const int32x4_t (&sums)[4], float x_scale, const float* ws,
                                             const float* bias, float* dst, size_t count, DenseEpilogue e) {
  const float32x4_t xs = vdupq_n_f32(x_scale), normal = vdupq_n_f32(1.17549435e-38f);  // 2^-126
  float old[kPanelRows] = {}, out[kPanelRows];
  if (e.accumulate) std::memcpy(old, dst, count * sizeof(float));
  uint32x4_t redo = vdupq_n_u32(0);
  for (int i = 0; i < 4; ++i) {
    const float32x4_t b = vld1q_f32(bias + 4 * i), s = vmulq_f32(vld1q_f32(ws + 4 * i), xs);
    const float32x4_t v = vfmaq_f32(b, vcvtq_f32_s32(sums[i]), s);
    float32x4_t o = e.activation == DenseActivation::Relu ? vmaxq_f32(v, vdupq_n_f32(0.0f)) : v;
    redo = vorrq_u32(redo, vorrq_u32(vcltq_f32(vabsq_f32(s), normal), vcltq_f32(vabsq_f32(v), normal)));
    redo = vorrq_u32(redo, vorrq_u32(subnormal(b), vmvnq_u32(vceqq_f32(v, v))));
    if (e.accumulate) {
      const float32x4_t d = vld1q_f32(old + 4 * i);
      o = vaddq_f32(d, o);
      redo = vorrq_u32(redo, vorrq_u32(subnormal(d), vcltq_f32(vabsq_f32(o), normal)));
    }
    vst1q_f32(out + 4 * i, o);
  }
  const uint32x2_t any = vorr_u32(vget_low_u32(redo), vget_high_u32(redo));
  if ((vget_lane_u32(any, 0) | vget_lane_u32(any, 1)) == 0) {
    std::memcpy(dst, out, count * sizeof(float));
    return;
  }
  int32_t sum[kPanelRows];
  for (int i = 0; i < 4; ++i) vst1q_s32(sum + 4 * i, sums[i]);
  for (size_t j = 0; j < count; ++j) {
    float value = std::fma(float(sum[j]), x_scale * ws[j], bias[j]);
    if (e.activation == DenseActivation::Relu) value = value > 0.0f ? value : 0.0f;
    dst[j] = e.accumulate ? dst[j] + value : value;
  }
}

// Channels 2j, 2j + 1 from an accumulator of 2 partial sums each, for 4 channels at once.
LINFER_NEONV7 inline int32x4_t fold(int32x4_t lo, int32x4_t hi) {
  return vcombine_s32(vpadd_s32(vget_low_s32(lo), vget_high_s32(lo)), vpadd_s32(vget_low_s32(hi), vget_high_s32(hi)));
}

// The multiplies and accumulations as volatile inline asm: with the intrinsics GCC 12 starts the
// products of a whole iteration ahead of their VPADALs and spills an accumulator to the stack on
// every iteration; volatile asm keeps the program order, so few temporaries are live at a time.
LINFER_NEONV7 inline void vmull(int16x8_t& p, int8x8_t w, int8x8_t a) {
  __asm__ volatile("vmull.s8 %q0, %P1, %P2" : "=w"(p) : "w"(w), "w"(a));
}
LINFER_NEONV7 inline void vmlal(int16x8_t& p, int8x8_t w, int8x8_t a) {
  __asm__ volatile("vmlal.s8 %q0, %P1, %P2" : "+w"(p) : "w"(w), "w"(a));
}
LINFER_NEONV7 inline void vpadal(int32x4_t& acc, int16x8_t p) {
  __asm__ volatile("vpadal.s16 %q0, %q1" : "+w"(acc) : "w"(p));
}

// Row r x channels [n, n_stop) (at most 16).
LINFER_NEONV7 void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n,
                        size_t n_stop, DenseEpilogue e) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const int8_t* b = static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * kg * 64;
  const int8_t* q = in.q + r * in.q_stride;
  // c<j>: channels 2j, 2j + 1 of the panel, 2 partial sums each.
  int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  // Weight vector j (channels 4j..4j+3) of groups g and g + 1 times the row's two groups: the low
  // and the high 8 bytes (channels 4j, 4j + 1 and 4j + 2, 4j + 3) each.
#define LINFER_PAIR(j, lo, hi)                                                        \
  {                                                                                   \
    const int8x16_t wa = vld1q_s8(b + 16 * j), wb = vld1q_s8(b + 64 + 16 * j);        \
    int16x8_t p;                                                                      \
    vmull(p, vget_low_s8(wa), qa), vmlal(p, vget_low_s8(wb), qb), vpadal(c##lo, p);   \
    vmull(p, vget_high_s8(wa), qa), vmlal(p, vget_high_s8(wb), qb), vpadal(c##hi, p); \
  }
  size_t g = 0;
  for (; g + 2 <= kg; g += 2, b += 128) {
    const int8x8_t qa = neonv7::broadcast_group(q, g), qb = neonv7::broadcast_group(q, g + 1);
    LINFER_PAIR(0, 0, 1) LINFER_PAIR(1, 2, 3) LINFER_PAIR(2, 4, 5) LINFER_PAIR(3, 6, 7)
  }
#undef LINFER_PAIR
  if (g < kg) {  // an odd last group
    const int8x8_t qa = neonv7::broadcast_group(q, g);
#define LINFER_ONE(j, lo, hi)                         \
  {                                                   \
    const int8x16_t wa = vld1q_s8(b + 16 * j);        \
    int16x8_t p;                                      \
    vmull(p, vget_low_s8(wa), qa), vpadal(c##lo, p);  \
    vmull(p, vget_high_s8(wa), qa), vpadal(c##hi, p); \
  }
    LINFER_ONE(0, 0, 1) LINFER_ONE(1, 2, 3) LINFER_ONE(2, 4, 5) LINFER_ONE(3, 6, 7)
#undef LINFER_ONE
  }
  const int32x4_t sums[4] = {fold(c0, c1), fold(c2, c3), fold(c4, c5), fold(c6, c7)};
  float scale_tail[kPanelRows], bias_tail[kPanelRows];
  const float* ws = channel_block(w.scales, n, w.out, scale_tail);
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
  store_int8_outputs(sums, in.q_scales[r], ws, bias, y + r * y_stride + n, n_stop - n, e);
}

}  // namespace

LINFER_DENSE_RUN(run_int8_neonv7) {
  neon::run_tiles<1>(rows, neonv7::kInt8RowBlockBytes, in.q_stride, n_begin, n_end, y, y_stride, e.activation,
                     [&](size_t r, auto, size_t n, size_t n_stop) { tile(w, in, r, y, y_stride, n, n_stop, e); });
}

// linfer/types/int8.h, 16 values at a time, giving the same bytes and scales. ARMv7 NEON has
// no rounding conversion (VCVTN is ARMv8) and its arithmetic always flushes subnormal inputs and
// results to zero, so:
// - amax on the bit patterns: |x| as unsigned integers orders like the magnitudes, subnormals
//   included; NaNs (patterns above infinity's) are skipped, as the reference's fabs(x) > amax
//   skips them;
// - the scale and its inverse in scalar VFP code, the reference's own expressions;
// - rows whose amax is below 2^-117 go through the reference: only there can a subnormal x
//   (flushed to 0 by NEON) have |x * inv| >= 1/2 and a nonzero q in the reference. Above it every
//   product that NEON flushes rounds to 0 in the reference too (|x| < 2^-126, inv < 2^124);
// - q = round(clamp(x * inv, -127, 127)): the clamp first (VMAX/VMIN; a NaN stays NaN), then
//   rounding to nearest, ties to even, by adding and subtracting 1.5 * 2^23 (NEON rounds to
//   nearest; exact for |v| <= 127, and the magic number is even so ties go to even q), then the
//   truncating conversion of the integral value (a NaN converts to 0, the reference's q for NaN).
LINFER_NEONV7 void quantize_row_neonv7(const float* xr, size_t k, int8_t* qr, float* scale_out) {
  const uint32x4_t magnitude = vdupq_n_u32(0x7fffffffu), infinity = vdupq_n_u32(0x7f800000u);
  uint32x4_t m0 = vdupq_n_u32(0), m1 = m0;
  size_t i = 0;
  for (; i + 8 <= k; i += 8) {
    uint32x4_t u0 = vandq_u32(vld1q_u32(reinterpret_cast<const uint32_t*>(xr + i)), magnitude);
    uint32x4_t u1 = vandq_u32(vld1q_u32(reinterpret_cast<const uint32_t*>(xr + i + 4)), magnitude);
    m0 = vmaxq_u32(m0, vandq_u32(u0, vcleq_u32(u0, infinity)));
    m1 = vmaxq_u32(m1, vandq_u32(u1, vcleq_u32(u1, infinity)));
  }
  uint32x2_t m = vpmax_u32(vget_low_u32(vmaxq_u32(m0, m1)), vget_high_u32(vmaxq_u32(m0, m1)));
  uint32_t amax_bits = std::max(vget_lane_u32(m, 0), vget_lane_u32(m, 1));
  for (; i < k; ++i) {
    uint32_t u;
    std::memcpy(&u, xr + i, 4);
    u &= 0x7fffffffu;
    if (u <= 0x7f800000u && u > amax_bits) amax_bits = u;
  }
  if (amax_bits < 0x05000000u) {  // amax < 2^-117, or zero
    *scale_out = quantize_row_int8(xr, k, qr);
    return;
  }
  float amax;
  std::memcpy(&amax, &amax_bits, 4);
  const float scale = amax / 127.0f;
  const float inv = 1.0f / scale;
  const float32x4_t vinv = vdupq_n_f32(inv), lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f),
                    magic = vdupq_n_f32(12582912.0f);  // 1.5 * 2^23
  auto quantize4 = [&](const float* p) LINFER_NEONV7 {
    const float32x4_t v = vminq_f32(vmaxq_f32(vmulq_f32(vld1q_f32(p), vinv), lo), hi);
    return vcvtq_s32_f32(vsubq_f32(vaddq_f32(v, magic), magic));
  };
  for (i = 0; i + 16 <= k; i += 16) {
    const int16x8_t h0 = vcombine_s16(vmovn_s32(quantize4(xr + i)), vmovn_s32(quantize4(xr + i + 4)));
    const int16x8_t h1 = vcombine_s16(vmovn_s32(quantize4(xr + i + 8)), vmovn_s32(quantize4(xr + i + 12)));
    vst1q_s8(qr + i, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
  }
  for (; i < k; ++i) qr[i] = quantize_int8(xr[i], inv);  // the reference's scalar steps
  *scale_out = scale;
}

LINFER_DENSE_QUANTIZE(quantize_s8_neonv7) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  for (size_t r = 0; r < rows; ++r) {
    int8_t* qr = q + r * q_stride;
    quantize_row_neonv7(x + r * x_stride, k, qr, scales + r);
    std::memset(qr + k, 0, padded - k);
  }
}

}  // namespace linfer::kernels::dense
#endif  // __arm__
