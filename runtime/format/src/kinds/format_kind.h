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
// KB of a microcontroller's code. A field the file does not hold keeps EncoderConfig's default,
// which is the schema's.
struct ConfigField {
  uint8_t field;                                     // vtable offset in its table (version 4)
  uint8_t legacy_field;                              // vtable offset in Config (versions 1 to 3); 0: none
  uint8_t offset;                                    // in EncoderConfig
  enum Kind : uint8_t { kByte, kBool, kWord } kind;  // an enum, a bool, or a uint32_t or float
};
#define LINFER_CONFIG_FIELD_AT(field, legacy_field, name)                                  \
  ::linfer::ConfigField {                                                                  \
    field, legacy_field, offsetof(EncoderConfig, name),                                    \
        std::is_same_v<decltype(EncoderConfig::name), bool> ? ::linfer::ConfigField::kBool \
        : sizeof(EncoderConfig::name) == 4                  ? ::linfer::ConfigField::kWord \
                                                            : ::linfer::ConfigField::kByte \
  }
// A field of the kind's table that versions 1 to 3 held in Config, under the same name.
#define LINFER_CONFIG_FIELD_OF(Table, name, VT) \
  LINFER_CONFIG_FIELD_AT(::linfer::fb::Table::VT, ::linfer::fb::Config::VT, name)
// A field only version 4 has (a kind newer than version 4: files of versions 1 to 3 cannot be of it).
#define LINFER_CONFIG_FIELD_V4(Table, name, VT) LINFER_CONFIG_FIELD_AT(::linfer::fb::Table::VT, 0, name)

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
  // Its configuration fields (may be none).
  const ConfigField* fields;
  uint32_t field_count;
  // Its configuration fields: in range in a model of this kind (`own`), unset in the others'.
  // Null: it has none.
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
