// SPDX-License-Identifier: Apache-2.0
// The linfer layout (tools/convert/layouts/linfer.cc): the canonical slot names as keys.
#include "config_json.h"
#include "linfer/format/kinds/block_sparse.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/kinds/lsh.h"
#include "linfer/format/kinds/performer.h"
#include "layout_checkpoint.h"
#include "test_models.h"

namespace linfer::testing {
namespace {

const char* kLinferConfig =
    R"({"vocab_size": 10, "dim": 8, "num_layers": 2, "num_heads": 2, "head_dim": 4, "ff_dim": 16,
        "max_seq_len": 8, "proj_len": 4})";

// Every tensor a model of kLinferConfig has, under its slot name (embeddings with ".weight").
LayoutCheckpoint linfer_checkpoint() {
  OwnedDescription model = make_model(required(convert::parse_linfer_config(kLinferConfig)));
  LayoutCheckpoint ck;
  for_each_weight(model.desc, [&](const std::string& slot, const WeightView& w) {
    if (!w.present()) return;
    std::vector<int64_t> shape(w.shape.begin(), w.shape.end());
    ck.add(slot == "token_embedding" || slot == "position_embedding" ? slot + ".weight" : slot, shape);
  });
  ck.ck.metadata["linfer_config"] = kLinferConfig;
  return ck;
}

TEST_SUITE("linfer") {
  TEST_CASE("linfer layout: detected, every slot mapped, configuration from the checkpoint's metadata") {
    LayoutCheckpoint ck = linfer_checkpoint();
    check_detect_and_unused(ck, "linfer", "");
    MappedModel out;
    REQUIRE(ck.map("linfer", "", &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.dim == 8);
    CHECK(c.num_layers == 2);
    CHECK(linformer_fields(c).proj_len == 4);
    REQUIRE(out.desc.layers.size() == 2);
    CHECK(out.desc.token_embedding.shape == Shape{10, 8});
    CHECK(out.desc.layers[1].q.weight.shape == Shape{8, 8});
    CHECK(out.desc.layers[1].kind_tensors[LinformerTensors::kProjK].shape == Shape{4, 8});
    CHECK(out.notes.empty());
    // --config wins over the metadata.
    MappedModel from_config;
    CHECK(ck.map("linfer", kLinferConfig, &from_config).ok());
  }

  TEST_CASE("linfer layout: refusals") {
    LayoutCheckpoint ck = linfer_checkpoint();
    ck.ck.metadata.clear();
    MappedModel out;
    CHECK(ck.map("linfer", "", &out).message() == "the checkpoint carries no linfer_config; pass --config CONFIG.json");
    MappedModel counts;
    CHECK(ck.map("linfer", R"({"vocab_size": 10, "dim": 8, "num_layers": 4000000000, "num_heads": 2, "head_dim": 4,
                                       "ff_dim": 16, "max_seq_len": 8, "proj_len": 4})",
                 &counts)
              .message() == "configuration: the configuration has 4000000000 layers (at most " +
                                std::to_string(Limits::kMaxLayers) + ")");
    ck.remove("layers.1.attention.q.weight");
    MappedModel missing;
    const std::string err = ck.map("linfer", kLinferConfig, &missing).message();
    CHECK_MESSAGE(err.find("layers.1.attention.q.weight") != std::string::npos, err);
  }

  // --config reads each kind's own fields through its format file's list (names, types, choices).
  TEST_CASE("linfer configuration: a kind's own fields") {
    const std::string base =
        R"({"vocab_size": 10, "dim": 8, "num_layers": 2, "num_heads": 2, "head_dim": 4, "ff_dim": 16, "max_seq_len": 8, )";
    EncoderConfig c =
        required(convert::parse_linfer_config(base + R"("attention_kind": "lsh", "bucket_size": 2, "num_hashes": 3})"));
    CHECK(c.attention_kind == AttentionKind::Lsh);
    CHECK(lsh_fields(c).bucket_size == 2);
    CHECK(lsh_fields(c).num_hashes == 3);
    // The converter's defaults where they are not the schema's: BigBird's first and last block,
    // lucidrains' epsilon by feature map; and an enum by its values' names.
    c = required(convert::parse_linfer_config(base + R"("attention_kind": "block_sparse", "block_size": 4})"));
    CHECK(block_sparse_fields(c).block_size == 4);
    CHECK(block_sparse_fields(c).global_blocks == 1);
    c = required(convert::parse_linfer_config(base + R"("attention_kind": "block_sparse", "global_blocks": 0})"));
    CHECK(block_sparse_fields(c).global_blocks == 0);
    c = required(convert::parse_linfer_config(
        base + R"("attention_kind": "performer", "num_features": 6, "feature_map": "relu"})"));
    CHECK(performer_fields(c).num_features == 6);
    CHECK(performer_fields(c).feature_map == FeatureMap::Relu);
    CHECK(performer_fields(c).feature_eps == 1e-3f);
    c = required(convert::parse_linfer_config(base + R"("attention_kind": "performer", "feature_eps": 0.5})"));
    CHECK(performer_fields(c).feature_eps == 0.5f);
    c = required(convert::parse_linfer_config(base + R"("proj_len": 4, "projection_sharing": "layerwise"})"));
    CHECK(linformer_fields(c).projection_sharing == ProjectionSharing::Layerwise);
    // Another kind's field: refused unless its default; a bad value by the field's type.
    CHECK(convert::parse_linfer_config(base + R"("attention_kind": "full", "bucket_size": 4})").status().message() ==
          "bucket_size and num_hashes apply to lsh attention only");
    CHECK(convert::parse_linfer_config(base + R"("attention_kind": "full", "bucket_size": 0})").ok());
    CHECK(convert::parse_linfer_config(base + R"("attention_kind": "performer", "feature_map": "elu"})")
              .status()
              .message() == "'feature_map' must be one of: softmax, relu");
    CHECK(convert::parse_linfer_config(base + R"("attention_kind": "lsh", "num_hashes": -1})").status().message() ==
          "'num_hashes' must be a non-negative integer");
  }
}

}  // namespace
}  // namespace linfer::testing
