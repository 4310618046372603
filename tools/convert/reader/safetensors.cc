// SPDX-License-Identifier: Apache-2.0
// safetensors reader with the reference implementation's checks (safetensors/src/tensor.rs).
#include <algorithm>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "reader_internal.h"

namespace linfer::convert::detail {
namespace {

using json = nlohmann::json;

struct DtypeInfo {
  const char* name;
  bool supported;
  SourceDType dtype;
};

// Every dtype the reference knows (tensor.rs enum Dtype); only some map to SourceDType.
const DtypeInfo kDtypes[] = {
    {"BOOL", true, SourceDType::Bool},
    {"U8", true, SourceDType::U8},
    {"I8", true, SourceDType::I8},
    {"I16", true, SourceDType::I16},
    {"I32", true, SourceDType::I32},
    {"I64", true, SourceDType::I64},
    {"F16", true, SourceDType::F16},
    {"BF16", true, SourceDType::BF16},
    {"F32", true, SourceDType::F32},
    {"F64", true, SourceDType::F64},
    {"F4", false, {}},
    {"F6_E2M3", false, {}},
    {"F6_E3M2", false, {}},
    {"F8_E5M2", false, {}},
    {"F8_E4M3", false, {}},
    {"F8_E8M0", false, {}},
    {"F8_E4M3FNUZ", false, {}},
    {"F8_E5M2FNUZ", false, {}},
    {"U16", false, {}},
    {"U32", false, {}},
    {"U64", false, {}},
    {"C64", false, {}},
};

struct Entry {
  std::string name;
  SourceDType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
  uint64_t nbytes;
};

std::string tensor_what(const std::string& name) { return err::message("safetensors tensor {}", quote(name)); }

// "[2, 3]", as the header writes it (err::message's shapes are "[2,3]", of 32-bit dimensions).
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += err::message(i ? ", {}" : "{}", shape[i]);
  s += ']';
  return s;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

Entry parse_entry(const std::string& name, const json& info) {
  const std::string what = tensor_what(name);
  if (!info.is_object()) fail("{}: its header entry is not an object", what);
  Entry e;
  e.name = name;

  auto dt = info.find("dtype");
  if (dt == info.end()) fail("{} has no 'dtype'", what);
  if (!dt->is_string()) fail("{}: 'dtype' is not a string", what);
  const std::string& dname = dt->get_ref<const std::string&>();
  const DtypeInfo* found = nullptr;
  for (const auto& d : kDtypes)
    if (dname == d.name) found = &d;
  if (!found) fail("{} has unknown dtype {}", what, quote(dname));
  if (!found->supported) refuse("{} has dtype {}, which is not supported", what, quote(dname));
  e.dtype = found->dtype;

  auto sh = info.find("shape");
  if (sh == info.end()) fail("{} has no 'shape'", what);
  if (!sh->is_array()) fail("{}: 'shape' must be a list of non-negative integers", what);
  if (sh->size() > size_t(kMaxRank)) fail("{} has rank {} (more than {})", what, sh->size(), kMaxRank);
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
      fail("{}: 'shape' must be a list of non-negative integers", what);
    e.shape.push_back(int64_t(d.get<uint64_t>()));
  }

  auto off = info.find("data_offsets");
  if (off == info.end()) fail("{} has no 'data_offsets'", what);
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
    fail("{}: 'data_offsets' must be two non-negative integers", what);
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();

  uint64_t numel = checked_numel(what, e.shape);
  if (!mul_u64(numel, dtype_size(e.dtype), &e.nbytes)) fail("{} has a byte size that overflows", what);
  return e;
}

}  // namespace

