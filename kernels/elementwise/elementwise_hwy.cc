// SPDX-License-Identifier: Apache-2.0
// Element-wise and row kernels with Highway: layer norm, activations, add, sum.
// Compiled for every target Highway knows (AVX-512, AVX2, SSE4, NEON, scalar); HWY_DYNAMIC_DISPATCH
// picks the best one for the running CPU. Remainders that do not fill a vector run as scalar code
// with the same arithmetic order, or through the vector code on a padded copy where scalar code
// would round differently.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "elementwise/elementwise_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>

#include "kernels.h"
#include "linfer/types/half.h"
#include "linfer/types/model_options.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

void LayerNorm(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows, size_t dim, const float* gamma,
               const float* beta, float eps) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    // Four partial sums: one chain of dependent adds would wait out each add's latency (a row of
    // 384 floats: 24 steps of 16 lanes on AVX-512, twice).
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 4 * L <= dim; i += 4 * L) {
      a0 = hn::Add(a0, hn::LoadU(d, xr + i));
      a1 = hn::Add(a1, hn::LoadU(d, xr + i + L));
      a2 = hn::Add(a2, hn::LoadU(d, xr + i + 2 * L));
      a3 = hn::Add(a3, hn::LoadU(d, xr + i + 3 * L));
    }
    for (; i + L <= dim; i += L) a0 = hn::Add(a0, hn::LoadU(d, xr + i));
    float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < dim; ++i) sum += xr[i];
    const float mean = sum / float(dim);
    const auto vmean = hn::Set(d, mean);
    a0 = a1 = a2 = a3 = hn::Zero(d);
    for (i = 0; i + 4 * L <= dim; i += 4 * L) {
      const auto c0 = hn::Sub(hn::LoadU(d, xr + i), vmean), c1 = hn::Sub(hn::LoadU(d, xr + i + L), vmean),
                 c2 = hn::Sub(hn::LoadU(d, xr + i + 2 * L), vmean), c3 = hn::Sub(hn::LoadU(d, xr + i + 3 * L), vmean);
      a0 = hn::MulAdd(c0, c0, a0);
      a1 = hn::MulAdd(c1, c1, a1);
      a2 = hn::MulAdd(c2, c2, a2);
      a3 = hn::MulAdd(c3, c3, a3);
    }
    for (; i + L <= dim; i += L) {
      const auto c = hn::Sub(hn::LoadU(d, xr + i), vmean);
      a0 = hn::MulAdd(c, c, a0);
    }
    float var = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
    for (; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.0f / std::sqrt(var / float(dim) + eps);
    const auto vinv = hn::Set(d, inv);
    for (i = 0; i + L <= dim; i += L) {
      const auto c = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), vmean), vinv);
      hn::StoreU(hn::MulAdd(c, hn::LoadU(d, gamma + i), hn::LoadU(d, beta + i)), d, yr + i);
    }
    for (; i < dim; ++i) yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
}

// erf(z) = z P(z^2) / Q(z^2) on |z| <= 3.92 (beyond, +-1: erf(3.92) = 1 - 5e-8), P and Q of
// degree 5, fitted for this kernel by iteratively reweighted least squares on the absolute error
// (tools/python/tables/fit_erf.py): 1.6e-8 in exact arithmetic, 3.5e-7 evaluated in float. No exp and
// one division: about twice as fast as Abramowitz & Stegun 7.1.26 with its exp, which matters
// because GELU runs on every feed-forward activation.
constexpr float kErfZMax = 3.92f;
constexpr float kErfP[6] = {1.128378987312317f,    0.19274236261844635f, 0.05305701494216919f,
                            0.003867200342938304f, 0.00028742037829943f, 2.0344823496998288e-06f};
constexpr float kErfQ[5] = {0.5041451454162598f, 0.11507508903741837f, 0.015170113183557987f, 0.0011877762153744698f,
                            3.806488530244678e-05f};

