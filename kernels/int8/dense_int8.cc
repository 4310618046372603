#include "int8/dense_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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
                        float* y, size_t y_stride, size_t n_begin, size_t n_end, bool relu) {
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
      y[r * y_stride + n] = relu && v < 0.0f ? 0.0f : v;
    }
  }
}

#if defined(__x86_64__)
#define LINFER_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace {
// Rows R (1..4) x 4 blocks of 16 output channels; every weight load feeds R dot products and every
// activation broadcast feeds 4.
template <int R>
LINFER_VNNI inline void vnni_tile(const Int8Weights& w, const uint8_t* qx, const float* xs,
                                  float* y, size_t y_stride, size_t nb0, size_t nblocks, bool relu,
                                  size_t n_end) {
  const size_t kg = w.in_padded / 4;
  __m512i acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < 4; ++b) acc[r][b] = _mm512_setzero_si512();
  const int8_t* base = w.packed.get() + nb0 * kg * 64;
  const size_t block_stride = kg * 64;
  for (size_t g = 0; g < kg; ++g) {
    __m512i wv[4];
    for (size_t b = 0; b < nblocks; ++b)
      wv[b] = _mm512_load_si512(reinterpret_cast<const void*>(base + b * block_stride + g * 64));
    for (int r = 0; r < R; ++r) {
      int32_t a;
      std::memcpy(&a, qx + r * w.in_padded + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(a);
      for (size_t b = 0; b < nblocks; ++b) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], av, wv[b]);
    }
  }
  for (size_t b = 0; b < nblocks; ++b) {
    const size_t n0 = (nb0 + b) * 16;
    const __m512i s128 = _mm512_loadu_si512(w.sum128.get() + n0);
    const __m512 ws = _mm512_loadu_ps(w.scale.get() + n0);
    const __m512 bias = _mm512_loadu_ps(w.bias.get() + n0);
    const size_t valid = std::min<size_t>(16, n_end - n0);
    const __mmask16 mask = valid == 16 ? __mmask16(0xffff) : __mmask16((1u << valid) - 1);
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][b], s128));
      __m512 out = _mm512_fmadd_ps(v, _mm512_mul_ps(ws, _mm512_set1_ps(xs[r])), bias);
      if (relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
      _mm512_mask_storeu_ps(y + r * y_stride + n0, mask, out);
    }
  }
}
}  // namespace

LINFER_VNNI void dense_int8_f32_avx512vnni(const Int8Weights& w, const uint8_t* qx,
                                           const float* xs, size_t rows, float* y,
                                           size_t y_stride, size_t n_begin, size_t n_end,
                                           bool relu) {
  // Output channels outer, rows inner: a strip of up to 4 blocks (64 channels) of packed weights
  // stays in L1 while every row streams past it.
  const size_t nb_begin = n_begin / 16, nb_end = (n_end + 15) / 16;
  const size_t strip = std::clamp<size_t>((32 * 1024) / (16 * w.in_padded), 1, 4);
  for (size_t nb = nb_begin; nb < nb_end; nb += strip) {
    const size_t nblocks = std::min(strip, nb_end - nb);
    for (size_t r = 0; r < rows; r += 4) {
      const size_t R = std::min<size_t>(4, rows - r);
      const uint8_t* q = qx + r * w.in_padded;
      float* yr = y + r * y_stride;
      switch (R) {
        case 4: vnni_tile<4>(w, q, xs + r, yr, y_stride, nb, nblocks, relu, n_end); break;
        case 3: vnni_tile<3>(w, q, xs + r, yr, y_stride, nb, nblocks, relu, n_end); break;
        case 2: vnni_tile<2>(w, q, xs + r, yr, y_stride, nb, nblocks, relu, n_end); break;
        default: vnni_tile<1>(w, q, xs + r, yr, y_stride, nb, nblocks, relu, n_end); break;
      }
    }
  }
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
