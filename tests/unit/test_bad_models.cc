// SPDX-License-Identifier: Apache-2.0
// The catalogue of bad model files: each is made from a valid model by one targeted change and
// must be refused at load with its own clear message and status, never a crash. Each file is also
// written to disk and given to linfer-run, which must exit non-zero with a one-line message.
#include <doctest/doctest.h>

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <functional>
#include <string>
#include <vector>

#include "linfer/linfer.h"
#include "linfer/format/kinds/give_take.h"
#include "linfer/format/kinds/lsh.h"
#include "linfer/format/kinds/block_sparse.h"
#include "linfer/format/kinds/sliding_window.h"
#include "linfer_generated.h"
#include "linfer/format/panel.h"
#include "quantize.h"
#include "test_models.h"
#include "test_tokenizers.h"
#include "test_util.h"

using namespace linfer;
using linfer::testing::make_model;
using linfer::testing::model_bytes;
using linfer::testing::small_config;

namespace {

struct BadCase {
  std::string name;
  std::function<std::vector<uint8_t>()> make;
  linfer_status status;
  std::string message;  // must appear in the error
};

fb::ModelFile* root(std::vector<uint8_t>& b) { return fb::GetMutableModelFile(b.data()); }
fb::Tensor* q_weight(std::vector<uint8_t>& b) {
  return root(b)->mutable_layers()->GetMutableObject(0)->mutable_attention()->mutable_q()->mutable_weight();
}

std::vector<uint8_t> valid() { return model_bytes(make_model(small_config()).desc); }

// A valid version 2 file: dense layers packed in panels (int8: with their channel sums).
std::vector<uint8_t> valid_panels(DType dtype = DType::F32) {
  auto o = make_model(small_config());
  static convert::QuantizedStore quantized;
  static PanelStore store;
  if (dtype != DType::F32) REQUIRE(convert::quantize_description(&o.desc, dtype, &quantized).ok());
  REQUIRE(pack_dense_weights(&o.desc, &store, true).ok());
  return model_bytes(o.desc);
}

// A version 2 description with dense layers in panels, changed by f before writing it unchecked.
std::vector<uint8_t> with_panels(std::function<void(EncoderDescription&)> f, DType dtype = DType::F32) {
  auto o = make_model(small_config());
  static convert::QuantizedStore quantized;
  static PanelStore store;
  if (dtype != DType::F32) REQUIRE(convert::quantize_description(&o.desc, dtype, &quantized).ok());
  REQUIRE(pack_dense_weights(&o.desc, &store, true).ok());
  f(o.desc);
  return model_bytes(o.desc, /*validate=*/false);
}

std::vector<uint8_t> with_config(std::function<void(fb::Config*)> f) {
  auto b = valid();
  f(root(b)->mutable_config());
  return b;
}

// A valid file with its Linformer fields (format version 4: ModelFile.kind) changed by f.
std::vector<uint8_t> with_linformer_config(std::function<void(fb::LinformerKind*)> f) {
  auto b = valid();
  REQUIRE(root(b)->kind());  // (the schema types it as KindTable: Config.attention_kind says whose)
  f(reinterpret_cast<fb::LinformerKind*>(root(b)->mutable_kind()));
  return b;
}

// A valid version 2 file (where Config holds every kind's fields) with its Config changed by f.
std::vector<uint8_t> with_legacy_config(std::function<void(fb::Config*)> f) {
  auto b = model_bytes(make_model(small_config()).desc, true, 2);
  f(root(b)->mutable_config());
  return b;
}

std::vector<uint8_t> with_desc(std::function<void(testing::OwnedDescription&)> f, EncoderConfig c = small_config()) {
  auto o = make_model(c);
  f(o);
  return model_bytes(o.desc, /*validate=*/false);
}

// The small config with another attention kind (no Linformer projections).
EncoderConfig kind_config(AttentionKind kind) {
  EncoderConfig c = small_config();
  set_attention_kind(c, kind);
  return c;
}

std::vector<BadCase> catalogue() {
  std::vector<BadCase> cases;
  auto add = [&](std::string name, std::function<std::vector<uint8_t>()> make, linfer_status st, std::string msg) {
    cases.push_back({std::move(name), std::move(make), st, std::move(msg)});
  };
  const auto INV = LINFER_ERROR_INVALID_MODEL;
  add(
      "empty file", [] { return std::vector<uint8_t>(); }, INV, "too small");
  add(
      "seven bytes", [] { return std::vector<uint8_t>(7, 0); }, INV, "too small");
  add(
      "wrong identifier",
      [] {
        auto b = valid();
        std::memcpy(b.data() + 4, "ONNX", 4);
        return b;
      },
      INV, "file identifier is 'ONNX'");
  add(
      "truncated to 100 bytes",
      [] {
        auto b = valid();
        b.resize(100);
        return b;
      },
      INV, "verifier");
  add(
      "truncated data section",
      [] {
        auto b = valid();
        b.pop_back();
        return b;
      },
      INV, "extends past the end of the file");
  add(
      "garbage root offset",
      [] {
        auto b = valid();
        uint32_t v = 0x7ffffff0;
        std::memcpy(b.data(), &v, 4);
        return b;
      },
      INV, "verifier");
  add(
      "format version 6",
      [] {
        auto b = valid();
        root(b)->mutate_format_version(6);
        return b;
      },
      INV, "unsupported format version 6");
  add(
      "format version 0",
      [] {
        auto b = valid();
        root(b)->mutate_format_version(0);
        return b;
      },
      INV, "unsupported format version 0");
  // Version 2: dense layers in panels.
  add(
      "panel layout in a version 1 file",
      [] {
        auto b = valid_panels();
        root(b)->mutate_format_version(1);
        return b;
      },
      INV, "panel layout needs format version 2");
  add(
      "unknown layout",
      [] {
        auto b = valid_panels();
        q_weight(b)->mutate_layout(fb::Layout(5));
        return b;
      },
      INV, "unknown layout 5");
  add(
      "panel tensor byte size wrong",
      [] {
        auto b = valid_panels();
        q_weight(b)->mutate_size(q_weight(b)->size() - 64);
        return b;
      },
      INV, "in panel16 layout");
  add(
      "panel groups that do not divide the rows",
      [] {
        auto b = valid_panels();
        q_weight(b)->mutate_panel_groups(5);
        return b;
      },
      INV, "panel groups that divide its rows");
  add(
      "panel groups the configuration does not use",
      [] {
        auto b = valid_panels();
        q_weight(b)->mutate_panel_groups(2);
        return b;
      },
      INV, "is packed in 2 panel groups, expected 1");
  add(
      "int8 panels without channel sums",
      [] {
        return with_panels([](EncoderDescription& d) { d.layers[0].fc1.weight.channel_sums = nullptr; }, DType::I8);
      },
      INV, "layers.0.feed_forward.fc1.weight is int8 in panel layout but has no channel sums");
  add(
      "panel layout for a tensor that is not a dense layer",
      [] {
        return with_panels([](EncoderDescription& d) {
          // A well-formed panel tensor (rows a multiple of 16, data of the panel byte size).
          static std::vector<uint8_t> panel_data(panel_matrix_bytes(DType::F32, 48, 24, 1));
          d.position_embedding.layout = Layout::Panel16;
          d.position_embedding.shape = {48, 24};
          d.position_embedding.data = panel_data.data();
        });
      },
      INV, "position_embedding cannot be stored in panel layout");
  add(
      "channel sums on a row-major tensor",
      [] {
        return with_panels(
            [](EncoderDescription& d) {
              static std::vector<int32_t> sums(40 * 24);
              d.token_embedding.channel_sums = sums.data();
            },
            DType::I8);
      },
      INV, "channel sums");
  // Version 3: int8 dense weights with input scales (activation smoothing).
  static std::vector<float> ones(64, 1.0f), negative(64, 1.0f), not_finite(64, 1.0f);
  negative[3] = -1.0f;
  not_finite[5] = NAN;
  add(
      "input scales on an f32 weight",
      [] { return with_panels([](EncoderDescription& d) { d.layers[0].fc1.weight.input_scales = ones.data(); }); }, INV,
      "input scales belong to 2-D int8 tensors");
  add(
      "input scales that are negative",
      [] {
        return with_panels([](EncoderDescription& d) { d.layers[0].fc1.weight.input_scales = negative.data(); },
                           DType::I8);
      },
      INV, "layers.0.feed_forward.fc1.weight: the input scale of column 3 is not positive");
  add(
      "input scales that are not finite",
      [] {
        return with_panels([](EncoderDescription& d) { d.layers[0].q.weight.input_scales = not_finite.data(); },
                           DType::I8);
      },
      INV, "the input scale of column 5 is not finite");
  add(
      "input scales on an embedding",
      [] {
        return with_panels([](EncoderDescription& d) { d.token_embedding.input_scales = ones.data(); }, DType::I8);
      },
      INV, "input scales");
  add(
      "input scales in a version 2 file",
      [] {
        auto b =
            with_panels([](EncoderDescription& d) { d.layers[0].fc1.weight.input_scales = ones.data(); }, DType::I8);
        root(b)->mutate_format_version(2);
        return b;
      },
      INV, "input scales need format version 3");
  // Version 5: int8 dense weights with input channels kept in f32 (fc2: [24, 40]).
  static const uint32_t two[2] = {3, 17}, out_of_range[2] = {3, 40}, twice[2] = {17, 17},
                        nine[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  static std::vector<float> columns(24 * 9, 0.5f), bad_column(24 * 2, 0.5f);
  bad_column[7] = INFINITY;
  auto f32_inputs = [](const uint32_t* inputs, uint32_t count, const float* weights, DType dtype = DType::I8) {
    return [=] {
      return with_panels(
          [=](EncoderDescription& d) {
            WeightView& w = d.layers[1].fc2.weight;
            w.f32_inputs = inputs;
            w.f32_input_count = count;
            w.f32_input_weights = weights;
          },
          dtype);
    };
  };
  add("f32 input channels on an f32 weight", f32_inputs(two, 2, columns.data(), DType::F32), INV,
      "layers.1.feed_forward.fc2.weight: f32 input channels belong to 2-D int8 tensors");
  add("f32 input channel out of range", f32_inputs(out_of_range, 2, columns.data()), INV,
      "f32 input channel 40 is not below the column count 40");
  add("f32 input channel twice", f32_inputs(twice, 2, columns.data()), INV, "f32 input channel 17 is listed twice");
  add("too many f32 input channels", f32_inputs(nine, 9, columns.data()), INV,
      "9 f32 input channels, at most 8 are allowed");
  add("f32 input weight not finite", f32_inputs(two, 2, bad_column.data()), INV, "f32 input weight 7 is not finite");
  add(
      "f32 input weights of the wrong size",
      [f32_inputs] {
        auto b = f32_inputs(two, 2, columns.data())();
        // (The vector's length, the 32-bit word before its data, made one less: still inside the file.)
        const auto* v = root(b)->layers()->Get(1)->feed_forward()->fc2()->weight()->f32_input_weights();
        REQUIRE(v);
        uint32_t length = v->size() - 1;
        std::memcpy(const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(v->data())) - 4, &length, 4);
        return b;
      },
      INV, "needs 48 f32 input weights (2 columns of 24 rows), has 47");
  add(
      "f32 input channels in a version 4 file",
      [f32_inputs] {
        auto b = f32_inputs(two, 2, columns.data())();
        root(b)->mutate_format_version(4);
        return b;
      },
      INV, "f32 input channels need format version 5");
  add(
      "f32 input channels on an embedding",
      [] {
        return with_panels(
            [](EncoderDescription& d) {
              d.token_embedding.f32_inputs = two;
              d.token_embedding.f32_input_count = 2;
              d.token_embedding.f32_input_weights = columns.data();
            },
            DType::I8);
      },
      INV, "keeps input channels in f32, which only int8 dense layer weights may");
  add(
      "data section misaligned",
      [] {
        auto b = valid();
        root(b)->mutate_data_offset(root(b)->data_offset() + 4);
        return b;
      },
      INV, "data section offset");
  add(
      "data section past the end",
      [] {
        auto b = valid();
        root(b)->mutate_data_size(uint64_t(1) << 62);
        return b;
      },
      INV, "extends past the end of the file");
  add(
      "tensor offset out of range",
      [] {
        auto b = valid();
        q_weight(b)->mutate_offset(uint64_t(1) << 40);
        return b;
      },
      INV, "layers.0.attention.q.weight: data");
  add(
      "tensor offset overflowing",
      [] {
        auto b = valid();
        q_weight(b)->mutate_offset(~uint64_t(63));
        return b;
      },
      INV, "lies outside the data section");
  add(
      "tensor offset misaligned",
      [] {
        auto b = valid();
        q_weight(b)->mutate_offset(q_weight(b)->offset() + 4);
        return b;
      },
      INV, "is not 64-byte aligned");
  add(
      "tensor byte size wrong",
      [] {
        auto b = valid();
        q_weight(b)->mutate_size(q_weight(b)->size() - 4);
        return b;
      },
      INV, "does not match f32");
  add(
      "tensor shape disagrees with config",
      [] {
        auto b = valid();
        auto* s = q_weight(b)->mutable_shape();
        s->Mutate(0, 12);
        s->Mutate(1, 48);
        return b;
      },
      INV, "layers.0.attention.q.weight has shape [12,48]");
  add(
      "zero dimension",
      [] {
        auto b = valid();
        q_weight(b)->mutable_shape()->Mutate(0, 0);
        return b;
      },
      INV, "zero dimension");
  add(
      "dimension product overflows",
      [] {
        auto b = valid();
        auto* s = q_weight(b)->mutable_shape();
        s->Mutate(0, 0xffffffffu);
        s->Mutate(1, 0xffffffffu);
        return b;
      },
      INV, "too large");
  add(
      "k greater than n", [] { return with_linformer_config([](fb::LinformerKind* c) { c->mutate_proj_len(40); }); },
      INV, "proj_len k = 40 exceeds max_seq_len n = 33");
  add(
      "k is zero", [] { return with_linformer_config([](fb::LinformerKind* c) { c->mutate_proj_len(0); }); }, INV,
      "proj_len");
  add(
      "k greater than n in a version 2 file",
      [] { return with_legacy_config([](fb::Config* c) { c->mutate_proj_len(40); }); }, INV,
      "proj_len k = 40 exceeds max_seq_len n = 33");
  add(
      "dim absurd", [] { return with_config([](fb::Config* c) { c->mutate_dim(0x80000000u); }); }, INV,
      "dim = 2147483648 is out of range");
  add(
      "heads times head_dim absurd",
      [] {
        return with_config([](fb::Config* c) {
          c->mutate_num_heads(1000);
          c->mutate_head_dim(60000);
        });
      },
      INV, "num_heads * head_dim");
  add(
      "vocab absurd", [] { return with_config([](fb::Config* c) { c->mutate_vocab_size(0xffffffffu); }); }, INV,
      "vocab_size");
  add(
      "max_seq_len absurd", [] { return with_config([](fb::Config* c) { c->mutate_max_seq_len(0xfffffff0u); }); }, INV,
      "max_seq_len");
  add(
      "layer count disagrees", [] { return with_config([](fb::Config* c) { c->mutate_num_layers(3); }); }, INV,
      "the model has 2 layers, the configuration says 3");
  add(
      "kv_heads invalid", [] { return with_config([](fb::Config* c) { c->mutate_kv_heads(2); }); }, INV,
      "kv_heads = 2 must be 1 or num_heads");
  add(
      "unknown activation", [] { return with_config([](fb::Config* c) { c->mutate_activation(fb::Activation(9)); }); },
      INV, "unknown activation");
  add(
      "unknown sharing mode",
      [] {
        return with_linformer_config(
            [](fb::LinformerKind* c) { c->mutate_projection_sharing(fb::ProjectionSharing(7)); });
      },
      INV, "unknown projection sharing");
  add(
      "norm_eps zero", [] { return with_config([](fb::Config* c) { c->mutate_norm_eps(0.0f); }); }, INV, "norm_eps");
  add(
      "norm_eps NaN", [] { return with_config([](fb::Config* c) { c->mutate_norm_eps(NAN); }); }, INV, "norm_eps");
  add(
      "LM head without vocabulary",
      [] {
        return with_config([](fb::Config* c) {
          c->mutate_head(fb::HeadKind::LmLogits);
          c->mutate_vocab_size(0);
        });
      },
      INV, "an LM head needs vocab_size > 0");
  add(
      "unknown dtype",
      [] {
        auto b = valid();
        q_weight(b)->mutate_dtype(fb::DType(7));
        return b;
      },
      INV, "unknown dtype 7");
  add(
      "int8 tensor without scales",
      [] {
        auto b = valid();
        auto* t = q_weight(b);
        t->mutate_dtype(fb::DType::I8);
        t->mutate_size(t->size() / 4);
        return b;
      },
      INV, "int8 tensor needs 24 scales");
  add(
      "int8 scale not finite",
      [] {
        return with_desc([](testing::OwnedDescription& o) {
          auto& w = o.desc.layers[0].q.weight;
          static std::vector<float> scales;
          scales.assign(w.shape[0], 0.01f);
          scales[3] = INFINITY;
          w.dtype = DType::I8;
          w.scales = scales.data();
        });
      },
      INV, "not finite");
  add(
      "missing required tensor",
      [] { return with_desc([](testing::OwnedDescription& o) { o.desc.layers[1].fc1.weight = WeightView(); }); }, INV,
      "layers.1.feed_forward.fc1.weight is missing");
  add(
      "tensor the config does not use",
      [] {
        // A givetake file of version 2 made a linformer one: its global tokens stay (only a version
        // 1 to 3 file has a place for another kind's tensor).
        EncoderConfig c = kind_config(AttentionKind::GiveTake);
        c.num_global_tokens = 2;
        auto b = model_bytes(make_model(c).desc, true, 2);
        fb::Config* config = root(b)->mutable_config();
        REQUIRE(config->mutate_attention_kind(fb::AttentionKind::Linformer));
        REQUIRE(config->mutate_num_global_tokens(0));
        REQUIRE(config->mutate_proj_len(linformer_fields(small_config()).proj_len));
        return b;
      },
      INV, "global_tokens is present");
  add(
      "a kind's layer table pointing outside the file",
      [] {
        auto b = valid();
        auto* attention = root(b)->mutable_layers()->GetMutableObject(1)->mutable_attention();
        // (The schema types it as the empty KindTable: the reader verifies its fields itself.)
        uint8_t* proj_k = reinterpret_cast<flatbuffers::Table*>(attention->mutable_kind())
                              ->GetAddressOf(fb::LinformerLayer::VT_PROJ_K);
        REQUIRE(proj_k);
        flatbuffers::WriteScalar<uint32_t>(proj_k, 0x7ffffff0u);
        return b;
      },
      INV, "verifier");
  add(
      "position table too short",
      [] {
        auto b = valid();
        auto* t = root(b)->mutable_position_embedding();
        t->mutable_shape()->Mutate(0, 20);
        t->mutate_size(20 * 24 * 4);
        return b;
      },
      INV, "position_embedding has shape");
  add(
      "norm weight stored as f16",
      [] {
        auto b = valid();
        auto* t = root(b)->mutable_final_norm()->mutable_weight();
        t->mutate_dtype(fb::DType::F16);
        t->mutate_size(t->size() / 2);
        return b;
      },
      INV, "final_norm.weight must be f32");
  add(
      "givetake without its global tokens",
      [] {
        EncoderConfig c = kind_config(AttentionKind::GiveTake);
        c.num_global_tokens = 2;
        return with_desc(
            [](testing::OwnedDescription& o) { o.desc.kind_tensors[GiveTakeTensors::kGlobalTokens] = WeightView(); },
            c);
      },
      INV, "global_tokens is missing");
  add(
      "givetake convolution with an even kernel",
      [] {
        EncoderConfig c = kind_config(AttentionKind::GiveTake);
        c.num_global_tokens = 2;
        return with_desc(
            [](testing::OwnedDescription& o) {
              static std::vector<float> w(24 * 4, 0.1f);
              WeightView& conv = o.desc.layers[0].kind_tensors[GiveTakeTensors::kConvWeight];
              conv.shape = {24, 4};
              conv.data = w.data();
            },
            c);
      },
      INV, "odd kernel");
  add(
      "window radius on a linformer model",
      [] { return with_legacy_config([](fb::Config* c) { c->mutate_window_radius(4); }); }, INV,
      "apply to sliding window attention only");
  add(
      "sliding window of radius 0",
      [] {
        EncoderConfig c = kind_config(AttentionKind::SlidingWindow);
        sliding_window_fields(c).window_radius = 0;
        return with_desc([](testing::OwnedDescription&) {}, c);
      },
      INV, "window_radius");
  add(
      "sliding window with only some global projections",
      [] {
        EncoderConfig c = kind_config(AttentionKind::SlidingWindow);
        sliding_window_fields(c).window_radius = 3;
        sliding_window_fields(c).global_positions = 1;
        return with_desc(
            [](testing::OwnedDescription& o) {
              LayerWeights& l = o.desc.layers[1];
              l.kind_tensors[SlidingWindowTensors::kQGlobalWeight] = l.q.weight;
              l.kind_tensors[SlidingWindowTensors::kQGlobalBias] = l.q.bias;
              l.kind_tensors[SlidingWindowTensors::kKGlobalWeight] = l.k.weight;
              l.kind_tensors[SlidingWindowTensors::kKGlobalBias] = l.k.bias;
            },
            c);
      },
      INV, "layers.1.attention has some of q_global, k_global and v_global");
  add(
      "sliding window global bias without its projections",
      [] {
        EncoderConfig c = kind_config(AttentionKind::SlidingWindow);
        sliding_window_fields(c).window_radius = 3;
        return with_desc(
            [](testing::OwnedDescription& o) {
              o.desc.layers[0].kind_tensors[SlidingWindowTensors::kVGlobalBias] = o.desc.layers[0].v.bias;
            },
            c);
      },
      INV, "layers.0.attention.v_global.bias is present but the configuration does not use it");
  add(
      "block size on a linformer model",
      [] { return with_legacy_config([](fb::Config* c) { c->mutate_block_size(4); }); }, INV,
      "apply to block sparse attention only");
  add(
      "block sparse with block size 0",
      [] {
        EncoderConfig c = kind_config(AttentionKind::BlockSparse);
        return with_desc([](testing::OwnedDescription&) {}, c);
      },
      INV, "block_size = 0 is out of range");
  add(
      "block sparse with too many random blocks",
      [] {
        EncoderConfig c = kind_config(AttentionKind::BlockSparse);
        block_sparse_fields(c).block_size = 4;
        block_sparse_fields(c).num_random_blocks = 65;
        return with_desc([](testing::OwnedDescription&) {}, c);
      },
      INV, "num_random_blocks = 65 is out of range");
  add(
      "block sparse without its random blocks",
      [] {
        EncoderConfig c = kind_config(AttentionKind::BlockSparse);
        block_sparse_fields(c).block_size = 4;
        block_sparse_fields(c).num_random_blocks = 2;
        return with_desc(
            [](testing::OwnedDescription& o) {
              o.desc.layers[1].kind_tensors[BlockSparseTensors::kRandomBlocks] = WeightView();
            },
            c);
      },
      INV, "layers.1.attention.random_blocks is missing");
  for (const float bad : {9.0f, 1.5f, -1.0f, NAN}) {  // 9 blocks of 4 rows in n = 33
    add(
        "block sparse random block " + std::to_string(bad),
        [bad] {
          EncoderConfig c = kind_config(AttentionKind::BlockSparse);
          block_sparse_fields(c).block_size = 4;
          block_sparse_fields(c).num_random_blocks = 2;
          return with_desc(
              [bad](testing::OwnedDescription& o) {
                const_cast<float*>(static_cast<const float*>(
                    o.desc.layers[0].kind_tensors[BlockSparseTensors::kRandomBlocks].data))[5] = bad;
              },
              c);
        },
        INV, "layers.0.attention.random_blocks holds");
  }
  add(
      "bucket size on a linformer model",
      [] { return with_legacy_config([](fb::Config* c) { c->mutate_bucket_size(4); }); }, INV,
      "bucket_size and num_hashes apply to lsh attention only");
  auto lsh_config = [](uint32_t bucket_size, uint32_t hashes) {
    EncoderConfig c = kind_config(AttentionKind::Lsh);
    lsh_fields(c).bucket_size = bucket_size;
    lsh_fields(c).num_hashes = hashes;
    return c;
  };
  add(
      "lsh with bucket size 0",
      [=] {
        return with_desc(
            [](testing::OwnedDescription& o) {  // (no rotation columns)
              for (LayerWeights& l : o.desc.layers) l.kind_tensors[LshTensors::kRotations] = WeightView();
            },
            lsh_config(0, 2));
      },
      INV, "bucket_size = 0 is out of range");
  add(
      "lsh with 17 hashing rounds", [=] { return with_desc([](testing::OwnedDescription&) {}, lsh_config(4, 17)); },
      INV, "num_hashes = 17 is out of range");
  add(
      "lsh with a key projection",
      [=] {
        return with_desc([](testing::OwnedDescription& o) { o.desc.layers[0].k = o.desc.layers[0].v; },
                         lsh_config(4, 2));
      },
      INV, "layers.0.attention.k.weight is present but the configuration does not use it");
  add(
      "lsh without its rotations",
      [=] {
        return with_desc(
            [](testing::OwnedDescription& o) { o.desc.layers[1].kind_tensors[LshTensors::kRotations] = WeightView(); },
            lsh_config(4, 2));
      },
      INV, "layers.1.attention.rotations is missing");
  add(
      "lsh rotations for other rounds",
      [=] {
        return with_desc(
            [](testing::OwnedDescription& o) { o.desc.layers[0].kind_tensors[LshTensors::kRotations].shape[0] = 1; },
            lsh_config(4, 2));
      },
      INV, "layers.0.attention.rotations has shape");
  for (const float bad : {NAN, INFINITY}) {
    add(
        "lsh rotation " + std::to_string(bad),
        [=] {
          return with_desc(
              [bad](testing::OwnedDescription& o) {
                const_cast<float*>(
                    static_cast<const float*>(o.desc.layers[1].kind_tensors[LshTensors::kRotations].data))[7] = bad;
              },
              lsh_config(4, 2));
        },
        INV, "layers.1.attention.rotations holds a non-finite value at element 7");
  }
  add(
      "classifier activation gelu on an LM head model",
      [] {
        EncoderConfig c = small_config();
        c.head = HeadKind::LmLogits;
        c.classifier_activation = Activation::GeluErf;
        return with_desc([](testing::OwnedDescription&) {}, c);
      },
      INV, "classifier_activation applies to classifier heads only");
  add(
      "unknown classifier activation",
      [] { return with_config([](fb::Config* c) { c->mutate_classifier_activation(fb::Activation(4)); }); }, INV,
      "unknown classifier activation");
  add(
      "reversible merge mean on pre-norm layers",
      [] {
        EncoderConfig c = small_config();
        c.reversible_merge = ReversibleMerge::Mean;
        return with_desc([](testing::OwnedDescription&) {}, c);
      },
      INV, "reversible_merge applies to reversible layers only");
  add(
      "unknown reversible merge",
      [] { return with_config([](fb::Config* c) { c->mutate_reversible_merge(fb::ReversibleMerge(2)); }); }, INV,
      "unknown reversible merge");
  add(
      "causal full attention",
      [] { return with_config([](fb::Config* c) { c->mutate_causal(fb::CausalMode::Causal); }); }, INV,
      "causal mode is only defined for linear");
  // The tokenizer table (linfer/format/tokenizer.h): each made from a valid one by one change.
  auto tokenizer = [](int kind, std::function<void(convert::TokenizerData&, TokenizerView&)> f) {
    return [kind, f] {
      convert::TokenizerData t = kind == 1   ? testing::byte_bpe_tokenizer()
                                 : kind == 2 ? testing::sentencepiece_tokenizer()
                                 : kind == 3 ? testing::unigram_tokenizer()
                                             : testing::wordpiece_tokenizer();
      EncoderConfig c = small_config();
      c.vocab_size = 300;
      testing::OwnedDescription o = make_model(c);
      o.desc.tokenizer = t.view();
      f(t, o.desc.tokenizer);
      return model_bytes(o.desc, /*validate=*/false);
    };
  };
  add("tokenizer piece ending outside its bytes",
      tokenizer(0, [](auto& t, TokenizerView& v) { t.piece_ends[3] = uint32_t(t.piece_bytes.size() + 5); }), INV,
      "tokenizer: piece 3 is empty or ends outside");
  add("tokenizer with an empty piece",
      tokenizer(0, [](auto& t, TokenizerView& v) { t.piece_ends[4] = t.piece_ends[3]; }), INV,
      "tokenizer: piece 4 is empty");
  add("WordPiece piece not UTF-8", tokenizer(0, [](auto& t, TokenizerView& v) { t.piece_bytes[0] = char(0xC3); }), INV,
      "tokenizer: piece 0 is not UTF-8");
  add("tokenizer piece repeated", tokenizer(0, [](auto& t, TokenizerView& v) { t.piece_bytes[t.piece_ends[9]] = ','; }),
      INV, "tokenizer: piece 10 repeats an earlier piece");
  add("tokenizer larger than the model's vocabulary",
      tokenizer(1,
                [](auto& t, TokenizerView& v) {
                  static std::vector<uint32_t> ends;
                  ends.assign(v.piece_ends, v.piece_ends + v.num_pieces);
                  while (ends.size() < 301) ends.push_back(ends.back() + 1), t.piece_bytes += "x";
                  v.piece_bytes = reinterpret_cast<const uint8_t*>(t.piece_bytes.data());
                  v.piece_bytes_size = t.piece_bytes.size();
                  v.piece_ends = ends.data();
                  v.num_pieces = 301;
                }),
      INV, "tokenizer: 301 pieces do not fit the model's vocabulary of 300");
  add("tokenizer model id outside the vocabulary",
      tokenizer(0,
                [](auto& t, TokenizerView& v) {
                  static std::vector<uint32_t> ids;
                  ids.assign(v.num_pieces, 0);
                  ids[7] = 300;
                  v.model_ids = ids.data();
                }),
      INV, "tokenizer: piece 7 maps to model id 300");
  add("tokenizer merge of a missing piece", tokenizer(1, [](auto& t, TokenizerView& v) { t.merges[3] = 262; }), INV,
      "tokenizer: merge 1 names piece 262 of 262");
  add("tokenizer merge making no piece", tokenizer(1, [](auto& t, TokenizerView& v) { t.merges[1] = 'x'; }), INV,
      "tokenizer: merge 0 makes a piece that is not in the vocabulary");
  add("byte-level BPE without a byte's piece",
      tokenizer(1,
                [](auto& t, TokenizerView& v) {
                  t.piece_bytes.insert(8, "x");  // piece 7: "\x07x"
                  for (uint32_t i = 7; i < v.num_pieces; ++i) ++t.piece_ends[i];
                  v.piece_bytes = reinterpret_cast<const uint8_t*>(t.piece_bytes.data());
                  v.piece_bytes_size = t.piece_bytes.size();
                }),
      INV, "tokenizer: byte-level BPE has no piece for byte 7");
  add("tokenizer unknown piece out of range", tokenizer(0, [](auto& t, TokenizerView& v) { v.unk_id = 15; }), INV,
      "tokenizer: unknown piece 15 is not a piece");
  add("WordPiece without an unknown piece", tokenizer(0, [](auto& t, TokenizerView& v) { v.unk_id = -1; }), INV,
      "WordPiece needs an unknown piece");
  add("tokenizer template id outside the vocabulary", tokenizer(0, [](auto& t, TokenizerView& v) { v.suffix = {300}; }),
      INV, "tokenizer: template id 300 is outside the model's vocabulary of 300");
  add("tokenizer added piece out of range", tokenizer(1, [](auto& t, TokenizerView& v) { v.added = {262}; }), INV,
      "tokenizer: added piece 262 is not a piece");
  add("tokenizer of unknown kind", tokenizer(0, [](auto& t, TokenizerView& v) { v.kind = TokenizerKind(7); }), INV,
      "tokenizer: unknown kind 7");
  add("tokenizer longest word of 0 characters", tokenizer(0, [](auto& t, TokenizerView& v) { v.max_word_chars = 0; }),
      INV, "tokenizer: longest word of 0 characters");
  add("tokenizer with a 17-byte continuing prefix",
      tokenizer(0, [](auto& t, TokenizerView& v) { v.continuing_prefix = std::string(17, '#'); }), INV,
      "continuing prefix is longer than 16 bytes");
  add("Unigram with byte fallback", tokenizer(3, [](auto& t, TokenizerView& v) { v.byte_fallback = true; }), INV,
      "tokenizer: byte fallback is not supported with the Unigram kind");
  add("added piece flags not one per added piece",
      tokenizer(3, [](auto& t, TokenizerView& v) { v.added_flags.pop_back(); }), INV,
      "tokenizer: 4 flags for 5 added pieces");
  add("added piece flags of unknown bits", tokenizer(3, [](auto& t, TokenizerView& v) { v.added_flags[4] = 9; }), INV,
      "tokenizer: added piece flags 9 (0 to 7 allowed)");
  add("normalized added piece on WordPiece",
      tokenizer(0,
                [](auto& t, TokenizerView& v) {
                  v.added = {4};
                  v.added_flags = {kAddedNormalized};
                }),
      INV, "matched in the normalized text is supported with the Unigram kind only");
  add("Unigram space runs of unknown mode", tokenizer(3, [](auto& t, TokenizerView& v) { v.space_runs = 3; }), INV,
      "tokenizer: space runs mode 3 (0 to 2 allowed)");
  add("Unigram prepend scheme out of range", tokenizer(3, [](auto& t, TokenizerView& v) { v.prepend_scheme = 3; }), INV,
      "tokenizer: prepend scheme 3 (0 to 2 allowed)");
  add("Metaspace settings on WordPiece", tokenizer(0, [](auto& t, TokenizerView& v) { v.strip_right = true; }), INV,
      "belong to the Unigram kind");
  add("normalized added piece holding a space",
      tokenizer(3,
                [](auto& t, TokenizerView& v) {
                  t.pieces[9] = "<m k>";
                  v = t.view();
                }),
      INV, "is matched in the normalized text but is longer than 256 bytes, holds a space");
  add("Unigram without its unknown piece", tokenizer(3, [](auto& t, TokenizerView& v) { v.unk_id = 5; }), INV,
      "SentencePiece needs its unknown piece");
  return cases;
}

using linfer::testing::run_command;

}  // namespace