// GELU's 0.5 erf(x / sqrt 2) from that fit, with z = x / sqrt 2 and the 0.5 folded into the
// coefficients (x P(x^2 / 2) / (2 sqrt 2) over Q(x^2 / 2): powers of two but the one 1 / (2 sqrt
// 2)), two multiplies per vector fewer than scaling x and the result.
constexpr double kRsqrt2 = 0.70710678118654752;
constexpr float HalfErfNumerator(int i) {  // of x^(2i + 1)
  double c = double(kErfP[i]) * kRsqrt2 * 0.5;
  for (int k = 0; k < i; ++k) c *= 0.5;
  return float(c);
}
constexpr float HalfErfDenominator(int i) {  // of x^(2i + 2)
  double c = double(kErfQ[i]);
  for (int k = 0; k <= i; ++k) c *= 0.5;
  return float(c);
}

// Inlined: out of line, GCC 12 called it per vector on NEON and loaded its 13 constants in every
// call (Cortex-A72 proxy: GELU 59 -> 36 instructions per 4 values).
template <class V>
HWY_INLINE V HalfErfOfScaled(D d, V x) {
  const float x_max = float(double(kErfZMax) / kRsqrt2);
  const auto xc = hn::Min(hn::Max(x, hn::Set(d, -x_max)), hn::Set(d, x_max));
  const auto t = hn::Mul(xc, xc);
  auto p = hn::Set(d, HalfErfNumerator(5));
  for (int i = 4; i >= 0; --i) p = hn::MulAdd(p, t, hn::Set(d, HalfErfNumerator(i)));
  auto q = hn::Set(d, HalfErfDenominator(4));
  for (int i = 3; i >= 0; --i) q = hn::MulAdd(q, t, hn::Set(d, HalfErfDenominator(i)));
  q = hn::MulAdd(q, t, hn::Set(d, 1.0f));
  const auto num = hn::Mul(xc, p);
#if HWY_ARCH_ARM_V7 && HWY_TARGET == HWY_NEON
  // 32-bit Arm NEON has no division; Highway's Div there is a reciprocal estimate refined by
  // Newton-Raphson steps, an ulp or two off, which costs GELU its 1e-6 bound. One correction of the
  // quotient by its remainder (num - ratio q, exact in a fused multiply-add: hwy_targets.h) gives
  // the rounded quotient in all but rare cases. q >= 1: no subnormals.
  auto inv = hn::ApproximateReciprocal(q);
  for (int i = 0; i < 3; ++i) inv = hn::Mul(inv, hn::NegMulAdd(q, inv, hn::Set(d, 2.0f)));
  const auto ratio0 = hn::Mul(num, inv);
  const auto ratio = hn::MulAdd(hn::NegMulAdd(ratio0, q, num), inv, ratio0);
#else
  const auto ratio = hn::Div(num, q);
#endif
  // Exactly +-0.5 beyond the fitted range, so that GELU is exactly 0 far left (not x * 3e-8).
  return hn::IfThenElse(hn::Gt(hn::Abs(x), hn::Set(d, x_max)), hn::CopySign(hn::Set(d, 0.5f), x), ratio);
}

// Applies op (vector -> vector) to x[0, n) in place. The remainder that does not fill a vector
// goes through the same vector code on a padded copy: an element's result must not depend on
// where a thread's range starts, or outputs would change with the thread count.
template <class Op>
void MapInPlace(float* x, size_t n, Op op) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(op(hn::LoadU(d, x + i)), d, x + i);
  if (i == n) return;
  HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
  std::copy(x + i, x + n, tail);
  hn::Store(op(hn::Load(d, tail)), d, tail);
  std::copy(tail, tail + (n - i), x + i);
}

void GeluErf(float* x, size_t n) {
  const D d;
  const auto half = hn::Set(d, 0.5f);
  MapInPlace(x, n, [&](auto v) { return hn::Mul(v, hn::Add(half, HalfErfOfScaled(d, v))); });
}

