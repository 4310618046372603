// SPDX-License-Identifier: Apache-2.0
// Linear attention's (elu + 1 features) part of the format: no fields and no tensors of its own;
// it has a causal mode and takes rotary positions.
#include "format_kind.h"

namespace linfer {

extern const FormatKind kLinearEluFormat = {
    AttentionKind::LinearElu,
    /*causal=*/true,
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
