// SPDX-License-Identifier: Apache-2.0
// int8 dense layers on Helium (the M-profile vector extension, MVE: Cortex-M55, M85). VMLADAVA.S8
// multiplies two int8x16 vectors and adds all 16 products to a scalar int32: 16 multiply-adds per
// instruction. A row's 16 consecutive inputs are one contiguous load (the rows as every int8
// kernel quantizes them, quantize_s8_ref); a channel's 16 inputs are four 32-bit words 64 bytes
// apart in its panel (four groups of the panel layout), which one gather load (VLDRW of four
// addresses 64 bytes apart, stepping 256 bytes by write-back) puts side by side in input order. A tile of 2 rows x 2
// channels shares each gather between two rows and each row's load between two channels: per 16 inputs 2 gathers, 2
// loads and 4 VMLADAVA for 64 multiply-adds. Inputs that are not a whole 16 (1 to 3 groups) end in one predicated step
// (VCTP: the lanes past the row's last group read as zero). Same panels, values and epilogue as dense_int8_ref
// (run_int8_2x2): bit-exact.
//
// Instruction counts are not cycles: on a real M55 a gather fetches its four words one at a time,
// where a contiguous load moves 64 bits per cycle (docs/microcontrollers.md).
#include <arm_mve.h>

#include "dense/dense_internal.h"

namespace linfer::kernels::dense {
namespace {

constexpr size_t kGroupBytes = kPanelRows * kInt8GroupInputs;  // one group of a panel: 64 bytes
constexpr size_t kStepGroups = 4;                              // 16 inputs per vector
constexpr size_t kStepBytes = kStepGroups * kGroupBytes;       // a channel's 16 inputs: 256 bytes of panel

struct Tile {
  int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
  void groups(const int8_t* w, const int8_t* x0, const int8_t* x1, size_t count) {
    const size_t steps = count / kStepGroups;
    if (steps) whole_steps(w, x0, x1, steps);
    const uint32_t rest = uint32_t(count % kStepGroups);  // groups past the last whole 16 inputs
    if (!rest) return;
    w += steps * kStepBytes, x0 += steps * 16, x1 += steps * 16;
    // Zeroing loads: no lane past the row's padded end is read, and each one counts zero.
    const uint32x4_t group_offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), kGroupBytes);
    const mve_pred16_t words = vctp32q(rest), bytes = vctp8q(rest * kInt8GroupInputs);
    const int32_t* w0 = reinterpret_cast<const int32_t*>(w);
    const int8x16_t c0 = vreinterpretq_s8_s32(vldrwq_gather_offset_z_s32(w0, group_offsets, words));
    const int8x16_t c1 = vreinterpretq_s8_s32(vldrwq_gather_offset_z_s32(w0 + 1, group_offsets, words));
    const int8x16_t r0 = vldrbq_z_s8(x0, bytes), r1 = vldrbq_z_s8(x1, bytes);
    a00 = vmladavaq_s8(a00, r0, c0), a01 = vmladavaq_s8(a01, r0, c1);
    a10 = vmladavaq_s8(a10, r1, c0), a11 = vmladavaq_s8(a11, r1, c1);
  }

  // steps >= 1 whole 16 inputs, by hand: GCC 12 compiles vldrwq_gather_base_wb_s32 to two
  // gathers, one for the value and one for the write-back, and VMLADAVA's accumulator must be an
  // even register, which no asm constraint asks for (hence r4 r6 r8 r10). Per channel, q4/q5
  // hold the addresses of its next four words (four groups' worth of inputs, in input order) a
  // step before the first: each gather adds the step to them and loads there. 9 instructions
  // per 64 multiply-adds.
  void whole_steps(const int8_t* w, const int8_t* x0, const int8_t* x1, size_t steps) {
    const uint32_t base = uint32_t(reinterpret_cast<uintptr_t>(w)) - kStepBytes;
    alignas(16) const uint32_t addresses[8] = {base,     base + 64, base + 128, base + 192,
                                               base + 4, base + 68, base + 132, base + 196};  // channel 0, 1
    register int32_t acc00 __asm__("r4") = a00, acc01 __asm__("r6") = a01;
    register int32_t acc10 __asm__("r8") = a10, acc11 __asm__("r10") = a11;
    __asm__ volatile(
        "vldrw.u32   q4, [%[addresses]]\n\t"
        "vldrw.u32   q5, [%[addresses], #16]\n\t"
        "dls         lr, %[steps]\n"
        "1:\n\t"
        "vldrw.u32   q0, [q4, #256]!\n\t"
        "vldrw.u32   q1, [q5, #256]!\n\t"
        "vldrb.8     q2, [%[x0]], #16\n\t"
        "vldrb.8     q3, [%[x1]], #16\n\t"
        "vmladava.s8 %[a00], q2, q0\n\t"
        "vmladava.s8 %[a01], q2, q1\n\t"
        "vmladava.s8 %[a10], q3, q0\n\t"
        "vmladava.s8 %[a11], q3, q1\n\t"
        "le          lr, 1b"
        : [a00] "+r"(acc00), [a01] "+r"(acc01), [a10] "+r"(acc10), [a11] "+r"(acc11), [x0] "+r"(x0), [x1] "+r"(x1)
        : [steps] "r"(steps), [addresses] "r"(addresses)
        : "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "lr", "memory");
    static_assert(kStepBytes == 256, "the asm's gather step");
    a00 = acc00, a01 = acc01, a10 = acc10, a11 = acc11;
  }
};

}  // namespace

LINFER_DENSE_RUN(run_int8_mve) { run_int8_2x2<Tile>(w, in, rows, y, y_stride, n_begin, n_end, e); }

}  // namespace linfer::kernels::dense
