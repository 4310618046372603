// SPDX-License-Identifier: Apache-2.0
// torch.save zip archives (PyTorch >= 1.6): a small stored-only zip/zip64 reader, the archive
// layout checks of caffe2/serialize/inline_container.cc, and state-dict selection.
#include <unordered_map>

#include "reader_internal.h"

namespace linfer::convert::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint64_t kEocdSize = 22;
constexpr uint64_t kCentralSize = 46;
constexpr uint64_t kLocalSize = 30;
constexpr uint64_t kZip64EocdSize = 56;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kMaxSupportedVersion = 10;  // caffe2/serialize/versions.h (kMaxSupportedFileFormatVersion)

struct ZipRecord {
  std::string name;
  uint64_t offset = 0;  // of the data
  uint64_t size = 0;
  uint16_t method = 0;  // 0 = stored; others are refused by parse_torch_zip
};

// [begin, begin + len) inside [0, limit)?
bool in_range(uint64_t begin, uint64_t len, uint64_t limit) {
  uint64_t end;
  return add_u64(begin, len, &end) && end <= limit;
}

std::vector<ZipRecord> read_zip(const uint8_t* d, uint64_t n) {
  if (n < kEocdSize) fail("zip: file too small for an end-of-central-directory record");
  // The EOCD record is the last 22 bytes plus a comment of up to 65535 bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = n - kEocdSize > 65535 ? n - kEocdSize - 65535 : 0;
  for (uint64_t pos = n - kEocdSize;; --pos) {
    if (load_u32(d + pos) == kEocdSig && pos + kEocdSize + load_u16(d + pos + 20) == n) {
      eocd = pos;
      break;
    }
    if (pos == lowest) break;
  }
  if (eocd == UINT64_MAX) fail("zip: no end-of-central-directory record (truncated or not a zip file)");

  uint64_t disk = load_u16(d + eocd + 4), cd_disk = load_u16(d + eocd + 6);
  uint64_t entries_on_disk = load_u16(d + eocd + 8), entries = load_u16(d + eocd + 10);
  uint64_t cd_size = load_u32(d + eocd + 12), cd_offset = load_u32(d + eocd + 16);

  if (eocd >= kZip64LocatorSize && load_u32(d + eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint8_t* loc = d + eocd - kZip64LocatorSize;
    uint64_t z64 = load_u64(loc + 8);
    if (load_u32(loc + 4) != 0 || load_u32(loc + 16) > 1) refuse("zip: multi-disk archives are not supported");
    if (!in_range(z64, kZip64EocdSize, eocd - kZip64LocatorSize))
      fail("zip: ZIP64 end-of-central-directory offset {} is out of range", z64);
    const uint8_t* r = d + z64;
    if (load_u32(r) != kZip64EocdSig) fail("zip: bad ZIP64 end-of-central-directory signature");
    disk = load_u32(r + 16);
    cd_disk = load_u32(r + 20);
    entries_on_disk = load_u64(r + 24);
    entries = load_u64(r + 32);
    cd_size = load_u64(r + 40);
    cd_offset = load_u64(r + 48);
  }
  if (disk != 0 || cd_disk != 0 || entries_on_disk != entries) refuse("zip: multi-disk archives are not supported");
  if (!in_range(cd_offset, cd_size, n))
    fail("zip: central directory (offset {}, {} bytes) lies outside the file ({} bytes)", cd_offset, cd_size, n);
  if (entries > cd_size / kCentralSize)
    fail("zip: central directory of {} bytes cannot hold {} entries", cd_size, entries);

  std::vector<ZipRecord> records;
  records.reserve(size_t(entries));
  std::unordered_map<std::string, size_t> seen;
  const uint64_t cd_end = cd_offset + cd_size;
  uint64_t pos = cd_offset;
  for (uint64_t i = 0; i < entries; ++i) {
    if (!in_range(pos, kCentralSize, cd_end)) fail("zip: central directory entry {} is truncated", i);
    const uint8_t* c = d + pos;
    if (load_u32(c) != kCentralSig) fail("zip: bad central directory signature at entry {}", i);
    const uint16_t flags = load_u16(c + 8), method = load_u16(c + 10);
    uint64_t csize = load_u32(c + 20), usize = load_u32(c + 24);
    const uint64_t name_len = load_u16(c + 28), extra_len = load_u16(c + 30), comment_len = load_u16(c + 32);
    uint64_t disk_start = load_u16(c + 34);
    uint64_t local = load_u32(c + 42);
    if (!in_range(pos + kCentralSize, name_len + extra_len + comment_len, cd_end))
      fail("zip: central directory entry {} is truncated", i);
    ZipRecord rec;
    rec.name.assign(reinterpret_cast<const char*>(c + kCentralSize), size_t(name_len));
    const std::string what = err::message("zip record {}", quote(rec.name));

    // ZIP64 extended information: the fields whose 32-bit value is saturated, in this order.
    const uint8_t* extra = c + kCentralSize + name_len;
    for (uint64_t at = 0; at < extra_len;) {
      if (extra_len - at < 4) fail("{} has a malformed extra field", what);
      const uint16_t id = load_u16(extra + at), len = load_u16(extra + at + 2);
      at += 4;
      if (len > extra_len - at) fail("{} has a malformed extra field", what);
      if (id == 0x0001) {
        const uint8_t* z = extra + at;
        uint64_t zi = 0;
        auto take64 = [&](uint64_t* field) {
          if (len - zi < 8) fail("{} has a truncated ZIP64 extra field", what);
          *field = load_u64(z + zi);
          zi += 8;
        };
        if (usize == 0xffffffffu) take64(&usize);
        if (csize == 0xffffffffu) take64(&csize);
        if (local == 0xffffffffu) take64(&local);
        if (disk_start == 0xffffu) {
          if (len - zi < 4) fail("{} has a truncated ZIP64 extra field", what);
          disk_start = load_u32(z + zi);
        }
      }
      at += len;
    }
    pos += kCentralSize + name_len + extra_len + comment_len;

    if (disk_start != 0) refuse("zip: multi-disk archives are not supported");
    if (flags & 0x1) fail("{} is encrypted", what);
    if (method == 0 && csize != usize) fail("{} is stored but its compressed and uncompressed sizes differ", what);

    if (!in_range(local, kLocalSize, n)) fail("{}: local header offset {} is out of range", what, local);
    const uint8_t* l = d + local;
    if (load_u32(l) != kLocalSig) fail("{}: bad local header signature", what);
    const uint64_t lname = load_u16(l + 26), lextra = load_u16(l + 28);
    if (!in_range(local + kLocalSize, lname + lextra, n)) fail("{}: local header runs past the end of the file", what);
    const std::string_view local_name(reinterpret_cast<const char*>(l + kLocalSize), size_t(lname));
    if (local_name != rec.name)
      fail("{}: local header name {} does not match the central directory", what, quote(local_name));
    if (load_u16(l + 8) != method) fail("{}: local header compression method differs from the central directory", what);
    rec.offset = local + kLocalSize + lname + lextra;
    rec.size = csize;
    rec.method = method;
    if (!in_range(rec.offset, rec.size, n))
      fail("{} ({} bytes at offset {}) runs past the end of the file", what, rec.size, rec.offset);
    if (!seen.emplace(rec.name, records.size()).second) fail("zip: duplicate record {}", quote(rec.name));
    records.push_back(std::move(rec));
  }
  return records;
}

bool is_tensor_dict(const Value* v) {
  if (!v || v->kind != Value::Kind::Dict) return false;
  for (const auto& [k, val] : v->entries)
    if (k->kind != Value::Kind::String || val->kind != Value::Kind::Tensor) return false;
  return true;
}

// Why `v` is not a dict of tensors, for the error message.
std::string not_tensor_dict_reason(const Value* v) {
  if (v->kind != Value::Kind::Dict) return err::message("is a {}", v->kind_name());
  for (const auto& [k, val] : v->entries) {
    if (k->kind != Value::Kind::String) return err::message("has a key of type {}", k->kind_name());
    if (val->kind != Value::Kind::Tensor)
      return err::message("has entry {} of type {}", quote(k->text), val->kind_name());
  }
  return "is a dict of tensors";
}

}  // namespace