void parse_safetensors(const uint8_t* data, uint64_t size, Checkpoint* out) {
  const char* unrecognised = "not a recognised checkpoint (torch.save zip or safetensors)";
  if (size < 8) fail("{}: the file is only {} bytes, too small for a safetensors header", unrecognised, size);
  const uint64_t n = load_u64(data);
  if (n > kMaxSafetensorsHeader)
    fail("{}: safetensors header length {} exceeds the limit of {} bytes", unrecognised, n, kMaxSafetensorsHeader);
  if (n > size - 8) fail("{}: safetensors header length {} exceeds the file size ({} bytes)", unrecognised, n, size);
  std::string_view header(reinterpret_cast<const char*>(data + 8), size_t(n));
  size_t bad = find_invalid_utf8(header, false);
  if (bad != std::string_view::npos) fail("safetensors header is not valid UTF-8 (byte {} of the header)", bad);

  json doc;
  {
    // Refuse duplicate keys at any level and bound the nesting depth while parsing.
    std::vector<std::unordered_set<std::string>> keys;
    int depth = 0;
    auto callback = [&](int, json::parse_event_t event, json& parsed) -> bool {
      switch (event) {
        case json::parse_event_t::object_start:
        case json::parse_event_t::array_start:
          if (++depth > kMaxJsonDepth) fail("safetensors header nests deeper than {} levels", kMaxJsonDepth);
          if (event == json::parse_event_t::object_start) keys.emplace_back();
          break;
        case json::parse_event_t::object_end:
          --depth;
          if (!keys.empty()) keys.pop_back();
          break;
        case json::parse_event_t::array_end:
          --depth;
          break;
        case json::parse_event_t::key:
          if (!keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get_ref<const std::string&>()).second)
            fail("safetensors header has duplicate key {}", quote(parsed.get_ref<const std::string&>()));
          break;
        default:
          break;
      }
      return true;
    };
    try {
      doc = json::parse(header.begin(), header.end(), callback, /*allow_exceptions=*/true,
                        /*ignore_comments=*/false);
    } catch (const json::exception& e) {
      fail("safetensors header is not valid JSON: {}", one_line(e.what()));
    }
  }
  if (!doc.is_object()) fail("safetensors header is not a JSON object");

  std::vector<Entry> entries;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail("safetensors __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail("safetensors __metadata__ value for {} is not a string", quote(m.key()));
        out->metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(it.key(), *it));
  }

  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t position = 0;
  for (const Entry& e : entries) {
    const std::string what = tensor_what(e.name);
    if (e.end < e.begin) fail("{} data_offsets [{}, {}] end before they begin", what, e.begin, e.end);
    if (e.begin != position)
      fail("{} data_offsets [{}, {}] do not start where the previous tensor ends ({}): gap or overlap in the data",
           what, e.begin, e.end, position);
    if (e.end - e.begin != e.nbytes)
      fail("{} has {} bytes of data (data_offsets [{}, {}]) but shape {} of {} needs {}", what, e.end - e.begin,
           e.begin, e.end, shape_text(e.shape), dtype_name(e.dtype), e.nbytes);
    position = e.end;
  }
  const uint64_t data_size = size - 8 - n;
  if (position != data_size)
    fail("safetensors data section is {} bytes but the tensors cover {} bytes", data_size, position);

  const uint8_t* base = data + 8 + n;
  out->format = "safetensors";
  for (Entry& e : entries) {
    Storage storage;
    storage.key = e.name;
    storage.dtype = e.dtype;
    storage.data = base + e.begin;
    storage.bytes = e.nbytes;
    SourceTensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.strides.assign(e.shape.size(), 1);
    for (size_t i = e.shape.size(); i-- > 1;)
      if (__builtin_mul_overflow(t.strides[i], std::max<int64_t>(e.shape[i], 1), &t.strides[i - 1]))
        fail("{} has a shape too large for row-major strides", tensor_what(e.name));
    t.storage_offset = 0;
    t.storage_key = e.name;
    out->storages.emplace(e.name, std::move(storage));
    out->tensors.emplace(e.name, std::move(t));
  }
}

}  // namespace linfer::convert::detail
