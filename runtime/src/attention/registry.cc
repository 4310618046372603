// SPDX-License-Identifier: Apache-2.0
// The schema's attention kinds and their modules. Which modules this build has comes from
// -DLINFER_ATTENTION_KINDS: runtime/CMakeLists.txt generates attention_kinds.inc (the built
// modules' entries) from the table of kinds, schema/attention_kinds.txt.
#include <string>

#include "attention/attention_kind.h"
#include "attention_kinds.inc"

namespace linfer::rt {

LINFER_ATTENTION_KINDS_DECLARED

namespace {
const AttentionKindInfo* const kBuilt[] = {LINFER_ATTENTION_KINDS_BUILT};
}  // namespace

const AttentionKindInfo* attention_kind_info(AttentionKind kind) {
  for (const AttentionKindInfo* info : kBuilt)
    if (info->kind == kind) return info;
  return nullptr;
}

Status steps_not_defined() {
#if !LINFER_TERSE_ERRORS
  std::string kinds;
  for (const AttentionKindInfo* info : kBuilt)
    if (info->steps) kinds += std::string(kinds.empty() ? "" : " or ") + to_string(info->kind);
  if (kinds.empty())
    return invalid_argument("token-by-token runs are not defined for the attention kinds of this build");
  return invalid_argument("token-by-token runs need a causal model of {} attention", kinds);
#else
  return invalid_argument("token-by-token runs are not defined for this model");
#endif
}

Status attention_kind_built(AttentionKind kind) {
  if (attention_kind_info(kind)) return {};
  const char* name = to_string(kind);
  return unsupported("attention kind '{}' is not in this build (configure with -DLINFER_ATTENTION_KINDS including {})",
                     name, name);
}

}  // namespace linfer::rt
