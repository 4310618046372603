// SPDX-License-Identifier: Apache-2.0
// The reader's and validator's failure messages, formatted by one function out of line: each check
// passes its text and arguments instead of concatenating std::strings in place (on a
// microcontroller, that inlined concatenation was most of the format's code).
//
// On bare metal (LINFER_TERSE_ERRORS) the numbers and shapes are left out: a message names the
// field or tensor and what is wrong, LINFER_DETAILED(full, terse) picks each check's shorter text,
// and no number is formatted. Elsewhere every message keeps its details.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#ifndef LINFER_TERSE_ERRORS
#define LINFER_TERSE_ERRORS LINFER_BARE_METAL
#endif
#if LINFER_TERSE_ERRORS
#define LINFER_DETAILED(full, terse) terse
#else
#define LINFER_DETAILED(full, terse) full
#endif

namespace linfer {

// One argument of a message: a string, a number or a shape. (With LINFER_TERSE_ERRORS a number's or
// a shape's value is not kept: it is never printed.)
struct MessageArg {
  enum Kind : uint8_t { kText, kNumber, kShape } kind;
  union {
    const char* text;
    uint64_t number;
    struct {
      const uint32_t* dims;
      uint32_t rank;
    } shape;
  };
  MessageArg() : MessageArg("") {}
  MessageArg(const char* s) : kind(kText), text(s) {}
  MessageArg(const std::string& s) : kind(kText), text(s.c_str()) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  MessageArg(T v) : kind(kNumber) {
    if (!LINFER_TERSE_ERRORS) number = uint64_t(v);
  }
  MessageArg(const std::vector<uint32_t>& s) : MessageArg(s.data(), uint32_t(s.size())) {}
  MessageArg(const uint32_t* dims, uint32_t rank) : kind(kShape) {
    if (!LINFER_TERSE_ERRORS) shape = {dims, rank};
  }
};

// `text` with each "{}" replaced by the next argument (strings only when LINFER_TERSE_ERRORS: a
// terse text's "{}" take the string arguments, in order).
std::string format_message(const char* text, const MessageArg* args, size_t count);

template <class... Args>
std::string message(const char* text, const Args&... args) {
  const MessageArg list[sizeof...(Args) + 1] = {MessageArg(args)...};
  return format_message(text, list, sizeof...(Args));
}

// "layers.N": a layer's name in the messages of the checks that go by layer.
std::string layer_name(size_t i);

}  // namespace linfer
