// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on NEON with the int8 matrix multiply (SMMLA: FEAT_I8MM, ARMv8.6;
// phone cores since the Cortex-A510/A710/X2, Neoverse V1/N2). Activations quantized by
// quantize_s8_neon (dense_int8_neon.cc), read as q, signed by signed as with SDOT: no offset, no
// channel-sum correction. The weights are the int8 panels as they lie in the model file.
// SMMLA vd.4s, vn.16b, vm.16b adds a 2x2 int32 block: rows i of vn ([r0 k0-7 | r1 k0-7]) times
// rows j of vm ([c0 k0-7 | c1 k0-7]), 32 MACs. The panel holds 4 inputs per channel (16 bytes per
// 4 channels and group); ZIP1/ZIP2 on 32-bit lanes of two consecutive groups' vectors give 8
// inputs of 2 channels, SMMLA's vm. A row pair's vn comes straight from memory: LD2 by lane of
// 16 bytes of each row puts k0-7 of both rows in one register and k8-15 in the next.
// Tile: 8 rows x 8 channels (half a panel) in registers: 4 row pairs x 4 channel pairs = 16
// accumulators of 2x2 blocks; a tile of the walk is 8 rows x the panel's two halves in turn (rows
// read twice, weights once), then one epilogue per row of 16 channels. Per 16 inputs (one loop
// iteration): 8 LD2 (rows), 4 LDP (256 weight bytes), 8 ZIP, 32 SMMLA (1024 MACs), 2 loop = 54
// instructions; SDOT's 4 x 16 tile issues 74 for the same MACs. The blocks are unzipped into rows
// (ZIP1/ZIP2 of 64-bit lanes) for the shared epilogue. Inputs past the last 16 (kg % 4 groups): one
// step of 8 inputs (LD1 by lane), then one group with the upper 4 bytes of each row's 8 zero.
// The loops are inline asm (registers and instruction count as written: the LD2 pairs need
// consecutive registers, which intrinsics leave GCC to shuffle); only functions carrying
// LINFER_I8MM contain SMMLA, and the kernel runs only when the CPU reports I8MM and the dot
// product (dense_select.cc). GCC 12 / binutils 2.40 take "arch=armv8.2-a+i8mm" (or armv8.6-a);
// binutils rejects SMMLA under target("+i8mm") alone.
// Proxy, instructions per MAC of a layer call with the quantizer (qemu 7.2 -cpu max,sve=off,sme=off,
// GCC 12.2; tools/bench/arm/run_proxy.sh dense --shapes S --cpus max,sve=off,sme=off): S's
// 512x256x256, 512x256x1024, 512x1024x256: 0.080, 0.071, 0.068; dense_int8_neondot 0.107, 0.098,
// 0.094 (1.34-1.39x as many). llvm-mca on the main loop (tools/bench/arm/mca.sh): LLVM 19's
// neoverse-n2 model 32.0 cycles per 1024 MACs, as SDOT's loop (it issues one SMMLA per cycle, two
// SDOT); its cortex-a510 model 69.0 against SDOT's 50.0.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dense/dense_neon.h"

#define LINFER_I8MM __attribute__((target("arch=armv8.2-a+i8mm")))

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 8;

// The tile's code is one inline asm block: GCC allows 30 asm operands (an in-out one counts
// twice), too few for 16 accumulators and 8 row pointers as C++ variables, and the LD2 pairs
// need consecutive registers. Registers: accumulators v0-v15 (row pair p, channel pair j:
// v<4p + j>), rows v16-v23 (pair p: v<16 + 2p> inputs 0-7 of a step, v<17 + 2p> inputs 8-15),
// weights v24-v28. %[np]: the row pairs in use (1-4); the code of the others is left out (.if).

