// Dense layers with f32 weights on WebAssembly SIMD128 (dense_wasm_simd128.h has the tile).
#if defined(__wasm_simd128__)
#include "dense/dense_wasm_simd128.h"

namespace linfer::kernels::dense {

LINFER_DENSE_RUN(run_f32_wasm_simd128) {
  wasm::run_float(w, in, rows, y, y_stride, n_begin, n_end, e,
                  [](const void* panel, size_t k, size_t c, v128_t (&out)[2]) {
                    const float* p = static_cast<const float*>(panel) + k * kPanelRows + c;
                    out[0] = wasm_v128_load(p);
                    out[1] = wasm_v128_load(p + 4);
                  });
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_simd128__
