// SPDX-License-Identifier: Apache-2.0
// The runtime's names for the one error vocabulary (linfer/types/status.h: Status, Result and the
// failures' helpers), which the kernels, the format and the converter share: every function inside
// runtime/src that can fail returns a Status or a Result, and the C API (c_api.cc) hands the code
// and the message to its caller as they are. Messages are formatted by message() (or the failures
// that take a text and its arguments); their numbers are what the caller gave or must see, so
// they are kept(): printed on bare metal too.
#pragma once

#include "linfer/types/status.h"

namespace linfer::rt {

using err::allocating;
using err::failure;
using err::internal_error;
using err::invalid_argument;
using err::invalid_model;
using err::kept;
using err::message;
using err::out_of_memory;
using err::Result;
using err::Status;
using err::unsupported;

}  // namespace linfer::rt
