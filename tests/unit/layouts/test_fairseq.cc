// SPDX-License-Identifier: Apache-2.0
// The fairseq linformer_roberta layout (tools/convert/layouts/fairseq.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/linformer.h"

namespace linfer::testing {
namespace {

// One layer, dim 8, 2 heads, ff 16, 8 positions compressed 2x (k = 4), the LM head.
LayoutCheckpoint fairseq_checkpoint() {
  LayoutCheckpoint ck;
  ck.set_args({{"encoder_layers", 1},
               {"encoder_embed_dim", 8},
               {"encoder_ffn_embed_dim", 16},
               {"encoder_attention_heads", 2},
               {"max_positions", 8},
               {"compressed", 2}});
  const std::string P = "encoder.sentence_encoder.";
  ck.add(P + "embed_tokens.weight", {10, 8});
  ck.add(P + "embed_positions.weight", {10, 8});  // max_positions + padding_idx + 1
  const std::string p = P + "layers.0.";
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) ck.linear(p + "self_attn." + name, 8, 8);
  ck.add(p + "self_attn.compress_k.weight", {4, 8});
  ck.add(p + "self_attn.compress_v.weight", {4, 8});
  ck.norm(p + "self_attn_layer_norm", 8);
  ck.linear(p + "fc1", 16, 8);
  ck.linear(p + "fc2", 8, 16);
  ck.norm(p + "final_layer_norm", 8);
  ck.linear("encoder.lm_head.dense", 8, 8);
  ck.norm("encoder.lm_head.layer_norm", 8);
  ck.add("encoder.lm_head.weight", {10, 8});
  ck.add("encoder.lm_head.bias", {10});
  return ck;
}

TEST_SUITE("fairseq") {
  TEST_CASE("fairseq layout: detected and mapped from the checkpoint's args") {
    LayoutCheckpoint ck = fairseq_checkpoint();
    check_detect_and_unused(ck, "fairseq", "");
    MappedModel out;
    REQUIRE(ck.map("fairseq", "", &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.num_layers == 1);
    CHECK(c.head_dim == 4);
    CHECK(linformer_fields(c).proj_len == 4);
    CHECK(c.vocab_size == 10);
    CHECK(c.position_offset == 2);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK(linformer_fields(c).projection_placement == ProjectionPlacement::Before);
    CHECK(c.head == HeadKind::LmLogits);
    CHECK(out.desc.position_embedding.shape == Shape{10, 8});
    CHECK(out.desc.layers[0].kind_tensors[LinformerTensors::kProjK].shape == Shape{4, 8});
    CHECK(out.desc.head.out.weight.shape == Shape{10, 8});
    REQUIRE(out.notes.size() == 1);
    CHECK(out.notes[0].find("k = 4") != std::string::npos);
  }

  TEST_CASE("fairseq layout: refusals") {
    LayoutCheckpoint ck = fairseq_checkpoint();
    MappedModel with_config, missing, no_args;
    CHECK(ck.map("fairseq", "{}", &with_config).message() ==
          "fairseq checkpoints carry their own hyperparameters (args or cfg); --config is not used");
    ck.remove("encoder.sentence_encoder.layers.0.self_attn.compress_v.weight");
    CHECK(ck.map("fairseq", "", &missing).message() ==
          "tensor 'encoder.sentence_encoder.layers.0.self_attn.compress_v.weight' is missing");
    ck.ck.root.reset();
    CHECK(ck.map("fairseq", "", &no_args).message() == "the fairseq checkpoint has neither 'args' nor 'cfg.model'");
  }
}

}  // namespace
}  // namespace linfer::testing