void GeluTanh(float* x, size_t n) {
  const D d;
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), c = hn::Set(d, 0.7978845608f),
             k = hn::Set(d, 0.044715f);  // c = sqrt(2 / pi)
  MapInPlace(x, n, [&](auto v) {
    const auto inner = hn::Mul(c, hn::MulAdd(hn::Mul(k, v), hn::Mul(v, v), v));
    return hn::Mul(hn::Mul(half, v), hn::Add(one, hn::Tanh(d, inner)));
  });
}

void Tanh(float* x, size_t n) {
  const D d;
  MapInPlace(x, n, [&](auto v) { return hn::Tanh(d, v); });
}

void Relu(float* x, size_t n) {
  const D d;
  MapInPlace(x, n, [&](auto v) { return hn::Max(v, hn::Zero(d)); });
}

void Add(float* y, const float* x, size_t n) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] += x[i];  // a single rounding either way
}

void MulChannels(const float* x, size_t x_stride, size_t rows, size_t cols, const float* s, float* y, size_t y_stride) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    size_t c = 0;
    for (; c + L <= cols; c += L) hn::StoreU(hn::Mul(hn::LoadU(d, xr + c), hn::LoadU(d, s + c)), d, yr + c);
    for (; c < cols; ++c) yr[c] = xr[c] * s[c];  // one rounding, as the reference's
  }
}

void MeanRows(const float* x, size_t rows, size_t cols, size_t stride, float* out) {
  const D d;
  const size_t L = hn::Lanes(d);
  const float inv = 1.0f / float(rows);
  size_t c = 0;
  for (; c + L <= cols; c += L) {
    auto acc = hn::Zero(d);
    for (size_t r = 0; r < rows; ++r) acc = hn::Add(acc, hn::LoadU(d, x + r * stride + c));
    hn::StoreU(hn::Mul(acc, hn::Set(d, inv)), d, out + c);
  }
  for (; c < cols; ++c) {
    float acc = 0.0f;
    for (size_t r = 0; r < rows; ++r) acc += x[r * stride + c];
    out[c] = acc * inv;
  }
}

void AddRank1(float* y, size_t y_stride, size_t rows, size_t cols, const float* s, const float* b, const float* p) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    float* yr = y + r * y_stride;
    const float sr = s && b ? s[r] : 0.0f, pr = p ? p[r] : 0.0f;
    const auto vs = hn::Set(d, sr), vp = hn::Set(d, pr);
    size_t c = 0;
    if (s && b)
      for (; c + L <= cols; c += L)
        hn::StoreU(hn::Add(hn::LoadU(d, yr + c), hn::MulAdd(vs, hn::LoadU(d, b + c), vp)), d, yr + c);
    else
      for (; c + L <= cols; c += L) hn::StoreU(hn::Add(hn::LoadU(d, yr + c), vp), d, yr + c);
    for (; c < cols; ++c) yr[c] += (s && b ? sr * b[c] : 0.0f) + pr;
  }
}

void Scale(const float* x, size_t n, float scale, float* y) {
  const D d;
  const size_t L = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Mul(vs, hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] = scale * x[i];  // one rounding either way
}

void ConvertF16(const uint16_t* x, size_t n, float scale, float* y) {
  const D d;
  const hn::Rebind<hwy::float16_t, D> dh;
  const size_t L = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  const hwy::float16_t* xh = reinterpret_cast<const hwy::float16_t*>(x);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Mul(vs, hn::PromoteTo(d, hn::LoadU(dh, xh + i))), d, y + i);
  for (; i < n; ++i) y[i] = scale * half_to_float(x[i]);  // exact widening, one rounding
}

void ConvertInt8(const int8_t* x, size_t n, float scale, float* y) {
  const D d;
  const hn::Rebind<int32_t, D> di;
  const hn::Rebind<int8_t, D> d8;
  const size_t L = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  size_t i = 0;
  for (; i + L <= n; i += L)
    hn::StoreU(hn::Mul(vs, hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, x + i)))), d, y + i);
  for (; i < n; ++i) y[i] = scale * float(x[i]);
}

