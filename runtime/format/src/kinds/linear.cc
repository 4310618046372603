// SPDX-License-Identifier: Apache-2.0
// Linear attention's (elu + 1 features) part of the format: no fields and no tensors of its own;
// it has a causal mode and takes rotary positions.
#include "format_kind.h"

namespace linfer {

extern const FormatKind kLinearEluFormat = {
    AttentionKind::LinearElu, true, true, false, nullptr, nullptr, 0, nullptr, nullptr, nullptr, nullptr};

}  // namespace linfer
