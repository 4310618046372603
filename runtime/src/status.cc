// SPDX-License-Identifier: Apache-2.0
#include "status.h"

namespace linfer::rt {

std::string decimal_signed(long long v) { return std::to_string(v); }
std::string decimal_unsigned(unsigned long long v) { return std::to_string(v); }

}  // namespace linfer::rt
