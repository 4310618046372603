// SPDX-License-Identifier: Apache-2.0
// Legacy torch.save stream (PyTorch < 1.6, or torch.save(..., _use_new_zipfile_serialization=False)),
// as written by torch/serialization.py _legacy_save and read by _legacy_load:
//
//   1. pickle of MAGIC_NUMBER 0x1950a86a20f9469cfc6c (LONG1)
//   2. pickle of PROTOCOL_VERSION 1001
//   3. pickle of sys_info {'protocol_version': 1001, 'little_endian': True,
//                          'type_sizes': {'short': 2, 'int': 4, 'long': 4}}
//   4. the object pickle; storages are persistent ids
//      ('storage', StorageClass, key, location, numel, view_metadata=None)
//   5. pickle of the list of storage keys (sorted as strings by the writer)
//   6. for each key of that list, in its order: int64 little-endian element count, then
//      count * element_size raw bytes.
//
// Every pickle goes through the restricted unpickler. Checks beyond torch's own: the magic pickle is
// byte-exact, sys_info must say little-endian with the usual type sizes, every storage used by the
// object pickle has exactly one record, the key list names nothing else, each record's count
// equals the persistent id's numel, records lie inside the file, and at most 4095 zero bytes may
// follow the last record.
#include <unordered_map>
#include <unordered_set>

#include "reader_internal.h"

namespace linfer::convert::detail {
namespace {

// LONG1 of the magic number: 0x8a, 10 bytes, then the little-endian two's-complement value.
constexpr uint8_t kMagicLong1[12] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocolVersion = 1001;
constexpr uint64_t kMagicSearch = 64;         // is_legacy_torch looks for the magic this far
constexpr uint64_t kMaxTrailingZeros = 4095;  // zero padding tolerated after the last record

// Offset of the magic LONG1 bytes within the first kMagicSearch bytes, or UINT64_MAX.
uint64_t find_magic(const uint8_t* d, uint64_t n) {
  const uint64_t limit = n < kMagicSearch ? n : kMagicSearch;
  for (uint64_t at = 0; at + sizeof kMagicLong1 <= limit; ++at)
    if (std::memcmp(d + at, kMagicLong1, sizeof kMagicLong1) == 0) return at;
  return UINT64_MAX;
}

// Checks that the file starts with exactly the magic-number pickle: PROTO 2..5, for protocol 4+
// optionally FRAME of 13 bytes, LONG1 magic, STOP. Returns its length.
uint64_t read_magic_pickle(const uint8_t* d, uint64_t n) {
  const uint64_t found = find_magic(d, n);
  uint64_t pos = 2;
  const uint8_t proto = d[1];
  if (proto >= 4 && n >= pos + 9 && d[pos] == 0x95) {
    if (load_u64(d + pos + 1) != sizeof kMagicLong1 + 1)
      fail("the magic-number pickle has a FRAME of {} bytes (expected 13)", load_u64(d + pos + 1));
    pos += 9;
  }
  if (found != pos)
    fail("the file must start with the magic-number pickle, but the magic number is at offset {} instead of {}", found,
         pos);
  pos += sizeof kMagicLong1;
  if (pos >= n || d[pos] != '.') fail("the magic-number pickle does not end with STOP at offset {}", pos);
  return pos + 1;
}

struct Referenced {
  SourceDType dtype;
  uint64_t numel;
  uint64_t bytes;
};

class LegacyReader {
 public:
  LegacyReader(const uint8_t* data, uint64_t size, Checkpoint* out) : d_(data), n_(size), out_(out) {}

  void run() {
    pos_ = read_magic_pickle(d_, n_);
    auto arena = std::make_shared<ValueArena>();  // one arena, so kMaxValues bounds the whole file
    arena_ = arena.get();

    const Value* version = next("protocol-version pickle", nullptr);
    if (version->kind != Value::Kind::Int)
      fail("the protocol version is a {}, not {}", version->kind_name(), kLegacyProtocolVersion);
    if (version->integer != kLegacyProtocolVersion)
      fail("invalid protocol version {} (expected {})", version->integer, kLegacyProtocolVersion);

    check_sys_info(next("sys_info pickle", nullptr));

    StorageResolver resolve = [this](const StorageRequest& req) { reference(req); };
    Value* root = next("object pickle", &resolve);

    const uint64_t keys_at = pos_;
    const Value* keys = next("storage key list pickle", nullptr);
    check_keys(keys, keys_at);
    read_records(keys);
    check_trailing();

    out_->format = "torch-legacy";
    out_->root = std::shared_ptr<Value>(arena, root);
    select_state_dict(root, out_);
  }

 private:
  // Unpickles the pickle at pos_ and moves pos_ past its STOP.
  Value* next(const char* what, const StorageResolver* resolve) {
    if (pos_ >= n_) fail("the file ends before the {} (offset {})", what, pos_);
    static const StorageResolver no_storages = [](const StorageRequest&) {};
    UnpickleOptions options;
    options.persistent_ids =
        resolve ? UnpickleOptions::PersistentIds::Legacy : UnpickleOptions::PersistentIds::Forbidden;
    options.stop_at_stop = true;
    options.base_offset = pos_;
    options.what = what;
    size_t consumed = 0;
    Value* v = unpickle(d_ + pos_, size_t(n_ - pos_), arena_, resolve ? *resolve : no_storages, options, &consumed);
    pos_ += consumed;
    return v;
  }

