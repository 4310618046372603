// SPDX-License-Identifier: Apache-2.0
// Reformer's LSH attention, one chunk, with Highway (lsh.h): the scores and P V on the
// register-blocked matrix product, the masks and the softmax rows vectorised over the keys.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/lsh_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cfloat>
#include <cmath>

#include "attention/exp2-inl.h"
#include "attention/lsh.h"
#include "kernels.h"  // gemm_f32_hwy

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

void LshChunk(const LshChunkArgs& a, float* s) {
  const D d;
  const size_t L = hn::Lanes(d), n = a.keys[0].count + a.keys[1].count;
  for (size_t g = 0, col = 0; g < 2; col += a.keys[g].count, ++g)
    if (a.keys[g].count)
      gemm_f32_hwy(a.rows, a.keys[g].count, a.d, a.q, a.d, a.keys[g].kt, a.keys[g].count, s + col, n);
  const auto vscale = hn::Set(d, a.scale);
  for (size_t i = 0; i < a.rows; ++i) {
    float* si = s + i * n;
    const uint32_t p = a.q_pos[i];
    size_t j = 0;
    for (; j + L <= n; j += L) hn::StoreU(hn::Mul(hn::LoadU(d, si + j), vscale), d, si + j);
    for (; j < n; ++j) si[j] *= a.scale;
    // The masks: the row itself once or twice; causal, the later keys.
    for (size_t g = 0, col = 0; g < 2; col += a.keys[g].count, ++g)
      for (j = 0; j < a.keys[g].count; ++j) {
        const uint32_t k = a.keys[g].pos[j];
        if (a.causal && k > p) si[col + j] = -FLT_MAX;
        if (k == p) si[col + j] = a.self_score;
      }
    auto vmax = hn::Set(d, -FLT_MAX);
    for (j = 0; j + L <= n; j += L) vmax = hn::Max(vmax, hn::LoadU(d, si + j));
    float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; j < n; ++j) m = si[j] > m ? si[j] : m;
    const float sum = ExpShiftedSum(si, n, m);
    a.lse[i] = m + std::log(sum);
    const auto inv = hn::Set(d, 1.0f / sum);
    for (j = 0; j + L <= n; j += L) hn::StoreU(hn::Mul(hn::LoadU(d, si + j), inv), d, si + j);
    for (; j < n; ++j) si[j] /= sum;
  }
  for (size_t g = 0, col = 0; g < 2; col += a.keys[g].count, ++g)
    if (a.keys[g].count)
      gemm_f32_hwy(a.rows, a.d, a.keys[g].count, s + col, n, a.keys[g].v, a.d, a.o, a.d, g > 0 && a.keys[0].count > 0);
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(LshChunk);
void lsh_chunk_f32_hwy(const LshChunkArgs& args, float* scratch) { HWY_DYNAMIC_DISPATCH(LshChunk)(args, scratch); }
}  // namespace linfer::kernels
#endif
