// SPDX-License-Identifier: Apache-2.0
// Depthwise 1-D convolution over the sequence with Highway (a locality branch: each position mixed
// with its neighbours', channel by channel).
// Compiled for every target Highway knows (AVX-512, AVX2, SSE4, NEON, scalar); HWY_DYNAMIC_DISPATCH
// picks the best one for the running CPU. Remainders that do not fill a vector run as scalar code
// with the same arithmetic order, or through the vector code on a padded copy where scalar code
// would round differently.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "conv/conv_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "kernels.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

void ConvDepthwiseAdd(const float* x, size_t T, size_t channels, const float* w, size_t K, const float* bias, float* y,
                      size_t row_begin, size_t row_end) {
  const D d;
  const size_t L = hn::Lanes(d);
  const long half = long(K - 1) / 2;
  for (size_t t = row_begin; t < row_end; ++t) {
    // Taps whose source row lies inside [0, T).
    const size_t j_begin = size_t(std::max(0L, half - long(t)));
    const size_t j_end = size_t(std::min(long(K), long(T) - long(t) + half));
    float* yt = y + t * channels;
    size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto acc = bias ? hn::LoadU(d, bias + c) : hn::Zero(d);
      for (size_t j = j_begin; j < j_end; ++j)
        acc = hn::MulAdd(hn::LoadU(d, w + j * channels + c), hn::LoadU(d, x + (t + j - size_t(half)) * channels + c),
                         acc);
      hn::StoreU(hn::Add(hn::LoadU(d, yt + c), acc), d, yt + c);
    }
    for (; c < channels; ++c) {
      float acc = bias ? bias[c] : 0.0f;
      for (size_t j = j_begin; j < j_end; ++j) acc += w[j * channels + c] * x[(t + j - size_t(half)) * channels + c];
      yt[c] += acc;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(ConvDepthwiseAdd);

void conv_depthwise_add_f32_hwy(const float* x, size_t T, size_t channels, const float* w, size_t K, const float* bias,
                                float* y, size_t row_begin, size_t row_end) {
  HWY_DYNAMIC_DISPATCH(ConvDepthwiseAdd)(x, T, channels, w, K, bias, y, row_begin, row_end);
}
}  // namespace linfer::kernels
#endif
