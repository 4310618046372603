// SPDX-License-Identifier: Apache-2.0
// FAVOR+ attention: the fast kernels against their references (kernels/attention/favor.h).
// Compiled into test_kernels with the performer kind only (tests/CMakeLists.txt, from the table of
// kinds).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attention/favor.h"
#include "kernels.h"  // Isa, set_hwy_cap
#include "kernel_tests.h"

using namespace linfer::kernels;
using namespace linfer::testing;

TEST_CASE("performer (FAVOR+): fast state and apply match the reference on every Highway target") {
  for (Isa cap : kHwyCaps)
    for (linfer::FeatureMap map : {linfer::FeatureMap::Softmax, linfer::FeatureMap::Relu})
      for (size_t d : {1, 8, 17, 64})
        for (size_t m : {1, 7, 16, 37, 266})
          for (size_t rows : {1, 5, 40}) {
            set_hwy_cap(cap);
            CAPTURE(to_string(cap));
            CAPTURE(int(map));
            CAPTURE(d);
            CAPTURE(m);
            CAPTURE(rows);
            const size_t ks = d + 3, vs = d + 1, qs = 2 * d, os = d + 2;
            auto wt = random_vec(d * m, uint32_t(d * 13 + m), 1.0f);
            auto k = random_vec(rows * ks, uint32_t(d * 31 + rows), 1.5f);
            // Later keys larger, so that the stabiliser grows after the first block of 16.
            for (size_t j = 16; j < rows; ++j)
              for (size_t a = 0; a < d; ++a) k[j * ks + a] *= 2.0f;
            auto v = random_vec(rows * vs, uint32_t(d + rows), 1.0f);
            auto q = random_vec(rows * qs, uint32_t(d * 7 + rows), 1.5f);
            const FavorParams p{
                wt.data(), d, m, map, map == linfer::FeatureMap::Softmax ? 1e-4f : 1e-3f, rows == 5 ? 1e-6f : 0.0f};
            const size_t n = favor_state_floats(m, d);
            std::vector<float> s1(n), s2(n), s3(n), scratch(favor_scratch_floats(m));
            favor_state_reset(s1.data(), m, d);
            favor_state_reset(s2.data(), m, d);
            favor_state_reset(s3.data(), m, d);
            favor_state_add_f32_ref(p, k.data(), ks, v.data(), vs, rows, d, s1.data(), nullptr);
            favor_state_add_f32_hwy(p, k.data(), ks, v.data(), vs, rows, d, s2.data(), scratch.data());
            CHECK(rel_err(s2, s1) < 1e-5);
            // Keys added one at a time (a causal run) give the state of one call.
            for (size_t j = 0; j < rows; ++j)
              favor_state_add_f32_hwy(p, k.data() + j * ks, ks, v.data() + j * vs, vs, 1, d, s3.data(), scratch.data());
            CHECK(rel_err(s3, s2) < 1e-5);
            // The whole input's key maximum, preset as the stabiliser: adding the keys never
            // rescales, so s stays that value and the state equals the one-call state.
            const float top_ref = favor_key_max_f32_ref(p, k.data(), ks, rows);
            const float top = favor_key_max_f32_hwy(p, k.data(), ks, rows, scratch.data());
            CHECK(std::fabs(top - top_ref) <= 1e-5f * std::max(1.0f, std::fabs(top_ref)));
            if (map == linfer::FeatureMap::Softmax) {
              CHECK(top == *favor_state(s2.data(), m, d).s);
              std::vector<float> s4(n);
              favor_state_reset(s4.data(), m, d);
              *favor_state(s4.data(), m, d).s = top;
              for (size_t j = 0; j < rows; ++j)
                favor_state_add_f32_hwy(p, k.data() + j * ks, ks, v.data() + j * vs, vs, 1, d, s4.data(),
                                        scratch.data());
              CHECK(*favor_state(s4.data(), m, d).s == top);
              CHECK(rel_err(s4, s2) < 1e-5);
            }
            std::vector<float> o1(rows * os, 0.0f), o2(rows * os, 0.0f);
            favor_apply_f32_ref(p, q.data(), qs, rows, d, s1.data(), o1.data(), os, nullptr);
            favor_apply_f32_hwy(p, q.data(), qs, rows, d, s1.data(), o2.data(), os, scratch.data());
            CHECK(rel_err(o2, o1) < 1e-5);
            for (float x : o2) CHECK(std::isfinite(x));
          }
  set_hwy_cap(best_isa());  // back to what the CPU has
}
