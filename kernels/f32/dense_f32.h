// Dense layers in f32 with own AVX-512 kernels: y = act(x W^T + b), or y += x W^T + b.
// XNNPACK's fully connected operator (bookworm's 2022 version) reaches about 70% of the FMA peak
// here and has no GELU or accumulate epilogue, so the feed-forward's GELU and both residual adds
// cost extra passes over memory. This kernel keeps a 6 x 64 register tile (95% of the peak in
// its inner loop) and applies the epilogue while the tile is in registers or in L1. Where
// AVX-512 is missing, the runtime uses XNNPACK (NEON, AVX2) with separate epilogue passes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels.h"

namespace linfer::kernels {

// True when this CPU runs dense_f32_avx512.
bool f32_dense_fast_path_available();

struct F32Weights {
  size_t in = 0, out = 0;  // K, N
  size_t out_padded = 0;   // N rounded up to 16
  std::unique_ptr<float, void (*)(void*)> packed{nullptr, free};  // [Np/16][K][16]
  std::unique_ptr<float[]> bias;                                   // [Np], zero if none
  size_t bytes() const { return (out_padded * in + out_padded) * sizeof(float); }
};

// Packs row-major weights [out x in] (row stride in). Returns "" or a message.
std::string pack_f32_weights(const float* w, const float* bias, size_t in, size_t out,
                             F32Weights* packed);

// Rows [0, rows) of x (row stride x_stride) times the output channels [n_begin, n_end) (multiples
// of 16 except the last) into y (row stride y_stride), with the epilogue (see kernels.h).
void dense_f32_ref(const F32Weights& w, const float* x, size_t x_stride, size_t rows, float* y,
                   size_t y_stride, size_t n_begin, size_t n_end, DenseEpilogue epilogue);
#if defined(__x86_64__)
void dense_f32_avx512(const F32Weights& w, const float* x, size_t x_stride, size_t rows, float* y,
                      size_t y_stride, size_t n_begin, size_t n_end, DenseEpilogue epilogue);
#endif

}  // namespace linfer::kernels
