// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on WebAssembly SIMD128, on the same quantized values as the
// reference (quantize_s8_ref: q, one scale per row) and bit-exact with it.
// SIMD128's integer dot product is i32x4.dot_i16x8_s (pairs of int16 products added into int32),
// so both operands are int16: the activations are quantized straight to int16 (q_bytes = 2, as
// the AVX2 kernel without VNNI), and the weights are widened by the loads themselves
// (v128.load8x8_s). Before, the int8 rows were widened again in every tile (a load and an extend
// per row and group, two instructions per high half of the weights): 12-19% slower.
// Tile: 2 rows x 8 channels (8 accumulators, 4 weight vectors, 1 input, 1 product: 14 live v128
// values, within the 15 V8 allocates on x86-64; 3 rows spill: 15-28% slower, and 5 rows x 4
// channels 10-24% slower). The activations' quantizer is here too (quantize_s16_wasm_simd128).
#if defined(__wasm_simd128__)
#include <cmath>
#include <cstring>

#include "dense/dense_wasm_simd128.h"
#include "linfer/types/int8.h"

namespace linfer::kernels::dense {
namespace {

constexpr int kInt8Rows = 2;

// Rows [0, R) x channels [c, c + 8) of an int8 panel (c = 0 or 8): exact integer sums, then
// fma(float(sum), x_scale * w_scale, bias) as every int8 kernel (dense_ref.cc). Per group of 4
// inputs, each pair of channels' 8 weight bytes is one v128.load8x8_s (a sign-extending load) and
// each row's 4 int16 inputs one v128.load64_splat; i32x4.dot_i16x8_s leaves each channel's sum in
// two lanes, which the epilogue adds. The loop walks pointers: V8 computes an index's addresses
// with instructions of their own.
template <int R, bool kBias>
void int8_half_tile(const int8_t* panel, size_t groups, size_t c, const int16_t* q, size_t q_stride,
                    const float* q_scales, const float* scale, const float* bias, float* y, size_t y_stride,
                    size_t count, DenseEpilogue e) {
  v128_t acc[R][4];
  const int8_t* wp = panel + c * kInt8GroupInputs;
  const int16_t* qk = q;
  // The first group sets the accumulators (zeroing them first became a call to memset per tile:
  // 5% of an int8 run at n = 128).
  auto group = [&](bool first) {
    v128_t w[4];
    for (int v = 0; v < 4; ++v) w[v] = wasm_i16x8_load8x8(wp + 8 * v);
    for (int i = 0; i < R; ++i) {
      const v128_t a = wasm_v128_load64_splat(qk + i * q_stride);
      for (int v = 0; v < 4; ++v) {
        const v128_t d = wasm_i32x4_dot_i16x8(w[v], a);
        acc[i][v] = first ? d : wasm_i32x4_add(acc[i][v], d);
      }
    }
    qk += kInt8GroupInputs, wp += kPanelRows * kInt8GroupInputs;
  };
  const int16_t* const end = q + groups * kInt8GroupInputs;
  group(true);  // groups >= 1
  while (qk != end) group(false);
  for (int i = 0; i < R; ++i) {
    // acc[i][v] holds channels c + 2v and c + 2v + 1, two partial sums each: add the pairs.
    const v128_t xs = wasm_f32x4_splat(q_scales[i]);
    v128_t v[2];
    for (int h = 0; h < 2; ++h) {
      const v128_t lo = acc[i][2 * h], hi = acc[i][2 * h + 1];
      const v128_t sums =
          wasm_i32x4_add(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6), wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7));
      const v128_t s = wasm_f32x4_mul(xs, wasm_v128_load(scale + c + 4 * h));
      // Without a bias, fma(f, s, +0) is f * s rounded once, a float multiply, with -0 made +0
      // (+0 added): a nonzero product never rounds to 0 here (|f| >= 1, s a float). Products of
      // activations (attention, compression) have no bias: at 64-128 inputs the double-precision
      // epilogue took as long as the sums (1.6-2x kernel time for Q K'^T).
      v[h] = kBias ? wasm::dequantize4(sums, s, bias + c + 4 * h)
                   : wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sums), s), wasm_f32x4_splat(0.0f));
    }
    wasm::store_outputs(y + i * y_stride + c, v, count, e);
  }
}

