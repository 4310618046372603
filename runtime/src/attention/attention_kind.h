// SPDX-License-Identifier: Apache-2.0
// One attention kind, one module (TensorFlow Lite Micro's kernel shape): at session creation the
// module checks its part of the configuration and asks the planner for its own arena buffers
// (plan), takes their addresses once the arena exists (bind) and prepares its dense layers
// (prepare_layers); a run hands it each layer's attention sublayer (run), and, where the kind has
// them, the row pipeline's blocks (prepare_rows, attend_rows) and token-by-token steps. It trusts
// what it checked: nothing in a run allocates or checks again.
//
// A module sees its session only through layer_context.h. The session (inference.h) keeps the
// layer loop, Q and the output projection, the norms, the feed-forward, the arena and the
// threads. registry.cc maps the schema's kind to its module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dense_layer.h"
#include "layer_context.h"
#include "linfer/linfer.h"
#include "model.h"
#include "plan.h"
#include "status.h"

namespace linfer::rt {

// A layer's attention sublayer as the session hands it over: the layer's index and weights, and
// its Q and output projections (which the session prepares for every kind).
struct AttentionLayer {
  size_t index;
  const LayerWeights& w;
  const DenseLayer& q;
  const DenseLayer& out;
};

// What a module plans with: the model, the options, the plan so far (threads, lengths, dense
// kernels, row pipeline; a module may add a dense kernel it runs on), the arena's requests.
struct AttentionPlanning {
  const LoadedModel& model;
  const linfer_session_options& options;
  ExecutionPlan& plan;
  ArenaLayout& arena;
};

// The refusal of a token-by-token run on a model that cannot take them, naming the kinds of this
// build whose causal models can (AttentionKindInfo::steps).
Status steps_not_defined();

class AttentionModule {
 public:
  virtual ~AttentionModule() = default;

  // Plan time. Whether this kind, in this model, can run as the row pipeline (a layer as one
  // parallel region over blocks of rows: each row's output needs its own query and keys that are
  // ready before the blocks).
  virtual bool has_row_pipeline(const EncoderConfig&) const { return false; }
  // Checks its part of the session configuration and asks for its arena buffers. Called after
  // the plan's dense kernels and row pipeline are chosen.
  virtual Status plan(AttentionPlanning& p) = 0;
  // Most rows a dense layer of this kind runs on, for the int8 layers' quantized rows (the
  // session's rows: T plus the added rows).
  virtual uint64_t dense_rows(const EncoderConfig&, uint64_t rows) const { return rows; }
  // Most rows the dense layers that make its keys run on (prepare_rows, before the row
  // pipeline's blocks): all of them, but for a kind that makes its keys from fewer rows.
  virtual uint64_t key_dense_rows(const EncoderConfig&, uint64_t rows) const { return rows; }

  // Creation: the buffers' addresses, then the module's dense layers (K, V, ...).
  virtual void bind(const Arena& arena) = 0;
  virtual Status prepare_layers(const LayerContext& s) = 0;
  // Bytes of the module's dense layers' own packed copies (XNNPACK only).
  virtual size_t packed_weight_bytes() const { return kv_packed_bytes(); }
  // A short note for the session's description, or "".
  virtual std::string describe() const { return ""; }

  // Run time, before the first layer: the rows the model adds after the input's T rows
  // (EncoderConfig::num_global_tokens of them, dim floats each, at `rows`: a kind's learned
  // tokens). Norms, the feed-forward layers and the residuals treat them as sequence rows; only
  // the module's attention tells them apart. None unless the kind has them.
  virtual void write_added_rows(const LayerContext&, float* /*rows*/) const {}

  // The attention sublayer over T rows of `in` (T plus the added rows), its output added to
  // `residual` (which may be `in`). False if an XNNPACK operator failed.
  virtual bool run(LayerContext& s, const AttentionLayer& layer, const float* in, size_t T, float* residual) = 0;

  // Row pipeline (when has_row_pipeline): what needs every row (the keys), then one block of
  // `rows` query rows at q (rows [first_row, ...) of the run) into attn, every head, on worker
  // `worker` (Workers::chunks: its scratch).
  virtual bool prepare_rows(LayerContext&, const AttentionLayer&, const float*, size_t) { return false; }
  virtual void attend_rows(LayerContext&, const float*, float*, size_t, size_t, size_t) {}

  // Token-by-token runs: "" when this model can take them, else why not (invalid argument);
  // start_sequence: a fresh sequence begins (its carried state empties).
  virtual Status can_step(const EncoderConfig&) const { return steps_not_defined(); }
  virtual void start_sequence() {}

 protected:
  // K and V dense layers over the layer input, one per group of the weight's panels (per-head
  // projections) or one: most kinds have them (a kind whose queries are its keys has no K).
  struct KvLayers {
    std::vector<DenseLayer> k, v;
  };
  std::vector<KvLayers> kv_;
  // kv_ for every layer: K (unless with_keys is false) and V, with their biases unless
  // bias_in_layer is false (a kind that projects the sequence after the linear layer: the bias
  // goes through the projection).
  Status prepare_kv_layers(const LayerContext& s, bool with_keys, bool bias_in_layer);
  size_t kv_packed_bytes() const;
};

// The attention kinds this build has, one entry each: k<Enum>Attention in the kind's module, as the
// table of kinds (schema/attention_kinds.txt) names it; registry.cc lists the built ones.
struct AttentionKindInfo {
  AttentionKind kind;
  std::unique_ptr<AttentionModule> (*make)();
  // Floating-point operations of one layer's attention over T tokens beyond Q, the output
  // projection and the feed-forward (a multiply-add counts 2), as the module computes it.
  uint64_t (*layer_flops)(const EncoderConfig& c, uint64_t T);
  // What the module makes of a model at load, for every session (null: nothing).
  Status (*prepare_model)(LoadedModel& m);
  // The model options of this kind's models that a build may leave out (-DLINFER_MODEL_OPTIONS):
  // LINFER_ERROR_UNSUPPORTED naming the first the model needs and this build left out
  // (option_not_built, model_options.h); null: none. Checked at load by model_options_built.
  Status (*options_built)(const EncoderDescription& d);
  // Its causal models take token-by-token runs (can_step); last, with a default: a kind without them
  // leaves it out.
  bool steps = false;
};
// The kind's entry, or null when this build has no module for it (-DLINFER_ATTENTION_KINDS).
const AttentionKindInfo* attention_kind_info(AttentionKind kind);
// OK when this build has the kind's module, else LINFER_ERROR_UNSUPPORTED naming the kind and the
// option (a model is refused at load).
Status attention_kind_built(AttentionKind kind);

}  // namespace linfer::rt
