// f32 matrix product.
// Portable scalar reference kernels: the oracles of the tests. Written for clarity; they
// accumulate in double where that makes the oracle tighter than the code under test.

#include "kernels.h"

namespace linfer::kernels {

void gemm_f32_ref(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                  size_t ldb, float* C, size_t ldc) {
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double acc = 0;
      for (size_t t = 0; t < K; ++t) acc += double(A[i * lda + t]) * B[t * ldb + j];
      C[i * ldc + j] = float(acc);
    }
}

}  // namespace linfer::kernels
