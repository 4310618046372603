// SPDX-License-Identifier: Apache-2.0
// The attention kinds' format files (format_kind.h). Which ones this build has comes from the
// table of kinds: runtime/format/CMakeLists.txt generates format_kinds.inc (every kind, or on
// bare metal the kinds built).
#include "format_kind.h"
#include "format_kinds.inc"

namespace linfer {

LINFER_FORMAT_KINDS_DECLARED

const FormatKind* const kFormatKinds[] = {LINFER_FORMAT_KINDS_BUILT nullptr};

const FormatKind* format_kind(AttentionKind kind) {
  for (const FormatKind* const* k = kFormatKinds; *k; ++k)
    if ((*k)->kind == kind) return *k;
  return nullptr;
}

const KindSlot* kind_slot(Slot slot, const FormatKind** owner) {
  for (const FormatKind* const* k = kFormatKinds; *k; ++k)
    for (uint32_t i = 0; i < (*k)->slot_count; ++i)
      if ((*k)->slots[i].slot == slot) {
        *owner = *k;
        return &(*k)->slots[i];
      }
  *owner = nullptr;
  return nullptr;
}

}  // namespace linfer
