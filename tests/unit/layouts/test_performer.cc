// SPDX-License-Identifier: Apache-2.0
// The performer-pytorch layout (tools/convert/layouts/performer.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/performer.h"

namespace linfer::testing {
namespace {

const char* kPerformerConfig = R"({"num_tokens": 10, "max_seq_len": 8, "dim": 8, "depth": 1, "heads": 2, "dim_head": 4,
                          "nb_features": 6, "rotary_position_emb": false})";

// A PerformerLM of kPerformerConfig with learned positions; the projection updater's second names too.
LayoutCheckpoint performer_checkpoint() {
  LayoutCheckpoint ck;
  ck.add("token_emb.weight", {10, 8});
  ck.add("pos_emb.weight", {8, 8});
  ck.norm("norm", 8);
  ck.linear("to_out", 10, 8);
  const std::string a = "performer.net.layers.0.0.", f = "performer.net.layers.0.1.";
  ck.norm(a + "norm", 8);
  for (const char* w : {"to_q", "to_k", "to_v", "to_out"}) ck.add(a + "fn." + w + ".weight", {8, 8});
  ck.add(a + "fn.fast_attention.projection_matrix", {6, 4});
  ck.norm(f + "norm", 8);
  ck.linear(f + "fn.fn.w1", 32, 8);
  ck.linear(f + "fn.fn.w2", 8, 32);
  ck.alias("performer.proj_updater.instance.layers.0.0.fn.fast_attention.projection_matrix",
           a + "fn.fast_attention.projection_matrix");
  ck.add("performer.proj_updater.calls_since_last_redraw", {});
  return ck;
}

TEST_SUITE("performer") {
  TEST_CASE("performer layout: detected (over lucidrains' token_emb) and mapped") {
    LayoutCheckpoint ck = performer_checkpoint();
    check_detect_and_unused(ck, "performer", kPerformerConfig);
    MappedModel out;
    REQUIRE(ck.map("performer", kPerformerConfig, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.attention_kind == AttentionKind::Performer);
    CHECK(performer_fields(c).num_features == 6);
    CHECK(performer_fields(c).feature_map == FeatureMap::Softmax);
    CHECK(c.final_norm);
    CHECK(c.rotary == Rotary::None);
    CHECK(out.desc.layers[0].kind_tensors[PerformerTensors::kFeatures].shape ==
          Shape{4, 6});                           // the projection matrix transposed
    CHECK(!out.desc.layers[0].q.bias.present());  // PerformerLM: no qkv bias
    CHECK(out.notes == std::vector<std::string>{"PerformerLM, softmax features (m = 6), learned positions"});
  }

  TEST_CASE("performer layout: refusals") {
    LayoutCheckpoint ck = performer_checkpoint();
    MappedModel rezero, reversible, missing;
    CHECK(ck.map("performer", R"({"use_rezero": true})", &rezero).message() ==
          "performer-pytorch use_rezero = true is not supported: refused");
    CHECK(ck.map("performer", R"({"reversible": true})", &reversible).message() ==
          "--config says reversible = true but the checkpoint's layers are sequential");
    ck.remove("performer.net.layers.0.1.fn.fn.w2.bias");
    CHECK(ck.map("performer", kPerformerConfig, &missing).message() ==
          "tensor 'performer.net.layers.0.1.fn.fn.w2.bias' is missing");
  }
}

}  // namespace
}  // namespace linfer::testing
