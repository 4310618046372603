// SPDX-License-Identifier: Apache-2.0
// Hugging Face transformers BERT-family encoders (docs/converter.md, "bert"): BertModel,
// BertForSequenceClassification, BertForMaskedLM; RobertaModel, RobertaForSequenceClassification,
// RobertaForMaskedLM and the same for XLMRobertaModel (model_type xlm-roberta, RoBERTa's modules);
// DistilBertModel and DistilBertForSequenceClassification. All run as full softmax attention,
// post-norm, with token type 0 folded into the position table (one sequence per input).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "hf_bert.h"
#include "layout.h"

namespace linfer::convert {
namespace {

enum class Family { Bert, Roberta, DistilBert };

class BertMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    type_ = lc.text("model_type", "");
    if (type_ == "bert")
      family_ = Family::Bert;
    else if (type_ == "roberta" || type_ == "xlm-roberta" || type_ == "camembert")
      family_ = Family::Roberta;
    else if (type_ == "distilbert")
      family_ = Family::DistilBert;
    else if (type_.empty())
      return err::invalid_model("--config: model_type is missing (bert, roberta, xlm-roberta, camembert, distilbert)");
    else
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "--config: model_type '{}' is not one of this layout's (bert, roberta, xlm-roberta, "
                          "camembert, distilbert)",
                          type_);
    // Variants linfer does not run are refused by the config key that asks for them.
    if (lc.text("position_embedding_type", "absolute") != "absolute")
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "--config: position_embedding_type '{}' is not supported (absolute)",
                          lc.text("position_embedding_type", ""));
    if (lc.flag("is_decoder", false))
      return err::unsupported("--config: is_decoder is not supported (linfer runs the encoder)");
    if (lc.flag("add_cross_attention", false))
      return err::unsupported("--config: add_cross_attention is not supported");
    if (lc.flag("sinusoidal_pos_embds", false) && family_ != Family::DistilBert)
      return err::unsupported("--config: sinusoidal_pos_embds is not supported");
    EncoderConfig& c = out->desc.config;
    set_attention_kind(c, AttentionKind::FullSoftmax);
    if (family_ == Family::DistilBert) return configure_distilbert(ck, lc, c);

    P_ = family_ == Family::Bert ? "bert." : "roberta.";
    if (!ck.tensors.count(P_ + "embeddings.word_embeddings.weight")) P_.clear();
    if (err::Status s = hf_bert_config(ck, lc, P_, type_, "gelu", c, &tables_); !s.ok()) return s;
    if (err::Status s = check_table_rows(lc, "type_vocab_size", tables_.types, "token_type_embeddings"); !s.ok())
      return s;
    if (err::Status s = check_table_rows(lc, "vocab_size", c.vocab_size, "word_embeddings"); !s.ok()) return s;
    if (family_ == Family::Roberta) {
      // Positions count from pad + 1 (create_position_ids_from_input_ids, inputs without padding).
      pad_ = lc.u32("pad_token_id", 1);
      if (!lc.ok()) return lc.status();
      if (tables_.positions < uint64_t(pad_) + 2)
        return err::invalid_model(
            "tensor '{}embeddings.position_embeddings.weight' has {} rows, too few for pad_token_id {}", P_,
            tables_.positions, pad_);
      c.max_seq_len = uint32_t(tables_.positions - pad_ - 1);
      c.position_offset = pad_ + 1;
      c.head_activation = Activation::GeluErf;  // RobertaLMHead applies gelu whatever hidden_act says
    } else {
      c.max_seq_len = uint32_t(tables_.positions);
      c.head_activation = c.activation;  // BertPredictionHeadTransform applies hidden_act
    }
    return check_table_rows(lc, "max_position_embeddings", tables_.positions, "position_embeddings");
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    EncoderConfig& c = d.config;
    const uint32_t D = c.dim, F = c.ff_dim;
    if (family_ == Family::DistilBert) return map_distilbert(ck, b, out);
    hf_bert_embeddings(b, P_, tables_, d);
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i)
      hf_bert_layer(b, P_ + "encoder.layer." + str(i) + ".", D, F, true, d.layers[i]);
    std::string head_note = "hidden states";
    const bool pooler = b.has(P_ + "pooler.dense.weight");
    if (family_ == Family::Bert && b.has("classifier.weight")) {
      // BertForSequenceClassification: the pooler (first token, dense, tanh), then the classifier.
      c.head = HeadKind::Classifier;
      c.pooling = Pooling::First;
      c.num_classes = rows_of(ck, "classifier.weight");
      d.head.dense = b.linear(P_ + "pooler.dense", D, D);
      d.head.out = b.linear("classifier", c.num_classes, D);
      head_note = "sequence classification (" + str(c.num_classes) + " classes, the pooler: first token, dense + tanh)";
    } else if (family_ == Family::Roberta && b.has("classifier.out_proj.weight")) {
      // RobertaClassificationHead: the first token, dense, tanh, out_proj.
      c.head = HeadKind::Classifier;
      c.pooling = Pooling::First;
      c.num_classes = rows_of(ck, "classifier.out_proj.weight");
      d.head.dense = b.linear("classifier.dense", D, D);
      d.head.out = b.linear("classifier.out_proj", c.num_classes, D);
      head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + tanh)";
    } else if (family_ == Family::Bert && b.has("cls.predictions.transform.dense.weight")) {
      c.head = HeadKind::LmLogits;
      d.head.dense = b.linear("cls.predictions.transform.dense", D, D);
      d.head.norm = b.norm("cls.predictions.transform.LayerNorm", D);
      if (err::Status s = hf_tied_decoder(b, "cls.predictions.", type_, d); !s.ok()) return s;
      head_note = "masked-LM logits";
    } else if (family_ == Family::Roberta && b.has("lm_head.dense.weight")) {
      c.head = HeadKind::LmLogits;
      d.head.dense = b.linear("lm_head.dense", D, D);
      d.head.norm = b.norm("lm_head.layer_norm", D);
      if (err::Status s = hf_tied_decoder(b, "lm_head.", type_, d); !s.ok()) return s;
      head_note = "masked-LM logits";
    }
    if (c.head != HeadKind::Classifier || family_ != Family::Bert) {
      for (const char* name : {"pooler.dense.weight", "pooler.dense.bias"}) b.ignore(P_ + name);
      if (pooler) head_note += " (the pooler is dropped)";
    }
    out->notes.push_back(
        type_ + ": post-norm, full attention, positions " +
        (family_ == Family::Roberta ? "offset " + str(pad_ + 1) + " (inputs without padding)" : std::string("from 0")) +
        ", token type 0 folded into the position table, " + head_note);
    return {};
  }

 private:
  // A config.json size that the checkpoint's table must match: the tensor is named when they differ.
  err::Status check_table_rows(LibraryConfig& lc, const char* key, uint64_t rows, const char* table) {
    if (!lc.present(key)) return {};
    const uint32_t want = lc.u32(key, 0);
    if (!lc.ok()) return lc.status();
    if (want != rows)
      return err::invalid_model("tensor '{}embeddings.{}.weight' has {} rows, config.json's {} says {}", P_, table,
                                rows, key, want);
    return {};
  }

  static uint32_t rows_of(const Checkpoint& ck, const std::string& name) {
    const auto s = tensor_shape(ck, name);
    return s.size() == 2 ? uint32_t(std::clamp<int64_t>(s[0], 0, UINT32_MAX)) : 0;
  }

  // DistilBERT: its own config names (dim, n_layers, n_heads, hidden_dim, activation), no token
  // types, transformer.layer.N.{attention.{q,k,v,out}_lin, sa_layer_norm, ffn.lin1, ffn.lin2,
  // output_layer_norm}.
  err::Status configure_distilbert(const Checkpoint& ck, LibraryConfig& lc, EncoderConfig& c) {
    P_ = ck.tensors.count("distilbert.embeddings.word_embeddings.weight") ? "distilbert." : "";
    const auto words = tensor_shape(ck, P_ + "embeddings.word_embeddings.weight");
    const auto positions = tensor_shape(ck, P_ + "embeddings.position_embeddings.weight");
    if (words.size() != 2) return err::invalid_model("tensor '{}embeddings.word_embeddings.weight' is missing", P_);
    if (positions.size() != 2)
      return err::invalid_model("tensor '{}embeddings.position_embeddings.weight' is missing", P_);
    tables_.positions = uint64_t(std::clamp<int64_t>(positions[0], 0, UINT32_MAX));
    c.vocab_size = uint32_t(std::clamp<int64_t>(words[0], 0, UINT32_MAX));
    c.dim = lc.u32("dim", 768);
    c.num_layers = lc.u32("n_layers", 6);
    c.num_heads = lc.u32("n_heads", 12);
    c.ff_dim = lc.u32("hidden_dim", 3072);
    c.positions = PositionKind::Learned;
    c.embedding_norm = true;
    c.norm_placement = NormPlacement::Post;
    c.norm_eps = 1e-12f;  // DistilBERT's LayerNorms are built with eps=1e-12
    const std::string act = lc.text("activation", "gelu");
    if (act == "gelu")
      c.activation = Activation::GeluErf;
    else if (act == "relu")
      c.activation = Activation::Relu;
    else
      return err::failure(LINFER_ERROR_UNSUPPORTED, "--config: activation '{}' is not supported (gelu, relu)", act);
    if (!lc.ok()) return lc.status();
    if (c.num_heads == 0 || c.dim % c.num_heads)
      return err::invalid_model("--config: dim must be a multiple of n_heads");
    c.head_dim = c.dim / c.num_heads;
    c.kv_heads = c.num_heads;
    c.max_seq_len = uint32_t(tables_.positions);
    if (err::Status s = check_counts(c); !s.ok()) return s;
    if (err::Status s = check_table_rows(lc, "vocab_size", c.vocab_size, "word_embeddings"); !s.ok()) return s;
    return check_table_rows(lc, "max_position_embeddings", tables_.positions, "position_embeddings");
  }

  err::Status map_distilbert(const Checkpoint& ck, Builder& b, MappedModel* out) {
    EncoderDescription& d = out->desc;
    EncoderConfig& c = d.config;
    const uint32_t D = c.dim, F = c.ff_dim;
    d.token_embedding = b.load(P_ + "embeddings.word_embeddings.weight", {c.vocab_size, D});
    d.position_embedding = b.load(P_ + "embeddings.position_embeddings.weight", {uint32_t(tables_.positions), D});
    d.embedding_norm = b.norm(P_ + "embeddings.LayerNorm", D);
    b.ignore(P_ + "embeddings.position_ids");
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      const std::string p = P_ + "transformer.layer." + str(i) + ".";
      l.q = b.linear(p + "attention.q_lin", D, D);
      l.k = b.linear(p + "attention.k_lin", D, D);
      l.v = b.linear(p + "attention.v_lin", D, D);
      l.out = b.linear(p + "attention.out_lin", D, D);
      l.attention_norm = b.norm(p + "sa_layer_norm", D);
      l.fc1 = b.linear(p + "ffn.lin1", F, D);
      l.fc2 = b.linear(p + "ffn.lin2", D, F);
      l.feed_forward_norm = b.norm(p + "output_layer_norm", D);
    }
    std::string head_note = "hidden states";
    if (b.has("pre_classifier.weight")) {
      // DistilBertForSequenceClassification: the first token, pre_classifier, ReLU, classifier.
      c.head = HeadKind::Classifier;
      c.pooling = Pooling::First;
      c.classifier_activation = Activation::Relu;
      c.num_classes = rows_of(ck, "classifier.weight");
      d.head.dense = b.linear("pre_classifier", D, D);
      d.head.out = b.linear("classifier", c.num_classes, D);
      head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + relu)";
    }
    out->notes.push_back("distilbert: post-norm, full attention, positions from 0, no token types, " + head_note);
    return {};
  }

  Family family_ = Family::Bert;
  std::string type_, P_;  // P_: "bert.", "roberta.", "distilbert." or "" (the bare model)
  HfTables tables_;
  uint32_t pad_ = 1;  // pad_token_id (RoBERTa)
};

// Keys only this layout has: DistilBERT's module names, RoBERTa's prefix, BERT's pooler and
// heads. (A bare BertModel's keys are BigBird's too: config.json's model_type decides, layout.cc.)
bool bert_owns_key(const std::string& name) {
  return name.find(".attention.q_lin.weight") != std::string::npos || starts_with(name, "roberta.encoder.") ||
         name.find("pooler.dense.weight") != std::string::npos || starts_with(name, "cls.predictions.");
}

}  // namespace

extern const Layout kBertLayout = {
    "bert",
    bert_owns_key,
    false,
    ConfigUse::Library,
    "Hugging Face checkpoints do not record heads or layer_norm_eps: pass --config config.json "
    "(the model's Hugging Face configuration)",
    {},
    make_mapper<BertMapper>};

}  // namespace linfer::convert
