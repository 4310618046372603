// SPDX-License-Identifier: Apache-2.0
// Depthwise 1-D convolution.
// Portable scalar reference kernels: the oracles of the tests. Written for clarity; they
// accumulate in double where that makes the oracle tighter than the code under test.

#include "kernels.h"

namespace linfer::kernels {

void conv_depthwise_add_f32_ref(const float* x, size_t T, size_t channels, const float* w, size_t K, const float* bias,
                                float* y, size_t row_begin, size_t row_end) {
  const long half = long(K - 1) / 2;
  for (size_t t = row_begin; t < row_end; ++t)
    for (size_t c = 0; c < channels; ++c) {
      double acc = bias ? bias[c] : 0.0;
      for (size_t j = 0; j < K; ++j) {
        const long src = long(t) + long(j) - half;
        if (src >= 0 && src < long(T)) acc += double(w[j * channels + c]) * x[size_t(src) * channels + c];
      }
      y[t * channels + c] += float(acc);
    }
}

}  // namespace linfer::kernels
