// SPDX-License-Identifier: Apache-2.0
#include "json_document.h"

#include <nlohmann/json.hpp>

namespace linfer::convert {

nlohmann::json parse_json(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace linfer::convert
