// SPDX-License-Identifier: Apache-2.0
// The error vocabulary's code (linfer/types/status.h): out of line, as every caller's failures are
// cold and a microcontroller's flash counts each inlined string operation.
#include "linfer/types/status.h"

namespace linfer::err {

Status Status::within(const std::string& context) && {
  if (!ok()) message_.insert(0, context);
  return std::move(*this);
}

namespace {

// A number in decimal (std::to_string's code, inlined at each call, was larger).
void append_decimal(std::string* out, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do digits[n++] = char('0' + v % 10);
  while (v /= 10);
  while (n) *out += digits[--n];
}

// Whether a terse message (LINFER_TERSE_ERRORS) prints the argument: its strings and kept numbers.
bool terse_prints(const MessageArg& a) { return a.kind == MessageArg::kText || a.kept; }

}  // namespace

void append_shape(std::string* out, const uint32_t* dims, size_t rank) {
  *out += '[';
  for (size_t i = 0; i < rank; ++i) {
    if (i) *out += ',';
    append_decimal(out, dims[i]);
  }
  *out += ']';
}

std::string format_message(const char* text, const MessageArg* args, size_t count) {
  std::string out;
  size_t next = 0;
  for (const char* p = text; *p; ++p) {
    if (p[0] != '{' || p[1] != '}') {
      out += *p;
      continue;
    }
    ++p;
    if (LINFER_TERSE_ERRORS)  // (a terse text takes only the strings and the kept numbers)
      while (next < count && !terse_prints(args[next])) ++next;
    if (next == count) continue;
    const MessageArg& a = args[next++];
    if (a.kind == MessageArg::kText) {
      out += a.text;
    } else if (a.kind == MessageArg::kNumber) {
      if (a.negative) out += '-';
      append_decimal(&out, a.number);
    } else {
      append_shape(&out, a.shape.dims, a.shape.rank);
    }
  }
  return out;
}

Status format_status(linfer_status code, const char* text, const MessageArg* args, size_t count) {
  return {code, format_message(text, args, count)};
}
Status invalid_model_message(const char* text, const MessageArg* args, size_t count) {
  return format_status(LINFER_ERROR_INVALID_MODEL, text, args, count);
}

Status invalid_argument(std::string message) { return {LINFER_ERROR_INVALID_ARGUMENT, std::move(message)}; }
Status invalid_model(std::string message) { return {LINFER_ERROR_INVALID_MODEL, std::move(message)}; }
Status unsupported(std::string message) { return {LINFER_ERROR_UNSUPPORTED, std::move(message)}; }
Status internal_error(std::string message) { return {LINFER_ERROR_INTERNAL, std::move(message)}; }
Status invalid_model(const char* text) { return {LINFER_ERROR_INVALID_MODEL, text}; }

Status out_of_memory(const std::string& what, uint64_t bytes) {
  return failure(LINFER_ERROR_OUT_OF_MEMORY, "out of memory allocating {} bytes for {}", kept(bytes), what);
}

}  // namespace linfer::err