void parse_torch_zip(const uint8_t* data, uint64_t size, Checkpoint* out) {
  std::vector<ZipRecord> records = read_zip(data, size);
  if (records.empty()) fail("zip archive has no records; not a torch.save file");
  const std::string& first = records.front().name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0)
    fail("zip record {} is not inside a folder; not a torch.save archive", quote(first));
  // The archive's folder, "archive/". (A record's name is joined with it as bytes, quote(prefix +
  // name), before it goes into a message: it may hold a NUL, which quote() escapes and err::message,
  // reading a C string, would end at.)
  const std::string prefix = first.substr(0, slash + 1);
  std::unordered_map<std::string, const ZipRecord*> by_name;
  for (const ZipRecord& r : records) {
    if (r.name.compare(0, prefix.size(), prefix) != 0)
      fail("zip record {} is outside the archive folder {}", quote(r.name), quote(prefix));
    by_name.emplace(r.name.substr(prefix.size()), &r);
  }
  auto find = [&](const std::string& name) -> const ZipRecord* {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  auto text_of = [&](const ZipRecord* r) {
    return std::string_view(reinterpret_cast<const char*>(data + r->offset), size_t(r->size));
  };

  if (find("constants.pkl"))
    refuse(
        "TorchScript archive (it has constants.pkl) is not supported; save the model's state_dict() "
        "with torch.save instead");
  for (const ZipRecord& r : records)
    if (r.method != 0)
      fail(
          "zip record {} is compressed (method {}); only stored (uncompressed) records are supported, as torch.save "
          "writes them",
          quote(r.name), r.method);
  const ZipRecord* pkl = find("data.pkl");
  if (!pkl) fail("not a torch.save archive: no record {}", quote(prefix + "data.pkl"));

  const ZipRecord* version = find(".data/version");
  if (!version) version = find("version");
  if (version) {
    std::string_view v = text_of(version);
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.remove_suffix(1);
    uint64_t number = 0;
    bool ok = !v.empty() && v.size() <= 19;
    for (char c : v) {
      if (c < '0' || c > '9')
        ok = false;
      else
        number = number * 10 + uint64_t(c - '0');
    }
    if (!ok || number == 0) fail("torch.save archive has a bad version record {}", quote(v));
    if (number > kMaxSupportedVersion)
      fail("torch.save archive format version {} is newer than supported ({})", number, kMaxSupportedVersion);
  }
  if (const ZipRecord* bo = find("byteorder")) {
    std::string_view v = text_of(bo);
    if (v == "big") refuse("big-endian torch.save archives are not supported");
    if (v != "little") fail("torch.save archive has an unknown byteorder record {}", quote(v));
  }

  StorageResolver resolve = [&](const StorageRequest& req) {
    const std::string key = quote(req.key);
    const ZipRecord* rec = find("data/" + req.key);
    if (!rec) fail("storage {} has no data record {}", key, quote(prefix + "data/" + req.key));
    uint64_t bytes;
    if (!mul_u64(req.numel, dtype_size(req.dtype), &bytes))
      fail("storage {} element count {} is too large", key, req.numel);
    if (bytes > rec->size)
      fail("storage {} needs {} bytes ({} x {}) but its data record has only {}", key, bytes, req.numel,
           dtype_name(req.dtype), rec->size);
    auto it = out->storages.find(req.key);
    if (it != out->storages.end()) {
      if (it->second.dtype != req.dtype || it->second.bytes != bytes)
        fail("storage {} is referenced with two different dtypes or sizes", key);
      return;
    }
    Storage s;
    s.key = req.key;
    s.dtype = req.dtype;
    s.data = data + rec->offset;
    s.bytes = bytes;
    out->storages.emplace(req.key, std::move(s));
  };

  auto arena = std::make_shared<ValueArena>();
  Value* root = unpickle(data + pkl->offset, size_t(pkl->size), arena.get(), resolve);
  out->format = "torch-zip";
  out->root = std::shared_ptr<Value>(arena, root);

  select_state_dict(root, out);
}

