// SPDX-License-Identifier: Apache-2.0
// BlockSparse's (BigBird's) part of the format: the block size, the global blocks, and each
// layer's random key blocks (block indices of the longest input).
#include "format_kind.h"
#include "linfer/format/kinds/block_sparse.h"

namespace linfer {
namespace {

Status check_config(const EncoderConfig& c, bool own) {
  const BlockSparseFields& f = block_sparse_fields(c);
  if (!own)
    return f.block_size == 0 && f.global_blocks == 0 && f.num_random_blocks == 0
               ? Status()
               : invalid_model("block_size, global_blocks and num_random_blocks apply to block sparse attention only");
  Status e;
  if (out_of_range(&e, "block_size", f.block_size, 1, c.max_seq_len)) return e;
  if (out_of_range(&e, "global_blocks", f.global_blocks, 0, c.max_seq_len)) return e;
  out_of_range(&e, "num_random_blocks", f.num_random_blocks, 0, Limits::kMaxRandomBlocks);
  return e;
}

constexpr BlockSparseFields kDefaults;
const ConfigField kFields[] = {
    LINFER_KIND_FIELD(BlockSparseKind, BlockSparseFields, block_size, VT_BLOCK_SIZE, nullptr),
    LINFER_KIND_FIELD(BlockSparseKind, BlockSparseFields, global_blocks, VT_GLOBAL_BLOCKS, nullptr),
    LINFER_KIND_FIELD(BlockSparseKind, BlockSparseFields, num_random_blocks, VT_NUM_RANDOM_BLOCKS, nullptr),
};

constexpr KindSlot kSlots[] = {LINFER_LAYER_SLOT("random_blocks", BlockSparseTensors::kRandomBlocks, BlockSparseLayer,
                                                 VT_RANDOM_BLOCKS, kTensor, kF32)};
static_assert(kind_slots_fit(kSlots), "kind_tensors holds every tensor");

// [heads, blocks of the longest input, random blocks per query block], when there are any: block
// indices of the longest input.
Expect expected(const EncoderConfig& c, const LayerWeights*, const KindSlot&) {
  Expect e;
  const uint32_t random = block_sparse_fields(c).num_random_blocks;
  if (random == 0) return e;
  e.dims[0] = c.num_heads;
  e.dims[1] = uint32_t(block_sparse_blocks(c, c.max_seq_len));
  e.dims[2] = random;
  e.rank = 3;
  e.index_bound = e.dims[1];
  return e;
}

#if !LINFER_BARE_METAL
// BigBird's first and last block (bit 1: global_blocks).
void converter_defaults(EncoderConfig& c, uint32_t given) {
  if (!(given & 2)) block_sparse_fields(c).global_blocks = 1;
}
#endif

}  // namespace

extern const FormatKind kBlockSparseFormat = {
    AttentionKind::BlockSparse,
    /*causal=*/false,
    /*rotary=*/false,
    /*queries_are_keys=*/false,
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
    /*check_values=*/check_index_values,
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(converter_defaults),
};

}  // namespace linfer