// Row pair p's 4 SMMLA: v<4p + j> += x (2 rows x 8 inputs) times channel pair j (v28, v26, v24, v25).
#define LINFER_I8MM_SMMLA(p, x, c0, c1, c2, c3) \
  ".if %[np] > " #p                             \
  "\n\t"                                        \
  "smmla " c0 ".4s, " x                         \
  ".16b, v28.16b\n\t"                           \
  "smmla " c1 ".4s, " x                         \
  ".16b, v26.16b\n\t"                           \
  "smmla " c2 ".4s, " x                         \
  ".16b, v24.16b\n\t"                           \
  "smmla " c3 ".4s, " x                         \
  ".16b, v25.16b\n\t"                           \
  ".endif\n\t"
#define LINFER_I8MM_SMMLA_ALL(x0, x1, x2, x3)        \
  LINFER_I8MM_SMMLA(0, x0, "v0", "v1", "v2", "v3")   \
  LINFER_I8MM_SMMLA(1, x1, "v4", "v5", "v6", "v7")   \
  LINFER_I8MM_SMMLA(2, x2, "v8", "v9", "v10", "v11") \
  LINFER_I8MM_SMMLA(3, x3, "v12", "v13", "v14", "v15")
// 8 inputs: groups g and g + 1, channels 0-3 and 4-7 of each (LDP at w + 64 for group g + 1,
// then at w for group g, w += 128), zipped into the channel pairs (0,1) v28, (2,3) v26,
// (4,5) v24, (6,7) v25.
#define LINFER_I8MM_STEP(x0, x1, x2, x3) \
  "ldp q24, q25, [%[w], #64]\n\t"        \
  "ldp q26, q27, [%[w]], #128\n\t"       \
  "zip1 v28.4s, v26.4s, v24.4s\n\t"      \
  "zip2 v26.4s, v26.4s, v24.4s\n\t"      \
  "zip1 v24.4s, v27.4s, v25.4s\n\t"      \
  "zip2 v25.4s, v27.4s, v25.4s\n\t" LINFER_I8MM_SMMLA_ALL(x0, x1, x2, x3)
// The rows' loads for every pair in use: op0 (lane 0) on the pair's first row, op1 on its second.
#define LINFER_I8MM_LOAD(op0, op1, post)                                                                  \
  ".if %[np] > 0\n\t" op0(16, 17) ", [%[a0]]" post "\n\t" op1(                                            \
      16, 17) ", [%[a1]]" post                                                                            \
              "\n\t.endif\n\t"                                                                            \
              ".if %[np] > 1\n\t" op0(18, 19) ", [%[a2]]" post "\n\t" op1(                                \
                  18, 19) ", [%[a3]]" post                                                                \
                          "\n\t.endif\n\t"                                                                \
                          ".if %[np] > 2\n\t" op0(20, 21) ", [%[a4]]" post "\n\t" op1(                    \
                              20, 21) ", [%[a5]]" post                                                    \
                                      "\n\t.endif\n\t"                                                    \
                                      ".if %[np] > 3\n\t" op0(22, 23) ", [%[a6]]" post                    \
                                                                      "\n\t" op1(22, 23) ", [%[a7]]" post \
                                                                                         "\n\t.endif\n\t"
// 16 inputs of the pair's rows: LD2 by lane, k0-7 to v<r>, k8-15 to v<s> (lane 0 first row, 1 second).
#define LINFER_I8MM_LD2_0(r, s) "ld2 {v" #r ".d, v" #s ".d}[0]"
#define LINFER_I8MM_LD2_1(r, s) "ld2 {v" #r ".d, v" #s ".d}[1]"
// 8 inputs: LD1 by 64-bit lane.
#define LINFER_I8MM_LD1D_0(r, s) "ld1 {v" #r ".d}[0]"
#define LINFER_I8MM_LD1D_1(r, s) "ld1 {v" #r ".d}[1]"
// 4 inputs into 32-bit lanes 0 and 2 of a zeroed register (the upper 4 bytes of each row's 8 zero).
#define LINFER_I8MM_LD1S_0(r, s) "movi v" #r ".16b, #0\n\tld1 {v" #r ".s}[0]"
#define LINFER_I8MM_LD1S_1(r, s) "ld1 {v" #r ".s}[2]"