void select_state_dict(const Value* root, Checkpoint* out) {
  const Value* state_dict = nullptr;
  std::string why;
  if (is_tensor_dict(root)) {
    state_dict = root;
  } else if (root->kind == Value::Kind::Dict) {
    for (const char* key : {"state_dict", "model"}) {
      const Value* v = root->get(key);
      if (is_tensor_dict(v)) {
        state_dict = v;
        break;
      }
      if (v && why.empty()) why = err::message("its {} entry {}", quote(key), not_tensor_dict_reason(v));
    }
    if (!state_dict && why.empty())
      why =
          err::message("the top-level dict {} and has no 'state_dict' or 'model' entry", not_tensor_dict_reason(root));
  } else {
    why = err::message("the pickled object is a {}", root->kind_name());
  }
  if (!state_dict)
    fail("no state dict in the checkpoint (expected a dict of tensors, or one under 'state_dict' or 'model'): {}", why);

  if (root->kind == Value::Kind::Dict)
    for (const auto& [k, v] : root->entries)
      if (k->kind == Value::Kind::String && v->kind == Value::Kind::String) out->metadata[k->text] = v->text;
  for (const auto& [k, v] : state_dict->entries) {
    SourceTensor t = *v->tensor;
    t.name = k->text;
    out->tensors[k->text] = std::move(t);
  }
}

}  // namespace linfer::convert::detail
