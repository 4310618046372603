// SPDX-License-Identifier: Apache-2.0
// Full softmax attention's part of the format: no fields and no tensors of its own; it takes
// rotary positions.
#include "format_kind.h"

namespace linfer {

extern const FormatKind kFullSoftmaxFormat = {
    AttentionKind::FullSoftmax, false, true, false, nullptr, nullptr, 0, nullptr, nullptr, nullptr, nullptr};

}  // namespace linfer
