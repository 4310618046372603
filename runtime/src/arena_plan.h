// SPDX-License-Identifier: Apache-2.0
// Static memory plan: buffers with lifetimes (first and last step that use them) are placed in one
// arena, greedily, largest first, at the lowest offset that does not collide with a placed buffer
// whose lifetime overlaps (TensorFlow Lite's greedy planner). Offsets are 64-byte aligned and each
// buffer is followed by XNNPACK's XNN_EXTRA_BYTES of slack that kernels may read past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace linfer {

struct ArenaRequest {
  uint64_t bytes;
  int first_step, last_step;
  uint64_t offset = 0;  // filled in by plan_arena
};

// Places every request and returns the arena size (bytes, a multiple of 64).
uint64_t plan_arena(std::vector<ArenaRequest>& requests);

}  // namespace linfer
