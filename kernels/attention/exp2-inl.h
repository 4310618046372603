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

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {

// 2^t for t <= 0: 2^floor(t) from the exponent bits times a polynomial for 2^f on [0, 1)
// (least-squares fits weighted toward minimax). kDegree 4: a relative error of 2.7e-6, enough
// for probabilities that are rounded to 1/127 of the row's largest next (the int8 attention's;
// measured: its fused softmax 4.8% -> 3.3% of an M int8 run against hn::Exp). kDegree 6: 7.7e-8
// as evaluated in float, hn::Exp's accuracy. t below -126 counts as -126 (2^-126 is below any
// probability that survives the rounding; ExpNonPositive zeroes it).
template <int kDegree, class V>
HWY_INLINE V Exp2NonPositive(V t) {
  static_assert(kDegree == 4 || kDegree == 6, "fitted for degrees 4 and 6");
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::DFromV<V> d;
  const hn::RebindToSigned<decltype(d)> di;
  t = hn::Max(t, hn::Set(d, -126.0f));
  const auto whole = hn::Floor(t), f = hn::Sub(t, whole);
  V p;
  if constexpr (kDegree == 4) {
    p = hn::MulAdd(hn::Set(d, 0.013533986f), f, hn::Set(d, 0.052011565f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.24144289f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.69300374f));
    p = hn::MulAdd(p, f, hn::Set(d, 1.0000026f));
  } else {
    p = hn::MulAdd(hn::Set(d, 0.00021703422f), f, hn::Set(d, 0.00124397979f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.00967876893f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.0554834157f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.2402298f));
    p = hn::MulAdd(p, f, hn::Set(d, 0.693147004f));
    p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  }
  // (whole is an integer in [-126, 0]: NearestInt converts it as ConvertTo does. Highway's scalar
  // ConvertTo checks its range in double, which an FPU without double precision (a Cortex-M4's)
  // leaves to libgcc: 1.2 KB of code and 2% more instructions per inference there.)
#if LINFER_HWY_NO_SIMD && defined(__ARM_FP) && !(__ARM_FP & 8)
  const auto whole_int = hn::NearestInt(whole);
#else
  const auto whole_int = hn::ConvertTo(di, whole);
#endif
  const auto two_to_whole = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(whole_int, hn::Set(di, 127))));
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

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
