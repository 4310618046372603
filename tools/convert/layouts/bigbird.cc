// SPDX-License-Identifier: Apache-2.0
// Hugging Face transformers BigBird: BigBirdModel, BigBirdForMaskedLM, BigBirdForSequenceClassification
// (docs/converter.md, "bigbird")
#include <algorithm>
#include <cmath>

#include "hf_bert.h"
#include "linfer/format/kinds/block_sparse.h"
#include "layout.h"

namespace linfer::convert {
namespace {

class BigBirdMapper : public LayoutMapper {
 public:
  err::Status configure(const Checkpoint& ck, LibraryConfig& lc, MappedModel* out) override {
    if (const std::string type = lc.text("model_type", "big_bird"); type != "big_bird")
      return err::invalid_model("--config: model_type '{}' is not BigBird's (big_bird)", type);
    if (lc.flag("is_decoder", false) || lc.flag("add_cross_attention", false))
      return err::unsupported(
          "--config: is_decoder / add_cross_attention (BigBirdForCausalLM, a decoder) are not supported: "
          "linfer's BigBird is a bidirectional encoder");
    const std::string type = lc.text("attention_type", "block_sparse");
    if (type != "block_sparse" && type != "original_full")
      return err::failure(LINFER_ERROR_UNSUPPORTED,
                          "--config: attention_type '{}' is not supported (block_sparse, original_full)", type);
    P_ = ck.tensors.count("bert.embeddings.word_embeddings.weight") ? "bert." : "";
    EncoderConfig& c = out->desc.config;
    if (err::Status s = hf_bert_config(ck, lc, P_, "BigBird", "gelu_new", c, &tables_); !s.ok()) return s;
    // Positions count from 0 (the position_ids buffer), whatever pad_token_id is.
    c.max_seq_len = uint32_t(tables_.positions);
    c.position_offset = 0;
    c.head_activation = c.activation;  // BigBirdPredictionHeadTransform applies hidden_act
    if (lc.flag("rescale_embeddings", false)) c.embedding_scale = std::sqrt(float(c.dim));
    qkv_bias_ = lc.flag("use_bias", true);
    const uint32_t block = lc.u32("block_size", 64);
    random_ = lc.u32("num_random_blocks", 3);
    if (!lc.ok()) return lc.status();

    // block_sparse: HF switches to full attention for inputs of at most (5 + 2 R) blocks, so a model
    // whose longest input is that short always runs full attention, and is converted as such.
    longest_blocks_ = block ? (uint64_t(c.max_seq_len) + block - 1) / block : 0;
    sparse_ = type == "block_sparse" && longest_blocks_ > 5 + 2 * uint64_t(random_);
    attention_note_ = type == "original_full" ? "full attention (attention_type original_full)"
                                              : "full attention (block_sparse, but no input is longer than the " +
                                                    str(size_t(5 + 2 * uint64_t(random_)) * block) +
                                                    " tokens up to which Hugging Face runs full attention)";
    if (type == "block_sparse" && block == 0) return err::invalid_model("--config: block_size must be at least 1");
    if (sparse_) {
      if (c.max_seq_len % block)
        return err::invalid_model(
            "the {} positions (max_position_embeddings) are not a multiple of block_size {}: Hugging Face pads inputs "
            "to a multiple of block_size, so its longest inputs would not run",
            c.max_seq_len, block);
      if (random_ > Limits::kMaxRandomBlocks)
        return err::failure(LINFER_ERROR_UNSUPPORTED, "--config: num_random_blocks {} is more than linfer's {}",
                            random_, Limits::kMaxRandomBlocks);
      set_attention_kind(c, AttentionKind::BlockSparse);
      block_sparse_fields(c).block_size = block;
      block_sparse_fields(c).global_blocks = 1;  // HF's first and last block
      block_sparse_fields(c).num_random_blocks = random_;
      attention_note_ = "block_sparse: blocks of " + str(block) + " rows, the first and last global, random blocks " +
                        str(random_) + " per query block, all block 0 as in Hugging Face's eval mode; inputs up to " +
                        str(size_t(5 + 2 * random_) * block) + " tokens run full attention";
    } else {
      set_attention_kind(c, AttentionKind::FullSoftmax);
    }
    return {};
  }

