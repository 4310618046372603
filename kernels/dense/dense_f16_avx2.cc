// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on AVX2 + F16C: the f32 register tile, each weight vector widened
// from 8 halves by vcvtph2ps as it is loaded (weights stay f16 in memory, arithmetic is f32).
#include "dense/dense_avx2_tile.h"

namespace linfer::kernels::dense {
LINFER_DENSE_RUN(run_f16_avx2) { avx2::run_float<avx2::F16Weights>(w, in, rows, y, y_stride, n_begin, n_end, e); }
}  // namespace linfer::kernels::dense
