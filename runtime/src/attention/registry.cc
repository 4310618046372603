// SPDX-License-Identifier: Apache-2.0
// The schema's attention kinds and their modules. Which modules this build has comes from
// -DLINFER_ATTENTION_KINDS: runtime/CMakeLists.txt's table of modules generates attention_kinds.inc
// (the built entries, and every kind's name for the refusal of one left out).
#include <string>

#include "attention/attention_kind.h"
#include "attention_kinds.inc"

namespace linfer::rt {

const AttentionKindInfo* attention_kind_info(AttentionKind kind) {
  static const AttentionKindInfo* const kinds[] = {LINFER_ATTENTION_KINDS_BUILT};
  for (const AttentionKindInfo* info : kinds)
    if (info->kind == kind) return info;
  return nullptr;
}

Status attention_kind_built(AttentionKind kind) {
  if (attention_kind_info(kind)) return {};
  struct Name {
    AttentionKind kind;
    const char* name;
  };
  static const Name names[] = {LINFER_ATTENTION_KIND_NAMES};
  std::string name = to_string(kind);
  for (const Name& n : names)
    if (n.kind == kind) name = n.name;
  return unsupported("attention kind '" + name + "' is not in this build (configure with " +
                     "-DLINFER_ATTENTION_KINDS including " + name + ")");
}

}  // namespace linfer::rt
