// SPDX-License-Identifier: Apache-2.0
// The converter's JSON files (config.json, tokenizer.json, vocab.json, ...) parsed in one place.
// nlohmann's parser is a template that every file calling it compiles again: about 3 seconds of
// compile time per file at -O3, and 12 under AddressSanitizer, in each of the suite's builds.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace linfer::convert {

// The document `text` holds, or a discarded value (is_discarded()) when it is not valid JSON.
nlohmann::json parse_json(const std::string& text);

}  // namespace linfer::convert
