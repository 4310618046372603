// SPDX-License-Identifier: Apache-2.0
// The reader's and validator's failures: Status with the messages of the one formatter
// (linfer/types/status.h, message(): each check passes its text and arguments instead of
// concatenating std::strings in place, and on bare metal, LINFER_TERSE_ERRORS, its numbers are
// left out). A check of the format fails with LINFER_ERROR_INVALID_MODEL: invalid_model(text,
// args...).
#pragma once

#include <cstddef>
#include <string>

#include "linfer/types/status.h"

namespace linfer {

// (The format's files include this header only: they name the vocabulary unqualified. Not in a
// public header: linfer::Status is the C++ wrapper's, linfer.hpp.)
using err::invalid_model;
using err::kept;
using err::message;
using err::MessageArg;
using err::Status;

// "layers.N": a layer's name in the messages of the checks that go by layer.
std::string layer_name(size_t i);

}  // namespace linfer
