// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on WebAssembly relaxed SIMD (the relaxed module, built with
// -mrelaxed-simd: cmake/toolchains/wasm32-emscripten-relaxed.cmake), on the same quantized values
// as the reference (quantize_s8_ref) and bit-exact with it, as the SIMD128 kernel.
//
// i32x4.relaxed_dot_i8x16_i7x16_add_s multiplies 16 signed bytes by 16 bytes of a second operand
// and adds each lane's four products to an int32 accumulator: 16 multiply-adds where SIMD128's
// i32x4.dot_i16x8_s + i32x4.add does 8 in two instructions. The second operand's result is only
// defined for values within 7 bits, 0..127: with the high bit set, an engine may read it as
// signed (Arm's SDOT) or as unsigned (x86's VPDPBUSD / PMADDUBSW). So the weights (-127..127) are
// the first operand, and each quantized activation q (-127..127) is split into two 7-bit values,
// q+ = max(q, 0) and q- = max(-q, 0) (Int8Form::SplitU7, 8 bytes per group of 4 inputs: the same
// 2 bytes per input as the SIMD128 kernel's int16): sum w q = sum w q+ + sum (-w) q-, two dot
// products into one accumulator, every product within int16 (127 x 127 x 2 < 2^15, so x86's
// PMADDUBSW never saturates). The sums are exact, as every int8 kernel's; no bit of q is lost.
//
// Tile: 4 rows x 8 channels: 8 accumulators, 2 weight vectors and their negations, and a row's
// two broadcast inputs: 14 live v128 values, within the 15 V8 gives to v128 on x86-64.
#if defined(__wasm_relaxed_simd__)
#include <cstring>

#include "dense/dense_wasm_simd128.h"
#include "linfer/types/int8.h"

namespace linfer::kernels::dense {
namespace {

constexpr int kRelaxedRows = 4;

inline v128_t dot_add(v128_t w, v128_t x7, v128_t acc) {
  return __builtin_wasm_relaxed_dot_i8x16_i7x16_add_s_i32x4(__i8x16(w), __i8x16(x7), __i32x4(acc));
}

// Rows [0, R) x channels [c, c + 8) of an int8 panel (c = 0 or 8): per group of 4 inputs the
// 8 channels' 32 weight bytes are two loads (4 channels x 4 inputs each, the panel's order), and
// each row's q+ and q- two 4-byte broadcasts. Each lane of an accumulator is one channel's sum.
template <int R, bool kBias>
void relaxed_half_tile(const int8_t* panel, size_t groups, size_t c, const int8_t* q, size_t q_stride,
                       const float* q_scales, const float* scale, const float* bias, float* y, size_t y_stride,
                       size_t count, DenseEpilogue e) {
  v128_t acc[R][2];
  for (auto& row : acc) row[0] = row[1] = wasm_i32x4_splat(0);
  const int8_t* wp = panel + c * kInt8GroupInputs;
  const int8_t* qk = q;
  for (const int8_t* const end = q + groups * 2 * kInt8GroupInputs; qk != end;) {
    const v128_t w0 = wasm_v128_load(wp), w1 = wasm_v128_load(wp + 16);
    const v128_t n0 = wasm_i8x16_neg(w0), n1 = wasm_i8x16_neg(w1);  // exact: w >= -127
    for (int i = 0; i < R; ++i) {
      const v128_t pos = wasm_v128_load32_splat(qk + i * q_stride);
      const v128_t neg = wasm_v128_load32_splat(qk + i * q_stride + 4);
      acc[i][0] = dot_add(n0, neg, dot_add(w0, pos, acc[i][0]));
      acc[i][1] = dot_add(n1, neg, dot_add(w1, pos, acc[i][1]));
    }
    qk += 2 * kInt8GroupInputs, wp += kPanelRows * kInt8GroupInputs;
  }
  for (int i = 0; i < R; ++i) {
    const v128_t xs = wasm_f32x4_splat(q_scales[i]);
    v128_t v[2];
    for (int h = 0; h < 2; ++h) {
      const v128_t s = wasm_f32x4_mul(xs, wasm_v128_load(scale + c + 4 * h));
      // As the SIMD128 kernel: without a bias, fma(f, s, +0) is one float multiply (+0 added).
      v[h] = kBias ? wasm::dequantize4(acc[i][h], s, bias + c + 4 * h)
                   : wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc[i][h]), s), wasm_f32x4_splat(0.0f));
    }
    wasm::store_outputs(y + i * y_stride + c, v, count, e);
  }
}

