// SPDX-License-Identifier: Apache-2.0
// f32 matrix product; X's columns packed as int8 weights (the int8 compression).
// Portable scalar reference kernels: the oracles of the tests. Written for clarity; they
// accumulate in double where that makes the oracle tighter than the code under test.

#include "kernels.h"
#include "linfer/types/int8.h"
#include "linfer/types/panel_layout.h"

namespace linfer::kernels {

void gemm_f32_ref(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb, float* C,
                  size_t ldc, bool accumulate) {
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double acc = accumulate ? C[i * ldc + j] : 0.0;
      for (size_t t = 0; t < K; ++t) acc += double(A[i * lda + t]) * B[t * ldb + j];
      C[i * ldc + j] = float(acc);
    }
}

// Column by column, quantized as a weight row straight into its panel lane (no allocation: on
// cores without a vector unit this is the fast kernel too, gemm_hwy.cc).
void pack_columns_int8_ref(const float* x, size_t x_stride, size_t rows, size_t cols, size_t col_begin, size_t col_end,
                           int8_t* panels, float* scales, int32_t* sums) {
  const size_t padded = int8_padded_inputs(uint32_t(rows)), bytes = panel_bytes(DType::I8, uint32_t(rows));
  for (size_t c = col_begin; c < (col_end + kPanelRows - 1) / kPanelRows * kPanelRows; ++c) {
    int8_t* lane = panels + c / kPanelRows * bytes + c % kPanelRows * kInt8GroupInputs;
    float inv = 0.0f;  // a padding lane of the last panel stays zero
    if (c < cols) scales[c] = int8_row_scale(x + c, rows, x_stride, &inv);
    int32_t sum = 0;
    for (size_t t = 0; t < padded; ++t) {
      const int8_t q = t < rows && c < cols ? quantize_int8(x[t * x_stride + c], inv) : 0;
      sum += q;
      lane[t / kInt8GroupInputs * kPanelRows * kInt8GroupInputs + t % kInt8GroupInputs] = q;
    }
    if (c < cols) sums[c] = sum;
  }
}

}  // namespace linfer::kernels
