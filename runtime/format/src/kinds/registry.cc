// SPDX-License-Identifier: Apache-2.0
// The attention kinds' format files (format_kind.h). Which ones this build has comes from the
// table of kinds: runtime/format/CMakeLists.txt generates format_kinds.inc (every kind, or on
// bare metal the kinds built).
#include "format_kind.h"
#include "format_kinds.inc"

#include <cstring>

namespace linfer {

LINFER_FORMAT_KINDS_DECLARED

const FormatKind* const kFormatKinds[] = {LINFER_FORMAT_KINDS_BUILT nullptr};

const FormatKind* format_kind(AttentionKind kind) {
  for (const FormatKind* const* k = kFormatKinds; *k; ++k)
    if ((*k)->kind == kind) return *k;
  return nullptr;
}

const FormatKind* kind_of(const EncoderConfig& c) {
  return uint8_t(c.attention_kind) < kAttentionKindCount ? format_kind(c.attention_kind) : nullptr;
}

const KindSlot* kind_slot_named(const std::string& name) {
  for (const FormatKind* const* k = kFormatKinds; *k; ++k)
    for (uint32_t i = 0; i < (*k)->slot_count; ++i) {
      const KindSlot& s = (*k)->slots[i];
      const size_t n = std::strlen(s.name);
      // (a layer's: "layers.N." + its name)
      if (s.in_layer ? name.size() > n && name[name.size() - n - 1] == '.' &&
                           name.compare(name.size() - n, n, s.name) == 0 && name.compare(0, 7, "layers.") == 0
                     : name == s.name)
        return &s;
    }
  return nullptr;
}

}  // namespace linfer
