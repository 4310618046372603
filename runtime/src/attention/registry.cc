// The schema's attention kinds and their modules: one line each.
#include "attention/attention_kind.h"

namespace linfer::rt {

const AttentionKindInfo* attention_kind_info(AttentionKind kind) {
  static const AttentionKindInfo* const kinds[] = {
      &kLinformerAttention,    &kFullAttention,        &kLinearAttention, &kGiveTakeAttention,
      &kPerformerAttention,    &kSlidingWindowAttention, &kBlockSparseAttention, &kLshAttention,
  };
  for (const AttentionKindInfo* info : kinds)
    if (info->kind == kind) return info;
  return nullptr;
}

}  // namespace linfer::rt