// dst[c][r] = src[r][c] in blocks of 16 x 16 floats (both sides' lines stay in L1), each block
// in tiles of 4 x 4: four 16-byte loads, two interleaves and two concatenations per pair of
// output rows, four 16-byte stores, where element by element each value took a store of its own
// (the K transpose before softmax attention: 1.6-2.1% of all-MiniLM-L6-v2 on AVX2, most of it
// stores waiting). The block's edges, and the targets without vectors, element by element.
void Transpose(const float* src, size_t src_stride, size_t rows, size_t cols, float* dst, size_t dst_stride) {
  constexpr size_t kBlock = 16;
  for (size_t r0 = 0; r0 < rows; r0 += kBlock)
    for (size_t c0 = 0; c0 < cols; c0 += kBlock) {
      const size_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      size_t r_tiled = r0, c_tiled = c0;
#if !LINFER_HWY_NO_SIMD
      const hn::FixedTag<float, 4> d4;
      r_tiled = r0 + (r1 - r0) / 4 * 4;
      c_tiled = c0 + (c1 - c0) / 4 * 4;
      for (size_t r = r0; r < r_tiled; r += 4)
        for (size_t c = c0; c < c_tiled; c += 4) {
          const float* s = src + r * src_stride + c;
          const auto v0 = hn::LoadU(d4, s), v1 = hn::LoadU(d4, s + src_stride), v2 = hn::LoadU(d4, s + 2 * src_stride),
                     v3 = hn::LoadU(d4, s + 3 * src_stride);
          const auto lo01 = hn::InterleaveLower(d4, v0, v1), lo23 = hn::InterleaveLower(d4, v2, v3);  // columns 0, 1
          const auto hi01 = hn::InterleaveUpper(d4, v0, v1), hi23 = hn::InterleaveUpper(d4, v2, v3);  // columns 2, 3
          float* o = dst + c * dst_stride + r;
          hn::StoreU(hn::ConcatLowerLower(d4, lo23, lo01), d4, o);
          hn::StoreU(hn::ConcatUpperUpper(d4, lo23, lo01), d4, o + dst_stride);
          hn::StoreU(hn::ConcatLowerLower(d4, hi23, hi01), d4, o + 2 * dst_stride);
          hn::StoreU(hn::ConcatUpperUpper(d4, hi23, hi01), d4, o + 3 * dst_stride);
        }
#endif
      // The columns right of the tiles (all rows), then the rows below them (the tiles' columns).
      for (size_t c = c_tiled; c < c1; ++c)
        for (size_t r = r0; r < r1; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
      for (size_t c = c0; c < c_tiled; ++c)
        for (size_t r = r_tiled; r < r1; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
    }
}

float Sum(const float* x, size_t n) {
  const D d;
  const size_t L = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);  // two chains: the adds' latency
  size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = hn::Add(s0, hn::LoadU(d, x + i));
    s1 = hn::Add(s1, hn::LoadU(d, x + i + L));
  }
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) s += x[i];
  return s;
}

