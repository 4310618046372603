// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on NEON with the dot product (SDOT: ARMv8.2 dotprod, Cortex-A76:
// Raspberry Pi 5). Activations quantized by quantize_s8_neon (dense_int8_neon.cc), read as q:
// SDOT multiplies signed by signed bytes, so no +128 offset and no channel-sum correction.
// Tile: 4 rows x one panel of 16 output channels, 16 int32 accumulators. The panel's 16 bytes
// per 4 channels and group of 4 inputs are SDOT's first operand as they lie; each row's inputs
// are loaded 16 bytes (4 groups) at a time and fed to SDOT by element (vdotq_laneq_s32), so one
// input load serves 4 groups. Per 4 groups: 4 weight loads (4-register LD1) + 4 input loads +
// 2 loop instructions for 64 SDOTs, 74 instructions (81 before issue 37).
// Only the functions that carry LINFER_DOTPROD contain dot-product instructions; the file has no
// -march flag (an inline function shared with other files never gets SDOT), and the kernel runs
// only when the CPU reports ASIMDDP (dense_select.cc). GCC 12 needs "arch=armv8.2-a+dotprod":
// with target("+dotprod") alone its arm_neon.h intrinsics fail to inline (target specific option
// mismatch) and binutils 2.40 rejects SDOT under ".arch armv8-a+dotprod".
// llvm-mca on the inner loop (4 groups = 64 SDOT = 1024 MACs, GCC 12 -O3): cortex-a76 (LLVM 19's
// neoverse-n1 model; LLVM's "cortex-a76" is the Cortex-A57 model): 32.0 cycles, 32 MACs/cycle =
// 100% of 2 x SDOT per cycle; 3 and 2 rows 100%, 1 row 94%.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dense/dense_neon.h"

#define LINFER_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

namespace linfer::kernels::dense {
namespace {

constexpr size_t kRows = 4;

// acc += dot(w, group L of a) per 4 channels (SDOT by element). Volatile inline asm on named
// accumulators, as the f32 kernel's FMLA (dense_f32_neon.cc): GCC 12 otherwise moves
// accumulators between registers or hoists the loads and spills.
template <int L>
LINFER_DOTPROD inline void sdot_lane(int32x4_t& acc, int8x16_t w, int8x16_t a) {
  __asm__ volatile("sdot %0.4s, %1.16b, %2.4b[%3]" : "+w"(acc) : "w"(w), "w"(a), "i"(L));
}

// Rows [r, r + R) x channels [n, n_stop) (at most 16), R <= 4. The 16 accumulators c<t><v>
// form 4 slots t of 4 vectors v (channels 4v..4v+3). Row i's products of lane L (group g + L)
// go to slot (L % S) * R + i: with fewer than 3 rows, S = 4 / R sets of accumulators take turns
// over the lanes, so that each chain still gets at most 2 SDOTs per iteration; the sets are
// added up at the end (exact integers).
template <int R>
LINFER_DOTPROD void tile(const DenseWeights& w, const DenseInput& in, size_t r, float* y, size_t y_stride, size_t n,
                         size_t n_stop, DenseEpilogue e) {
  constexpr int S = R <= 2 ? 4 / R : 1;
  const size_t kg = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const int8_t* b = static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * kg * 64;
  const int8_t* a0 = in.q + r * in.q_stride;
  const int8_t* a1 = R > 1 ? a0 + in.q_stride : a0;
  const int8_t* a2 = R > 2 ? a1 + in.q_stride : a0;
  const int8_t* a3 = R > 3 ? a2 + in.q_stride : a0;
  int32x4_t c00 = vdupq_n_s32(0), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00,
            c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
#define LINFER_SDOT4(t, L, v)                                                               \
  sdot_lane<L>(c##t##0, w0, v), sdot_lane<L>(c##t##1, w1, v), sdot_lane<L>(c##t##2, w2, v), \
      sdot_lane<L>(c##t##3, w3, v);
#define LINFER_ROW(i, L)               \
  if constexpr (i < R) {               \
    constexpr int t = (L % S) * R + i; \
    if constexpr (t == 0) {            \
      LINFER_SDOT4(0, L, v##i)         \
    } else if constexpr (t == 1) {     \
      LINFER_SDOT4(1, L, v##i)         \
    } else if constexpr (t == 2) {     \
      LINFER_SDOT4(2, L, v##i)         \
    } else {                           \
      LINFER_SDOT4(3, L, v##i)         \
    }                                  \
  }
  // One group: the panel's 64 bytes of group g times group L of each row's inputs. As in
  // dense_f32_neon.cc, the loads are inline asm with post-increment addressing: the group's 64
  // weight bytes in one 4-register LD1 (w0..w3 bound to v28..v31), each row's 16 input bytes
  // (4 groups) in one LDR.
  const int8_t* wp = b;
  const int8_t *p0 = a0, *p1 = a1, *p2 = a2, *p3 = a3;
  register int8x16_t w0 __asm__("v28"), w1 __asm__("v29"), w2 __asm__("v30"), w3 __asm__("v31");
#define LINFER_STEP(L)                                                  \
  {                                                                     \
    LINFER_NEON_LD1X4_ADVANCE("v28.16b - v31.16b", w0, w1, w2, w3, wp); \
    LINFER_ROW(0, L) LINFER_ROW(1, L) LINFER_ROW(2, L) LINFER_ROW(3, L) \
  }
  size_t g = kg / 4 * 4;
  for (const int8_t* const wp_stop = b + g * 64; wp != wp_stop;) {
    int8x16_t v0, v1, v2, v3;
    neon::load_advance(v0, p0), neon::load_advance(v1, p1), neon::load_advance(v2, p2), neon::load_advance(v3, p3);
    LINFER_STEP(0) LINFER_STEP(1) LINFER_STEP(2) LINFER_STEP(3)
  }
  for (; g < kg; ++g) {  // the last kg % 4 groups, one at a time (the rows end at kg * 4 bytes)
    const int8x16_t v0 = neon::broadcast_group(a0, g), v1 = neon::broadcast_group(a1, g),
                    v2 = neon::broadcast_group(a2, g), v3 = neon::broadcast_group(a3, g);
    LINFER_STEP(0)  // wp is at group g
  }
#undef LINFER_STEP
#undef LINFER_ROW
#undef LINFER_SDOT4
  int32x4_t acc[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}};
  for (int s = 1; s < S; ++s)
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < 4; ++v) acc[i][v] = vaddq_s32(acc[i][v], acc[s * R + i][v]);
  float scale_tail[kPanelRows], bias_tail[kPanelRows];
  const float* ws = channel_block(w.scales, n, w.out, scale_tail);
  const float* bias = channel_block(w.bias, n, w.out, bias_tail);
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i)
    neon::store_int8_outputs(acc[i], in.q_scales[r + i], ws, bias, y + (r + i) * y_stride + n, n_stop - n, e);
}

}  // namespace

LINFER_NEON_INT8_RUN(run_int8_neondot, kRows)

}  // namespace linfer::kernels::dense
#endif  // __aarch64__
