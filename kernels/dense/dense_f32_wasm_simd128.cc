// SPDX-License-Identifier: Apache-2.0
// Dense layers with f32 weights on WebAssembly SIMD128, and with relaxed SIMD's multiply-add in
// the relaxed module (dense_wasm_simd128.h has the tile).
#if defined(__wasm_simd128__)
#include "dense/dense_wasm_simd128.h"

namespace linfer::kernels::dense {

LINFER_DENSE_RUN(run_f32_wasm_simd128) {
  wasm::run_float<wasm::kF32Rows, float>(w, in, rows, y, y_stride, n_begin, n_end, e, wasm::LoadFloats{});
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_simd128__