#if LINFER_BARE_METAL  // (one target, Highway's scalar one, which has double)
// sinusoids_f32_hwy: one lane at a time (it runs once per session), as sinusoids_f32_ref does.
void Sinusoids(float* out, size_t rows, size_t dim, double first, double base) {
  const hn::CappedTag<double, 1> d;
  const size_t half = dim / 2;
  const double log_base = hn::GetLane(hn::Log(d, hn::Set(d, base)));
  for (size_t t = 0; t < rows; ++t) {
    const double pos = double(t) + first;
    float* row = out + t * dim;
    for (size_t i = 0; i < half; ++i) {
      const double w = hn::GetLane(hn::Exp(d, hn::Set(d, -2.0 * double(i) / double(dim) * log_base)));
      const auto angle = hn::Set(d, pos * w);
      row[i] = float(hn::GetLane(hn::Sin(d, angle)));
      row[half + i] = float(hn::GetLane(hn::Cos(d, angle)));
    }
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(LayerNorm);
HWY_EXPORT(GeluErf);
HWY_EXPORT(GeluTanh);
HWY_EXPORT(Relu);
HWY_EXPORT(Tanh);
HWY_EXPORT(Add);
HWY_EXPORT(Sum);
HWY_EXPORT(MeanRows);
HWY_EXPORT(MulChannels);
HWY_EXPORT(AddRank1);
HWY_EXPORT(Scale);
HWY_EXPORT(ConvertF16);
HWY_EXPORT(ConvertInt8);
HWY_EXPORT(Transpose);
#if LINFER_BARE_METAL
HWY_EXPORT(Sinusoids);
void sinusoids_f32_hwy(float* out, size_t rows, size_t dim, double first, double base) {
  HWY_DYNAMIC_DISPATCH(Sinusoids)(out, rows, dim, first, base);
}
#endif

const char* hwy_kernel_target() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }
const char* hwy_kernel_target(Isa max) {
  const Isa was = hwy_cap();
  set_hwy_cap(max);
  const char* name = hwy_kernel_target();
  set_hwy_cap(was);
  return name;
}
void layernorm_f32_hwy(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows, size_t dim,
                       const float* gamma, const float* beta, float eps) {
  HWY_DYNAMIC_DISPATCH(LayerNorm)(x, x_stride, y, y_stride, rows, dim, gamma, beta, eps);
}
void gelu_erf_f32_hwy(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(GeluErf)(x, n); }
void gelu_tanh_f32_hwy(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(GeluTanh)(x, n); }
void relu_f32_hwy(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Relu)(x, n); }
void activation_f32_hwy(float* x, size_t n, DenseActivation act) {
  switch (act) {
    case DenseActivation::None:
      break;
    case DenseActivation::Relu:
      relu_f32_hwy(x, n);
      break;
    case DenseActivation::GeluErf:
      gelu_erf_f32_hwy(x, n);
      break;
    // (Activations a build leaves out: their models are refused at load, runtime/src/model_options.cc.)
    case DenseActivation::GeluTanh:
      if (LINFER_OPTION_GELU_TANH) gelu_tanh_f32_hwy(x, n);
      break;
    case DenseActivation::Tanh:
      if (LINFER_OPTION_TANH) HWY_DYNAMIC_DISPATCH(Tanh)(x, n);
      break;
  }
}
float sum_f32_hwy(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(Sum)(x, n); }
void transpose_f32_hwy(const float* src, size_t src_stride, size_t rows, size_t cols, float* dst, size_t dst_stride) {
  HWY_DYNAMIC_DISPATCH(Transpose)(src, src_stride, rows, cols, dst, dst_stride);
}
void mean_rows_f32_hwy(const float* x, size_t rows, size_t cols, size_t stride, float* out) {
  HWY_DYNAMIC_DISPATCH(MeanRows)(x, rows, cols, stride, out);
}
void mul_channels_f32_hwy(const float* x, size_t x_stride, size_t rows, size_t cols, const float* s, float* y,
                          size_t y_stride) {
  HWY_DYNAMIC_DISPATCH(MulChannels)(x, x_stride, rows, cols, s, y, y_stride);
}
void add_rank1_f32_hwy(float* y, size_t y_stride, size_t rows, size_t cols, const float* s, const float* b,
                       const float* p) {
  HWY_DYNAMIC_DISPATCH(AddRank1)(y, y_stride, rows, cols, s, b, p);
}
void scale_f32_hwy(const float* x, size_t n, float scale, float* y) { HWY_DYNAMIC_DISPATCH(Scale)(x, n, scale, y); }
void convert_f16_to_f32_hwy(const uint16_t* x, size_t n, float scale, float* y) {
  HWY_DYNAMIC_DISPATCH(ConvertF16)(x, n, scale, y);
}
void convert_int8_to_f32_hwy(const int8_t* x, size_t n, float scale, float* y) {
  HWY_DYNAMIC_DISPATCH(ConvertInt8)(x, n, scale, y);
}
void add_f32_hwy(float* y, const float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Add)(y, x, n); }
}  // namespace linfer::kernels
#endif
