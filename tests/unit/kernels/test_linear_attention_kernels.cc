// SPDX-License-Identifier: Apache-2.0
// Linear attention with phi = elu + 1: the fast kernels against their references
// (kernels/attention/linear_attention.h). Compiled into test_kernels with the linear_elu kind only
// (tests/CMakeLists.txt, from the table of kinds).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "attention/linear_attention.h"
#include "kernel_tests.h"

using namespace linfer::kernels;
using namespace linfer::testing;

TEST_CASE("linear attention (elu+1): fast state and apply match the reference") {
  for (size_t d : {1, 3, 16, 17, 64})
    for (size_t rows : {1, 5, 40}) {
      CAPTURE(d);
      CAPTURE(rows);
      const size_t ks = d + 3, vs = d + 1, qs = 2 * d, os = d + 2;
      auto k = random_vec(rows * ks, uint32_t(d * 31 + rows), 1.5f);
      auto v = random_vec(rows * vs, uint32_t(d + rows), 1.0f);
      auto q = random_vec(rows * qs, uint32_t(d * 7 + rows), 1.5f);
      std::vector<float> S1(d * d, 0.5f), z1(d, 0.25f), S2 = S1, z2 = z1;  // non-zero start: a carried state
      linear_attention_state_f32_ref(k.data(), ks, v.data(), vs, rows, d, S1.data(), z1.data());
      linear_attention_state_f32_hwy(k.data(), ks, v.data(), vs, rows, d, S2.data(), z2.data());
      CHECK(rel_err(S2, S1) < 1e-5);
      CHECK(rel_err(z2, z1) < 1e-5);
      std::vector<float> o1(rows * os, 0.0f), o2(rows * os, 0.0f), scratch(d);
      linear_attention_apply_f32_ref(q.data(), qs, rows, d, S1.data(), z1.data(), o1.data(), os, scratch.data());
      linear_attention_apply_f32_hwy(q.data(), qs, rows, d, S1.data(), z1.data(), o2.data(), os, scratch.data());
      CHECK(rel_err(o2, o1) < 1e-5);
    }
}
