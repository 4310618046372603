// SPDX-License-Identifier: Apache-2.0
// The schema's attention kinds and their modules. Which modules this build has comes from
// -DLINFER_ATTENTION_KINDS: runtime/CMakeLists.txt generates attention_kinds.inc (the built
// modules' entries) from the table of kinds, schema/attention_kinds.txt.
#include <string>

#include "attention/attention_kind.h"
#include "attention_kinds.inc"

namespace linfer::rt {

LINFER_ATTENTION_KINDS_DECLARED

const AttentionKindInfo* attention_kind_info(AttentionKind kind) {
  static const AttentionKindInfo* const kinds[] = {LINFER_ATTENTION_KINDS_BUILT};
  for (const AttentionKindInfo* info : kinds)
    if (info->kind == kind) return info;
  return nullptr;
}

Status attention_kind_built(AttentionKind kind) {
  if (attention_kind_info(kind)) return {};
  const char* name = to_string(kind);
  return unsupported("attention kind '{}' is not in this build (configure with -DLINFER_ATTENTION_KINDS including {})",
                     name, name);
}

}  // namespace linfer::rt
