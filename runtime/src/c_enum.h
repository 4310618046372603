// SPDX-License-Identifier: Apache-2.0
// A C enum as the C caller wrote it: C lets any int through an enum parameter or field, and
// loading a value outside the enumerators through the C++ enum type is undefined behaviour
// (UBSan's -fsanitize=enum), so the C API reads such values as their integer bytes.
#pragma once

#include <cstring>
#include <type_traits>

namespace linfer::rt {

// (C enums are int-sized on Linux; bare-metal Arm's ABI sizes them to their values: a byte there.)
template <class Enum>
int raw_value(const Enum& value) {
  std::underlying_type_t<Enum> v;
  std::memcpy(&v, &value, sizeof v);
  return int(v);
}

}  // namespace linfer::rt
