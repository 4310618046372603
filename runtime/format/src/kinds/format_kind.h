// SPDX-License-Identifier: Apache-2.0
// An attention kind's part of the format: the checks of its configuration fields, the slots of its
// tensors and their shapes. One file per kind in this folder, named by the table of kinds
// (schema/attention_kinds.txt, its format column), each defining the kind's k<Enum>Format; the
// generated format_kinds.inc lists them for registry.cc. encoder.cc `validate_description` asks
// the model's kind through this interface and knows no kind itself.
#pragma once

#include <cstdint>
#include <string>

#include "../message.h"
#include "linfer/format/encoder.h"

namespace linfer {

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
  // Its configuration fields: in range in a model of this kind (`own`), unset in the others'.
  // Null: it has none.
  std::string (*check_config)(const EncoderConfig& c, bool own);
  // Its slots (the tensors only it reads) and, in a model of this kind, the shape of each
  // (`layer`: the slot's layer, null for the model's own slots).
  const Slot* slots;
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

// Shared by the checks: sets *err and returns true when value is outside [lo, hi].
bool out_of_range(std::string* err, const char* what, uint32_t value, uint32_t lo, uint32_t hi);

}  // namespace linfer
