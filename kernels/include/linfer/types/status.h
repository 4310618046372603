// SPDX-License-Identifier: Apache-2.0
// The one error vocabulary of the layers below the C API (the kernels, the format and the
// runtime) and of the converter (tools/convert, whose main prints a failure as its one line): a
// Status (a linfer_status code, linfer/linfer_status.h, and the message of the place that failed)
// and Result<T> (a value, or the Status of why there is none). The C API (runtime/src/c_api.cc)
// hands the code and the message to its caller as they are: an allocation that fails stays
// LINFER_ERROR_OUT_OF_MEMORY, a bad model LINFER_ERROR_INVALID_MODEL, a feature the build left out
// LINFER_ERROR_UNSUPPORTED.
//
// Every message is formatted by one function out of line, message() ("{}" for each argument: a
// text, an integer, signed or not, or a shape; the failures that take a text and arguments use
// it): concatenating std::strings in place was most of a microcontroller's code for them. On bare
// metal (LINFER_TERSE_ERRORS) a number or a shape is left out unless wrapped in kept(): the
// format's checks name the field or tensor and what is wrong, LINFER_DETAILED(full, terse) picking
// each check's shorter text, while the runtime's messages keep their numbers (kept(v)), values the
// caller gave or must see to act on them (a session option, an input's length, an arena's size).
// Elsewhere every message keeps its details.
//
// A successful Status holds an empty string and allocates nothing, so run() returns one too.
// (Namespace linfer::err, not linfer: linfer::Status is the C++ wrapper's, linfer.hpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "linfer/linfer_status.h"
#include "linfer/types/aligned_alloc.h"

#ifndef LINFER_TERSE_ERRORS
#define LINFER_TERSE_ERRORS LINFER_BARE_METAL
#endif
#if LINFER_TERSE_ERRORS
#define LINFER_DETAILED(full, terse) terse
#else
#define LINFER_DETAILED(full, terse) full
#endif

namespace linfer::err {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(linfer_status code, std::string message) : message_(std::move(message)), code_(code) {}

  bool ok() const { return code_ == LINFER_OK; }
  linfer_status code() const { return code_; }
  const std::string& message() const { return message_; }
  // The same failure with `context` before its message (what the caller was reading: "tokenizer:
  // ", a file's name); success stays success.
  Status within(const std::string& context) &&;

 private:
  std::string message_;
  linfer_status code_ = LINFER_OK;
};

// An integer of a message: its magnitude and sign.
struct MessageNumber {
  uint64_t magnitude;
  bool negative;
};
template <class Int>
MessageNumber message_number(Int v) {
  static_assert(std::is_integral_v<Int>, "a message's numbers are integers");
  if constexpr (std::is_signed_v<Int>)
    if (v < 0) return {0 - uint64_t(v), true};
  return {uint64_t(v), false};
}
// A number that the message keeps on bare metal too (LINFER_TERSE_ERRORS): message("{}", kept(v)).
struct KeptNumber {
  MessageNumber value;
};
template <class Int>
KeptNumber kept(Int v) {
  return {message_number(v)};
}

// One argument of a message: a string, a number or a shape. (With LINFER_TERSE_ERRORS a number's,
// unless kept(), or a shape's value is not kept: it is never printed.)
struct MessageArg {
  enum Kind : uint8_t { kText, kNumber, kShape } kind;
  bool kept = false;      // a number printed on bare metal too
  bool negative = false;  // a number's sign (`number` holds its magnitude)
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
    if (!LINFER_TERSE_ERRORS) set_number(message_number(v));
  }
  MessageArg(KeptNumber v) : kind(kNumber), kept(true) { set_number(v.value); }
  MessageArg(const std::vector<uint32_t>& s) : MessageArg(s.data(), uint32_t(s.size())) {}
  MessageArg(const uint32_t* dims, uint32_t rank) : kind(kShape) {
    if (!LINFER_TERSE_ERRORS) shape = {dims, rank};
  }

 private:
  void set_number(MessageNumber v) {
    number = v.magnitude;
    negative = v.negative;
  }
};

// `text` with each "{}" replaced by the next argument (strings and kept numbers only when
// LINFER_TERSE_ERRORS: a terse text's "{}" take those arguments, in order).
std::string format_message(const char* text, const MessageArg* args, size_t count);
// The same as a failure with `code`; (invalid_model_message: LINFER_ERROR_INVALID_MODEL, the
// format's checks' code, without an argument more at each of them).
Status format_status(linfer_status code, const char* text, const MessageArg* args, size_t count);
Status invalid_model_message(const char* text, const MessageArg* args, size_t count);
// "[2,3]": a shape, always with its numbers.
void append_shape(std::string* out, const uint32_t* dims, size_t rank);

template <class... Args>
std::string message(const char* text, const Args&... args) {
  const MessageArg list[sizeof...(Args) + 1] = {MessageArg(args)...};
  return format_message(text, list, sizeof...(Args));
}

// A failure of each kind, its message given whole (a std::string) or formatted (a text with "{}"
// and its arguments: message()).
Status invalid_argument(std::string message);
Status invalid_model(std::string message);
Status unsupported(std::string message);
Status internal_error(std::string message);
Status invalid_model(const char* text);
template <class... Args>
Status failure(linfer_status code, const char* text, const Args&... args) {
  const MessageArg list[sizeof...(Args) + 1] = {MessageArg(args)...};
  return format_status(code, text, list, sizeof...(Args));
}
template <class A, class... Args>
Status invalid_model(const char* text, const A& a, const Args&... args) {
  const MessageArg list[] = {MessageArg(a), MessageArg(args)...};
  return invalid_model_message(text, list, sizeof...(Args) + 1);
}
template <class A, class... Args>
Status invalid_argument(const char* text, const A& a, const Args&... args) {
  return failure(LINFER_ERROR_INVALID_ARGUMENT, text, a, args...);
}
template <class A, class... Args>
Status unsupported(const char* text, const A& a, const Args&... args) {
  return failure(LINFER_ERROR_UNSUPPORTED, text, a, args...);
}
template <class A, class... Args>
Status internal_error(const char* text, const A& a, const Args&... args) {
  return failure(LINFER_ERROR_INTERNAL, text, a, args...);
}

// An allocation of `bytes` bytes for `what` failed: "out of memory allocating <bytes> bytes for
// <what>".
Status out_of_memory(const std::string& what, uint64_t bytes);

// Runs fn, which allocates about `bytes` bytes for `what` (a container growing, a new): a
// std::bad_alloc it throws becomes out_of_memory(what, bytes). fn returns void or a Status.
// Without exceptions (bare metal) the heap is asked first (heap_has_room: a block of that size
// taken and given back), so that a size read from a bad model is refused, not allocated.
template <class Fn>
Status allocating(const std::string& what, uint64_t bytes, Fn&& fn) {
#if defined(__cpp_exceptions)
  try {
#else
  if (!heap_has_room(bytes)) return out_of_memory(what, bytes);
#endif
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      return {};
    } else {
      return fn();
    }
#if defined(__cpp_exceptions)
  } catch (const std::bad_alloc&) {
    return out_of_memory(what, bytes);
  }
#endif
}

// A value, or the Status of the failure that left none.
template <class T>
class [[nodiscard]] Result {
 public:
  // Implicit, as ExecuTorch's Result: `return value;` and `return status;` both work.
  Result(T&& value) : value_(std::move(value)) {}       // NOLINT
  Result(const T& value) : value_(value) {}             // NOLINT
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = internal_error("a Result was made from a success without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Only on success.
  T& value() { return *value_; }
  const T& value() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace linfer::err
