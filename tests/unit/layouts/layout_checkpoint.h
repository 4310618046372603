// SPDX-License-Identifier: Apache-2.0
// Checkpoints built in memory for the layout tests (tests/unit/layouts/test_<layout>.cc): the key
// names and shapes of one source library, small values, no file and no reader in between.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "layout.h"
#include "layouts.h"
#include "test_util.h"

namespace linfer::testing {

using convert::Checkpoint;
using convert::MappedModel;
using convert::Shape;

class LayoutCheckpoint {
 public:
  LayoutCheckpoint() { ck.format = "safetensors"; }

  // `name` with `shape`, in a storage of its own.
  void add(const std::string& name, const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t s : shape) n *= size_t(s);
    auto values = std::make_unique<std::vector<float>>(n);
    for (size_t i = 0; i < n; ++i) (*values)[i] = 0.01f * float((i * 7 + ck.tensors.size()) % 23) - 0.1f;
    convert::Storage st;
    st.key = name;
    st.data = reinterpret_cast<const uint8_t*>(values->data());
    st.bytes = n * sizeof(float);
    ck.storages[name] = st;
    convert::SourceTensor t;
    t.name = name;
    t.shape = shape;
    t.strides.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * shape[i];
    t.storage_key = name;
    ck.tensors[name] = t;
    values_.push_back(std::move(values));
  }
  void linear(const std::string& name, int64_t out, int64_t in) {
    add(name + ".weight", {out, in});
    add(name + ".bias", {out});
  }
  void norm(const std::string& name, int64_t dim) {
    add(name + ".weight", {dim});
    add(name + ".bias", {dim});
  }
  // `name` as a second name of `existing`'s memory (a tied or shared parameter).
  void alias(const std::string& name, const std::string& existing) {
    convert::SourceTensor t = ck.tensors.at(existing);
    t.name = name;
    ck.tensors[name] = t;
  }
  void remove(const std::string& name) { REQUIRE(ck.tensors.erase(name) == 1); }

  // The root object of a torch file: {"args": {key: number}} (fairseq's hyperparameters).
  void set_args(const std::map<std::string, double>& args) {
    auto root = std::make_shared<convert::Value>();
    root->kind = convert::Value::Kind::Dict;
    convert::Value* dict = value(convert::Value::Kind::Dict);
    for (const auto& [key, number] : args) {
      convert::Value* k = value(convert::Value::Kind::String);
      k->text = key;
      convert::Value* v = value(convert::Value::Kind::Float);
      v->number = number;
      dict->entries.push_back({k, v});
    }
    convert::Value* args_key = value(convert::Value::Kind::String);
    args_key->text = "args";
    root->entries.push_back({args_key, dict});
    ck.root = root;
  }

  // map_checkpoint with `layout`: its model in *out, or its failure.
  err::Status map(const std::string& layout, const std::string& config, MappedModel* out) const {
    err::Result<MappedModel> mapped = convert::map_checkpoint(layout, ck, config);
    if (!mapped.ok()) return mapped.status();
    *out = std::move(mapped.value());
    return {};
  }

  Checkpoint ck;

 private:
  convert::Value* value(convert::Value::Kind kind) {
    values_of_root_.push_back(std::make_unique<convert::Value>());
    values_of_root_.back()->kind = kind;
    return values_of_root_.back().get();
  }

  std::vector<std::unique_ptr<std::vector<float>>> values_;
  std::vector<std::unique_ptr<convert::Value>> values_of_root_;
};

// Hugging Face's BERT module tree as Longformer and BigBird keep it (layouts/hf_bert.cc): the
// embeddings under P (vocabulary 10, dim 8) and one encoder layer (ff 16), with Longformer's global
// query/key/value projections when `global`.
inline void add_bert_encoder(LayoutCheckpoint& ck, const std::string& P, int64_t positions, int64_t types,
                             bool global) {
  ck.add(P + "embeddings.word_embeddings.weight", {10, 8});
  ck.add(P + "embeddings.position_embeddings.weight", {positions, 8});
  ck.add(P + "embeddings.token_type_embeddings.weight", {types, 8});
  ck.norm(P + "embeddings.LayerNorm", 8);
  const std::string p = P + "encoder.layer.0.";
  for (const char* name : {"query", "key", "value"}) {
    ck.linear(p + "attention.self." + name, 8, 8);
    if (global) ck.linear(p + "attention.self." + name + "_global", 8, 8);
  }
  ck.linear(p + "attention.output.dense", 8, 8);
  ck.norm(p + "attention.output.LayerNorm", 8);
  ck.linear(p + "intermediate.dense", 16, 8);
  ck.linear(p + "output.dense", 8, 16);
  ck.norm(p + "output.LayerNorm", 8);
}

// What every layout test checks besides its own: the layout is detected from the key names alone,
// and a tensor the mapper does not place is refused by name.
inline void check_detect_and_unused(LayoutCheckpoint& ck, const std::string& layout, const std::string& config) {
  CHECK(required(convert::detect_layout(ck.ck)) == layout);
  const convert::Layout* l = convert::find_layout(layout);
  REQUIRE(l != nullptr);
  CHECK(l->detect(ck.ck) > 0);
  ck.add("stray.weight", {2});
  MappedModel out;
  CHECK(ck.map(layout, config, &out).message() ==
        "checkpoint tensor 'stray.weight' has no place in the " + layout + " layout with this configuration");
  ck.remove("stray.weight");
}

}  // namespace linfer::testing
