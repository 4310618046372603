// SPDX-License-Identifier: Apache-2.0
// The Hugging Face BigBird layout (tools/convert/layouts/bigbird.cc, hf_bert.cc).
#include "layout_checkpoint.h"
#include "linfer/format/kinds/block_sparse.h"

namespace linfer::testing {
namespace {

const char* kBigbirdConfig = R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                          "intermediate_size": 16, "block_size": 1, "num_random_blocks": 1})";

// A BigBirdForSequenceClassification of 3 classes over 8 positions (blocks of 1: 8 blocks, more
// than the 5 + 2 R up to which Hugging Face runs full attention, so block sparse), with its pooler.
LayoutCheckpoint bigbird_checkpoint() {
  LayoutCheckpoint ck;
  add_bert_encoder(ck, "bert.", 8, 2, /*global=*/false);
  ck.add("bert.pooler.weight", {8, 8});
  ck.add("bert.pooler.bias", {8});
  ck.linear("classifier.dense", 8, 8);
  ck.linear("classifier.out_proj", 3, 8);
  return ck;
}

TEST_SUITE("bigbird") {
  TEST_CASE("bigbird layout: detected and mapped, block sparse with a classifier") {
    LayoutCheckpoint ck = bigbird_checkpoint();
    check_detect_and_unused(ck, "bigbird", kBigbirdConfig);
    MappedModel out;
    REQUIRE(ck.map("bigbird", kBigbirdConfig, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.attention_kind == AttentionKind::BlockSparse);
    CHECK(block_sparse_fields(c).block_size == 1);
    CHECK(block_sparse_fields(c).num_random_blocks == 1);
    CHECK(c.max_seq_len == 8);
    CHECK(c.position_offset == 0);
    CHECK(c.activation == Activation::GeluTanh);  // hidden_act's default, gelu_new
    CHECK(c.head == HeadKind::Classifier);
    CHECK(c.num_classes == 3);
    CHECK(out.desc.layers[0].kind_tensors[BlockSparseTensors::kRandomBlocks].shape == Shape{2, 8, 1});
    REQUIRE(out.notes.size() == 1);
    CHECK(out.notes[0].find("(the pooler is dropped)") != std::string::npos);
  }

  TEST_CASE("bigbird layout: refusals") {
    LayoutCheckpoint ck = bigbird_checkpoint();
    MappedModel bert, no_config, missing;
    CHECK(ck.map("bigbird", R"({"model_type": "bert"})", &bert).message() ==
          "--config: model_type 'bert' is not BigBird's (big_bird)");
    CHECK(ck.map("bigbird", "", &no_config).message().rfind("BigBird checkpoints do not record heads", 0) == 0);
    ck.remove("bert.encoder.layer.0.output.dense.bias");
    CHECK(ck.map("bigbird", kBigbirdConfig, &missing).message() ==
          "tensor 'bert.encoder.layer.0.output.dense.bias' is missing");
  }
}

}  // namespace
}  // namespace linfer::testing
