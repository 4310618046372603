// SPDX-License-Identifier: Apache-2.0
// Internal helpers of the checkpoint readers (not part of the public interface).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the checkpoint readers assume a little-endian host"
#endif

namespace linfer::convert::detail {

// A failure thrown inside the readers, a check deep in a parse leaving every level at once; the
// public entry points return its Status.
struct ReaderError {
  err::Status status;
};

// Throws the ReaderError of `code` and err::message(text, args): out of line, so that each check
// adds only its arguments and a call.
[[noreturn]] void throw_reader_error(linfer_status code, const char* text, const err::MessageArg* args, size_t count);

// A malformed checkpoint (LINFER_ERROR_INVALID_MODEL): fail("{} is truncated", what).
template <class... Args>
[[noreturn]] void fail(const char* text, const Args&... args) {
  const err::MessageArg list[sizeof...(Args) + 1] = {err::MessageArg(args)...};
  throw_reader_error(LINFER_ERROR_INVALID_MODEL, text, list, sizeof...(Args));
}
// A format or a variant of one that the readers do not read (LINFER_ERROR_UNSUPPORTED).
template <class... Args>
[[noreturn]] void refuse(const char* text, const Args&... args) {
  const err::MessageArg list[sizeof...(Args) + 1] = {err::MessageArg(args)...};
  throw_reader_error(LINFER_ERROR_UNSUPPORTED, text, list, sizeof...(Args));
}

// 'text' with quotes, non-printable bytes escaped and long strings cut, safe inside a one-line
// message.
std::string quote(std::string_view text);

// Overflow-checked arithmetic on unsigned 64-bit values.
inline bool add_u64(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_add_overflow(a, b, r); }
inline bool mul_u64(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_mul_overflow(a, b, r); }

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (uint16_t(p[1]) << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t load_u64(const uint8_t* p) { return uint64_t(load_u32(p)) | (uint64_t(load_u32(p + 4)) << 32); }

// UTF-8 validation. With allow_surrogates, encoded U+D800..U+DFFF are accepted (Python pickles
// lone surrogates that way with 'surrogatepass'). Returns the offset of the first bad byte or npos.
size_t find_invalid_utf8(std::string_view text, bool allow_surrogates);

// Limits of the readers.
constexpr int kMaxRank = 8;
constexpr uint64_t kMaxSafetensorsHeader = 100000000;  // the reference reader's MAX_HEADER_SIZE
constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxMemo = 1000000;
constexpr size_t kMaxStack = 100000;
constexpr size_t kMaxMarks = 100000;
constexpr uint64_t kMaxPickleString = 64ull << 20;
constexpr size_t kMaxValues = 2000000;
constexpr size_t kMaxGlobalName = 256;

// safetensors: fills format, tensors, storages and metadata (data/size are the whole file).
void parse_safetensors(const uint8_t* data, uint64_t size, Checkpoint* out);

// torch.save zip archive: fills format, tensors, storages, metadata and root.
void parse_torch_zip(const uint8_t* data, uint64_t size, Checkpoint* out);

// Legacy torch.save stream (PyTorch < 1.6, or _use_new_zipfile_serialization=False): fills format,
// tensors, storages, metadata and root. Called when is_legacy_torch() is true.
void parse_torch_legacy(const uint8_t* data, uint64_t size, Checkpoint* out);
// The file starts with a pickle PROTO 2..5 and has the legacy magic number (the LONG1 bytes) within
// its first 64 bytes. parse_torch_legacy then insists that the magic is the whole first pickle.
bool is_legacy_torch(const uint8_t* data, uint64_t size);

// Picks the state dict of an unpickled torch.save object (the root if it is a dict of tensors, else
// its 'state_dict' or 'model' entry) and fills out->tensors and out->metadata; fails if none.
void select_state_dict(const Value* root, Checkpoint* out);

// Owns the Values of one unpickled object.
struct ValueArena {
  std::deque<Value> values;
};

// A storage resolved from a persistent id: the unpickler hands ('storage', class, key, location,
// numel) to this callback, which checks the record and returns its bytes.
struct StorageRequest {
  std::string key;
  std::string location;
  SourceDType dtype;
  uint64_t numel;
};
using StorageResolver = std::function<void(const StorageRequest&)>;

struct UnpickleOptions {
  enum class PersistentIds {
    Forbidden,  // BINPERSID is an error (the small pickles of the legacy format)
    Zip,        // ('storage', StorageClass, key, location, numel)
    Legacy,     // ('storage', StorageClass, key, location, numel, view_metadata=None); 'module' refused
  };
  PersistentIds persistent_ids = PersistentIds::Zip;
  // false: STOP must be the last byte of `data`. true: STOP ends the pickle and the bytes after it
  // belong to the caller (several pickles back to back); *consumed gets the length of the pickle.
  bool stop_at_stop = false;
  // Added to the offsets named in error messages (the position of `data` in the file).
  uint64_t base_offset = 0;
  // Names the pickle in some messages ("data.pkl", "legacy object pickle", ...).
  const char* what = "data.pkl";
};

// Runs the restricted unpickler over `data`. Values go into `arena`; returns the result of STOP.
// If `consumed` is non-null it receives the number of bytes up to and including STOP.
Value* unpickle(const uint8_t* data, size_t size, ValueArena* arena, const StorageResolver& resolve,
                const UnpickleOptions& options = UnpickleOptions(), size_t* consumed = nullptr);

// Checks a tensor view against a storage of `storage_numel` elements; fails naming `what`.
void check_view(const std::string& what, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                uint64_t offset, uint64_t storage_numel);
// Overflow-checked element count of a shape (all dims >= 0); fails naming `what`.
uint64_t checked_numel(const std::string& what, const std::vector<int64_t>& shape);

}  // namespace linfer::convert::detail
