// SPDX-License-Identifier: Apache-2.0
// The linfer layout (tools/convert/layouts/linfer.cc): the canonical slot names as keys.
#include "config_json.h"
#include "linfer/format/kinds/linformer.h"
#include "layout_checkpoint.h"
#include "test_models.h"

namespace linfer::testing {
namespace {

const char* kConfig =
    R"({"vocab_size": 10, "dim": 8, "num_layers": 2, "num_heads": 2, "head_dim": 4, "ff_dim": 16,
        "max_seq_len": 8, "proj_len": 4})";

// Every tensor a model of kConfig has, under its slot name (embeddings with ".weight").
LayoutCheckpoint linfer_checkpoint() {
  EncoderConfig c;
  REQUIRE(convert::parse_linfer_config(kConfig, &c) == "");
  OwnedDescription model = make_model(c);
  LayoutCheckpoint ck;
  for_each_weight(model.desc, [&](const std::string& slot, const WeightView& w) {
    if (!w.present()) return;
    std::vector<int64_t> shape(w.shape.begin(), w.shape.end());
    ck.add(slot == "token_embedding" || slot == "position_embedding" ? slot + ".weight" : slot, shape);
  });
  ck.ck.metadata["linfer_config"] = kConfig;
  return ck;
}

TEST_SUITE("linfer") {
  TEST_CASE("linfer layout: detected, every slot mapped, configuration from the checkpoint's metadata") {
    LayoutCheckpoint ck = linfer_checkpoint();
    check_detect_and_unused(ck, "linfer", "");
    MappedModel out;
    REQUIRE(ck.map("linfer", "", &out) == "");
    const EncoderConfig& c = out.desc.config;
    CHECK(c.dim == 8);
    CHECK(c.num_layers == 2);
    CHECK(linformer_fields(c).proj_len == 4);
    REQUIRE(out.desc.layers.size() == 2);
    CHECK(out.desc.token_embedding.shape == Shape{10, 8});
    CHECK(out.desc.layers[1].q.weight.shape == Shape{8, 8});
    CHECK(out.desc.layers[1].proj_k.shape == Shape{4, 8});
    CHECK(out.notes.empty());
    // --config wins over the metadata.
    MappedModel from_config;
    CHECK(ck.map("linfer", kConfig, &from_config) == "");
  }

  TEST_CASE("linfer layout: refusals") {
    LayoutCheckpoint ck = linfer_checkpoint();
    ck.ck.metadata.clear();
    MappedModel out;
    CHECK(ck.map("linfer", "", &out) == "the checkpoint carries no linfer_config; pass --config CONFIG.json");
    MappedModel counts;
    CHECK(ck.map("linfer", R"({"vocab_size": 10, "dim": 8, "num_layers": 4000000000, "num_heads": 2, "head_dim": 4,
                                       "ff_dim": 16, "max_seq_len": 8, "proj_len": 4})",
                 &counts) == "configuration: the configuration has 4000000000 layers (at most " +
                                 std::to_string(Limits::kMaxLayers) + ")");
    ck.remove("layers.1.attention.q.weight");
    MappedModel missing;
    const std::string err = ck.map("linfer", kConfig, &missing);
    CHECK_MESSAGE(err.find("layers.1.attention.q.weight") != std::string::npos, err);
  }
}

}  // namespace
}  // namespace linfer::testing
