// SPDX-License-Identifier: Apache-2.0
// The linfer layout's configuration JSON (docs/converter.md) -> EncoderConfig.
#pragma once

#include <string>

#include "linfer/format/encoder.h"

namespace linfer::convert {
// The configuration, or LINFER_ERROR_INVALID_MODEL naming the bad key or value. Unknown keys are
// refused.
err::Result<EncoderConfig> parse_linfer_config(const std::string& json_text);
}  // namespace linfer::convert
