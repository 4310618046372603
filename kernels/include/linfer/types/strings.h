// SPDX-License-Identifier: Apache-2.0
// String helpers C++17 lacks, shared by the format (slot names) and the converter (file names).
#pragma once

#include <cstring>
#include <string>

namespace linfer {

inline bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace linfer
