#include "int8/dense_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "dense_tiles.h"

namespace linfer::kernels {

bool int8_fast_path_available() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}

void quantize_rows_u8_ref(const float* x, size_t x_stride, size_t rows, size_t k, size_t k_padded,
                          uint8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    uint8_t* qr = q + r * k_padded;
    float amax = 0.0f;
    for (size_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(xr[i]));
    const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    const float inv = 1.0f / scale;
    for (size_t i = 0; i < k; ++i) {
      const float v = std::nearbyint(xr[i] * inv);
      qr[i] = uint8_t(int(std::min(127.0f, std::max(-127.0f, v))) + 128);
    }
    for (size_t i = k; i < k_padded; ++i) qr[i] = 128;
    scales[r] = scale;
  }
}

std::string pack_int8_weights(const int8_t* w, const float* scales, const float* bias, size_t in,
                              size_t out, Int8Weights* p) {
  p->in = in;
  p->out = out;
  p->in_padded = (in + 3) / 4 * 4;
  p->out_padded = (out + 15) / 16 * 16;
  void* mem = nullptr;
  if (posix_memalign(&mem, 64, p->out_padded * p->in_padded) != 0)
    return "out of memory packing int8 weights";
  p->packed.reset(static_cast<int8_t*>(mem));
  p->sum128.reset(new int32_t[p->out_padded]());
  p->scale.reset(new float[p->out_padded]());
  p->bias.reset(new float[p->out_padded]());
  int8_t* dst = p->packed.get();
  const size_t kg = p->in_padded / 4;
  for (size_t nb = 0; nb < p->out_padded / 16; ++nb)
    for (size_t g = 0; g < kg; ++g)
      for (size_t j = 0; j < 16; ++j)
        for (size_t t = 0; t < 4; ++t) {
          const size_t n = nb * 16 + j, k = g * 4 + t;
          *dst++ = (n < out && k < in) ? w[n * in + k] : 0;
        }
  for (size_t n = 0; n < out; ++n) {
    int32_t s = 0;
    for (size_t k = 0; k < in; ++k) s += w[n * in + k];
    p->sum128[n] = 128 * s;
    p->scale[n] = scales[n];
    p->bias[n] = bias ? bias[n] : 0.0f;
  }
  return "";
}

void dense_int8_f32_ref(const Int8Weights& w, const uint8_t* qx, const float* xs, size_t rows,
                        float* y, size_t y_stride, size_t n_begin, size_t n_end,
                        DenseEpilogue e) {
  const size_t kg = w.in_padded / 4;
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* xr = qx + r * w.in_padded;
    for (size_t n = n_begin; n < n_end; ++n) {
      const int8_t* block = w.packed.get() + (n / 16) * kg * 64 + (n % 16) * 4;
      int32_t acc = 0;
      for (size_t g = 0; g < kg; ++g)
        for (size_t t = 0; t < 4; ++t) acc += int32_t(xr[g * 4 + t]) * block[g * 64 + t];
      acc -= w.sum128[n];
      float v = float(acc) * xs[r] * w.scale[n] + w.bias[n];
      activation_f32_ref(&v, 1, e.activation);
      float& out = y[r * y_stride + n];
      out = e.accumulate ? out + v : v;
    }
  }
}

#if defined(__x86_64__)
#define LINFER_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace {
// acc += u8 x s8 dot products. Inline asm instead of _mm512_dpbusd_epi32: with the intrinsic
// GCC 12 copies every accumulator to another register and to the stack on each step (measured:
// 39% of the vpdpbusd peak); the tied "+v" operand keeps each accumulator in one register.
LINFER_VNNI inline void dpbusd(__m512i& acc, __m512i a_u8, __m512i w_s8) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a_u8), "v"(w_s8));
}

LINFER_VNNI inline __m512i broadcast_u8x4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

using dense_tiles::kBlocks;
using dense_tiles::kRows;

