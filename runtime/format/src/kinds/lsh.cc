// SPDX-License-Identifier: Apache-2.0
// LSH attention's (Reformer's) part of the format: the bucket size, the hashing rounds, and each
// layer's random rotations. Its queries are its keys (no key projection); it has a causal mode and
// takes rotary positions.
#include <cmath>

#include "format_kind.h"
#include "linfer/format/kinds/lsh.h"

namespace linfer {
namespace {

Status check_config(const EncoderConfig& c, bool own) {
  const LshFields& f = lsh_fields(c);
  if (!own)
    return f.bucket_size == 0 && f.num_hashes == 0
               ? Status()
               : invalid_model("bucket_size and num_hashes apply to lsh attention only");
  Status e;
  if (out_of_range(&e, "bucket_size", f.bucket_size, 1, Limits::kMaxBucketSize)) return e;
  out_of_range(&e, "num_hashes", f.num_hashes, 1, Limits::kMaxHashes);
  return e;
}

constexpr LshFields kDefaults;
const ConfigField kFields[] = {
    LINFER_KIND_FIELD(LshKind, LshFields, bucket_size, VT_BUCKET_SIZE, nullptr),
    LINFER_KIND_FIELD(LshKind, LshFields, num_hashes, VT_NUM_HASHES, nullptr),
};

constexpr KindSlot kSlots[] = {
    LINFER_LAYER_SLOT("rotations", LshTensors::kRotations, LshLayer, VT_ROTATIONS, kTensor, kF32)};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

// [rounds, head_dim, half the buckets of the longest input].
Expect expected(const EncoderConfig& c, const LayerWeights*, const KindSlot&) {
  Expect e;
  e.dims[0] = lsh_fields(c).num_hashes;
  e.dims[1] = c.head_dim;
  e.dims[2] = uint32_t(lsh_half_buckets(c, c.max_seq_len));
  e.rank = 3;
  return e;
}

// A non-finite rotation would hash every row into one bucket by NaN comparisons.
Status check_values(const EncoderDescription& d) {
  for (size_t i = 0; i < d.layers.size(); ++i) {
    const WeightView& rot = d.layers[i].kind_tensors[LshTensors::kRotations];
    for (uint64_t j = 0; rot.present() && j < rot.elements(); ++j)
      if (!std::isfinite(static_cast<const float*>(rot.data)[j]))
        return invalid_model(LINFER_DETAILED("{}.attention.rotations holds a non-finite value at element {}",
                                             "{}.attention.rotations holds a non-finite value"),
                             layer_name(i), j);
  }
  return {};
}

}  // namespace

extern const FormatKind kLshFormat = {
    AttentionKind::Lsh,
    /*causal=*/true,
    /*rotary=*/true,
    /*queries_are_keys=*/true,
    /*fields=*/kFields,
    /*field_count=*/sizeof kFields / sizeof kFields[0],
    /*defaults=*/&kDefaults,
    /*defaults_size=*/sizeof kDefaults,
    /*check_config=*/check_config,
    /*slots=*/kSlots,
    /*slot_count=*/sizeof kSlots / sizeof kSlots[0],
    /*expected=*/expected,
    /*check_slot=*/nullptr,
    /*check_layers=*/nullptr,
    /*check_values=*/check_values,
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(nullptr),
};

}  // namespace linfer
