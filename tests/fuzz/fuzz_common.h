// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the checkpoint fuzz targets.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "checkpoint.h"

namespace linfer::fuzz {

// Converts every tensor of the state dict with tensor_to_f32 until `budget` output elements have
// been produced (tensors may share one storage, so the sum is not bounded by the input). A tensor
// that fails must say why; one that succeeds must have exactly its shape's element count.
inline void convert_all(const convert::Checkpoint& ck, uint64_t budget) {
  for (const auto& [name, t] : ck.tensors) {
    uint64_t numel = 1;
    bool overflow = false;
    for (int64_t d : t.shape) {
      if (d < 0 || (d > 0 && numel > budget / uint64_t(d)))
        overflow = true;
      else
        numel *= uint64_t(d);
    }
    if (overflow || numel > budget) continue;
    err::Result<std::vector<float>> out = convert::tensor_to_f32(ck, t);
    if (out.ok()) {
      if (out.value().size() != numel) abort();
      budget -= numel;
      volatile float sink = 0.0f;
      for (float f : out.value()) sink = sink + f;
    } else if (out.status().message().empty()) {
      abort();
    }
  }
}

// Walks a pickled value graph (it may share nodes or contain cycles) through the public
// accessors, each node once, bounded in depth and nodes.
inline void walk(const convert::Value* v, int depth, std::unordered_set<const convert::Value*>* seen, size_t budget) {
  if (!v || depth > 64 || seen->size() >= budget || !seen->insert(v).second) return;
  (void)v->kind_name();
  double number;
  (void)v->as_number(&number);
  (void)v->get("state_dict");
  (void)v->get(int64_t(0));
  (void)v->get_string("linfer_config");
  if (v->is_tensor() && !v->tensor) abort();
  for (size_t i = 0; i < v->size(); ++i) walk(v->at(i), depth + 1, seen, budget);
  for (const auto& [k, val] : v->entries) {
    walk(k, depth + 1, seen, budget);
    walk(val, depth + 1, seen, budget);
  }
  walk(v->state, depth + 1, seen, budget);
}

}  // namespace linfer::fuzz
