// SPDX-License-Identifier: Apache-2.0
// Dense layers with f32 weights on AVX2 + FMA (x86 without AVX-512: most laptops and edge boxes):
// the 6 x 16 register tile of dense_avx2_tile.h.
#include "dense/dense_avx2_tile.h"

namespace linfer::kernels::dense {
LINFER_DENSE_RUN(run_f32_avx2) { avx2::run_float<avx2::F32Weights>(w, in, rows, y, y_stride, n_begin, n_end, e); }
}  // namespace linfer::kernels::dense
