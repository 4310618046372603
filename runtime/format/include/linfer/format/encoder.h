// SPDX-License-Identifier: Apache-2.0
// The canonical encoder description: the one structure between the checkpoint readers (through
// the converter's layout mappers), the .lfm writer, the loader and the runtime (the kernels take
// plain values: linfer/types/). Layouts differ only by the options in EncoderConfig. Weights are
// views; whoever builds a description owns the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "linfer/format/tokenizer.h"
#include "linfer/types/enums.h"  // DType, FeatureMap, dtype_size

namespace linfer {

// The attention kinds, each at its line's place in the table of kinds (schema/attention_kinds.txt,
// which cmake/attention_kinds.cmake makes these enumerators of; docs/format.md says what each is).
enum class AttentionKind : uint8_t {
#include "linfer/format/attention_kind_enum.inc"
};
enum class NormPlacement : uint8_t { Pre = 0, Post = 1, Reversible = 2 };
enum class PositionKind : uint8_t { None = 0, Learned = 1, Sinusoidal = 2 };
// Rotary positions on queries and keys, angles from EncoderDescription::rotary_table (format.md).
enum class Rotary : uint8_t { None = 0, AdjacentPairs = 1 };
enum class ReversibleMerge : uint8_t { Sum = 0, Mean = 1 };
enum class ProjectionPlacement : uint8_t { After = 0, Before = 1 };
enum class ProjectionSharing : uint8_t { None = 0, Headwise = 1, KeyValue = 2, Layerwise = 3 };
enum class Activation : uint8_t { GeluErf = 0, GeluTanh = 1, Relu = 2, Tanh = 3 };
// Pooled: the output is one row, the pooled vector (optionally L2-normalized): a sentence embedding.
enum class HeadKind : uint8_t { None = 0, LmLogits = 1, Classifier = 2, Pooled = 3 };
enum class Pooling : uint8_t { First = 0, Mean = 1 };
enum class CausalMode : uint8_t { Bidirectional = 0, Causal = 1 };
// Element order of a tensor's bytes: C order, or the dense kernels' panels (panel.h).
enum class Layout : uint8_t { RowMajor = 0, Panel16 = 1 };

const char* to_string(DType);
const char* to_string(AttentionKind);  // the kind's name in the table of kinds
// Every attention kind and its name, in the schema's order: the one table of kinds,
// schema/attention_kinds.txt (the converter's names, -DLINFER_ATTENTION_KINDS's, the messages').
struct AttentionKindName {
  AttentionKind kind;
  const char* name;
};
extern const AttentionKindName kAttentionKindNames[];
extern const size_t kAttentionKindCount;
const char* to_string(FeatureMap);
const char* to_string(NormPlacement);
const char* to_string(PositionKind);
const char* to_string(Rotary);
const char* to_string(ReversibleMerge);
const char* to_string(ProjectionPlacement);
const char* to_string(ProjectionSharing);
const char* to_string(Activation);
const char* to_string(HeadKind);
const char* to_string(Pooling);
const char* to_string(Layout);

struct EncoderConfig {
  // The table's first kind, its fields with their defaults (kind_storage).
  EncoderConfig();
  AttentionKind attention_kind = AttentionKind(0);
  CausalMode causal = CausalMode::Bidirectional;
  uint32_t vocab_size = 0;
  uint32_t dim = 0;
  uint32_t num_layers = 0;
  uint32_t num_heads = 0;
  uint32_t head_dim = 0;
  uint32_t kv_heads = 0;
  uint32_t ff_dim = 0;
  uint32_t max_seq_len = 0;
  uint32_t num_global_tokens =
      0;  // rows the model adds to every input (a kind's learned tokens): the session plans them
  NormPlacement norm_placement = NormPlacement::Pre;
  bool embedding_norm = false;
  bool final_norm = false;
  float norm_eps = 1e-5f;
  PositionKind positions = PositionKind::Learned;
  uint32_t position_offset = 0;
  float sinusoidal_base = 10000.0f;
  float embedding_scale = 1.0f;
  Activation activation = Activation::GeluErf;
  HeadKind head = HeadKind::None;
  Activation head_activation = Activation::GeluErf;
  Pooling pooling = Pooling::First;
  uint32_t num_classes = 0;
  Rotary rotary = Rotary::None;                             // rotary_table holds the angles
  Activation classifier_activation = Activation::Tanh;      // Classifier: after head.dense
  ReversibleMerge reversible_merge = ReversibleMerge::Sum;  // Reversible: y1 + y2 or (y1 + y2) / 2
  bool normalize_output = false;                            // Pooled: the pooled vector divided by its L2 norm
  // The attention kind's own configuration fields: a struct of the kind's header
  // (linfer/format/kinds/<kind>.h), read and set through kind_fields; set_attention_kind gives
  // them the kind's defaults. Only the model's kind's fields exist.
  alignas(4) unsigned char kind_storage[16] = {};