TEST_CASE("the valid base model loads") {
  auto b = valid();
  linfer_model* m = nullptr;
  REQUIRE_MESSAGE(linfer_model_load_from_memory(b.data(), b.size(), &m) == LINFER_OK, linfer_last_error());
  linfer_model_free(m);
}

// A kind's tensor at a place of kind_tensors its format file does not list: no reader fills one,
// so a writer of descriptions made in memory must refuse it rather than drop it.
TEST_CASE("a tensor at a place its attention kind does not list is refused when writing") {
  auto o = make_model(small_config());  // (Linformer: a layer's places 0 to 3)
  std::vector<uint8_t> bytes;
  REQUIRE(write_lfm(o.desc, "test", {}, &bytes).ok());
  o.desc.layers[1].kind_tensors[kMaxKindLayerTensors - 1] = o.desc.layers[1].q.bias;
  const std::string err = write_lfm(o.desc, "test", {}, &bytes).message();
  CHECK_MESSAGE(err.find("layers.1 holds a tensor at 5 of its attention kind's, which linformer attention does not "
                         "have") != std::string::npos,
                err);
}

// A feature only some kinds have names those kinds, as the table of kinds gives them.
TEST_CASE("causal mode and rotary positions on a kind without them name the kinds that have them") {
  auto load_error = [](const std::vector<uint8_t>& b) {
    linfer_model* m = nullptr;
    CHECK(linfer_model_load_from_memory(b.data(), b.size(), &m) == LINFER_ERROR_INVALID_MODEL);
    return std::string(linfer_last_error());
  };
  const std::string causal = load_error(with_config([](fb::Config* c) { c->mutate_causal(fb::CausalMode::Causal); }));
  const std::string rotary =
      load_error(with_config([](fb::Config* c) { c->mutate_rotary(fb::Rotary::AdjacentPairs); }));
  using testing::kind_built;
  if (kind_built("full") && kind_built("linear_elu") && kind_built("performer") && kind_built("lsh")) {
    CHECK(causal.find("causal mode is only defined for linear_elu, performer and lsh attention, not linformer") !=
          std::string::npos);
    CHECK(rotary.find("rotary positions are only defined for full, linear_elu, performer and lsh attention, not "
                      "linformer") != std::string::npos);
  } else {
    CHECK(causal.find("causal mode is") != std::string::npos);
    CHECK(rotary.find("rotary positions are") != std::string::npos);
  }
}

