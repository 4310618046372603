// SPDX-License-Identifier: Apache-2.0
// What the WebAssembly SIMD128 dense kernels (dense_{f32,f16,int8}_wasm_simd128.cc) share: the
// row blocks, the output epilogue, and the float tile that the f32 and f16 kernels differ in only
// by how a panel's weights become floats. SIMD128 is the wasm build's baseline (-msimd128): every
// engine that runs the module has it (cpu_has in dense_select.cc).
//
// The engine maps v128 values onto the host's vector registers: 16 on x86-64 (SSE/AVX; V8 keeps
// one as scratch), 32 on arm64. The f32 tile of 5 rows x 8 channels keeps 10 accumulators, 2
// weight vectors, a broadcast input and a product live (14), so it fits either without spills
// (in V8 on x86-64, 6 rows spill: 24% slower; 4 rows: 5% slower). f16 runs this tile on panels
// widened ahead (dense_f16_wasm_simd128.cc). SIMD128 has no fused multiply-add, so each product
// is a multiply and an add. The relaxed module (-mrelaxed-simd) uses f32x4.relaxed_madd, which
// engines lower to one fused multiply-add where the CPU has one (x86 FMA3, Arm) and to a multiply
// and an add elsewhere: no product register, so the tile takes 6 rows (12 accumulators, 2 weight
// vectors, a broadcast input: 15). In V8 on a Zen 4 core, the S and M shapes' f32 tiles run at
// 54-56 GFLOP/s against 42-43 with a multiply and an add (4 rows with relaxed_madd: 50-53).
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstddef>

#include "dense/dense_internal.h"
#include "dense/dense_neon.h"  // the portable walk over row blocks and tiles (neon::run_tiles)

namespace linfer::kernels::dense::wasm {

// Bytes of x rows per block, kept in cache while every panel of the weights passes (as on
// arm64: dense_neon.h).
constexpr size_t kFloatRowBlockBytes = 128 * 1024;
constexpr size_t kInt8RowBlockBytes = 64 * 1024;

#if defined(__wasm_relaxed_simd__)
constexpr int kF32Rows = 6;
// acc + w * a, fused where the engine's CPU can.
inline v128_t mul_add(v128_t w, v128_t a, v128_t acc) { return __builtin_wasm_relaxed_madd_f32x4(w, a, acc); }
#else
constexpr int kF32Rows = 5;
inline v128_t mul_add(v128_t w, v128_t a, v128_t acc) { return wasm_f32x4_add(acc, wasm_f32x4_mul(w, a)); }
#endif

// fma(float(sum), scale, bias) for 4 channels, bit-exact with std::fma, as the C library's fmaf
// computes it: float(sum) * scale is exact in double (24 x 24 bits), the sum with bias rounds once
// to double, and that double rounds to the float fma's result unless it lies exactly halfway
// between two floats (low 29 bits 0x10000000); there, rarely, the scalar fma decides.
inline v128_t dequantize4(v128_t sums, v128_t scale, const float* bias) {
  const v128_t f = wasm_f32x4_convert_i32x4(sums), b = wasm_v128_load(bias);
  auto half = [&](int h) {  // lanes 2h, 2h + 1 in double
    auto lanes = [&](v128_t v) { return wasm_f64x2_promote_low_f32x4(h ? wasm_i32x4_shuffle(v, v, 2, 3, 0, 1) : v); };
    return wasm_f64x2_add(wasm_f64x2_mul(lanes(f), lanes(scale)), lanes(b));
  };
  const v128_t lo = half(0), hi = half(1);
  const v128_t low_bits = wasm_i64x2_splat(0x1fffffff), halfway = wasm_i64x2_splat(0x10000000);
  if (wasm_v128_any_true(wasm_v128_or(wasm_i64x2_eq(wasm_v128_and(lo, low_bits), halfway),
                                      wasm_i64x2_eq(wasm_v128_and(hi, low_bits), halfway)))) {
    int32_t s[4];
    float w[4], out[4];
    wasm_v128_store(s, sums);
    wasm_v128_store(w, scale);
    for (int j = 0; j < 4; ++j) out[j] = std::fma(float(s[j]), w[j], bias[j]);
    return wasm_v128_load(out);
  }
  return wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(lo), wasm_f32x4_demote_f64x2_zero(hi), 0, 1, 4, 5);
}