// The register tile (dense_tiles.h) over the kg groups of 4 inputs: 6 quantized rows times 4
// packed blocks of 16 output channels, the 24 accumulators as named variables (GCC keeps an
// array of them on the stack), 4 weight vectors and one broadcast per row and step.
LINFER_VNNI inline void vnni_tile_6x4(const uint8_t* const (&a)[6], const int8_t* const (&b)[4],
                                      size_t kg, __m512i (&acc)[6][4]) {
  const uint8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  const int8_t *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
#define LINFER_ACC_ROW(r)                                                                      \
  __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = _mm512_setzero_si512(),                 \
          c##r##2 = _mm512_setzero_si512(), c##r##3 = _mm512_setzero_si512();
#define LINFER_DOT_ROW(r)                                                                      \
  {                                                                                            \
    const __m512i av = broadcast_u8x4(a##r + g * 4);                                           \
    dpbusd(c##r##0, av, w0), dpbusd(c##r##1, av, w1), dpbusd(c##r##2, av, w2),                 \
        dpbusd(c##r##3, av, w3);                                                               \
  }
#define LINFER_STORE_ROW(r) \
  acc[r][0] = c##r##0, acc[r][1] = c##r##1, acc[r][2] = c##r##2, acc[r][3] = c##r##3;
  LINFER_ACC_ROW(0) LINFER_ACC_ROW(1) LINFER_ACC_ROW(2)
  LINFER_ACC_ROW(3) LINFER_ACC_ROW(4) LINFER_ACC_ROW(5)
  for (size_t g = 0; g < kg; ++g) {
    const size_t o = g * 64;
    const __m512i w0 = _mm512_load_si512(reinterpret_cast<const void*>(b0 + o)),
                  w1 = _mm512_load_si512(reinterpret_cast<const void*>(b1 + o)),
                  w2 = _mm512_load_si512(reinterpret_cast<const void*>(b2 + o)),
                  w3 = _mm512_load_si512(reinterpret_cast<const void*>(b3 + o));
    LINFER_DOT_ROW(0) LINFER_DOT_ROW(1) LINFER_DOT_ROW(2)
    LINFER_DOT_ROW(3) LINFER_DOT_ROW(4) LINFER_DOT_ROW(5)
  }
  LINFER_STORE_ROW(0) LINFER_STORE_ROW(1) LINFER_STORE_ROW(2)
  LINFER_STORE_ROW(3) LINFER_STORE_ROW(4) LINFER_STORE_ROW(5)
#undef LINFER_ACC_ROW
#undef LINFER_DOT_ROW
#undef LINFER_STORE_ROW
}

// Rows [0, R) (R <= 6), output channels [n0, n_end) (at most 64): integer dot products, then
// dequantization, bias, ReLU and accumulate in registers.
LINFER_VNNI void tile(const Int8Weights& w, const uint8_t* qx, const float* xs, size_t R,
                      float* y, size_t y_stride, size_t n0, size_t n_end, DenseEpilogue e) {
  const size_t kg = w.in_padded / 4, NB = (n_end - n0 + 15) / 16;
  const uint8_t* a[kRows];
  dense_tiles::tile_pointers(qx, w.in_padded, R, a);
  const int8_t* b[kBlocks];
  for (size_t j = 0; j < kBlocks; ++j)
    b[j] = w.packed.get() + (n0 / 16 + std::min(j, NB - 1)) * kg * 64;
  __m512i acc[kRows][kBlocks];
  vnni_tile_6x4(a, b, kg, acc);
  for (size_t j = 0; j < NB; ++j) {
    const size_t n = n0 + j * 16;
    // Per-channel arrays are padded to a multiple of 16.
    const __m512i s128 = _mm512_loadu_si512(w.sum128.get() + n);
    const __m512 ws = _mm512_loadu_ps(w.scale.get() + n);
    const __m512 bias = _mm512_loadu_ps(w.bias.get() + n);
    for (size_t r = 0; r < R; ++r) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], s128));
      dense_tiles::store_output(y + r * y_stride + n,
                                _mm512_fmadd_ps(v, _mm512_mul_ps(ws, _mm512_set1_ps(xs[r])), bias),
                                dense_tiles::first_lanes(n_end - n), e);
    }
  }
}
}  // namespace

LINFER_VNNI void dense_int8_f32_avx512vnni(const Int8Weights& w, const uint8_t* qx,
                                           const float* xs, size_t rows, float* y,
                                           size_t y_stride, size_t n_begin, size_t n_end,
                                           DenseEpilogue e) {
  // Blocks of about 24 KiB of quantized rows: they stay in L1 while the strips pass.
  const size_t row_block = std::max(kRows, (24 * 1024) / w.in_padded / kRows * kRows);
  dense_tiles::for_each_tile(rows, row_block, n_begin, n_end, y, y_stride, e.activation,
                             [&](size_t r, size_t R, size_t n, size_t n_stop) {
                               tile(w, qx + r * w.in_padded, xs + r, R, y + r * y_stride,
                                    y_stride, n, n_stop, e);
                             });
}

LINFER_VNNI void quantize_rows_u8_avx512(const float* x, size_t x_stride, size_t rows, size_t k,
                                         size_t k_padded, uint8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    uint8_t* qr = q + r * k_padded;
    __m512 vmax = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= k; i += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(xr + i)));
    float amax = _mm512_reduce_max_ps(vmax);
    for (; i < k; ++i) amax = std::max(amax, std::fabs(xr[i]));
    const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    const float inv = 1.0f / scale;
    const __m512 vinv = _mm512_set1_ps(inv);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127),
                  off = _mm512_set1_epi32(128);
    for (i = 0; i + 16 <= k; i += 16) {
      // cvtps rounds to nearest even, as nearbyint does in the reference.
      __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xr + i), vinv));
      v = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi), off);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + i), _mm512_cvtepi32_epi8(v));
    }
    for (; i < k; ++i) {
      const float v = std::nearbyint(xr[i] * inv);
      qr[i] = uint8_t(int(std::min(127.0f, std::max(-127.0f, v))) + 128);
    }
    for (i = k; i < k_padded; ++i) qr[i] = 128;
    scales[r] = scale;
  }
}
#endif

}  // namespace linfer::kernels
