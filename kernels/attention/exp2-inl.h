// SPDX-License-Identifier: Apache-2.0
// The softmax's exponent for the Highway attention kernels (attention_hwy.cc, lsh_hwy.cc): e^x for
// x = score - row maximum, never positive, in about half of hn::Exp's instructions (its range
// reduction and checks are for any input; on AVX2 it was a quarter of the f32 attention kernel).
// Highway's per-target include guard: this file is included once per target by foreach_target.
// Needs LINFER_HWY_NO_SIMD (hwy_targets.h, which every kernel file includes first).
#if defined(LINFER_KERNELS_EXP2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LINFER_KERNELS_EXP2_INL_H_
#undef LINFER_KERNELS_EXP2_INL_H_
#else
#define LINFER_KERNELS_EXP2_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {

// 2^t for t <= 0: 2^round(t) from the exponent bits times a polynomial for 2^f on [-0.5, 0.5]
// (least-squares fits weighted toward minimax, p(0) = 1). kDegree 4: a relative error of 2.9e-6,
// enough for probabilities that are rounded to 1/127 of the row's largest next (the int8
// attention's). kDegree 6: 7.9e-8 as evaluated in float, hn::Exp's accuracy. t below -126 counts
// as -126 (2^-126 is below any probability that survives the rounding; ExpNonPositive zeroes it).
// The rounding is the float addition's: t + 1.5 * 2^23 holds round(t) in its low mantissa bits,
// so one add gives both the integer as a float and, shifted into place, 2^round(t); a floor and
// a conversion to int32 (with the range checks Highway's ConvertTo adds on x86) cost 6 more
// instructions per vector on AVX-512.
template <int kDegree, class V>
HWY_INLINE V Exp2NonPositive(V t) {
  static_assert(kDegree == 4 || kDegree == 6, "fitted for degrees 4 and 6");
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::DFromV<V> d;
  const hn::RebindToSigned<decltype(d)> di;
  t = hn::Max(t, hn::Set(d, -126.0f));
  const V magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: whole numbers up to 2^22 in the low bits
  const V rounded = hn::Add(t, magic);
  const V f = hn::Sub(t, hn::Sub(rounded, magic));  // t - round(t), in [-0.5, 0.5]
  V p;
  if constexpr (kDegree == 4) {
    p = hn::MulAdd(hn::Set(d, 0.00958274491f), f, hn::Set(d, 0.055906143f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.240240991f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.693124235f));
    p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  } else {
    p = hn::MulAdd(hn::Set(d, 0.000153532965f), f, hn::Set(d, 0.00133988529f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.00961843785f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.0555033237f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.240226477f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.693147182f));
    p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  }
  // rounded's bits are those of 1.5 * 2^23 plus round(t), whose low 9 bits are 0: shifted left
  // by 23, round(t) + 127 is the exponent field of 2^round(t) (normal: round(t) >= -126).
  const auto two_to_whole = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, rounded), hn::Set(di, 127))));
  return hn::Mul(p, two_to_whole);
}

// e^x for x <= 0 (a score minus its row's maximum) to hn::Exp's accuracy; a key masked out (-inf
// or -FLT_MAX), x below -87.3 (e^x under 2^-126) and NaN give 0, as hn::Exp's lower bound did.
template <class V>
HWY_INLINE V ExpNonPositive(V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::DFromV<V> d;
  const V t = hn::Mul(x, hn::Set(d, 1.44269504f));  // log2(e)
  return hn::IfThenElseZero(hn::Gt(t, hn::Set(d, -126.0f)), Exp2NonPositive<6>(t));
}

// x[j] = e^(x[j] - shift) for j < n (shift at least every x[j]: a row's maximum), returning
// their sum: the softmax rows of the attention core and of LSH (exp_shifted_sum_f32_hwy exports
// it). The tail past the last whole vector takes std::exp.
HWY_INLINE float ExpShiftedSum(float* x, size_t n, float shift) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const size_t L = hn::Lanes(d);
  const auto vshift = hn::Set(d, shift);
  auto vsum = hn::Zero(d);
  size_t j = 0;
  for (; j + L <= n; j += L) {
    const auto e = ExpNonPositive(hn::Sub(hn::LoadU(d, x + j), vshift));
    vsum = hn::Add(vsum, e);
    hn::StoreU(e, d, x + j);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
  for (; j < n; ++j) {
    x[j] = std::exp(x[j] - shift);
    sum += x[j];
  }
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
