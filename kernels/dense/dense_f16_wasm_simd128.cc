// SPDX-License-Identifier: Apache-2.0
// Dense layers with f16 weights on WebAssembly SIMD128 (and relaxed SIMD's multiply-add in the
// relaxed module): the f32 tile (dense_wasm_simd128.h) on panels widened to floats ahead.
// SIMD128 has no half-precision conversion: the widening is integer arithmetic, exact for every
// half (subnormals, infinities, NaNs).
#if defined(__wasm_simd128__)
#include "dense/dense_wasm_simd128.h"

namespace linfer::kernels::dense {
namespace {

// 4 halves (zero-extended to 32 bits) as floats: exponent and mantissa shifted into a float's
// place are the value times 2^-112 (subnormal halves too), then infinities and NaNs get the
// float's all-ones exponent, and the sign goes back on (dense_generic.cc's widen_half, 4 lanes).
inline v128_t widen_halves(v128_t h) {
  const v128_t magnitude = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
  const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
  const v128_t scaled = wasm_f32x4_mul(magnitude, wasm_f32x4_splat(5.192296858534828e+33f));  // 2^112
  const v128_t special = wasm_i32x4_eq(wasm_v128_and(h, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7c00));
  const v128_t bits = wasm_v128_bitselect(wasm_v128_or(magnitude, wasm_i32x4_splat(0x7f800000)), scaled, special);
  return wasm_v128_or(bits, sign);
}

// 8 halves of a panel (channels c..c+8 of one input) as two vectors of floats.
inline void widen8(const uint16_t* p, size_t c, v128_t (&out)[2]) {
  const v128_t h = wasm_v128_load(p + c);
  out[0] = widen_halves(wasm_u32x4_extend_low_u16x8(h));
  out[1] = widen_halves(wasm_u32x4_extend_high_u16x8(h));
}

// Inputs up to which a panel is widened on the stack: kPanelRows x 8192 floats, 512 KiB of the 5
// MiB every wasm thread has. Wider layers (none in the models linfer has met: feed-forward
// widths reach 4096) take the portable kernel.
constexpr size_t kMaxWidenedInputs = 8192;
// Tiles of rows per row block at least, whatever the inputs: each block widens every panel once.
constexpr size_t kMinTilesPerBlock = 3;

}  // namespace

// A panel of 16 channels is widened into floats once per row block (the tiles of one panel and
// block come one after another), then the f32 tile runs on it: the widening (about 20
// instructions per input and 16 channels) is paid once per block of rows instead of once per
// tile, and the products are the same floats in the same order as widening in the tile. Blocks
// are the f32 kernel's (128 KiB of inputs) or, where that is fewer rows, 3 tiles of rows (above
// 1,820 inputs in the relaxed module, 2,184 in SIMD128's).
LINFER_DENSE_RUN(run_f16_wasm_simd128) {
  const size_t K = w.in;
  if (K > kMaxWidenedInputs) {
    run_f16_generic(w, in, rows, y, y_stride, n_begin, n_end, e);
    return;
  }
  alignas(16) float widened[kMaxWidenedInputs * kPanelRows];
  const uint16_t* widened_from = nullptr;
  const size_t panel_size = panel_bytes(DType::F16, uint32_t(K)) / sizeof(uint16_t);
  const size_t block_bytes =
      std::max(wasm::kFloatRowBlockBytes, kMinTilesPerBlock * wasm::kF32Rows * K * sizeof(float));
  wasm::run_panels<wasm::kF32Rows, float>(
      w, in, rows, y, y_stride, n_begin, n_end, e, block_bytes,
      [&](size_t n) {
        const uint16_t* panel = static_cast<const uint16_t*>(w.panels) + (n / kPanelRows) * panel_size;
        if (panel != widened_from) {
          for (size_t i = 0; i < K * kPanelRows; i += 8) {
            v128_t v[2];
            widen8(panel, i, v);
            wasm_v128_store(widened + i, v[0]);
            wasm_v128_store(widened + i + 4, v[1]);
          }
          widened_from = panel;
        }
        return static_cast<const float*>(widened);
      },
      wasm::LoadFloats{});
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_simd128__
