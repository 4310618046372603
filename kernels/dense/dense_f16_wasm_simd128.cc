// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on WebAssembly SIMD128 (and relaxed SIMD's multiply-add in the
// relaxed module): the f32 tile (dense_wasm_simd128.h) on weights widened in registers, 8 at a time. SIMD128 has no
// half-precision conversion: the widening is integer arithmetic, exact for every half (subnormals, infinities, NaNs).
#if defined(__wasm_simd128__)
#include "dense/dense_wasm_simd128.h"

namespace linfer::kernels::dense {
namespace {

// 4 halves (zero-extended to 32 bits) as floats: exponent and mantissa shifted into a float's
// place are the value times 2^-112 (subnormal halves too), then infinities and NaNs get the
// float's all-ones exponent, and the sign goes back on (dense_generic.cc's widen_half, 4 lanes).
inline v128_t widen_halves(v128_t h) {
  const v128_t magnitude = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
  const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
  const v128_t scaled = wasm_f32x4_mul(magnitude, wasm_f32x4_splat(5.192296858534828e+33f));  // 2^112
  const v128_t special = wasm_i32x4_eq(wasm_v128_and(h, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7c00));
  const v128_t bits = wasm_v128_bitselect(wasm_v128_or(magnitude, wasm_i32x4_splat(0x7f800000)), scaled, special);
  return wasm_v128_or(bits, sign);
}

}  // namespace

LINFER_DENSE_RUN(run_f16_wasm_simd128) {
  wasm::run_float<wasm::kF16Rows, uint16_t>(w, in, rows, y, y_stride, n_begin, n_end, e,
                                            [](const uint16_t* p, size_t c, v128_t(&out)[2]) {
                                              const v128_t h = wasm_v128_load(p + c);
                                              out[0] = widen_halves(wasm_u32x4_extend_low_u16x8(h));
                                              out[1] = widen_halves(wasm_u32x4_extend_high_u16x8(h));
                                            });
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_simd128__