template <bool kBias>
void run_int8(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
              size_t n_end, DenseEpilogue e) {
  const size_t groups = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const size_t panel_size = panel_bytes(DType::I8, uint32_t(w.in));
  const size_t q_stride = in.q_stride / sizeof(int16_t);
  neon::run_tiles<kInt8Rows>(rows, wasm::kInt8RowBlockBytes, in.q_stride, n_begin, n_end, y, y_stride, e.activation,
                             [&](size_t r, auto rows_c, size_t n, size_t n_stop) {
                               constexpr int R = decltype(rows_c)::value;
                               const int8_t* panel =
                                   static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * panel_size;
                               float bias_tail[kPanelRows], scale_tail[kPanelRows];
                               const float* bias = kBias ? channel_block(w.bias, n, w.out, bias_tail) : nullptr;
                               const float* scale = channel_block(w.scales, n, w.out, scale_tail);
                               const int16_t* q = reinterpret_cast<const int16_t*>(in.q + r * in.q_stride);
                               float* yr = y + r * y_stride + n;
                               const size_t count = n_stop - n;
                               int8_half_tile<R, kBias>(panel, groups, 0, q, q_stride, in.q_scales + r, scale, bias, yr,
                                                        y_stride, std::min<size_t>(count, 8), e);
                               if (count > 8)
                                 int8_half_tile<R, kBias>(panel, groups, 8, q, q_stride, in.q_scales + r, scale, bias,
                                                          yr, y_stride, count - 8, e);
                             });
}

}  // namespace

LINFER_DENSE_RUN(run_int8_wasm_simd128) {
  if (w.bias)
    run_int8<true>(w, in, rows, y, y_stride, n_begin, n_end, e);
  else
    run_int8<false>(w, in, rows, y, y_stride, n_begin, n_end, e);
}

// Rows quantized as quantize_s8_ref does, 16 values at a time, to the same values and scale,
// stored as int16 (the kernel's operand, so no row is widened again per tile): the maximum with
// pmax (a < b ? b : a: a NaN never enters, as in the reference's comparison), then the clamp to
// [-127, 127] in float (pmin and pmax keep a NaN), rounding to nearest even by adding 1.5 x 2^23
// (whose float steps are 1: the sum's low bits are the rounded integer) and a NaN made 0. V8
// lowers f32x4.nearest plus i32x4.trunc_sat_f32x4 (its NaN and saturation fix-ups) to about
// twice the instructions.
LINFER_DENSE_QUANTIZE(quantize_s16_wasm_simd128) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  const v128_t lo = wasm_f32x4_splat(-127.0f), hi = wasm_f32x4_splat(127.0f);
  const v128_t magic = wasm_f32x4_splat(12582912.0f);  // 1.5 x 2^23
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    int16_t* qr = reinterpret_cast<int16_t*>(q + r * q_stride);
    v128_t m0 = wasm_f32x4_splat(0.0f), m1 = m0;
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
      m0 = wasm_f32x4_pmax(m0, wasm_f32x4_abs(wasm_v128_load(xr + i)));
      m1 = wasm_f32x4_pmax(m1, wasm_f32x4_abs(wasm_v128_load(xr + i + 4)));
    }
    float lanes[4];  // no NaN among them: any maximum is exact
    wasm_v128_store(lanes, wasm_f32x4_pmax(m0, m1));
    float amax = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
    for (; i < k; ++i) amax = std::fabs(xr[i]) > amax ? std::fabs(xr[i]) : amax;
    const float scale = amax / 127.0f;
    const float inv = amax > 0.0f ? 1.0f / scale : 0.0f;
    const v128_t vinv = wasm_f32x4_splat(inv);
    auto quantize4 = [&](const float* p) {
      const v128_t v = wasm_f32x4_mul(wasm_v128_load(p), vinv);
      const v128_t clamped = wasm_f32x4_pmax(wasm_f32x4_pmin(v, hi), lo);  // NaN stays NaN
      const v128_t q = wasm_i32x4_sub(wasm_f32x4_add(clamped, magic), magic);
      return wasm_v128_and(q, wasm_f32x4_eq(v, v));
    };
    for (i = 0; i + 8 <= k; i += 8)
      wasm_v128_store(qr + i, wasm_i16x8_narrow_i32x4(quantize4(xr + i), quantize4(xr + i + 4)));
    for (; i < k; ++i) qr[i] = quantize_int8(xr[i], inv);
    for (; i < padded; ++i) qr[i] = 0;
    scales[r] = amax > 0.0f ? scale : 0.0f;
  }
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_simd128__
