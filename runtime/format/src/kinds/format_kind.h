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

// A tensor of the kind: its slot and where it is in a file. In format version 4 a field of the
// kind's <Enum>Layer table (Attention.kind: a layer's tensor) or of its <Enum>Kind table
// (ModelFile.kind: the model's); in versions 1 to 3 the same-named field of Attention or
// ModelFile. A linear layer is two slots, its weight's and then its bias's, at one field (a
// Linear table).
struct KindSlot {
  Slot slot;
  bool in_layer;
  uint8_t field;         // vtable offset in <Enum>Layer or <Enum>Kind (version 4)
  uint8_t legacy_field;  // vtable offset in Attention or ModelFile (versions 1 to 3); 0: none
  enum Part : uint8_t { kTensor, kWeight, kBias } part;  // the Tensor at the field, or its Linear's weight or bias
};
// A tensor that versions 1 to 3 held in Attention (a layer's) or ModelFile (the model's), under the
// same name; the _V4 forms: a tensor only version 4 has.
#define LINFER_LAYER_SLOT(slot, Table, VT, part) \
  ::linfer::KindSlot { slot, true, ::linfer::fb::Table::VT, ::linfer::fb::Attention::VT, ::linfer::KindSlot::part }
#define LINFER_MODEL_SLOT(slot, Table, VT) \
  ::linfer::KindSlot { slot, false, ::linfer::fb::Table::VT, ::linfer::fb::ModelFile::VT, ::linfer::KindSlot::kTensor }
#define LINFER_LAYER_SLOT_V4(slot, Table, VT, part) \
  ::linfer::KindSlot { slot, true, ::linfer::fb::Table::VT, 0, ::linfer::KindSlot::part }
#define LINFER_MODEL_SLOT_V4(slot, Table, VT) \
  ::linfer::KindSlot { slot, false, ::linfer::fb::Table::VT, 0, ::linfer::KindSlot::kTensor }

// The shape the configuration gives a slot; rank 0: the slot must be absent. `optional` slots may
// be absent.
struct Expect {
  uint32_t dims[3] = {};
  uint32_t rank = 0;
  bool optional = false;
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
  std::string (*check_config)(const EncoderConfig& c, bool own);
  // Its slots (the tensors only it reads) and, in a model of this kind, the shape of each
  // (`layer`: the slot's layer, null for the model's own slots).
  const KindSlot* slots;
  uint32_t slot_count;
  Expect (*expected)(const EncoderConfig& c, const LayerWeights* layer, Slot slot);
  // Optional (null: none). A slot of its own that the shape rule does not describe: sets *err
  // ("" when fine) and returns true when it checked the slot; `own` as for check_config, so it
  // also says why a model of another kind may not carry it.
  bool (*check_slot)(const EncoderConfig& c, Slot slot, const std::string& name, const WeightView& w, bool own,
                     std::string* err);
  // Optional (null: none): checks of a model of this kind before its tensors' shapes, and of the
  // values of its tensors after them.
  std::string (*check_layers)(const EncoderDescription& d);
  std::string (*check_values)(const EncoderDescription& d);
  // Optional (null: 1). The groups of rows the K and V weights' panels are packed in
  // (dense_panel_groups): heads whose keys and values the kind reads one head at a time.
  uint32_t (*kv_panel_groups)(const EncoderConfig& c);
#if !LINFER_BARE_METAL
  // Optional (null: none). The converter's defaults where they are not the schema's
  // (config_json.cc): for the fields not given (`given`: a bit per field, by index in `fields`).
  void (*converter_defaults)(EncoderConfig& c, uint32_t given);
#endif
};

// The kind's format file, or null for a kind this build's format does not have (bare metal: only
// the kinds built; runtime/format/CMakeLists.txt).
const FormatKind* format_kind(AttentionKind kind);
// The format files of this build, in the table's order (null-terminated).
extern const FormatKind* const kFormatKinds[];
// The kind's slot `slot` is, and (in *owner) its format file; null when no kind of this build
// owns it (the slots every model has, or a kind's left out).
const KindSlot* kind_slot(Slot slot, const FormatKind** owner);

// Shared by the checks: sets *err and returns true when value is outside [lo, hi].
bool out_of_range(std::string* err, const char* what, uint32_t value, uint32_t lo, uint32_t hi);

}  // namespace linfer
