// SPDX-License-Identifier: Apache-2.0
// The Hugging Face BERT-family layout (tools/convert/layouts/bert.cc, hf_bert.cc): BERT, RoBERTa,
// XLM-RoBERTa, DistilBERT, detected by config.json's model_type.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "layout_checkpoint.h"
#include "sentence_transformers.h"

namespace linfer::testing {
namespace {

const char* kBert = R"({"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                        "intermediate_size": 16, "type_vocab_size": 2, "max_position_embeddings": 8})";
const char* kRoberta = R"({"model_type": "roberta", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                           "intermediate_size": 16, "pad_token_id": 1, "type_vocab_size": 1})";

// BertForSequenceClassification: 3 classes over 8 positions, its pooler and classifier.
LayoutCheckpoint bert_classifier() {
  LayoutCheckpoint ck;
  add_bert_encoder(ck, "bert.", 8, 2, /*global=*/false);
  ck.linear("bert.pooler.dense", 8, 8);
  ck.linear("classifier", 3, 8);
  return ck;
}

// DistilBertModel: one layer, 8 positions.
LayoutCheckpoint distilbert() {
  LayoutCheckpoint ck;
  ck.add("embeddings.word_embeddings.weight", {10, 8});
  ck.add("embeddings.position_embeddings.weight", {8, 8});
  ck.norm("embeddings.LayerNorm", 8);
  const std::string p = "transformer.layer.0.";
  for (const char* name : {"q_lin", "k_lin", "v_lin", "out_lin"}) ck.linear(p + "attention." + name, 8, 8);
  ck.norm(p + "sa_layer_norm", 8);
  ck.linear(p + "ffn.lin1", 16, 8);
  ck.linear(p + "ffn.lin2", 8, 16);
  ck.norm(p + "output_layer_norm", 8);
  return ck;
}

