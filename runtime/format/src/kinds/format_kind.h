// SPDX-License-Identifier: Apache-2.0
// An attention kind's part of the format: where its configuration fields and tensors are in a
// file, the checks of its fields, the slots of its tensors and their shapes. One file per kind in
// this folder, named by the table of kinds (schema/attention_kinds.txt, its format column), each
// defining the kind's k<Enum>Format; the generated format_kinds.inc lists them for registry.cc.
// lfm.cc reads and writes a kind's part, and encoder.cc `validate_description` checks it, through
// this interface: neither knows a kind itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../message.h"
#include "linfer/format/encoder.h"
#include "linfer_generated.h"  // the tables' field offsets (FlatBuffers vtable offsets)

namespace linfer {

// A configuration field: where it is in a file and in EncoderConfig. A kind's field is, in format
// version 4, a field of its <Enum>Kind table (schema/linfer.fbs: ModelFile.kind) and, in versions
// 1 to 3, a field of the Config table (`legacy_field`); a field every model has (lfm.cc's list) is
// in Config in every version. Read and written by one loop (lfm.cc): 41 accessors inlined were 0.6
// KB of a microcontroller's code. A field the file does not hold keeps its default, the schema's
// (EncoderConfig's, or the kind's fields struct's: linfer/format/kinds/<kind>.h).
struct ConfigField {
  uint8_t field;                                             // vtable offset in its table (version 4)
  uint8_t legacy_field;                                      // vtable offset in Config (versions 1 to 3); 0: none
  uint8_t offset;                                            // in EncoderConfig (a kind's fields: in its kind_storage)
  enum Kind : uint8_t { kByte, kBool, kWord, kFloat } kind;  // an enum, a bool, a uint32_t, a float
#if !LINFER_BARE_METAL
  // The converter's --config key (config_json.cc) and, for an enum, its values' names by value
  // (null-terminated; null: a number or a bool).
  const char* name;
  const char* const* choices;
#endif
  uint32_t size() const { return kind >= kWord ? 4 : 1; }
};
template <class T>
constexpr ConfigField::Kind config_field_kind() {
  return std::is_same_v<T, bool>    ? ConfigField::kBool
         : std::is_same_v<T, float> ? ConfigField::kFloat
         : sizeof(T) == 4           ? ConfigField::kWord
                                    : ConfigField::kByte;
}
#if !LINFER_BARE_METAL
#define LINFER_CONFIG_FIELD_NAMES(name, choices) , #name, choices
#define LINFER_CONVERTER_DEFAULTS(fn) , fn
#else
#define LINFER_CONFIG_FIELD_NAMES(name, choices)
#define LINFER_CONVERTER_DEFAULTS(fn)
#endif
#define LINFER_CONFIG_FIELD_AT(field, legacy_field, name)                                                     \
  ::linfer::ConfigField {                                                                                     \
    field, legacy_field, offsetof(EncoderConfig, name),                                                       \
        ::linfer::config_field_kind<decltype(EncoderConfig::name)>() LINFER_CONFIG_FIELD_NAMES(name, nullptr) \
  }
// A field of the kind's table that versions 1 to 3 held in Config, under the same name.
#define LINFER_CONFIG_FIELD_OF(Table, name, VT) \
  LINFER_CONFIG_FIELD_AT(::linfer::fb::Table::VT, ::linfer::fb::Config::VT, name)
// A field of a kind's fields struct (`Fields`, linfer/format/kinds/<kind>.h): at `field` of its
// <Enum>Kind table `Table`, and at the Config field of its name in versions 1 to 3 (the _V4 form:
// a field only version 4 has: files of versions 1 to 3 cannot be of a kind that has one).
// `choices`: an enum's values' names, else nullptr.
#define LINFER_KIND_FIELD_AT(field, legacy_field, Fields, name, choices)                               \
  ::linfer::ConfigField {                                                                              \
    field, legacy_field, offsetof(EncoderConfig, kind_storage) + offsetof(Fields, name),               \
        ::linfer::config_field_kind<decltype(Fields::name)>() LINFER_CONFIG_FIELD_NAMES(name, choices) \
  }
#define LINFER_KIND_FIELD(Table, Fields, name, VT, choices) \
  LINFER_KIND_FIELD_AT(::linfer::fb::Table::VT, ::linfer::fb::Config::VT, Fields, name, choices)
#define LINFER_KIND_FIELD_V4(Table, Fields, name, VT, choices) \
  LINFER_KIND_FIELD_AT(::linfer::fb::Table::VT, 0, Fields, name, choices)

// A tensor of the kind: its name, where the description holds it (`index` in
// LayerWeights::kind_tensors or EncoderDescription::kind_tensors, as its header,
// linfer/format/kinds/<kind>.h, names them) and where it is in a file. In format version 4 a field
// of the kind's <Enum>Layer table (Attention.kind: a layer's tensor) or of its <Enum>Kind table
// (ModelFile.kind: the model's); in versions 1 to 3 the same-named field of Attention or
// ModelFile. A linear layer is two tensors, its weight and then its bias, at one field (a Linear
// table). A kind's list is in the order of the file's data (a writer's output depends on it).
struct KindSlot {
  const char* name;  // a layer's after "layers.N." ("attention.proj_k"), else the whole name
  bool in_layer;
  uint8_t index;         // in kind_tensors
  uint8_t field;         // vtable offset in <Enum>Layer or <Enum>Kind (version 4)
  uint8_t legacy_field;  // vtable offset in Attention or ModelFile (versions 1 to 3); 0: none
  enum Part : uint8_t { kTensor, kWeight, kBias } part;  // the Tensor at the field, or its Linear's weight or bias
  // What it holds: a vector or table (f32), a matrix (may be f16 or int8: weight_may_be_quantized),
  // or a dense layer's weight (is_dense_weight: panels, the dense kernels).
  enum Use : uint8_t { kF32, kMatrix, kDense } use;
};
// A tensor that versions 1 to 3 held in Attention (a layer's) or ModelFile (the model's), under the
// same name; the _V4 forms: a tensor only version 4 has. `index`: the kind header's name of it.
#define LINFER_LAYER_SLOT(name, index, Table, VT, part, use)                                                        \
  ::linfer::KindSlot {                                                                                              \
    "attention." name, true, index, ::linfer::fb::Table::VT, ::linfer::fb::Attention::VT, ::linfer::KindSlot::part, \
        ::linfer::KindSlot::use                                                                                     \
  }
#define LINFER_MODEL_SLOT(name, index, Table, VT, use)                                                     \
  ::linfer::KindSlot {                                                                                     \
    name, false, index, ::linfer::fb::Table::VT, ::linfer::fb::ModelFile::VT, ::linfer::KindSlot::kTensor, \
        ::linfer::KindSlot::use                                                                            \
  }
#define LINFER_LAYER_SLOT_V4(name, index, Table, VT, part, use)                                                   \
  ::linfer::KindSlot {                                                                                            \
    "attention." name, true, index, ::linfer::fb::Table::VT, 0, ::linfer::KindSlot::part, ::linfer::KindSlot::use \
  }
#define LINFER_MODEL_SLOT_V4(name, index, Table, VT, use)                                                \
  ::linfer::KindSlot {                                                                                   \
    name, false, index, ::linfer::fb::Table::VT, 0, ::linfer::KindSlot::kTensor, ::linfer::KindSlot::use \
  }

// Every index of a kind's list is a place of kind_tensors (static_assert in each format file).
template <size_t N>
constexpr bool kind_slots_fit(const KindSlot (&slots)[N]) {
  for (const KindSlot& s : slots)
    if (s.index >= (s.in_layer ? kMaxKindLayerTensors : kMaxKindModelTensors)) return false;
  return true;
}

// The shape the configuration gives a slot; rank 0: the slot must be absent. `optional` slots may
// be absent. `index_bound` > 0: an f32 slot of indices, whole numbers in [0, index_bound) (block
// indices), which the kind's check_values checks value by value with check_index_values.
struct Expect {
  uint32_t dims[3] = {};
  uint32_t rank = 0;
  bool optional = false;
  uint32_t index_bound = 0;
};

struct FormatKind {
  AttentionKind kind;
  bool causal;            // has a causal mode
  bool rotary;            // takes rotary positions (its queries and keys all exist before the math)
  bool queries_are_keys;  // has no key projection: the queries are the keys
  // Its configuration fields (may be none). Those of the fields struct it has
  // (linfer/format/kinds/<kind>.h) are in EncoderConfig::kind_storage, which `defaults` (of
  // `defaults_size` bytes: the struct's defaults, the schema's) fills when a model is made of
  // this kind (set_attention_kind); null: none.
  const ConfigField* fields;
  uint32_t field_count;
  const void* defaults;
  uint32_t defaults_size;
  // Its configuration fields: in range in a model of this kind (`own`); or, in a configuration
  // made of another kind that holds this kind's fields as well (a file of versions 1 to 3: lfm.cc
  // reads them into their defaults), unset. Null: it has none.
  Status (*check_config)(const EncoderConfig& c, bool own);
  // Its tensors (those only it reads: its slots) and, in a model of this kind, the shape of each
  // (`layer`: the slot's layer, null for the model's own slots).
  const KindSlot* slots;
  uint32_t slot_count;
  Expect (*expected)(const EncoderConfig& c, const LayerWeights* layer, const KindSlot& slot);
  // Optional (null: none). A slot whose shape is a bound, not one shape: sets *err (success when
  // fine) and returns true when it checked the slot.
  bool (*check_slot)(const EncoderConfig& c, const KindSlot& slot, const std::string& name, const WeightView& w,
                     Status* err);
  // Optional (null: none): checks of a model of this kind before its tensors' shapes, and of the
  // values of its tensors after them.
  Status (*check_layers)(const EncoderDescription& d);
  Status (*check_values)(const EncoderDescription& d);
  // Optional (null: 1). The groups of rows the K and V weights' panels are packed in
  // (dense_panel_groups): heads whose keys and values the kind reads one head at a time.
  uint32_t (*kv_panel_groups)(const EncoderConfig& c);
#if !LINFER_BARE_METAL
  // Optional (null: none). The converter's defaults where they are not the schema's
  // (config_json.cc): for the fields not given (`given`: a bit per field, by index in `fields`).
  void (*converter_defaults)(EncoderConfig& c, uint32_t given);
#endif
  // Optional (null: 0). The fixed number of keys and values the kind projects the sequence to
  // (projected_key_count). Last, with a default: a kind without it leaves it out.
  uint32_t (*projected_keys)(const EncoderConfig& c) = nullptr;
};

// The kind's format file, or null for a kind this build's format does not have (bare metal: only
// the kinds built; runtime/format/CMakeLists.txt).
const FormatKind* format_kind(AttentionKind kind);
// The format files of this build, in the table's order (null-terminated).
extern const FormatKind* const kFormatKinds[];
// The model's kind's format file, or null (a kind this build's format does not have, or none).
const FormatKind* kind_of(const EncoderConfig& c);
// The tensor of a kind of this build named `name` (a whole slot name, "layers.0.attention.proj_k"),
// or null.
const KindSlot* kind_slot_named(const std::string& name);

// A kind's check_values for its tensors of indices (Expect::index_bound; shapes and f32 checked
// before): every value a whole number in range, since a run looks up rows with them.
Status check_index_values(const EncoderDescription& d);

// Shared by the checks: sets *err and returns true when value is outside [lo, hi].
bool out_of_range(Status* err, const char* what, uint32_t value, uint32_t lo, uint32_t hi);

}  // namespace linfer
