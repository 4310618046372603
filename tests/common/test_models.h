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
#include "linfer/format/kinds/lsh.h"
#include "linfer/format/kinds/block_sparse.h"
#include "linfer/format/kinds/give_take.h"
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

// Fills every tensor the configuration needs (and every optional bias) with N(0, 0.2) values;
// layer norm weights are near 1.
inline OwnedDescription make_model(const EncoderConfig& c, uint32_t seed = 1) {
  OwnedDescription o;
  o.desc.config = c;
  o.desc.layers.resize(c.num_layers);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  auto fill = [&](WeightView& w, std::vector<uint32_t> shape, float base = 0.0f) {
    w.shape = std::move(shape);
    w.dtype = DType::F32;
    auto v = std::make_unique<std::vector<float>>(w.elements());
    for (float& x : *v) x = base + nd(rng);
    w.data = v->data();
    o.store.push_back(std::move(v));
  };
  const uint32_t D = c.dim, HD = c.num_heads * c.head_dim, KV = c.kv_heads * c.head_dim;
  auto norm = [&](NormWeights& n) {
    fill(n.weight, {D}, 1.0f);
    fill(n.bias, {D});
  };
  auto linear = [&](LinearWeights& l, uint32_t out, uint32_t in) {
    fill(l.weight, {out, in});
    fill(l.bias, {out});
  };
  if (c.vocab_size) fill(o.desc.token_embedding, {c.vocab_size, D});
  if (c.positions == PositionKind::Learned) fill(o.desc.position_embedding, {c.position_offset + c.max_seq_len, D});
  if (c.embedding_norm) norm(o.desc.embedding_norm);
  if (c.attention_kind == AttentionKind::GiveTake)
    fill(o.desc.kind_tensors[GiveTakeTensors::kGlobalTokens], {c.num_global_tokens, D});
  const bool linformer = c.attention_kind == AttentionKind::Linformer;
  const LinformerFields lf = linformer ? linformer_fields(c) : LinformerFields();
  const bool per_head = lf.projection_sharing == ProjectionSharing::None;
  const std::vector<uint32_t> proj = per_head ? std::vector<uint32_t>{c.num_heads, lf.proj_len, c.max_seq_len}
                                              : std::vector<uint32_t>{lf.proj_len, c.max_seq_len};
  if (linformer && lf.projection_sharing == ProjectionSharing::Layerwise)
    fill(o.desc.kind_tensors[LinformerTensors::kSharedProj], {lf.proj_len, c.max_seq_len});
  for (LayerWeights& l : o.desc.layers) {
    linear(l.q, HD, D);
    if (c.attention_kind != AttentionKind::Lsh) linear(l.k, KV, D);  // (Lsh: the queries are the keys)
    linear(l.v, KV, D);
    linear(l.out, D, HD);
    if (linformer && lf.projection_sharing != ProjectionSharing::Layerwise)
      fill(l.kind_tensors[LinformerTensors::kProjK], proj);
    if (linformer && linformer_has_separate_proj_v(c)) fill(l.kind_tensors[LinformerTensors::kProjV], proj);
    if (c.attention_kind == AttentionKind::BlockSparse &&
        block_sparse_fields(c).num_random_blocks > 0) {  // block indices
      const uint32_t blocks = uint32_t(block_sparse_blocks(c, c.max_seq_len));
      WeightView& random = l.kind_tensors[BlockSparseTensors::kRandomBlocks];
      fill(random, {c.num_heads, blocks, block_sparse_fields(c).num_random_blocks});
      float* v = const_cast<float*>(static_cast<const float*>(random.data));
      for (uint64_t j = 0; j < random.elements(); ++j)
        v[j] = float(std::uniform_int_distribution<uint32_t>(0, blocks - 1)(rng));
    }
    if (c.attention_kind == AttentionKind::Lsh)
      fill(l.kind_tensors[LshTensors::kRotations],
           {lsh_fields(c).num_hashes, c.head_dim, uint32_t(lsh_half_buckets(c, c.max_seq_len))});
    norm(l.attention_norm);
    linear(l.fc1, c.ff_dim, D);
    linear(l.fc2, D, c.ff_dim);
    norm(l.feed_forward_norm);
  }
  if (c.final_norm) norm(o.desc.final_norm);
  if (c.head != HeadKind::None) linear(o.desc.head.out, c.output_channels(), D);
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