  // Width of the model's final output per row (logits, classes or hidden states).
  uint32_t output_channels() const {
    switch (head) {
      case HeadKind::LmLogits:
        return vocab_size;
      case HeadKind::Classifier:
        return num_classes;
      default:
        return dim;
    }
  }
};

// Makes `c` a model of kind `kind`. When the kind changes, its fields (kind_storage) get their
// defaults, the schema's (kinds/<kind>.cc); the kind's fields of another kind are gone.
void set_attention_kind(EncoderConfig& c, AttentionKind kind);
// Gives c's kind fields (kind_storage) the defaults of c.attention_kind, whatever they held.
void reset_kind_fields(EncoderConfig& c);

// The fields of `c`'s attention kind, K (a struct of linfer/format/kinds/<kind>.h, whose kKind
// is the kind; `c` must be of that kind). Compiles to an address: no cost in a run.
template <class K>
K& kind_fields(EncoderConfig& c) {
  static_assert(
      std::is_trivially_copyable_v<K> && sizeof(K) <= sizeof c.kind_storage && alignof(K) <= alignof(EncoderConfig),
      "a kind's fields fit EncoderConfig::kind_storage");
  return *std::launder(reinterpret_cast<K*>(c.kind_storage));
}
template <class K>
const K& kind_fields(const EncoderConfig& c) {
  return kind_fields<K>(const_cast<EncoderConfig&>(c));
}

// The converter's view of the attention kinds' own configuration fields (config_json.cc): each
// kind's format file lists them (runtime/format/src/kinds/<kind>.cc), with the names --config
// gives them. (Not in a bare-metal build.)
struct KindFieldInfo {
  const char* name;
  enum Type : uint8_t { kEnum, kBool, kNumber, kFloat } type;
  const char* const* choices;  // kEnum: the values' names, by value (null-terminated)
};
// The fields of `kind` (none for a kind without fields, or one this build's format does not have).
std::vector<KindFieldInfo> kind_field_infos(AttentionKind kind);
// Sets field `i` of kind_field_infos(kind) to `value` (an enum's or a bool's value, a number, a
// float's bits). In a model of another kind, a field of that kind's fields struct has no place:
// fails (LINFER_ERROR_INVALID_MODEL, why the model cannot have it) unless `value` is its default.
err::Status set_kind_field(EncoderConfig& c, AttentionKind kind, size_t i, uint32_t value);
// Field `i` of kind_field_infos(c.attention_kind), in set_kind_field's form (0 when c's kind has
// no field i).
uint32_t kind_field_value(const EncoderConfig& c, size_t i);
// Gives the fields of c's kind that --config did not give (`given`: bit i for field i) the
// converter's defaults where they are not the schema's (the kind's format file's
// converter_defaults: a default that follows a checkpoint's conventions or another field).
void apply_converter_defaults(EncoderConfig& c, uint32_t given);

// A weight tensor: shape[0] = output channels for linear layers. Its bytes are in C order, or
// (format version 2, dense layers) in the panel layout of panel.h.
struct WeightView {
  DType dtype = DType::F32;
  std::vector<uint32_t> shape;  // empty: the tensor is absent
  const void* data = nullptr;
  const float* scales = nullptr;  // I8 only: one per row (rows = elements / last dimension)
  Layout layout = Layout::RowMajor;
  uint32_t panel_groups = 1;              // Panel16: separately packed groups of rows
  const int32_t* channel_sums = nullptr;  // Panel16 I8: per row, the sum of its int8 values
  // I8 dense weights, optional: one positive factor per input (shape[1]) that the runtime multiplies
  // into the input rows before quantizing them (activation smoothing; the weights hold the inverse).
  const float* input_scales = nullptr;
  // I8 dense weights, optional: f32_input_count input channels (indices f32_inputs, distinct,
  // below shape[1]) whose products are f32: f32_input_weights their columns, one after another
  // ([f32_input_count][rows]),
  // the int8 columns of those channels zero (the runtime zeroes those inputs before quantizing a
  // row, so that an outlier channel does not set the row's scale; docs/quantization.md).
  const uint32_t* f32_inputs = nullptr;
  uint32_t f32_input_count = 0;
  const float* f32_input_weights = nullptr;
  bool present() const { return !shape.empty(); }
  uint64_t elements() const;
  uint64_t bytes() const;  // of the data, in its layout
  uint64_t rows() const { return shape.empty() ? 0 : elements() / shape.back(); }
};

struct LinearWeights {
  WeightView weight, bias;
};
struct NormWeights {
  WeightView weight, bias;
};

// The most tensors an attention kind has in one layer, and of the whole model (its format file,
// runtime/format/src/kinds/<kind>.cc, lists them; its header, linfer/format/kinds/<kind>.h, names
// their indices in `kind_tensors`).
constexpr size_t kMaxKindLayerTensors = 6;
constexpr size_t kMaxKindModelTensors = 2;

struct LayerWeights {
  LinearWeights q, k, v, out;
  WeightView kind_tensors[kMaxKindLayerTensors];  // the model's attention kind's, by its header's indices
  NormWeights attention_norm;
  LinearWeights fc1, fc2;
  NormWeights feed_forward_norm;
};

struct HeadWeights {
  LinearWeights dense;
  NormWeights norm;
  LinearWeights out;
};

struct EncoderDescription {
  EncoderConfig config;
  WeightView token_embedding, position_embedding;
  WeightView rotary_table;  // [max_seq_len, head_dim]: each row the sines, then the cosines, of its angles
  NormWeights embedding_norm;
  WeightView kind_tensors[kMaxKindModelTensors];  // the model's attention kind's, by its header's indices
  std::vector<LayerWeights> layers;
  NormWeights final_norm;
  HeadWeights head;
  TokenizerView tokenizer;  // optional (present = false)
};

// Largest values a model may declare. They bound every product the runtime forms, so that sizes
// computed in 64-bit arithmetic cannot overflow and absurd files are refused before allocation.
struct Limits {
  static constexpr uint32_t kMaxDim = 1u << 16;
  static constexpr uint32_t kMaxLayers = 1024;
  static constexpr uint32_t kMaxHeads = 1024;
  static constexpr uint32_t kMaxFeedForward = 1u << 18;
  static constexpr uint32_t kMaxSeqLen = 1u << 20;
  static constexpr uint32_t kMaxVocab = 1u << 24;
  static constexpr uint32_t kMaxClasses = 1u << 24;
  static constexpr uint32_t kMaxPositionRows = (1u << 20) + 4096;
  static constexpr uint64_t kMaxTensorElements = 1ull << 34;
  static constexpr uint32_t kMaxGlobalTokens = 4096;
  static constexpr uint32_t kMaxConvKernel = 1023;
  static constexpr uint32_t kMaxFeatures = 1u << 14;
  static constexpr uint32_t kMaxRandomBlocks = 64;
  static constexpr uint32_t kMaxBucketSize = 256;
  static constexpr uint32_t kMaxHashes = 16;
  static constexpr uint32_t kMaxF32Inputs = 8;  // input channels of an int8 dense weight kept in f32
};

// Checks the configuration and that every tensor present has the shape the configuration implies,
// that required tensors are present and that no unexpected tensor is. A failure is
// LINFER_ERROR_INVALID_MODEL with a one-line message naming the problem. Used by the converter
// before writing and by the loader.
err::Status validate_description(const EncoderDescription& desc);

// True for the slots that may be stored as f16 or int8: matrices (linear weights, embeddings,
// and a kind's slots its format file marks as matrices). Norms and biases are always f32.
bool weight_may_be_quantized(const std::string& slot);
// True for the weight of a dense layer (Q, K, V, output, feed-forward, head layers): the slots
// that version 2 files store in panel layout and the dense kernels read.
bool is_dense_weight(const std::string& slot);
// Groups of rows a dense slot is packed in (panel.h): the K and V weights of a kind that reads
// them one head at a time (its format file's kv_panel_groups) have each head's rows packed as a
// group of their own; every other slot is one group.
uint32_t dense_panel_groups(const EncoderConfig& c, const std::string& slot);
// The fixed number of keys and values every query attends to when c's kind projects the sequence
// to one length whatever the input's (linfer_model_info::proj_len, k); 0 for a kind that does not.
uint32_t projected_key_count(const EncoderConfig& c);

}  // namespace linfer