// Rows a[0..2P) x the 8 channels of half a panel (b: its first group's channels 0-7) over kg
// groups: blocks[4p + j] receives the 2x2 block of row pair p and channel pair j.
// The main loop takes 16 inputs per iteration; then bit 1 of kg % 4: one step of 8 inputs (LD1
// by lane), bit 0: one group of 4, whose z's upper halves multiply the rows' zeros (any bytes
// will do: group g twice, as group g + 1 may lie past the panels' end).
// Inlined into the tile: as a call it saved and restored d8-d15 twice per tile (21 instructions
// more per 8 x 16 tile in the proxy).
template <int P>
LINFER_I8MM inline __attribute__((always_inline)) void half_panel(const int8_t* const (&rows)[kRows], const int8_t* b,
                                                                  size_t kg, int32_t (*blocks)[4]) {
  const int8_t *a0 = rows[0], *a1 = rows[1], *a2 = rows[2], *a3 = rows[3], *a4 = rows[4], *a5 = rows[5], *a6 = rows[6],
               *a7 = rows[7];
  size_t iterations = kg / 4;
  __asm__ volatile(
      ".if %[np] > 0\n\tmovi v0.16b, #0\n\tmovi v1.16b, #0\n\tmovi v2.16b, #0\n\tmovi v3.16b, #0\n\t.endif\n\t"
      ".if %[np] > 1\n\tmovi v4.16b, #0\n\tmovi v5.16b, #0\n\tmovi v6.16b, #0\n\tmovi v7.16b, #0\n\t.endif\n\t"
      ".if %[np] > 2\n\tmovi v8.16b, #0\n\tmovi v9.16b, #0\n\tmovi v10.16b, #0\n\tmovi v11.16b, #0\n\t.endif\n\t"
      ".if %[np] > 3\n\tmovi v12.16b, #0\n\tmovi v13.16b, #0\n\tmovi v14.16b, #0\n\tmovi v15.16b, #0\n\t.endif\n\t"
      "cbz %[it], 2f\n"
      "1:\n\t"
      LINFER_I8MM_LOAD(LINFER_I8MM_LD2_0, LINFER_I8MM_LD2_1, ", #16")
      LINFER_I8MM_STEP("v16", "v18", "v20", "v22")
      LINFER_I8MM_STEP("v17", "v19", "v21", "v23")
      "subs %[it], %[it], #1\n\t"
      "b.ne 1b\n"
      "2:\n\t"
      "tbz %[left], #1, 3f\n\t"
      LINFER_I8MM_LOAD(LINFER_I8MM_LD1D_0, LINFER_I8MM_LD1D_1, ", #8")
      LINFER_I8MM_STEP("v16", "v18", "v20", "v22")
      "3:\n\t"
      "tbz %[left], #0, 4f\n\t"
      LINFER_I8MM_LOAD(LINFER_I8MM_LD1S_0, LINFER_I8MM_LD1S_1, "")
      "ldp q26, q27, [%[w]]\n\t"
      "zip1 v28.4s, v26.4s, v26.4s\n\t"
      "zip2 v26.4s, v26.4s, v26.4s\n\t"
      "zip1 v24.4s, v27.4s, v27.4s\n\t"
      "zip2 v25.4s, v27.4s, v27.4s\n\t"
      LINFER_I8MM_SMMLA_ALL("v16", "v18", "v20", "v22")
      "4:\n\t"
      ".if %[np] > 0\n\tstp q0, q1, [%[out]]\n\tstp q2, q3, [%[out], #32]\n\t.endif\n\t"
      ".if %[np] > 1\n\tstp q4, q5, [%[out], #64]\n\tstp q6, q7, [%[out], #96]\n\t.endif\n\t"
      ".if %[np] > 2\n\tstp q8, q9, [%[out], #128]\n\tstp q10, q11, [%[out], #160]\n\t.endif\n\t"
      ".if %[np] > 3\n\tstp q12, q13, [%[out], #192]\n\tstp q14, q15, [%[out], #224]\n\t.endif\n\t"
      : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [a4] "+r"(a4), [a5] "+r"(a5),
        [a6] "+r"(a6), [a7] "+r"(a7), [w] "+r"(b), [it] "+r"(iterations)
      : [left] "r"(kg % 4), [out] "r"(blocks), [np] "i"(P)
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",
        "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
        "v25", "v26", "v27", "v28");
}