template <bool kBias>
void run_relaxed(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
                 size_t n_end, DenseEpilogue e) {
  const size_t groups = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;
  const size_t panel_size = panel_bytes(DType::I8, uint32_t(w.in));
  neon::run_tiles<kRelaxedRows>(rows, wasm::kInt8RowBlockBytes, in.q_stride, n_begin, n_end, y, y_stride, e.activation,
                                [&](size_t r, auto rows_c, size_t n, size_t n_stop) {
                                  constexpr int R = decltype(rows_c)::value;
                                  const int8_t* panel =
                                      static_cast<const int8_t*>(w.panels) + (n / kPanelRows) * panel_size;
                                  float bias_tail[kPanelRows], scale_tail[kPanelRows];
                                  const float* bias = kBias ? channel_block(w.bias, n, w.out, bias_tail) : nullptr;
                                  const float* scale = channel_block(w.scales, n, w.out, scale_tail);
                                  const int8_t* q = in.q + r * in.q_stride;
                                  float* yr = y + r * y_stride + n;
                                  const size_t count = n_stop - n;
                                  relaxed_half_tile<R, kBias>(panel, groups, 0, q, in.q_stride, in.q_scales + r, scale,
                                                              bias, yr, y_stride, std::min<size_t>(count, 8), e);
                                  if (count > 8)
                                    relaxed_half_tile<R, kBias>(panel, groups, 8, q, in.q_stride, in.q_scales + r,
                                                                scale, bias, yr, y_stride, count - 8, e);
                                });
}

}  // namespace

LINFER_DENSE_RUN(run_int8_wasm_relaxed) {
  if (w.bias)
    run_relaxed<true>(w, in, rows, y, y_stride, n_begin, n_end, e);
  else
    run_relaxed<false>(w, in, rows, y, y_stride, n_begin, n_end, e);
}

// The SIMD128 kernel's quantizer (the reference's values and scales, as int16), then each row
// rewritten in place as Int8Form::SplitU7, 8 inputs (16 bytes) at a time: q+ = max(q, 0) and
// q- = max(-q, 0) narrowed to bytes [q+0..7, q-0..7], then 4-byte groups interleaved.
LINFER_DENSE_QUANTIZE(quantize_split_u7_wasm_relaxed) {
  quantize_s16_wasm_simd128(x, x_stride, rows, k, q, q_stride, scales);
  const size_t padded = int8_padded_inputs(uint32_t(k));
  const v128_t zero = wasm_i16x8_splat(0);
  for (size_t r = 0; r < rows; ++r) {
    int8_t* qr = q + r * q_stride;
    size_t i = 0;
    for (; i + 8 <= padded; i += 8) {
      const v128_t v = wasm_v128_load(qr + 2 * i);
      const v128_t bytes = wasm_u8x16_narrow_i16x8(wasm_i16x8_max(v, zero), wasm_i16x8_max(wasm_i16x8_neg(v), zero));
      wasm_v128_store(qr + 2 * i, wasm_i32x4_shuffle(bytes, bytes, 0, 2, 1, 3));
    }
    if (i < padded) s16_to_split_u7(reinterpret_cast<int16_t*>(qr + 2 * i), padded - i);
  }
}

}  // namespace linfer::kernels::dense
#endif  // __wasm_relaxed_simd__