// Stores one row of 4N outputs (bias already added) with ReLU and accumulate; only the first
// `count` channels when the panel is partial.
template <size_t N>
inline void store_outputs(float* dst, v128_t (&v)[N], size_t count, DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu)
    for (auto& x : v) x = wasm_f32x4_max(x, wasm_f32x4_splat(0.0f));
  if (count >= 4 * N) {
    for (size_t i = 0; i < N; ++i)
      wasm_v128_store(dst + 4 * i, e.accumulate ? wasm_f32x4_add(wasm_v128_load(dst + 4 * i), v[i]) : v[i]);
    return;
  }
  float tmp[4 * N];
  for (size_t i = 0; i < N; ++i) wasm_v128_store(tmp + 4 * i, v[i]);
  for (size_t j = 0; j < count; ++j) dst[j] = e.accumulate ? dst[j] + tmp[j] : tmp[j];
}

// Rows [0, R) of x times channels [c, c + 8) of one panel (c = 0 or 8) of K inputs (weights of
// type T); results of channels [c, c + count) stored at y + c. widen(p, c, w) loads the 8 weights
// p[c..c+8) of one input as two vectors of floats. The loop walks pointers, not an index k: wasm
// has no scaled-index addressing, and V8 computed each address from k (a shift and an add for the
// weights, one more per row) next to the stack check it puts at every loop head. (Unrolled by 2
// inputs, LLVM and V8 keep 4 weight vectors live and spill an accumulator: 20% slower.)
template <int R, class T, class Widen>
inline void float_half_tile(const T* panel, size_t K, size_t c, const float* x, size_t x_stride, const float* bias,
                            float* y, size_t y_stride, size_t count, DenseEpilogue e, Widen widen) {
  v128_t acc[R][2];
  for (auto& row : acc) row[0] = row[1] = wasm_f32x4_splat(0.0f);
  auto step = [&](const T* p, const float* xk) {
    v128_t w[2];
    widen(p, c, w);
    for (int i = 0; i < R; ++i) {
      const v128_t a = wasm_v128_load32_splat(xk + i * x_stride);
      acc[i][0] = mul_add(w[0], a, acc[i][0]);
      acc[i][1] = mul_add(w[1], a, acc[i][1]);
    }
  };
  const T* p = panel;
  const float* xk = x;
  for (const float* end = x + K; xk != end; ++xk, p += kPanelRows) step(p, xk);
  const v128_t b0 = wasm_v128_load(bias + c), b1 = wasm_v128_load(bias + c + 4);
  for (int i = 0; i < R; ++i) {
    v128_t out[2] = {wasm_f32x4_add(acc[i][0], b0), wasm_f32x4_add(acc[i][1], b1)};
    store_outputs(y + i * y_stride + c, out, count, e);
  }
}

// The f32 panels' widen: 8 floats as they are (a type, so that the tile inlines it).
struct LoadFloats {
  void operator()(const float* p, size_t c, v128_t (&out)[2]) const {
    out[0] = wasm_v128_load(p + c);
    out[1] = wasm_v128_load(p + c + 4);
  }
};

// A whole f32 or f16 dense kernel: every row block (block_bytes of inputs) through every panel,
// in tiles of up to kRows rows x 16 channels (two half tiles); panel_of(n) gives the panel of
// channels [n, n + 16) as T (the tiles of one panel and row block come one after another).
template <int kRows, class T, class PanelOf, class Widen>
inline void run_panels(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride,
                       size_t n_begin, size_t n_end, DenseEpilogue e, size_t block_bytes, PanelOf panel_of,
                       Widen widen) {
  const size_t K = w.in;
  neon::run_tiles<kRows>(rows, block_bytes, K * sizeof(float), n_begin, n_end, y, y_stride, e.activation,
                         [&](size_t r, auto rows_c, size_t n, size_t n_stop) {
                           constexpr int R = decltype(rows_c)::value;
                           const T* panel = panel_of(n);
                           float bias_tail[kPanelRows];
                           const float* bias = channel_block(w.bias, n, w.out, bias_tail);
                           const float* x = in.x + r * in.x_stride;
                           float* yr = y + r * y_stride + n;
                           const size_t count = n_stop - n;
                           float_half_tile<R>(panel, K, 0, x, in.x_stride, bias, yr, y_stride,
                                              std::min<size_t>(count, 8), e, widen);
                           if (count > 8)
                             float_half_tile<R>(panel, K, 8, x, in.x_stride, bias, yr, y_stride, count - 8, e, widen);
                         });
}

// run_panels on the weights' own panels.
template <int kRows, class T, class Widen>
inline void run_float(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride,
                      size_t n_begin, size_t n_end, DenseEpilogue e, Widen widen) {
  const size_t panel_size = panel_bytes(w.dtype, uint32_t(w.in)) / sizeof(T);
  run_panels<kRows, T>(
      w, in, rows, y, y_stride, n_begin, n_end, e, kFloatRowBlockBytes,
      [&](size_t n) { return static_cast<const T*>(w.panels) + (n / kPanelRows) * panel_size; }, widen);
}

}  // namespace linfer::kernels::dense::wasm
#endif  // __wasm_simd128__