// Whether a tensor is a dense layer's weight, asked by name (the converter, panel packing) and by
// slot (the loader and the checks): the same answer for every tensor of every kind's model.
TEST_CASE("is_dense_weight and is_dense_slot agree on every tensor") {
  for (AttentionKind kind :
       {AttentionKind::Linformer, AttentionKind::FullSoftmax, AttentionKind::SlidingWindow, AttentionKind::GiveTake}) {
    CAPTURE(to_string(kind));
    EncoderConfig c = small_config();
    set_attention_kind(c, kind);
    if (kind == AttentionKind::SlidingWindow) sliding_window_fields(c).global_positions = 2;
    if (kind == AttentionKind::GiveTake) c.num_global_tokens = 3;
    c.head = HeadKind::LmLogits;
    auto o = make_model(c);
    if (kind == AttentionKind::SlidingWindow)  // the global rows' own projections (optional)
      for (LayerWeights& l : o.desc.layers) {
        using T = SlidingWindowTensors;
        l.kind_tensors[T::kQGlobalWeight] = l.q.weight;
        l.kind_tensors[T::kKGlobalWeight] = l.k.weight;
        l.kind_tensors[T::kVGlobalWeight] = l.v.weight;
      }
    size_t dense = 0, kind_dense = 0, tensors = 0;
    for_each_slot(o.desc, [&](Slot slot, uint32_t, const std::string& name, const WeightView& w) {
      if (!w.present()) return;
      CAPTURE(name);
      ++tensors;
      CHECK(is_dense_weight(name) == is_dense_slot(o.desc.config, slot));
      dense += is_dense_slot(o.desc.config, slot);
      kind_dense += is_kind_slot(slot) && is_dense_slot(o.desc.config, slot);
    });
    CHECK(dense >= 6 * o.desc.layers.size());  // Q, K, V, output, fc1, fc2 in each layer
    CHECK(tensors > dense);
    CHECK(kind_dense == (kind == AttentionKind::SlidingWindow ? 3 * o.desc.layers.size() : 0));
  }
  CHECK_FALSE(is_dense_weight("attention.q.weight"));  // a layer's slot without its layer
  CHECK_FALSE(is_dense_weight("layers.0.head.out.weight"));
  CHECK(is_dense_weight("layers.12.feed_forward.fc2.weight"));
}

