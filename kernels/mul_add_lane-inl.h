// SPDX-License-Identifier: Apache-2.0
// MulAddLane<L>(a4, b, acc) = acc + a4[L] * b, for the Highway kernels whose inner loop multiplies
// a vector by one scalar after another (gemm_hwy.cc, attention_hwy.cc). On aarch64 NEON this is
// FMLA by element: one load of 4 scalars serves 4 multiply-adds, where hn::Set costs a broadcast
// load (LD1R) per multiply-add step. Other targets keep the broadcast per scalar
// (kHasMulAddLane false): x86 broadcasts from memory in the load itself, and 32-bit NEON has no
// FMLA by element of a q register. Same rounding either way: one fused multiply-add per step.
// Highway's per-target include guard: this file is included once per target by foreach_target.
#if defined(LINFER_KERNELS_MUL_ADD_LANE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LINFER_KERNELS_MUL_ADD_LANE_INL_H_
#undef LINFER_KERNELS_MUL_ADD_LANE_INL_H_
#else
#define LINFER_KERNELS_MUL_ADD_LANE_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_NEON && HWY_ARCH_ARM_A64
constexpr bool kHasMulAddLane = true;
template <int L>
HWY_INLINE hwy::HWY_NAMESPACE::Vec128<float> MulAddLane(hwy::HWY_NAMESPACE::Vec128<float> a4,
                                                        hwy::HWY_NAMESPACE::Vec128<float> b,
                                                        hwy::HWY_NAMESPACE::Vec128<float> acc) {
  return hwy::HWY_NAMESPACE::Vec128<float>(vfmaq_laneq_f32(acc.raw, b.raw, a4.raw, L));
}
#else
constexpr bool kHasMulAddLane = false;
template <int L, class V>
HWY_INLINE V MulAddLane(V a4, V b, V acc) {  // not called: kHasMulAddLane is false here
  namespace hn = hwy::HWY_NAMESPACE;
  return hn::MulAdd(hn::Set(hn::DFromV<V>(), hn::ExtractLane(a4, size_t(L))), b, acc);
}
#endif

// f(std::integral_constant<int, L>{}) for L = 0..3: the 4 lanes of a MulAddLane step.
template <class F>
HWY_INLINE void ForEachLane4(F&& f) {
  f(std::integral_constant<int, 0>{}), f(std::integral_constant<int, 1>{}), f(std::integral_constant<int, 2>{}),
      f(std::integral_constant<int, 3>{});
}

// 4 steps of t at once: acc[r][i] += x[r][t + l] * m[l * m_stride + i * Lanes] for l = 0..3, in
// that order (the rounding of 4 single steps). m points at step t's first vector.
template <size_t R, size_t NV, class D, class V>
HWY_INLINE void MulAdd4Steps(D d, V (&acc)[R][NV], const float* const* x, size_t t, const float* m, size_t m_stride) {
  namespace hn = hwy::HWY_NAMESPACE;
  V x4[R];
  for (size_t r = 0; r < R; ++r) x4[r] = hn::LoadU(d, x[r] + t);
  ForEachLane4([&](auto lane) {
    V mv[NV];
    for (size_t i = 0; i < NV; ++i) mv[i] = hn::LoadU(d, m + i * hn::Lanes(d));
    m += m_stride;
    for (size_t r = 0; r < R; ++r)
      for (size_t i = 0; i < NV; ++i) acc[r][i] = MulAddLane<decltype(lane)::value>(x4[r], mv[i], acc[r][i]);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#endif
