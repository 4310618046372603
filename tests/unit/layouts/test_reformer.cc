// SPDX-License-Identifier: Apache-2.0
// The reformer-pytorch layout (tools/convert/layouts/reformer.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/lsh.h"

namespace linfer::testing {
namespace {

const char* kReformerConfig = R"({"num_tokens": 10, "dim": 8, "depth": 1, "max_seq_len": 8, "heads": 2, "dim_head": 4,
                          "bucket_size": 2, "n_hashes": 1, "absolute_position_emb": true})";

// A ReformerLM of kReformerConfig with absolute positions.
LayoutCheckpoint reformer_checkpoint() {
  LayoutCheckpoint ck;
  ck.add("token_emb.weight", {10, 8});
  ck.add("pos_emb.emb.weight", {8, 8});
  ck.norm("norm", 8);
  ck.linear("out.1", 10, 8);
  const std::string a = "reformer.layers.blocks.0.f.net.", f = "reformer.layers.blocks.0.g.net.";
  ck.norm(a + "norm", 8);
  for (const char* w : {"toqk", "tov", "to_out"}) ck.add(a + "fn." + w + ".weight", {8, 8});
  ck.add(a + "fn.to_out.bias", {8});
  ck.norm(f + "norm", 8);
  ck.linear(f + "fn.fn.w1", 32, 8);
  ck.linear(f + "fn.fn.w2", 8, 32);
  return ck;
}

TEST_SUITE("reformer") {
  TEST_CASE("reformer layout: detected (over lucidrains' token_emb) and mapped, rotations drawn") {
    LayoutCheckpoint ck = reformer_checkpoint();
    check_detect_and_unused(ck, "reformer", kReformerConfig);
    MappedModel out;
    REQUIRE(ck.map("reformer", kReformerConfig, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.attention_kind == AttentionKind::Lsh);
    CHECK(lsh_fields(c).bucket_size == 2);
    CHECK(lsh_fields(c).num_hashes == 1);
    CHECK(c.norm_placement == NormPlacement::Reversible);
    CHECK(c.reversible_merge == ReversibleMerge::Mean);
    CHECK(c.positions == PositionKind::Learned);
    const WeightView& rotations = out.desc.layers[0].kind_tensors[LshTensors::kRotations];
    REQUIRE(rotations.shape.size() == 3);
    CHECK(rotations.shape[0] == 1);
    CHECK(rotations.shape[1] == 4);
    REQUIRE(out.notes.size() == 2);
    CHECK(out.notes[0] == "ReformerLM, bucket_size 2, 1 hashes, absolute positions");
  }

  TEST_CASE("reformer layout: refusals") {
    LayoutCheckpoint ck = reformer_checkpoint();
    MappedModel no_config, full, missing;
    CHECK(ck.map("reformer", "", &no_config)
              .message()
              .rfind("reformer-pytorch checkpoints do not record bucket_size", 0) == 0);
    CHECK(ck.map("reformer", R"({"use_full_attn": true})", &full).message() ==
          "reformer-pytorch use_full_attn = true is not supported: refused");
    ck.remove("reformer.layers.blocks.0.f.net.fn.toqk.weight");
    CHECK(ck.map("reformer", kReformerConfig, &missing).message() ==
          "tensor 'reformer.layers.blocks.0.f.net.fn.toqk.weight' is missing");
  }
}

}  // namespace
}  // namespace linfer::testing
