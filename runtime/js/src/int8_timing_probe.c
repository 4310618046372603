// SPDX-License-Identifier: Apache-2.0
// Which int8 dense kernel runs faster on this engine: the relaxed module's (dense_int8_wasm_relaxed)
// or the SIMD128 module's (dense_int8_wasm_simd128). Engines lower relaxed SIMD's dot product
// differently: one VPDPBUSD on x86 with AVX-VNNI or one SDOT on Arm, but five instructions in
// V8 12.4 (Node 22) on x86, where the relaxed kernel is then 1.8x slower than SIMD128's. So the
// package times both at load (runtime/js/lib/core.js, PROBE_INT8_TIMING: this file compiled by
// runtime/js/scripts/make_timing_probe.sh, about 1 KB) and loads the faster module.
//
// tile(relaxed, reps) runs `reps` rounds of one kernel's arithmetic, 128 multiply-adds of the
// kernel's each (4 rows x 8 channels x 4 inputs), on 8 accumulators:
//   relaxed: per row the split form's two relaxed dot products per 4 channels (weights and their
//     negations by the row's q+ and q-), 4 per row;
//   SIMD128: per row i32x4.dot_i16x8_s and i32x4.add per 2 channels, 4 of each per row.
// The operands stay in registers (8 accumulators and 6 operands: 14 v128 values, as the kernels'
// tiles), and one operand changes after every row (u8x16.avgr_u keeps q+ within 7 bits, an i16x8
// add for SIMD128), so no compiler can hoist a product out of the loop. The kernels' loads are left
// out: timed in an engine's baseline compiler (V8's Liftoff, which runs a function first), their
// address arithmetic would weigh more than the products and hide the difference; with the
// products alone, Liftoff and TurboFan give the same times (Node 22: 0.041 and 0.026 ns per
// multiply-add, both tiers).
#include <stdint.h>
#include <wasm_simd128.h>

int8_t probe_operands[96];  // zeros; external, so the compiler cannot fold them

static inline v128_t dot_add(v128_t w, v128_t x7, v128_t acc) {
  return __builtin_wasm_relaxed_dot_i8x16_i7x16_add_s_i32x4((__i8x16)w, (__i8x16)x7, (__i32x4)acc);
}

static inline v128_t operand(int i) { return wasm_v128_load(probe_operands + 16 * i); }

#define RELAXED_ROW(acc0, acc1)                    \
  acc0 = dot_add(n0, neg, dot_add(w0, pos, acc0)); \
  acc1 = dot_add(n1, neg, dot_add(w1, pos, acc1)); \
  pos = wasm_u8x16_avgr(pos, neg);

#define SIMD128_ROW(acc0, acc1, acc2, acc3)                 \
  acc0 = wasm_i32x4_add(acc0, wasm_i32x4_dot_i16x8(w0, x)); \
  acc1 = wasm_i32x4_add(acc1, wasm_i32x4_dot_i16x8(w1, x)); \
  acc2 = wasm_i32x4_add(acc2, wasm_i32x4_dot_i16x8(w2, x)); \
  acc3 = wasm_i32x4_add(acc3, wasm_i32x4_dot_i16x8(w3, x)); \
  x = wasm_i16x8_add(x, y);

__attribute__((export_name("tile"))) int32_t tile(int32_t relaxed, int32_t reps) {
  v128_t a0 = wasm_i32x4_splat(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  if (relaxed) {
    const v128_t w0 = operand(0), w1 = operand(1), n0 = wasm_i8x16_neg(w0), n1 = wasm_i8x16_neg(w1);
    const v128_t neg = operand(3);
    v128_t pos = operand(2);
    for (int32_t r = 0; r < reps; ++r) {
      RELAXED_ROW(a0, a1) RELAXED_ROW(a2, a3) RELAXED_ROW(a4, a5) RELAXED_ROW(a6, a7)
    }
  } else {
    const v128_t w0 = operand(0), w1 = operand(1), w2 = operand(2), w3 = operand(3), y = operand(5);
    v128_t x = operand(4);
    for (int32_t r = 0; r < reps; ++r) {
      SIMD128_ROW(a0, a1, a2, a3) SIMD128_ROW(a4, a5, a6, a7) SIMD128_ROW(a0, a1, a2, a3) SIMD128_ROW(a4, a5, a6, a7)
    }
  }
  const v128_t s = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_add(a0, a1), wasm_i32x4_add(a2, a3)),
                                  wasm_i32x4_add(wasm_i32x4_add(a4, a5), wasm_i32x4_add(a6, a7)));
  return wasm_i32x4_extract_lane(s, 0) ^ wasm_i32x4_extract_lane(s, 1) ^ wasm_i32x4_extract_lane(s, 2) ^
         wasm_i32x4_extract_lane(s, 3);
}
