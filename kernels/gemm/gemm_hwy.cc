// Plain f32 matrix product with Highway: the sequence compression E X.
// Compiled for every target Highway knows (AVX-512, AVX2, SSE4, NEON, scalar); HWY_DYNAMIC_DISPATCH
// picks the best one for the running CPU. Remainders that do not fill a vector run as scalar code
// with the same arithmetic order, or through the vector code on a padded copy where scalar code
// would round differently.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "gemm/gemm_hwy.cc"
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

// C = A B. Register block: 4 rows of A by 4 vectors of B's columns; the K loop streams rows of B
// and broadcasts elements of A. K is split into panels so the B panel stays in L2.
void Gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb,
          float* C, size_t ldc) {
  const D d;
  const size_t L = hn::Lanes(d);
  constexpr size_t kPanel = 256;
  for (size_t k0 = 0; k0 < K; k0 += kPanel) {
    const size_t k1 = K - k0 < kPanel ? K : k0 + kPanel;
    const bool first = k0 == 0;
    size_t i = 0;
    for (; i + 4 <= M; i += 4) {
      const float* a0 = A + i * lda;
      size_t j = 0;
      for (; j + 4 * L <= N; j += 4 * L) {
        decltype(hn::Zero(d)) acc[4][4];
        for (size_t r = 0; r < 4; ++r)
          for (size_t c = 0; c < 4; ++c)
            acc[r][c] = first ? hn::Zero(d) : hn::LoadU(d, C + (i + r) * ldc + j + c * L);
        for (size_t t = k0; t < k1; ++t) {
          const float* b = B + t * ldb + j;
          const auto b0 = hn::LoadU(d, b), b1 = hn::LoadU(d, b + L), b2 = hn::LoadU(d, b + 2 * L),
                     b3 = hn::LoadU(d, b + 3 * L);
          for (size_t r = 0; r < 4; ++r) {
            const auto av = hn::Set(d, a0[r * lda + t]);
            acc[r][0] = hn::MulAdd(av, b0, acc[r][0]);
            acc[r][1] = hn::MulAdd(av, b1, acc[r][1]);
            acc[r][2] = hn::MulAdd(av, b2, acc[r][2]);
            acc[r][3] = hn::MulAdd(av, b3, acc[r][3]);
          }
        }
        for (size_t r = 0; r < 4; ++r)
          for (size_t c = 0; c < 4; ++c) hn::StoreU(acc[r][c], d, C + (i + r) * ldc + j + c * L);
      }
      for (; j + L <= N; j += L) {
        decltype(hn::Zero(d)) acc[4];
        for (size_t r = 0; r < 4; ++r)
          acc[r] = first ? hn::Zero(d) : hn::LoadU(d, C + (i + r) * ldc + j);
        for (size_t t = k0; t < k1; ++t) {
          const auto b0 = hn::LoadU(d, B + t * ldb + j);
          for (size_t r = 0; r < 4; ++r) acc[r] = hn::MulAdd(hn::Set(d, a0[r * lda + t]), b0, acc[r]);
        }
        for (size_t r = 0; r < 4; ++r) hn::StoreU(acc[r], d, C + (i + r) * ldc + j);
      }
      for (; j < N; ++j)
        for (size_t r = 0; r < 4; ++r) {
          float s = first ? 0.0f : C[(i + r) * ldc + j];
          for (size_t t = k0; t < k1; ++t) s += a0[r * lda + t] * B[t * ldb + j];
          C[(i + r) * ldc + j] = s;
        }
    }
    for (; i < M; ++i) {
      const float* a = A + i * lda;
      size_t j = 0;
      for (; j + L <= N; j += L) {
        auto acc = first ? hn::Zero(d) : hn::LoadU(d, C + i * ldc + j);
        for (size_t t = k0; t < k1; ++t)
          acc = hn::MulAdd(hn::Set(d, a[t]), hn::LoadU(d, B + t * ldb + j), acc);
        hn::StoreU(acc, d, C + i * ldc + j);
      }
      for (; j < N; ++j) {
        float s = first ? 0.0f : C[i * ldc + j];
        for (size_t t = k0; t < k1; ++t) s += a[t] * B[t * ldb + j];
        C[i * ldc + j] = s;
      }
    }
  }
  if (K == 0)
    for (size_t i = 0; i < M; ++i)
      for (size_t j = 0; j < N; ++j) C[i * ldc + j] = 0.0f;
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(Gemm);

void gemm_f32_hwy(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                   size_t ldb, float* C, size_t ldc) {
  HWY_DYNAMIC_DISPATCH(Gemm)(M, N, K, A, lda, B, ldb, C, ldc);
}
}  // namespace linfer::kernels
#endif