namespace linfer {
// Every weight slot of a description that every model has, in the order visited: the
// description's own, then each layer's (named "layers.N." + the slot's name), then the final
// norm's and the head's. The model's attention kind's tensors are visited too, the model's after
// the embedding norm and a layer's after its attention's output layer, as kind_slot(i) (i: the
// tensor's place in its format file's list).
enum class Slot : uint8_t {
  TokenEmbedding,
  PositionEmbedding,
  RotaryTable,
  EmbeddingNormWeight,
  EmbeddingNormBias,
  // a layer's
  QWeight,
  QBias,
  KWeight,
  KBias,
  VWeight,
  VBias,
  OutWeight,
  OutBias,
  AttentionNormWeight,
  AttentionNormBias,
  Fc1Weight,
  Fc1Bias,
  Fc2Weight,
  Fc2Bias,
  FeedForwardNormWeight,
  FeedForwardNormBias,
  // after the layers
  FinalNormWeight,
  FinalNormBias,
  HeadDenseWeight,
  HeadDenseBias,
  HeadNormWeight,
  HeadNormBias,
  HeadOutWeight,
  HeadOutBias,
  Count
};
// The slot of the model's kind's tensor i (of its format file's list), and back.
constexpr Slot kind_slot(uint32_t i) { return Slot(uint32_t(Slot::Count) + i); }
constexpr bool is_kind_slot(Slot slot) { return slot >= Slot::Count; }
constexpr uint32_t kind_slot_index(Slot slot) { return uint32_t(slot) - uint32_t(Slot::Count); }
// is_dense_weight for a slot of a description of configuration `c` (the loader's: no string
// compares).
bool is_dense_slot(const EncoderConfig& c, Slot slot);

// Visits every weight slot of a description, present or not, with its dotted name
// ("layers.1.attention.q.weight"). The one list of tensors shared by writer, loader and validator.
// The list is compiled once (visit_weights, encoder.cc) and each caller's function is called
// through a pointer: inlined into every caller, the list's names cost several KB of code each
// (about 25 KB of a bare-metal Cortex-M build, docs/microcontrollers.md). `layer` is the slot's
// layer (0 for the others).
using WeightVisitor = void (*)(void* fn, Slot slot, uint32_t layer, const std::string& name, WeightView& w);
void visit_weights(EncoderDescription& desc, WeightVisitor visit, void* fn);

template <class Fn>
void for_each_weight(EncoderDescription& desc, Fn&& fn) {
  using F = std::remove_reference_t<Fn>;
  visit_weights(
      desc, [](void* f, Slot, uint32_t, const std::string& name, WeightView& w) { (*static_cast<F*>(f))(name, w); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}
// (The description is not changed: fn sees each view as const.)
template <class Fn>
void for_each_weight(const EncoderDescription& desc, Fn&& fn) {
  using F = std::remove_reference_t<Fn>;
  visit_weights(
      const_cast<EncoderDescription&>(desc),
      [](void* f, Slot, uint32_t, const std::string& name, WeightView& w) {
        (*static_cast<F*>(f))(name, static_cast<const WeightView&>(w));
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}
// fn(slot, layer, name, view): for the reader and the checks, which go by slot rather than by name.
template <class Fn>
void for_each_slot(EncoderDescription& desc, Fn&& fn) {
  using F = std::remove_reference_t<Fn>;
  visit_weights(
      desc,
      [](void* f, Slot slot, uint32_t layer, const std::string& name, WeightView& w) {
        (*static_cast<F*>(f))(slot, layer, name, w);
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}
template <class Fn>
void for_each_slot(const EncoderDescription& desc, Fn&& fn) {
  using F = std::remove_reference_t<Fn>;
  visit_weights(
      const_cast<EncoderDescription&>(desc),
      [](void* f, Slot slot, uint32_t layer, const std::string& name, WeightView& w) {
        (*static_cast<F*>(f))(slot, layer, name, static_cast<const WeightView&>(w));
      },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

std::string shape_to_string(const std::vector<uint32_t>& shape);

#if !LINFER_BARE_METAL
// The shape the configuration of `desc` gives a slot (of layer `layer`), for whoever builds a
// model in memory: `dims` empty when the configuration does not use the slot, `optional` when it
// may be absent; the learned position embedding's least shape (it may have more rows).
// `index_bound` > 0: the slot holds indices, whole numbers in [0, index_bound) (block indices).
// The attention kind's slots as its format file says: the other slots of a layer decide some
// (optional tensors that come as a set: all of them or none), so they are asked in
// visiting order (for_each_slot).
struct SlotShape {
  std::vector<uint32_t> dims;
  bool optional = false;
  uint32_t index_bound = 0;
};
SlotShape slot_shape(const EncoderDescription& desc, Slot slot, uint32_t layer);
#endif
}  // namespace linfer