TEST_CASE("catalogue of bad model files: clear errors from the C API") {
  const auto cases = catalogue();
  CHECK(cases.size() >= 20);
  for (const BadCase& c : cases) {
    CAPTURE(c.name);
    const std::vector<uint8_t> bytes = c.make();
    linfer_model* m = nullptr;
    const linfer_status st =
        linfer_model_load_from_memory(bytes.empty() ? "" : (const void*)bytes.data(), bytes.size(), &m);
    CHECK(st == c.status);
    CHECK(m == nullptr);
    const std::string msg = linfer_last_error();
    CHECK_MESSAGE(msg.find(c.message) != std::string::npos, "message was: " << msg);
    CHECK(msg.find('\n') == std::string::npos);
    linfer_model_free(m);
  }
}

TEST_CASE("catalogue of bad model files: linfer-run exits non-zero with one line") {
  const std::string dir = std::string(LINFER_TEST_TMP) + "/bad_models";
  std::system(("mkdir -p " + dir).c_str());
  const std::string ids = dir + "/ids.txt";
  {
    FILE* f = std::fopen(ids.c_str(), "w");
    std::fputs("1 2 3\n", f);
    std::fclose(f);
  }
  int index = 0;
  for (const BadCase& c : catalogue()) {
    CAPTURE(c.name);
    const std::vector<uint8_t> bytes = c.make();
    const std::string path = dir + "/bad_" + std::to_string(index++) + ".lfm";
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    int code = 0;
    const std::string out = run_command(std::string(LINFER_RUN_PATH) + " " + path + " --ids " + ids, &code);
    CHECK(code == 1);
    CHECK_MESSAGE(out.find(c.message) != std::string::npos, "output was: " << out);
    CHECK(out.rfind("linfer-run: ", 0) == 0);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  }
}
