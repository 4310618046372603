// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on AVX-512: the f32 register tile, each weight vector widened
// from 16 halves by vcvtph2ps as it is loaded. The weights stay f16 in memory (half the bytes of
// f32 to keep resident and to stream per run); the arithmetic is f32.
#include "dense/dense_avx512_tile.h"

namespace linfer::kernels::dense {
LINFER_DENSE_RUN(run_f16_avx512) { avx512::run_float<avx512::F16Weights>(w, in, rows, y, y_stride, n_begin, n_end, e); }
}  // namespace linfer::kernels::dense
