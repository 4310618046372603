// What the AVX-512 dense kernels (f32/dense_f32.cc, int8/dense_int8.cc) share: the register tile
// shape, the cache blocking that walks the tiles, the output-channel mask and the epilogue
// passes that do not fit in registers. x86-64 only.
#pragma once

#if defined(__x86_64__)
// GCC 12 warns about the deliberately undefined pass-through operand of the AVX-512 intrinsics
// once they are inlined into target-attribute functions (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstddef>

#include "kernels.h"

namespace linfer::kernels::dense_tiles {

// One register tile: 6 rows x 4 blocks of 16 output channels, 24 accumulators of the 32 zmm
// registers; every weight vector loaded feeds 6 rows, every broadcast 4 blocks, and 24
// independent chains hide the FMA / vpdpbusd latency. Smaller tiles reuse it with repeated row
// or block pointers and drop the extra results: a full-speed tile costs less than a slower
// kernel per shape.
constexpr size_t kRows = 6, kBlocks = 4, kChannels = kBlocks * 16;

// Lanes [0, n) of a 16-lane vector (all of them for n >= 16).
inline __mmask16 first_lanes(size_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

// The tile's pointers: rows [0, R) at `stride` apart, the missing ones repeating the last.
template <class T>
void tile_pointers(T* base, size_t stride, size_t R, T* (&out)[kRows]) {
  for (size_t r = 0; r < kRows; ++r) out[r] = base + std::min(r, R - 1) * stride;
}

// The register epilogue of one output vector (bias already in v): ReLU, then the residual add,
// then the store of the lanes in mask.
__attribute__((target("avx512f"))) inline void store_output(float* dst, __m512 v, __mmask16 mask,
                                                            DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
  if (e.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, dst));
  _mm512_mask_storeu_ps(dst, mask, v);
}

// Walks the tiles of rows [0, rows) x output channels [n_begin, n_end): a block of `row_block`
// rows (a multiple of kRows, sized by the caller to stay in cache) meets every strip of kChannels
// output channels in turn, the tiles walking down the rows; then the block's outputs, still in
// cache, get the activations that do not fit in a register epilogue (GELU).
// tile(r, R, n, n_stop) computes rows [r, r + R) x channels [n, n_stop).
template <class Tile>
void for_each_tile(size_t rows, size_t row_block, size_t n_begin, size_t n_end, float* y,
                   size_t y_stride, DenseActivation activation, Tile&& tile) {
  const bool gelu =
      activation == DenseActivation::GeluErf || activation == DenseActivation::GeluTanh;
  for (size_t r0 = 0; r0 < rows; r0 += row_block) {
    const size_t r_end = std::min(rows, r0 + row_block);
    for (size_t n = n_begin; n < n_end; n += kChannels)
      for (size_t r = r0; r < r_end; r += kRows)
        tile(r, std::min(kRows, r_end - r), n, std::min(n_end, n + kChannels));
    if (gelu)
      for (size_t r = r0; r < r_end; ++r)
        activation_f32_fast(y + r * y_stride + n_begin, n_end - n_begin, activation);
  }
}

}  // namespace linfer::kernels::dense_tiles
#endif
