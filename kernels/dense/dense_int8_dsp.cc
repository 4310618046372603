// SPDX-License-Identifier: Apache-2.0
// int8 dense layers on the Arm DSP extension (Cortex-M4, M7, M33, M55; every ARMv7-A core in 32-bit
// mode): SMLAD multiplies two pairs of int16 and adds both products to an int32 accumulator, two
// multiply-adds per instruction. The weights stay int8 in their panels (in flash on a
// microcontroller) and are widened in registers: of a group of four int8, SXTB16 gives bytes 0
// and 2 as two int16, SXTB16 with ROR #8 bytes 1 and 3. The activations are quantized straight
// into that order, int16 as q0 q2 q1 q3 per group (Int8Form::S16Pairs, quantize_s16_pairs), so
// one LDRD gives both of a row's pairs and they need no widening. A tile of 2 rows x 2 output
// channels shares every widened weight between two rows: per group of four inputs 3 loads
// (LDRD), 4 SXTB16 and 8 SMLAD for 16 multiply-adds, and the loop's 2 per two groups: 1.0
// instruction per multiply-add (1.31 with int8 activations widened in the loop: 8 SXTB16 per
// group; docs/microcontrollers.md). Same panels, values and epilogue as dense_int8_ref: bit-exact.
#include <arm_acle.h>

#include <cmath>
#include <cstring>

#include "dense/dense_internal.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kGroupBytes = kPanelRows * kInt8GroupInputs;  // one group of a panel: 64 bytes
constexpr size_t kRowGroupBytes = 2 * kInt8GroupInputs;        // one group of a row: 4 int16

// The 2 x 2 tile's accumulators: acc[r][c] += row r's activations times channel c's weights over
// `count` >= 1 groups of four inputs (w: the panel at channel c = 0, 64 bytes per group; a0, a1:
// the two rows in pairs' order, 8 bytes per group).
struct Tile {
  int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
#if defined(__thumb2__)
  // Hand-scheduled in 14 registers, two groups per iteration (the compiler's schedule of the
  // portable loop below spills from them).
#define LINFER_DSP_GROUP                       \
  "ldrd   %[w0o], %[w1o], [%[w]], %[step]\n\t" \
  "sxtb16 %[w0e], %[w0o]\n\t"                  \
  "sxtb16 %[w0o], %[w0o], ror #8\n\t"          \
  "sxtb16 %[w1e], %[w1o]\n\t"                  \
  "sxtb16 %[w1o], %[w1o], ror #8\n\t"          \
  "ldrd   %[x], %[xo], [%[a0]], #8\n\t"        \
  "smlad  %[a00], %[w0e], %[x], %[a00]\n\t"    \
  "smlad  %[a00], %[w0o], %[xo], %[a00]\n\t"   \
  "smlad  %[a01], %[w1e], %[x], %[a01]\n\t"    \
  "smlad  %[a01], %[w1o], %[xo], %[a01]\n\t"   \
  "ldrd   %[x], %[xo], [%[a1]], #8\n\t"        \
  "smlad  %[a10], %[w0e], %[x], %[a10]\n\t"    \
  "smlad  %[a10], %[w0o], %[xo], %[a10]\n\t"   \
  "smlad  %[a11], %[w1e], %[x], %[a11]\n\t"    \
  "smlad  %[a11], %[w1o], %[xo], %[a11]\n\t"
  void groups(const int8_t* w, const int8_t* a0, const int8_t* a1, size_t count) {
    uint32_t w0o, w1o, w0e, w1e, x, xo;
    size_t pairs = count / 2;
#define LINFER_DSP_OPERANDS                                                                                 \
  : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w] "+r"(w), [a0] "+r"(a0),             \
    [a1] "+r"(a1), [n] "+r"(pairs), [w0o] "=&r"(w0o), [w1o] "=&r"(w1o), [w0e] "=&r"(w0e), [w1e] "=&r"(w1e), \
    [x] "=&r"(x), [xo] "=&r"(xo)                                                                             \
  : [step] "I"(kGroupBytes)                                                                                  \
  : "cc", "memory"
    if (pairs)
      __asm__ volatile("1:\n\t" LINFER_DSP_GROUP LINFER_DSP_GROUP "subs %[n], %[n], #1\n\tbne 1b" LINFER_DSP_OPERANDS);
    if (count % 2) __asm__ volatile(LINFER_DSP_GROUP LINFER_DSP_OPERANDS);
#undef LINFER_DSP_OPERANDS
#undef LINFER_DSP_GROUP
  }
#else
  static uint32_t load32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static uint32_t ror8(uint32_t x) { return (x >> 8) | (x << 24); }  // (GCC 12's arm_acle.h has no __ror)
  void groups(const int8_t* w, const int8_t* a0, const int8_t* a1, size_t count) {
    for (size_t g = 0; g < count; ++g, w += kGroupBytes, a0 += kRowGroupBytes, a1 += kRowGroupBytes) {
      const uint32_t w0 = load32(w), w1 = load32(w + 4);
      const int16x2_t w0e = __sxtb16(w0), w0o = __sxtb16(ror8(w0)), w1e = __sxtb16(w1), w1o = __sxtb16(ror8(w1));
      const int16x2_t x0e = load32(a0), x0o = load32(a0 + 4), x1e = load32(a1), x1o = load32(a1 + 4);
      a00 = __smlad(w0e, x0e, a00), a00 = __smlad(w0o, x0o, a00);
      a01 = __smlad(w1e, x0e, a01), a01 = __smlad(w1o, x0o, a01);
      a10 = __smlad(w0e, x1e, a10), a10 = __smlad(w0o, x1o, a10);
      a11 = __smlad(w1e, x1e, a11), a11 = __smlad(w1o, x1o, a11);
    }
  }
#endif
};

}  // namespace

LINFER_DENSE_RUN(run_int8_dsp) { run_int8_2x2<Tile>(w, in, rows, y, y_stride, n_begin, n_end, e); }

// Rows quantized as every int8 kernel's (quantize_s8_ref: int8 at each row's start), widened in
// place to int16 from the last input down (input i's int16 lands at byte 2i, past every byte
// still to be read), then put in pairs' order.
LINFER_DENSE_QUANTIZE(quantize_s16_pairs) {
  quantize_s8_ref(x, x_stride, rows, k, q, q_stride, scales);
  const size_t padded = int8_padded_inputs(uint32_t(k));
  for (size_t r = 0; r < rows; ++r) {
    const int8_t* narrow = q + r * q_stride;
    int16_t* wide = reinterpret_cast<int16_t*>(q + r * q_stride);
    for (size_t i = padded; i-- > 0;) wide[i] = narrow[i];
    swap_middle_pairs(wide, padded);
  }
}

}  // namespace linfer::kernels::dense
