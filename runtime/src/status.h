// SPDX-License-Identifier: Apache-2.0
// The runtime's one error vocabulary: a Status (a linfer_status code and the message of the place
// that failed) and Result<T> (a value, or the Status of why there is none). Every function inside
// runtime/src that can fail returns one of them, and the C API (c_api.cc) hands the code and the
// message to its caller as they are: an allocation that fails stays LINFER_ERROR_OUT_OF_MEMORY,
// a bad model LINFER_ERROR_INVALID_MODEL, a feature the build left out LINFER_ERROR_UNSUPPORTED.
// (The kernels and the format library below keep returning "" or a message; the runtime gives
// their messages a code where it calls them.)
//
// A successful Status holds an empty string and allocates nothing, so run() returns one too.
#pragma once

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "linfer/linfer.h"
#include "linfer/types/aligned_alloc.h"

namespace linfer::rt {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(linfer_status code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == LINFER_OK; }
  linfer_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  linfer_status code_ = LINFER_OK;
  std::string message_;
};

// An integer in decimal for a message: std::to_string out of line (inlined at each of the
// messages' calls, it cost a microcontroller build about 150 bytes each).
std::string decimal_signed(long long v);
std::string decimal_unsigned(unsigned long long v);
template <class Int>
std::string decimal(Int v) {
  static_assert(std::is_integral_v<Int>, "decimal: integers only");
  if constexpr (std::is_signed_v<Int>)
    return decimal_signed(v);
  else
    return decimal_unsigned(v);
}

inline Status invalid_argument(std::string message) { return {LINFER_ERROR_INVALID_ARGUMENT, std::move(message)}; }
inline Status invalid_model(std::string message) { return {LINFER_ERROR_INVALID_MODEL, std::move(message)}; }
inline Status unsupported(std::string message) { return {LINFER_ERROR_UNSUPPORTED, std::move(message)}; }
inline Status internal_error(std::string message) { return {LINFER_ERROR_INTERNAL, std::move(message)}; }

// An allocation of `bytes` bytes for `what` failed: "out of memory allocating <bytes> bytes for
// <what>".
inline Status out_of_memory(const std::string& what, uint64_t bytes) {
  return {LINFER_ERROR_OUT_OF_MEMORY, "out of memory allocating " + decimal(bytes) + " bytes for " + what};
}

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

}  // namespace linfer::rt
