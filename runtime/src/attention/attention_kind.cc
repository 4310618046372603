// SPDX-License-Identifier: Apache-2.0
// What every attention module shares: its K and V dense layers.
#include "attention/attention_kind.h"

#include <string>

namespace linfer::rt {

Status AttentionModule::prepare_kv_layers(const LayerContext& s, bool with_keys, bool bias_in_layer) {
  const EncoderConfig& c = s.config();
  const ExecutionPlan& plan = s.plan();
  Status err = allocating(message("the attention's dense layers of {} layers", kept(c.num_layers)),
                          uint64_t(c.num_layers) * sizeof(KvLayers), [&] { kv_.resize(c.num_layers); });
  for (uint32_t i = 0; i < c.num_layers && err.ok(); ++i) {
    const LayerWeights& w = s.model().desc.layers[i];
    for (int kv = 0; kv < 2; ++kv) {
      if (kv == 0 && !with_keys) continue;
      const LinearWeights& lw = kv == 0 ? w.k : w.v;
      std::vector<DenseLayer>& list = kv == 0 ? kv_[i].k : kv_[i].v;
      if (err.ok())
        err = allocating(message("the dense layers of layer {}'s {} projection ({} groups)", kept(i),
                                 kv == 0 ? "K" : "V", kept(lw.weight.panel_groups)),
                         uint64_t(lw.weight.panel_groups) * sizeof(DenseLayer),
                         [&] { list.resize(lw.weight.panel_groups); });
      for (uint32_t g = 0; g < lw.weight.panel_groups && err.ok(); ++g)
        err = list[g].prepare(plan, lw.weight, g, bias_in_layer ? lw.bias : WeightView(),
                              kernels::DenseActivation::None, plan.yield_workers);
    }
  }
  return err;
}

size_t AttentionModule::kv_packed_bytes() const {
  size_t n = 0;
  for (const KvLayers& l : kv_) {
    for (const DenseLayer& d : l.k) n += d.packed_bytes();
    for (const DenseLayer& d : l.v) n += d.packed_bytes();
  }
  return n;
}

}  // namespace linfer::rt
