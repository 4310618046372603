// SPDX-License-Identifier: Apache-2.0
// The lucidrains/linformer layout (tools/convert/layouts/lucidrains.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::testing {
namespace {

const char* kLucidrainsConfig = R"({"num_tokens": 10, "dim": 8, "seq_len": 8, "depth": 2, "k": 4, "heads": 2})";

// A LinformerLM of kLucidrainsConfig: dim 8, 2 heads of 4, n 8, k 4, ff 32.
LayoutCheckpoint lucidrains_checkpoint() {
  LayoutCheckpoint ck;
  ck.add("token_emb.weight", {10, 8});
  ck.add("pos_emb.weight", {8, 8});
  ck.linear("to_logits", 10, 8);
  for (int i = 0; i < 2; ++i) {
    const std::string a = "linformer.net.layers." + std::to_string(i) + ".0.";
    const std::string f = "linformer.net.layers." + std::to_string(i) + ".1.";
    for (const char* w : {"fn.to_q.weight", "fn.to_k.weight", "fn.to_v.weight", "fn.to_out.weight"})
      ck.add(a + w, {8, 8});
    ck.add(a + "fn.to_out.bias", {8});
    ck.add(a + "fn.proj_k", {8, 4});  // [n, k]
    ck.add(a + "fn.proj_v", {8, 4});
    ck.norm(a + "norm", 8);
    ck.linear(f + "fn.w1", 32, 8);
    ck.linear(f + "fn.w2", 8, 32);
    ck.norm(f + "norm", 8);
  }
  return ck;
}

TEST_SUITE("lucidrains") {
  TEST_CASE("lucidrains layout: LinformerLM detected and mapped") {
    LayoutCheckpoint ck = lucidrains_checkpoint();
    check_detect_and_unused(ck, "lucidrains", kLucidrainsConfig);
    MappedModel out;
    REQUIRE(ck.map("lucidrains", kLucidrainsConfig, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.head_dim == 4);
    CHECK(c.kv_heads == 2);
    CHECK(c.ff_dim == 32);
    CHECK(c.vocab_size == 10);
    CHECK(c.norm_placement == NormPlacement::Pre);
    CHECK(c.positions == PositionKind::Learned);
    CHECK(linformer_fields(c).projection_placement == ProjectionPlacement::After);
    CHECK(linformer_fields(c).projection_sharing == ProjectionSharing::Headwise);
    CHECK(c.head == HeadKind::LmLogits);
    CHECK(out.desc.layers[1].kind_tensors[LinformerTensors::kProjK].shape ==
          Shape{4, 8});  // stored [n, k], E is [k, n]
    CHECK(out.desc.layers[0].fc1.weight.shape == Shape{32, 8});
    CHECK(out.notes == std::vector<std::string>{"LinformerLM"});
  }

  TEST_CASE("lucidrains layout: refusals") {
    LayoutCheckpoint ck = lucidrains_checkpoint();
    MappedModel no_config, unknown, missing;
    CHECK(ck.map("lucidrains", "", &no_config)
              .message()
              .rfind("lucidrains checkpoints do not record the number of heads", 0) == 0);
    CHECK(ck.map("lucidrains", R"({"dim": 8, "bogus": 1})", &unknown).message() == "--config: unknown key 'bogus'");
    ck.remove("linformer.net.layers.1.0.fn.proj_v");
    CHECK(ck.map("lucidrains", kLucidrainsConfig, &missing).message() ==
          "tensor 'linformer.net.layers.1.0.fn.proj_v' is missing");
    // Each failure's kind: the command line, the checkpoint or its configuration, a variant linfer
    // does not run.
    CHECK(ck.map("lucidrains", "", &no_config).code() == LINFER_ERROR_INVALID_ARGUMENT);
    CHECK(ck.map("lucidrains", R"({"dim": 8, "bogus": 1})", &unknown).code() == LINFER_ERROR_INVALID_MODEL);
    CHECK(ck.map("lucidrains", kLucidrainsConfig, &missing).code() == LINFER_ERROR_INVALID_MODEL);
    CHECK(ck.map("nonesuch", kLucidrainsConfig, &missing).code() == LINFER_ERROR_INVALID_ARGUMENT);
    ck.add("linformer.net.layers.1.0.fn.proj_v", {8, 4});
    ck.add("stray.weight", {2});
    CHECK(ck.map("lucidrains", kLucidrainsConfig, &missing).code() == LINFER_ERROR_UNSUPPORTED);
  }
}

}  // namespace
}  // namespace linfer::testing
