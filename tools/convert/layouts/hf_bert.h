// SPDX-License-Identifier: Apache-2.0
// Hugging Face transformers BERT-family models (Longformer, BigBird): the same module names for the
// embeddings and the encoder layers, post-norm, an embedding LayerNorm, one sequence of token type 0.
#pragma once

#include <string>
#include <vector>

#include "layout.h"

namespace linfer::convert {

std::vector<int64_t> tensor_shape(const Checkpoint& ck, const std::string& name);

// The embedding tables' rows, read from the checkpoint (P: "longformer.", "bert." or "").
struct HfTables {
  uint64_t positions = 0;
  uint32_t types = 0;
};

// Reads what every BERT-family config.json says the same way (hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, layer_norm_eps, hidden_act with `default_act`) into c,
// and the vocabulary and table sizes from the checkpoint.
err::Status hf_bert_config(const Checkpoint& ck, LibraryConfig& lc, const std::string& P, const std::string& model,
                           const char* default_act, EncoderConfig& c, HfTables* t);

// The word embeddings; the position table with token type row 0 added to every row (token_type_ids
// are 0 for one sequence); the embedding LayerNorm.
void hf_bert_embeddings(Builder& b, const std::string& P, const HfTables& t, EncoderDescription& d);

// One encoder layer (p ends with "encoder.layer.{i}."): attention.self.{query,key,value} (their
// biases when qkv_bias), attention.output.{dense,LayerNorm}, intermediate.dense, output.{dense,LayerNorm}.
void hf_bert_layer(Builder& b, const std::string& p, uint32_t D, uint32_t F, bool qkv_bias, LayerWeights& l);

// An LM head's output layer H + "decoder" (H: "lm_head." or "cls.predictions."): its weight is tied
// to the word embeddings and its bias is H + "bias", one parameter under two names; a file may keep
// either name or both.
err::Status hf_tied_decoder(Builder& b, const std::string& H, const std::string& model, EncoderDescription& d);

}  // namespace linfer::convert