  err::Status map_tensors(const Checkpoint& ck, Builder& b, MappedModel* out) override {
    EncoderDescription& d = out->desc;
    EncoderConfig& c = d.config;
    const uint32_t D = c.dim, F = c.ff_dim;
    hf_bert_embeddings(b, P_, tables_, d);
    for (uint32_t i = 0; i < c.num_layers && b.ok(); ++i)
      hf_bert_layer(b, P_ + "encoder.layer." + str(i) + ".", D, F, qkv_bias_, d.layers[i]);
    // The random blocks are drawn in training only: in eval mode every one is block 0 (transformers
    // >= 4.30), one table for every layer. (Its size is bounded by the position table's: the heads
    // and rows were checked against the checkpoint's tensors above.)
    if (sparse_ && random_ && b.ok()) {
      const WeightView zeros = b.make({c.num_heads, uint32_t(longest_blocks_), random_},
                                      std::vector<float>(size_t(c.num_heads) * longest_blocks_ * random_, 0.0f));
      for (LayerWeights& l : d.layers) l.kind_tensors[BlockSparseTensors::kRandomBlocks] = zeros;
    }
    std::string head_note = "hidden states";
    if (b.has("classifier.out_proj.weight")) {
      // BigBirdClassificationHead: the first token (CLS), dense, hidden_act (not tanh), out_proj.
      c.head = HeadKind::Classifier;
      c.pooling = Pooling::First;
      c.classifier_activation = c.activation;
      auto w = tensor_shape(ck, "classifier.out_proj.weight");
      c.num_classes = w.size() == 2 ? uint32_t(std::clamp<int64_t>(w[0], 0, UINT32_MAX)) : 0;
      d.head.dense = b.linear("classifier.dense", D, D);
      d.head.out = b.linear("classifier.out_proj", c.num_classes, D);
      head_note = "sequence classification (" + str(c.num_classes) + " classes, first token, dense + " +
                  to_string(c.classifier_activation) + ")";
    } else if (b.has("cls.predictions.transform.dense.weight")) {
      c.head = HeadKind::LmLogits;
      d.head.dense = b.linear("cls.predictions.transform.dense", D, D);
      d.head.norm = b.norm("cls.predictions.transform.LayerNorm", D);
      if (err::Status s = hf_tied_decoder(b, "cls.predictions.", "BigBird", d); !s.ok()) return s;
      head_note = "masked-LM logits";
    }
    for (const char* name : {"pooler.weight", "pooler.bias"}) b.ignore(P_ + name);
    if (b.has(P_ + "pooler.weight")) head_note += " (the pooler is dropped)";
    out->notes.push_back("BigBird: post-norm, positions from 0, token type 0 folded into the position table, " +
                         attention_note_ + ", " + head_note);
    return {};
  }

 private:
  std::string P_;  // "bert." or "" (BigBirdModel)
  HfTables tables_;
  bool qkv_bias_ = true, sparse_ = false;
  uint32_t random_ = 0;  // num_random_blocks
  uint64_t longest_blocks_ = 0;
  std::string attention_note_;
};

// BERT's names without Longformer's global projections (BigBird keeps BERT's module tree).
bool bigbird_owns_key(const std::string& name) {
  return (starts_with(name, "bert.encoder.layer.") || starts_with(name, "encoder.layer.")) &&
         name.find(".attention.self.query.weight") != std::string::npos;
}

}  // namespace

extern const Layout kBigBirdLayout = {"bigbird",
                                      bigbird_owns_key,
                                      true,
                                      ConfigUse::Library,
                                      "BigBird checkpoints do not record heads, block_size or num_random_blocks: pass "
                                      "--config config.json (the model's Hugging Face configuration)",
                                      {},
                                      make_mapper<BigBirdMapper>};

}  // namespace linfer::convert
