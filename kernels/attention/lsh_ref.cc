// SPDX-License-Identifier: Apache-2.0
// Reformer's LSH attention, one chunk: the scalar reference (lsh.h), in double.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "attention/lsh.h"

namespace linfer::kernels {

void lsh_chunk_f32_ref(const LshChunkArgs& a, float*) {
  struct Key {
    const LshKeys* group;
    size_t j;
  };
  std::vector<Key> keys;
  for (const LshKeys& g : a.keys)
    for (size_t j = 0; j < g.count; ++j) keys.push_back({&g, j});
  std::vector<double> s(keys.size());
  for (size_t i = 0; i < a.rows; ++i) {
    double m = -INFINITY;
    for (size_t n = 0; n < keys.size(); ++n) {
      const LshKeys& g = *keys[n].group;
      const size_t j = keys[n].j;
      double dot = 0;
      for (size_t t = 0; t < a.d; ++t) dot += double(a.q[i * a.d + t]) * g.kt[t * g.count + j];
      s[n] = float(dot * a.scale);  // the scores are float32 upstream
      if (a.causal && g.pos[j] > a.q_pos[i]) s[n] = -FLT_MAX;
      if (g.pos[j] == a.q_pos[i]) s[n] = a.self_score;
      m = std::max(m, s[n]);
    }
    double sum = 0;
    for (double x : s) sum += std::exp(x - m);
    const double lse = m + std::log(sum);
    a.lse[i] = float(lse);
    for (size_t t = 0; t < a.d; ++t) {
      double acc = 0;
      for (size_t n = 0; n < keys.size(); ++n) acc += std::exp(s[n] - lse) * keys[n].group->v[keys[n].j * a.d + t];
      a.o[i * a.d + t] = float(acc);
    }
  }
}

}  // namespace linfer::kernels