// Rows [r, r + R) x channels [n, n_stop) (at most 16), R <= 8: ceil(R / 2) row pairs, an odd R's
// last pair reading its one row twice (the copy's outputs are dropped). The panel's two halves
// one after the other (the second only when the panel has channels there), then one epilogue per
// row of 16 channels: per tile of 8 x 16 the rows are read twice, the weights once.
// One function per row-pair count P (the asm depends on P only; R, the rows, is a run-time
// count for the epilogue): 4 copies of the inlined loops instead of 8, about 16 KB less code.
template <int P>
LINFER_I8MM __attribute__((noinline)) void tile_pairs(const DenseWeights& w, const DenseInput& in, size_t r, float* y,
                                                      size_t y_stride, size_t n, size_t n_stop, DenseEpilogue e,
                                                      int R) {
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const int8_t* b = static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * kg * 64;
  const int8_t* a[kRows];
  for (int i = 0; i < int(kRows); ++i) a[i] = in.q + (r + size_t(std::min(i, R - 1))) * in.q_stride;
  alignas(16) int32_t blocks[2][16][4];  // per half, the accumulators v0-v15
  // One inlined copy of the loops for both halves (a loop of two, not two copies).
  const int halves = n_stop - n > kPanelRows / 2 ? 2 : 1;
  for (int h = 0; h < halves; ++h) half_panel<P>(a, b + 32 * h, kg, blocks[h]);
  if (halves == 1) std::memset(blocks[1], 0, sizeof blocks[1]);  // channels 8-15 absent: not stored
  // Blocks [r0c0 r0c1 r1c0 r1c1] to rows: channels 0-3 of the pair's first row are the low
  // halves of channel pairs (0,1) and (2,3), of its second row the high halves.
  float scale_tail[kPanelRows], bias_tail[kPanelRows];
  const float* ws = channel_block(w.scales, n, w.out, scale_tail);
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    auto rows = [&](const int32_t(*c)[4]) {
      const int64x2_t l = vreinterpretq_s64_s32(vld1q_s32(c[0])), h = vreinterpretq_s64_s32(vld1q_s32(c[1]));
      return vreinterpretq_s32_s64(i % 2 == 0 ? vzip1q_s64(l, h) : vzip2q_s64(l, h));
    };
    const int32_t(*c0)[4] = blocks[0] + 4 * (i / 2), (*c1)[4] = blocks[1] + 4 * (i / 2);
    const int32x4_t sums[4] = {rows(c0), rows(c0 + 2), rows(c1), rows(c1 + 2)};
    neon::store_int8_outputs(sums, in.q_scales[r + i], ws, bias, y + (r + i) * y_stride + n, n_stop - n, e);
  }
}

template <int R>
void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n, size_t n_stop,
          DenseEpilogue e) {
  tile_pairs<(R + 1) / 2>(w, in, r, y, y_stride, n, n_stop, e, R);
}

#undef LINFER_I8MM_LD1S_1
#undef LINFER_I8MM_LD1S_0
#undef LINFER_I8MM_LD1D_1
#undef LINFER_I8MM_LD1D_0
#undef LINFER_I8MM_LD2_1
#undef LINFER_I8MM_LD2_0
#undef LINFER_I8MM_LOAD
#undef LINFER_I8MM_STEP
#undef LINFER_I8MM_SMMLA_ALL
#undef LINFER_I8MM_SMMLA

}  // namespace

LINFER_NEON_INT8_RUN(run_int8_i8mm, kRows)

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
