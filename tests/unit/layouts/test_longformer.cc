// SPDX-License-Identifier: Apache-2.0
// The Hugging Face Longformer layout (tools/convert/layouts/longformer.cc, hf_bert.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/sliding_window.h"

namespace linfer::testing {
namespace {

const char* kLongformerConfig = R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                          "intermediate_size": 16, "attention_window": 4, "global_positions": 1})";

// A LongformerForMaskedLM: 12 position rows (pad_token_id 1: 10 positions), one layer with global
// projections, the LM decoder tied to the word embeddings under both of its names.
LayoutCheckpoint longformer_checkpoint() {
  LayoutCheckpoint ck;
  add_bert_encoder(ck, "longformer.", 12, 1, /*global=*/true);
  ck.linear("lm_head.dense", 8, 8);
  ck.norm("lm_head.layer_norm", 8);
  ck.add("lm_head.bias", {10});
  ck.alias("lm_head.decoder.weight", "longformer.embeddings.word_embeddings.weight");
  ck.alias("lm_head.decoder.bias", "lm_head.bias");
  return ck;
}

TEST_SUITE("longformer") {
  TEST_CASE("longformer layout: detected and mapped, the decoder tied") {
    LayoutCheckpoint ck = longformer_checkpoint();
    check_detect_and_unused(ck, "longformer", kLongformerConfig);
    MappedModel out;
    REQUIRE(ck.map("longformer", kLongformerConfig, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.attention_kind == AttentionKind::SlidingWindow);
    CHECK(c.max_seq_len == 10);
    CHECK(c.position_offset == 2);
    CHECK(sliding_window_fields(c).window_radius == 2);
    CHECK(sliding_window_fields(c).global_positions == 1);
    CHECK(c.head == HeadKind::LmLogits);
    CHECK(out.desc.layers[0].kind_tensors[SlidingWindowTensors::kQGlobalWeight].shape == Shape{8, 8});
    CHECK(out.desc.head.out.weight.data == out.desc.token_embedding.data);
    REQUIRE(out.notes.size() == 1);
    CHECK(out.notes[0].find("window radius 2 (attention_window 4)") != std::string::npos);
  }

  TEST_CASE("longformer layout: refusals") {
    LayoutCheckpoint ck = longformer_checkpoint();
    MappedModel odd, relative, missing;
    CHECK(ck.map("longformer", R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                   "attention_window": 3})",
                 &odd)
              .message() == "--config: attention_window 3 must be even and positive");
    CHECK(ck.map("longformer", R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                   "attention_window": -4})",
                 &odd)
              .message() == "--config: attention_window -4 must be even and positive");
    CHECK(ck.map("longformer", R"({"position_embedding_type": "relative_key"})", &relative).message() ==
          "Longformer position_embedding_type 'relative_key' is not supported (absolute)");
    ck.remove("longformer.encoder.layer.0.attention.self.key_global.bias");
    CHECK(ck.map("longformer", kLongformerConfig, &missing).message() ==
          "tensor 'longformer.encoder.layer.0.attention.self.key_global.bias' is missing");
  }
}

}  // namespace
}  // namespace linfer::testing
