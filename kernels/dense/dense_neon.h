// SPDX-License-Identifier: Apache-2.0
// What the NEON dense kernels (dense_{f32,f16,int8}_neon.cc, dense_int8_neondot.cc,
// dense_int8_i8mm.cc) share: the walk over row blocks and tiles, the output epilogues, FMLA by
// element, and the broadcast of an int8 input group. ARMv8.0 only (no dot product or matrix
// multiply here: those functions carry their target attributes in dense_int8_neondot.cc and
// dense_int8_i8mm.cc). The walk itself is plain C++, shared with the 32-bit Arm kernels
// (dense_neonv7.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dense/dense_internal.h"

namespace linfer::kernels::dense::neon {

// Calls f(std::integral_constant<int, R>) for the tile height 1 <= R <= kMax (the tiles are
// templates on their height).
template <int kMax, class F>
inline void with_tile_rows(size_t R, F&& f) {
  if constexpr (kMax > 1) {
    if (R >= size_t(kMax)) return f(std::integral_constant<int, kMax>{});
    with_tile_rows<kMax - 1>(R, f);
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// The body of a NEON dense kernel: rows in blocks of about `block_bytes` (rows of `row_bytes`),
// each block through every 16-channel panel in tiles of kRows rows; tile(r, rows_c, n, n_stop)
// gets the tile height as std::integral_constant.
template <int kRows, class Tile>
inline void run_tiles(size_t rows, size_t block_bytes, size_t row_bytes, size_t n_begin, size_t n_end, float* y,
                      size_t y_stride, DenseActivation activation, Tile&& tile) {
  const size_t row_block = std::max<size_t>(kRows, block_bytes / std::max<size_t>(row_bytes, 1) / kRows * kRows);
  for_each_tile<kRows, kPanelRows>(rows, row_block, n_begin, n_end, y, y_stride, activation,
                                   [&](size_t r, size_t R, size_t n, size_t n_stop) {
                                     with_tile_rows<kRows>(R, [&](auto rows_c) { tile(r, rows_c, n, n_stop); });
                                   });
}

}  // namespace linfer::kernels::dense::neon

#if defined(__aarch64__)
#include <arm_neon.h>

namespace linfer::kernels::dense::neon {

// Bytes of x rows per block, kept in L2 next to the panel while every panel of the weights
// passes: 128 KiB of f32 rows (the Pi 4's four cores share 1 MiB of L2, a Pi 5 core has 512 KiB;
// each needs room for the panel and y too), 64 KiB of int8 rows. Blocks sized for L1 (16 KiB: 4
// int8 rows of a 3072-input layer) would stream the whole weight matrix from DRAM every few rows
// (the Pi 4 has no L3), while the rows' own reads are only 4 bytes per 16 x 4 MACs.
constexpr size_t kFloatRowBlockBytes = 128 * 1024;
constexpr size_t kInt8RowBlockBytes = 64 * 1024;

// Stores one row of 4N outputs (bias already added) with ReLU and accumulate; only the first
// `count` channels when the panel is partial. Always inlined, like store_int8_outputs: called out
// of line, the tile's results go through the stack (on the Pi 4, S int8 at n = 512: 7 M of 465 M
// instructions per forward pass).
template <size_t N>
inline __attribute__((always_inline)) void store_outputs(float* dst, float32x4_t (&v)[N], size_t count,
                                                         DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu)
    for (auto& x : v) x = vmaxq_f32(x, vdupq_n_f32(0.0f));
  if (count >= 4 * N) {
    for (size_t i = 0; i < N; ++i)
      vst1q_f32(dst + 4 * i, e.accumulate ? vaddq_f32(vld1q_f32(dst + 4 * i), v[i]) : v[i]);
    return;
  }
  float tmp[4 * N];
  for (size_t i = 0; i < N; ++i) vst1q_f32(tmp + 4 * i, v[i]);
  for (size_t j = 0; j < count; ++j) dst[j] = e.accumulate ? dst[j] + tmp[j] : tmp[j];
}

// The entry point of an f32-input NEON kernel (dense_f32_neon.cc, dense_f16_neon.cc,
// dense_f16_neonfp16.cc): rows in blocks of kFloatRowBlockBytes, each tile by the kernel file's
// tile<R>(w, in, r, y, y_stride, n, n_stop, e) for R <= kRows rows and one panel.
#define LINFER_NEON_FLOAT_RUN(fn, kRows)                                                                            \
  LINFER_DENSE_RUN(fn) {                                                                                            \
    neon::run_tiles<int(kRows)>(rows, neon::kFloatRowBlockBytes, w.in * sizeof(float), n_begin, n_end, y, y_stride, \
                                e.activation, [&](size_t r, auto rows_c, size_t n, size_t n_stop) {                 \
                                  tile<decltype(rows_c)::value>(w, in, r, y, y_stride, n, n_stop, e);               \
                                });                                                                                 \
  }

// The entry point of an int8 NEON kernel (dense_int8_neon.cc, dense_int8_neondot.cc,
// dense_int8_i8mm.cc): rows in blocks of kInt8RowBlockBytes, each tile by the kernel file's
// tile<R>(w, in, r, y, y_stride, n, n_stop, e) for R <= kRows rows and one panel.
#define LINFER_NEON_INT8_RUN(fn, kRows)                                                                   \
  LINFER_DENSE_RUN(fn) {                                                                                  \
    neon::run_tiles<int(kRows)>(rows, neon::kInt8RowBlockBytes, in.q_stride, n_begin, n_end, y, y_stride, \
                                e.activation, [&](size_t r, auto rows_c, size_t n, size_t n_stop) {       \
                                  tile<decltype(rows_c)::value>(w, in, r, y, y_stride, n, n_stop, e);     \
                                });                                                                       \
  }

// The int8 epilogue of one row of 16 channels: sums[i] holds the exact integer sums of channels
// 4i..4i+3, dequantized as fma(float(sum), x_scale * w_scale, bias), then ReLU and accumulate.
inline __attribute__((always_inline)) void store_int8_outputs(const int32x4_t (&sums)[4], float x_scale,
                                                              const float* ws, const float* bias, float* dst,
                                                              size_t count, DenseEpilogue e) {
  const float32x4_t xs = vdupq_n_f32(x_scale);
  float32x4_t v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = vfmaq_f32(vld1q_f32(bias + 4 * i), vcvtq_f32_s32(sums[i]), vmulq_f32(vld1q_f32(ws + 4 * i), xs));
  store_outputs(dst, v, count, e);
}

// acc += w * a[L] (FMLA by element). Inline asm on named accumulators: with vfmaq_laneq_f32
// GCC 12 moves 4 of the 16 accumulators between registers on every iteration (34 instead of
// 32 cycles per 64 FMLAs on the A76), and with non-volatile asm its pre-allocation scheduler
// hoists all 16 weight loads of an iteration to the top and spills. Volatile keeps the FMLAs
// in program order (the cores reorder them anyway), so the loads stay next to their use.
template <int L>
inline void fmla_lane(float32x4_t& acc, float32x4_t w, float32x4_t a) {
  __asm__ volatile("fmla %0.4s, %1.4s, %2.s[%3]" : "+w"(acc) : "w"(w), "w"(a), "i"(L));
}

// v = the 16 bytes at p (4 floats, 16 int8), then p advances past them: one LDR with
// post-increment (GCC 12 emits an ADD per load of a running pointer). Volatile like fmla_lane,
// so that it stays next to its use.
template <class V, class T>
inline void load_advance(V& v, const T*& p) {
  static_assert(sizeof(V) == 16, "one q register");
  __asm__ volatile("ldr %q0, [%1], #16" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const char(*)[16]>(p)));
}

// w0..w3 = the 64 bytes at p, then p += 64: one LD1 of four consecutive registers with
// post-increment. LD1 needs consecutive registers, so w0..w3 must be the caller's local register
// variables bound to the registers `regs` names (e.g. "v28.16b - v31.16b"): a local register
// variable is honoured in asm operands, and only there (hence a macro, not a function).
#define LINFER_NEON_LD1X4_ADVANCE(regs, w0, w1, w2, w3, p)           \
  __asm__ volatile("ld1 {" regs "}, [%4], #64"                       \
                   : "=w"(w0), "=w"(w1), "=w"(w2), "=w"(w3), "+r"(p) \
                   : "m"(*reinterpret_cast<const uint8_t(*)[64]>(p)))

// v = the 4 bytes at p repeated over the 16 lanes (one group of inputs), then p += 4: one LD1R
// with post-increment. Volatile, as load_advance.
inline void broadcast_advance(int8x16_t& v, const int8_t*& p) {
  __asm__ volatile("ld1r {%0.4s}, [%1], #4" : "=w"(v), "+r"(p) : "m"(*reinterpret_cast<const int8_t(*)[4]>(p)));
}

// The 4 input bytes of group g of a row, repeated over the 16 lanes.
inline int8x16_t broadcast_group(const int8_t* row, size_t g) {
  int32_t v;
  std::memcpy(&v, row + g * kInt8GroupInputs, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

}  // namespace linfer::kernels::dense::neon
#endif
