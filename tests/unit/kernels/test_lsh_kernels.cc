// SPDX-License-Identifier: Apache-2.0
// LSH attention, one chunk: the fast kernel against its reference (kernels/attention/lsh.h).
// Compiled into test_kernels with the lsh kind only (tests/CMakeLists.txt, from the table of
// kinds).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "attention/lsh.h"
#include "kernels.h"  // Isa, set_hwy_cap
#include "kernel_tests.h"

using namespace linfer::kernels;
using namespace linfer::testing;

TEST_CASE("lsh_chunk_f32: fast matches reference on every Highway target") {
  // A chunk against its own rows and the chunk before's: the row itself among the keys (once, or
  // twice when both groups hold it), causal masks, a row whose only key is itself, group sizes
  // that are not a multiple of the vector width, an empty second group.
  struct Case {
    size_t rows, back;
    bool causal;
  };
  const Case cases[] = {{1, 1, false}, {1, 1, true},   {4, 4, true},    {7, 6, false},
                        {3, 0, true},  {64, 64, true}, {64, 64, false}, {50, 64, true}};
  for (Isa cap : kHwyCaps)
    for (const Case& c : cases)
      for (size_t dh : {5, 32}) {
        set_hwy_cap(cap);
        CAPTURE(to_string(cap));
        CAPTURE(c.rows);
        CAPTURE(c.back);
        CAPTURE(c.causal);
        CAPTURE(dh);
        auto q = random_vec(c.rows * dh, uint32_t(c.rows + dh), 2.0f);
        auto kt_own = random_vec(dh * c.rows, uint32_t(c.rows * dh + 1));
        auto kt_back = random_vec(dh * c.back + 1, uint32_t(c.back * dh + 2));
        auto v_own = random_vec(c.rows * dh, uint32_t(c.rows + 7));
        auto v_back = random_vec(c.back * dh + 1, uint32_t(c.back + 9));
        // Queries at positions 3 r + 1 (their own keys the same); the chunk before at 3 j, with
        // row 0's position among them too when there is room (its key twice).
        std::vector<uint32_t> q_pos(c.rows), back_pos(c.back + 1);
        for (size_t r = 0; r < c.rows; ++r) q_pos[r] = uint32_t(3 * r + 1);
        for (size_t j = 0; j < c.back; ++j) back_pos[j] = uint32_t(3 * j);
        if (c.back > 1) back_pos[1] = q_pos[0];
        std::vector<float> o_ref(c.rows * dh), o_fast(c.rows * dh), lse_ref(c.rows), lse_fast(c.rows);
        std::vector<float> scratch(lsh_chunk_scratch_floats(c.rows, c.rows + c.back));
        LshChunkArgs a{q.data(),
                       q_pos.data(),
                       {{kt_own.data(), v_own.data(), q_pos.data(), c.rows},
                        {kt_back.data(), v_back.data(), back_pos.data(), c.back}},
                       c.rows,
                       dh,
                       1.0f / std::sqrt(float(dh)),
                       -5e4f,
                       c.causal,
                       o_ref.data(),
                       lse_ref.data()};
        lsh_chunk_f32_ref(a, scratch.data());
        a.o = o_fast.data();
        a.lse = lse_fast.data();
        lsh_chunk_f32_hwy(a, scratch.data());
        CHECK(rel_err(o_fast, o_ref) < 1e-5);
        CHECK(rel_err(lse_fast, lse_ref) < 1e-5);
        if (c.causal && c.rows == 1 && c.back == 1) {  // the row itself and one earlier key: not -5e4
          CHECK(lse_ref[0] > -1e4f);
        }
      }
  set_hwy_cap(best_isa());
}