TEST_SUITE("bert") {
  TEST_CASE("bert layout: BertForSequenceClassification, detected by model_type") {
    LayoutCheckpoint ck = bert_classifier();
    CHECK(required(convert::detect_layout(ck.ck, kBert)) == "bert");
    CHECK(required(convert::detect_layout(ck.ck)) == "bigbird");  // the same key names: model_type decides
    MappedModel out;
    REQUIRE(ck.map("bert", kBert, &out).ok());
    const EncoderConfig& c = out.desc.config;
    CHECK(c.attention_kind == AttentionKind::FullSoftmax);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK(c.max_seq_len == 8);
    CHECK(c.position_offset == 0);
    CHECK(c.head == HeadKind::Classifier);
    CHECK(c.pooling == Pooling::First);
    CHECK(c.classifier_activation == Activation::Tanh);
    CHECK(c.num_classes == 3);
    CHECK(out.desc.head.dense.weight.present());
    ck.add("stray.weight", {2});
    MappedModel stray;
    CHECK(ck.map("bert", kBert, &stray).message() ==
          "checkpoint tensor 'stray.weight' has no place in the bert layout with this configuration");
  }

  TEST_CASE("bert layout: RobertaModel and XLM-RoBERTa, positions after the padding id") {
    for (const std::string type : {"roberta", "xlm-roberta"}) {
      LayoutCheckpoint ck;
      add_bert_encoder(ck, "", 10, 1, /*global=*/false);
      ck.linear("pooler.dense", 8, 8);
      std::string config = kRoberta;
      config.replace(config.find("roberta"), 7, type);
      CHECK(required(convert::detect_layout(ck.ck, config)) == "bert");
      MappedModel out;
      REQUIRE(ck.map("bert", config, &out).ok());
      CHECK(out.desc.config.max_seq_len == 8);
      CHECK(out.desc.config.position_offset == 2);
      CHECK(out.desc.config.head == HeadKind::None);
      REQUIRE(out.notes.size() == 1);
      CHECK(out.notes[0].find("(the pooler is dropped)") != std::string::npos);
    }
  }

  TEST_CASE("bert layout: DistilBertModel") {
    LayoutCheckpoint ck = distilbert();
    const char* config = R"({"model_type": "distilbert", "dim": 8, "n_layers": 1, "n_heads": 2, "hidden_dim": 16})";
    CHECK(required(convert::detect_layout(ck.ck)) == "bert");  // its module names are its own
    MappedModel out;
    REQUIRE(ck.map("bert", config, &out).ok());
    CHECK(out.desc.config.max_seq_len == 8);
    CHECK(out.desc.config.norm_eps == doctest::Approx(1e-12));
    CHECK(out.desc.layers[0].q.weight.present());
  }

  TEST_CASE("bert layout: refusals name the config key or the tensor") {
    LayoutCheckpoint ck = bert_classifier();
    MappedModel a, b, c, d, e, f;
    std::string relative = kBert;
    relative.insert(1, R"("position_embedding_type": "relative_key", )");
    CHECK(ck.map("bert", relative, &a).message() ==
          "--config: position_embedding_type 'relative_key' is not supported (absolute)");
    std::string decoder = kBert;
    decoder.insert(1, R"("is_decoder": true, )");
    CHECK(ck.map("bert", decoder, &b).message() == "--config: is_decoder is not supported (linfer runs the encoder)");
    std::string wide = kBert;
    wide.replace(wide.find("\"intermediate_size\": 16"), 23, "\"intermediate_size\": 32");
    CHECK(ck.map("bert", wide, &c).message() ==
          "tensor 'bert.encoder.layer.0.intermediate.dense.weight' has shape [16,8], expected [32,8]");
    std::string types = kBert;
    types.replace(types.find("\"type_vocab_size\": 2"), 20, "\"type_vocab_size\": 3");
    CHECK(ck.map("bert", types, &d).message() ==
          "tensor 'bert.embeddings.token_type_embeddings.weight' has 2 rows, config.json's type_vocab_size says 3");
    CHECK(ck.map("bert", R"({"model_type": "gpt2"})", &e)
              .message()
              .rfind("--config: model_type 'gpt2' is not one of this layout's", 0) == 0);
    ck.remove("bert.encoder.layer.0.output.dense.bias");
    CHECK(ck.map("bert", kBert, &f).message() == "tensor 'bert.encoder.layer.0.output.dense.bias' is missing");
  }

  TEST_CASE("bert layout: sentence-transformers pooling from modules.json") {
    char dir_template[] = "/tmp/linfer-st-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir + "/" + name) << text; };
    REQUIRE(mkdir((dir + "/1_Pooling").c_str(), 0700) == 0);
    CHECK(!required(convert::read_sentence_transformers(dir)).present);  // no modules.json: nothing to do
    write("modules.json", R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
                              {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                              {"idx": 2, "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
    write("1_Pooling/config.json", R"({"pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true})");
    write("sentence_bert_config.json", R"({"max_seq_length": 4})");
    const convert::SentencePooling mean = required(convert::read_sentence_transformers(dir));
    CHECK(mean.present);
    CHECK(mean.pooling == Pooling::Mean);
    CHECK(mean.normalize);
    CHECK(mean.max_seq_length == 4);
    LayoutCheckpoint ck;
    add_bert_encoder(ck, "", 8, 2, /*global=*/false);
    MappedModel out;
    REQUIRE(ck.map("bert", kBert, &out).ok());
    REQUIRE(convert::apply_pooling(mean, &out.desc).ok());
    CHECK(out.desc.config.head == HeadKind::Pooled);
    CHECK(out.desc.config.normalize_output);
    CHECK(out.desc.config.max_seq_len == 4);
    CHECK(validate_description(out.desc).ok());
    MappedModel classifier;
    LayoutCheckpoint cls = bert_classifier();
    REQUIRE(cls.map("bert", kBert, &classifier).message() == "");
    CHECK(convert::apply_pooling(mean, &classifier.desc).message() ==
          "pooling applies to a model whose output is its hidden states; this one has a classifier head");

    write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": true})");
    CHECK(
        convert::read_sentence_transformers(dir).status().message() ==
        dir +
            "/1_Pooling/config.json: pooling_mode_max_tokens is not supported (pooling_mode_cls_token, pooling_mode_mean_tokens)");
    write("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
                              {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
    CHECK(
        convert::read_sentence_transformers(dir).status().message() ==
        dir +
            "/modules.json: module type 'sentence_transformers.models.Dense' is not supported (Transformer, Pooling, Normalize)");
    for (const char* name : {"modules.json", "1_Pooling/config.json", "sentence_bert_config.json"})
      CHECK(std::remove((dir + "/" + name).c_str()) == 0);
    CHECK(rmdir((dir + "/1_Pooling").c_str()) == 0);
    CHECK(rmdir(dir.c_str()) == 0);
  }
}

}  // namespace
}  // namespace linfer::testing
