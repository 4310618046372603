// SPDX-License-Identifier: Apache-2.0
#include "arena_plan.h"

#include <algorithm>
#include <numeric>

namespace linfer {

namespace {
constexpr uint64_t kAlign = 64;
constexpr uint64_t kSlack = 16;  // XNN_EXTRA_BYTES
uint64_t padded(uint64_t bytes) { return (bytes + kSlack + kAlign - 1) / kAlign * kAlign; }

// A stable insertion sort: a session has a few dozen buffers, and std::stable_sort's and
// std::sort's code took 1 KB of a microcontroller build.
template <class Less>
void sort_indices(std::vector<size_t>& v, Less less) {
  for (size_t i = 1; i < v.size(); ++i)
    for (size_t j = i; j > 0 && less(v[j], v[j - 1]); --j) std::swap(v[j], v[j - 1]);
}
}  // namespace

uint64_t plan_arena(std::vector<ArenaRequest>& requests) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  sort_indices(order, [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;
  uint64_t total = 0;
  for (size_t i : order) {
    ArenaRequest& r = requests[i];
    // Placed buffers alive at the same time as r, by offset.
    std::vector<size_t> live;
    for (size_t j : placed)
      if (requests[j].first_step <= r.last_step && r.first_step <= requests[j].last_step) live.push_back(j);
    sort_indices(live, [&](size_t a, size_t b) { return requests[a].offset < requests[b].offset; });
    uint64_t offset = 0;
    for (size_t j : live) {
      if (requests[j].offset >= offset + padded(r.bytes)) break;  // r fits in the gap before j
      offset = std::max(offset, requests[j].offset + padded(requests[j].bytes));
    }
    r.offset = offset;
    total = std::max(total, offset + padded(r.bytes));
    placed.push_back(i);
  }
  return total;
}

}  // namespace linfer
