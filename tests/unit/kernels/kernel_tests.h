// SPDX-License-Identifier: Apache-2.0
// What the kernels' pair tests share (tests/unit/test_kernels.cc, and a kind's own kernels' tests,
// tests/unit/kernels/test_<family>_kernels.cc, compiled into the same test_kernels program):
// random inputs, the relative error a fast kernel is held to against its reference, the odd sizes
// and the Highway caps the pairs are run over.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels.h"

namespace linfer::testing {

inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}
// max |a-b| / max(1, max |b|)
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}
inline constexpr size_t kOddSizes[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 100, 257};
// Caps for the Highway kernels (the CPU's best first); a target the CPU lacks falls back to its best.
#if defined(__x86_64__)
inline const kernels::Isa kHwyCaps[] = {kernels::best_isa(), kernels::Isa::X86Avx2, kernels::Isa::X86Sse4,
                                        kernels::Isa::Generic};
#else
inline const kernels::Isa kHwyCaps[] = {kernels::best_isa(), kernels::Isa::Generic};
#endif

}  // namespace linfer::testing
