// SPDX-License-Identifier: Apache-2.0
// Random, valid models built in memory for tests that need a model but not a golden reference.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "linfer/format/encoder.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/lfm.h"

namespace linfer::testing {

struct OwnedDescription {
  EncoderDescription desc;
  std::vector<std::unique_ptr<std::vector<float>>> store;
};

// The kind's LINFER_ATTENTION_KINDS name (the table of kinds), for kind_built (test_util.h).
inline std::string kind_name(AttentionKind kind) { return to_string(kind); }

inline EncoderConfig small_config() {
  EncoderConfig c;
  c.vocab_size = 40;
  c.dim = 24;
  c.num_layers = 2;
  c.num_heads = 3;
  c.head_dim = 8;
  c.kv_heads = 3;
  c.ff_dim = 40;
  c.max_seq_len = 33;
  linformer_fields(c).proj_len = 9;
  c.final_norm = true;
  return c;
}

// Full attention over the longest n the format allows: a small file whose arena needs more than
// 4 GiB (the address-space and out-of-memory tests).
inline EncoderConfig huge_arena_config() {
  EncoderConfig c = small_config();
  set_attention_kind(c, AttentionKind::FullSoftmax);
  c.positions = PositionKind::None;
  c.dim = 256;
  c.num_heads = 8;
  c.kv_heads = 8;
  c.head_dim = 32;
  c.ff_dim = 1024;
  c.max_seq_len = Limits::kMaxSeqLen;
  return c;
}

// Fills every tensor the configuration needs, as the format gives their shapes (slot_shape; an
// attention kind's: its format file), and the optional bias of every dense layer filled, with
// N(0, 0.2) values; layer norm weights are near 1, indices (BigBird's random blocks) uniform in
// their range. Optional tensors of their own (a head's transform, Longformer's global
// projections, GiveTake's convolution) are left to the tests that want them.
inline OwnedDescription make_model(const EncoderConfig& c, uint32_t seed = 1) {
  OwnedDescription o;
  o.desc.config = c;
  o.desc.layers.resize(c.num_layers);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  auto ends_with = [](const std::string& s, const char* end) {
    const size_t n = std::char_traits<char>::length(end);
    return s.size() >= n && s.compare(s.size() - n, n, end) == 0;
  };
  bool weight_filled = false;  // the slot before: a dense layer's weight, before its bias
  for_each_slot(o.desc, [&](Slot slot, uint32_t layer, const std::string& name, WeightView& w) {
    const SlotShape shape = slot_shape(o.desc, slot, layer);
    const bool fill =
        !shape.dims.empty() && (!shape.optional || (!is_kind_slot(slot) && ends_with(name, ".bias") && weight_filled));
    weight_filled = fill;
    if (!fill) return;
    w.shape = shape.dims;
    w.dtype = DType::F32;
    auto v = std::make_unique<std::vector<float>>(w.elements());
    const float base = ends_with(name, "norm.weight") ? 1.0f : 0.0f;
    for (float& x : *v) x = base + nd(rng);
    if (shape.index_bound)
      for (float& x : *v) x = float(std::uniform_int_distribution<uint32_t>(0, shape.index_bound - 1)(rng));
    w.data = v->data();
    o.store.push_back(std::move(v));
  });
  return o;
}

inline std::vector<uint8_t> model_bytes(const EncoderDescription& d, bool validate = true,
                                        uint32_t format_version = kFormatVersion) {
  std::vector<uint8_t> bytes;
  const err::Status s = write_lfm(d, "linfer tests", {}, &bytes, validate, format_version);
  if (!s.ok()) throw std::runtime_error(s.message());
  return bytes;
}

}  // namespace linfer::testing
