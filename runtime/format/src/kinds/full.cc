// SPDX-License-Identifier: Apache-2.0
// Full softmax attention's part of the format: no fields and no tensors of its own; it takes
// rotary positions.
#include "format_kind.h"

namespace linfer {

extern const FormatKind kFullSoftmaxFormat = {
    AttentionKind::FullSoftmax,
    /*causal=*/false,
    /*rotary=*/true,
    /*queries_are_keys=*/false,
    /*fields=*/nullptr,
    /*field_count=*/0,
    /*defaults=*/nullptr,
    /*defaults_size=*/0,
    /*check_config=*/nullptr,
    /*slots=*/nullptr,
    /*slot_count=*/0,
    /*expected=*/nullptr,
    /*check_slot=*/nullptr,
    /*check_layers=*/nullptr,
    /*check_values=*/nullptr,
    /*kv_panel_groups=*/nullptr LINFER_CONVERTER_DEFAULTS(nullptr),
};

}  // namespace linfer
