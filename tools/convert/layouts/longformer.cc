// SPDX-License-Identifier: Apache-2.0
// Hugging Face transformers Longformer: LongformerModel, LongformerForMaskedLM,
// LongformerForSequenceClassification (docs/converter.md, "longformer")
#include <algorithm>

#include <nlohmann/json.hpp>

#include "hf_bert.h"
#include "linfer/format/kinds/sliding_window.h"
#include "layout.h"

namespace linfer::convert {
namespace {

class LongformerMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    if (lc.text("position_embedding_type", "absolute") != "absolute")
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "Longformer position_embedding_type '{}' is not supported (absolute)",
                          lc.text("position_embedding_type", ""));
    P_ = ck.tensors.count("longformer.embeddings.word_embeddings.weight") ? "longformer." : "";
    EncoderConfig& c = out->desc.config;
    set_attention_kind(c, AttentionKind::SlidingWindow);
    if (err::Status s = hf_bert_config(ck, lc, P_, "Longformer", "gelu", c, &tables_); !s.ok()) return s;
    pad_ = lc.u32("pad_token_id", 1);
    // Positions count from pad + 1 (create_position_ids_from_input_ids, inputs without padding).
    const uint64_t rows = tables_.positions;
    if (rows < uint64_t(pad_) + 2)
      return err::invalid_model("Longformer position table has {} rows, too few for pad_token_id {}", rows, pad_);
    c.max_seq_len = uint32_t(rows - pad_ - 1);
    c.position_offset = pad_ + 1;
    c.head_activation = Activation::GeluErf;  // LongformerLMHead applies gelu whatever hidden_act says

    // attention_window: one even width for every layer (an int, or a list with one value per layer).
    std::vector<int64_t> windows;
    if (!lc.present("attention_window"))
      windows.assign(1, 512);
    else if (lc.values().at("attention_window").is_number_integer())
      windows.assign(1, lc.values().at("attention_window").get<int64_t>());
    else if (lc.values().at("attention_window").is_array()) {
      for (const auto& w : lc.values().at("attention_window")) {
        if (!w.is_number_integer()) return err::invalid_model("--config: attention_window must hold integers");
        windows.push_back(w.get<int64_t>());
      }
      if (windows.size() != c.num_layers)
        return err::invalid_model("--config: attention_window has {} entries for {} layers", windows.size(),
                                  c.num_layers);
    } else {
      return err::invalid_model("--config: attention_window must be an integer or a list of integers");
    }
    for (int64_t w : windows) {
      if (w != windows[0])
        return err::failure(LINFER_ERROR_UNSUPPORTED,
                            "--config: attention_window differs between layers ({} and {}); linfer models have one "
                            "window for every layer",
                            windows[0], w);
      if (w <= 0 || w % 2 || w > 2 * int64_t(Limits::kMaxSeqLen))
        return err::invalid_model("--config: attention_window {} must be even and positive", w);
    }
    sliding_window_fields(c).window_radius =
        uint32_t(std::min<int64_t>(windows.empty() ? 0 : windows[0] / 2, c.max_seq_len));

    classifier_ = ck.tensors.count("classifier.out_proj.weight") > 0;
    lm_ = !classifier_ && (ck.tensors.count("lm_head.dense.weight") > 0);
    // Global rows: the first global_positions (a linfer key: HF takes a global_attention_mask per
    // call); LongformerForSequenceClassification's default is the first token.
    sliding_window_fields(c).global_positions = lc.u32("global_positions", classifier_ ? 1 : 0);
    if (!lc.ok()) return lc.status();
    if (sliding_window_fields(c).global_positions > c.max_seq_len)
      return err::invalid_model("--config: global_positions {} is more than the {} positions",
                                sliding_window_fields(c).global_positions, c.max_seq_len);
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    EncoderConfig& c = d.config;
    const uint32_t D = c.dim, F = c.ff_dim;
    hf_bert_embeddings(b, P_, tables_, d);
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i) {
      LayerWeights& l = d.layers[i];
      const std::string p = P_ + "encoder.layer." + str(i) + ".";
      hf_bert_layer(b, p, D, F, true, l);
      if (sliding_window_fields(c).global_positions) {
        using T = SlidingWindowTensors;
        const std::pair<uint8_t, const char*> globals[] = {{T::kQGlobalWeight, "query_global"},
                                                           {T::kKGlobalWeight, "key_global"},
                                                           {T::kVGlobalWeight, "value_global"}};
        for (const auto& [at, name] : globals) {  // (a weight, and its bias the next tensor)
          const LinearWeights lw = b.linear(p + "attention.self." + name, D, D);
          l.kind_tensors[at] = lw.weight;
          l.kind_tensors[at + 1] = lw.bias;
        }
      } else {  // no global rows: the global projections are never used
        for (const char* name : {"query_global", "key_global", "value_global"})
          for (const char* part : {".weight", ".bias"}) b.ignore(p + "attention.self." + name + part);
      }
    }
    std::string head_note = "hidden states";
    if (classifier_) {
      c.head = HeadKind::Classifier;
      c.pooling = Pooling::First;
      auto w = tensor_shape(ck, "classifier.out_proj.weight");
      c.num_classes = w.size() == 2 ? uint32_t(std::clamp<int64_t>(w[0], 0, UINT32_MAX)) : 0;
      d.head.dense = b.linear("classifier.dense", D, D);
      d.head.out = b.linear("classifier.out_proj", c.num_classes, D);
      head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + tanh)";
    } else if (lm_) {
      c.head = HeadKind::LmLogits;
      d.head.dense = b.linear("lm_head.dense", D, D);
      d.head.norm = b.norm("lm_head.layer_norm", D);
      if (err::Status s = hf_tied_decoder(b, "lm_head.", "Longformer", d); !s.ok()) return s;
      head_note = "masked-LM logits";
    } else {
      for (const char* name : {"pooler.dense.weight", "pooler.dense.bias"}) b.ignore(P_ + name);
      if (b.has(P_ + "pooler.dense.weight")) head_note += " (the pooler is dropped)";
    }
    out->notes.push_back(
        "Longformer: post-norm, positions offset " + str(pad_ + 1) + " (inputs without padding), " +
        "token type 0 folded into the position table, window radius " + str(sliding_window_fields(c).window_radius) +
        " (attention_window " + str(2 * sliding_window_fields(c).window_radius) + "), global positions " +
        str(sliding_window_fields(c).global_positions) +
        (sliding_window_fields(c).global_positions ? " with query/key/value_global" : "") + ", " + head_note);
    return {};
  }

 private:
  std::string P_;  // "longformer." or "" (LongformerModel)
  HfTables tables_;
  uint32_t pad_ = 1;  // pad_token_id
  bool classifier_ = false, lm_ = false;
};

bool longformer_owns_key(const std::string& name) {
  return name.find("attention.self.query_global.weight") != std::string::npos;
}

}  // namespace

extern const Layout kLongformerLayout = {
    "longformer",
    longformer_owns_key,
    true,
    ConfigUse::Library,
    "Longformer checkpoints do not record heads, attention_window or layer_norm_eps: pass "
    "--config config.json (the model's Hugging Face configuration)",
    {},
    make_mapper<LongformerMapper>};

}  // namespace linfer::convert