  void check_sys_info(const Value* info) {
    if (info->kind != Value::Kind::Dict) fail("sys_info is a {}, not a dict", info->kind_name());
    const Value* version = info->get("protocol_version");
    if (!version || version->kind != Value::Kind::Int || version->integer != kLegacyProtocolVersion)
      fail("sys_info 'protocol_version' is not {}", kLegacyProtocolVersion);
    const Value* little = info->get("little_endian");
    if (!little || little->kind != Value::Kind::Bool) fail("sys_info has no boolean 'little_endian'");
    if (!little->boolean)
      refuse(
          "the file was written on a big-endian machine (sys_info little_endian is False); "
          "big-endian files are not supported");
    const Value* sizes = info->get("type_sizes");
    if (!sizes || sizes->kind != Value::Kind::Dict) fail("sys_info has no 'type_sizes' dict");
    // torch writes short 2, int 4, long 4 on every platform; long 8 is tolerated. None of them
    // affects the storage records, whose element sizes come from the storage classes.
    struct Expected {
      const char* name;
      int64_t a, b;
    };
    for (const Expected& e : {Expected{"short", 2, 2}, Expected{"int", 4, 4}, Expected{"long", 4, 8}}) {
      const Value* v = sizes->get(e.name);
      if (v && v->kind == Value::Kind::Int && (v->integer == e.a || v->integer == e.b)) continue;
      const std::string found = !v                            ? "missing"
                                : v->kind == Value::Kind::Int ? err::message("{}", v->integer)
                                                              : err::message("a {}", v->kind_name());
      if (e.a != e.b) fail("sys_info type_sizes '{}' is {} (expected {} or {})", e.name, found, e.a, e.b);
      fail("sys_info type_sizes '{}' is {} (expected {})", e.name, found, e.a);
    }
  }

  // A storage persistent id in the object pickle (called once per reference).
  void reference(const StorageRequest& req) {
    uint64_t bytes;
    if (!mul_u64(req.numel, dtype_size(req.dtype), &bytes))
      fail("storage {} element count {} is too large", quote(req.key), req.numel);
    auto it = referenced_.find(req.key);
    if (it != referenced_.end()) {
      if (it->second.dtype != req.dtype || it->second.numel != req.numel)
        fail("storage {} is referenced with two different dtypes or sizes", quote(req.key));
      return;
    }
    referenced_.emplace(req.key, Referenced{req.dtype, req.numel, bytes});
    reference_order_.push_back(req.key);
  }

  void check_keys(const Value* keys, uint64_t at) {
    if (keys->kind != Value::Kind::List)
      fail("the storage key list at offset {} is a {}, not a list", at, keys->kind_name());
    std::unordered_set<std::string_view> seen;
    for (const Value* k : keys->items) {
      if (k->kind != Value::Kind::String) fail("the storage key list holds a {}, not a string", k->kind_name());
      if (!seen.insert(k->text).second) fail("storage key {} appears twice in the key list", quote(k->text));
      if (!referenced_.count(k->text))
        fail(
            "storage key {} in the key list is not used by the object pickle (torch.load refuses this too, and "
            "the record's element size is unknown)",
            quote(k->text));
    }
    if (seen.size() != referenced_.size()) {
      for (const std::string& key : reference_order_)  // name the first missing one in pickle order
        if (!seen.count(key))
          fail("storage {} used by the object pickle is missing from the storage key list ({} missing)", quote(key),
               referenced_.size() - seen.size());
    }
  }

  void read_records(const Value* keys) {
    for (const Value* k : keys->items) {
      const Referenced& ref = referenced_.at(k->text);
      const std::string what = err::message("storage {} record at offset {}", quote(k->text), pos_);
      if (n_ - pos_ < 8)
        fail("{} is truncated: it needs an 8-byte element count but the file has {} bytes left", what, n_ - pos_);
      const int64_t count = int64_t(load_u64(d_ + pos_));
      if (count < 0) fail("{} has a negative element count ({})", what, count);
      if (uint64_t(count) != ref.numel)
        fail("{} holds {} elements but the object pickle says {}", what, count, ref.numel);
      const uint64_t start = pos_ + 8;
      if (ref.bytes > n_ - start)
        fail("{} needs {} bytes ({} x {}) but the file has only {} bytes left", what, ref.bytes, ref.numel,
             dtype_name(ref.dtype), n_ - start);
      Storage s;
      s.key = k->text;
      s.dtype = ref.dtype;
      s.data = d_ + start;
      s.bytes = ref.bytes;
      out_->storages.emplace(s.key, std::move(s));
      pos_ = start + ref.bytes;
    }
  }

  void check_trailing() {
    const uint64_t rest = n_ - pos_;
    if (rest == 0) return;
    bool zeros = rest <= kMaxTrailingZeros;
    for (uint64_t i = pos_; zeros && i < n_; ++i) zeros = d_[i] == 0;
    if (!zeros)
      fail(
          "{} trailing bytes after the last storage record at offset {} (at most {} zero bytes of padding are "
          "accepted)",
          rest, pos_, kMaxTrailingZeros);
  }

  const uint8_t* d_;
  uint64_t n_;
  Checkpoint* out_;
  uint64_t pos_ = 0;
  ValueArena* arena_ = nullptr;
  std::unordered_map<std::string, Referenced> referenced_;
  std::vector<std::string> reference_order_;
};

}  // namespace

bool is_legacy_torch(const uint8_t* d, uint64_t n) {
  return n >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5 && find_magic(d, n) != UINT64_MAX;
}

void parse_torch_legacy(const uint8_t* data, uint64_t size, Checkpoint* out) {
  try {
    LegacyReader(data, size, out).run();
  } catch (ReaderError& e) {
    throw ReaderError{std::move(e.status).within("legacy torch.save: ")};
  }
}

}  // namespace linfer::convert::detail
