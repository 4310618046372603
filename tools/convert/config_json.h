// SPDX-License-Identifier: Apache-2.0
// The linfer layout's configuration JSON (docs/converter.md) -> EncoderConfig.
#pragma once

#include <string>

#include "linfer/format/encoder.h"

namespace linfer::convert {
// Returns "" or a one-line message naming the bad key or value. Unknown keys are refused.
std::string parse_linfer_config(const std::string& json_text, EncoderConfig* out);
}  // namespace linfer::convert
