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

std::string tensor_what(const std::string& name) { return "safetensors tensor " + quote(name); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

Entry parse_entry(const std::string& name, const json& info) {
  const std::string what = tensor_what(name);
  if (!info.is_object()) fail(what + ": its header entry is not an object");
  Entry e;
  e.name = name;

  auto dt = info.find("dtype");
  if (dt == info.end()) fail(what + " has no 'dtype'");
  if (!dt->is_string()) fail(what + ": 'dtype' is not a string");
  const std::string& dname = dt->get_ref<const std::string&>();
  const DtypeInfo* found = nullptr;
  for (const auto& d : kDtypes)
    if (dname == d.name) found = &d;
  if (!found) fail(what + " has unknown dtype " + quote(dname));
  if (!found->supported) refuse(what + " has dtype " + quote(dname) + ", which is not supported");
  e.dtype = found->dtype;

  auto sh = info.find("shape");
  if (sh == info.end()) fail(what + " has no 'shape'");
  if (!sh->is_array()) fail(what + ": 'shape' must be a list of non-negative integers");
  if (sh->size() > size_t(kMaxRank))
    fail(what + " has rank " + std::to_string(sh->size()) + " (more than " + std::to_string(kMaxRank) + ")");
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
      fail(what + ": 'shape' must be a list of non-negative integers");
    e.shape.push_back(int64_t(d.get<uint64_t>()));
  }

  auto off = info.find("data_offsets");
  if (off == info.end()) fail(what + " has no 'data_offsets'");
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
    fail(what + ": 'data_offsets' must be two non-negative integers");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();

  uint64_t numel = checked_numel(what, e.shape);
  if (!mul_u64(numel, dtype_size(e.dtype), &e.nbytes)) fail(what + " has a byte size that overflows");
  return e;
}

}  // namespace

void parse_safetensors(const uint8_t* data, uint64_t size, Checkpoint* out) {
  const std::string unrecognised = "not a recognised checkpoint (torch.save zip or safetensors): ";
  if (size < 8)
    fail(unrecognised + "the file is only " + std::to_string(size) + " bytes, too small for a safetensors header");
  const uint64_t n = load_u64(data);
  if (n > kMaxSafetensorsHeader)
    fail(unrecognised + "safetensors header length " + std::to_string(n) + " exceeds the limit of " +
         std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (n > size - 8)
    fail(unrecognised + "safetensors header length " + std::to_string(n) + " exceeds the file size (" +
         std::to_string(size) + " bytes)");
  std::string_view header(reinterpret_cast<const char*>(data + 8), size_t(n));
  size_t bad = find_invalid_utf8(header, false);
  if (bad != std::string_view::npos)
    fail("safetensors header is not valid UTF-8 (byte " + std::to_string(bad) + " of the header)");

  json doc;
  {
    // Refuse duplicate keys at any level and bound the nesting depth while parsing.
    std::vector<std::unordered_set<std::string>> keys;
    int depth = 0;
    auto callback = [&](int, json::parse_event_t event, json& parsed) -> bool {
      switch (event) {
        case json::parse_event_t::object_start:
        case json::parse_event_t::array_start:
          if (++depth > kMaxJsonDepth)
            fail("safetensors header nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
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
            fail("safetensors header has duplicate key " + quote(parsed.get_ref<const std::string&>()));
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
      fail("safetensors header is not valid JSON: " + one_line(e.what()));
    }
  }
  if (!doc.is_object()) fail("safetensors header is not a JSON object");

  std::vector<Entry> entries;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail("safetensors __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail("safetensors __metadata__ value for " + quote(m.key()) + " is not a string");
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
    const std::string offsets = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.end < e.begin) fail(what + " " + offsets + " end before they begin");
    if (e.begin != position)
      fail(what + " " + offsets + " do not start where the previous tensor ends (" + std::to_string(position) +
           "): gap or overlap in the data");
    if (e.end - e.begin != e.nbytes)
      fail(what + " has " + std::to_string(e.end - e.begin) + " bytes of data (" + offsets + ") but shape " +
           shape_text(e.shape) + " of " + dtype_name(e.dtype) + " needs " + std::to_string(e.nbytes));
    position = e.end;
  }
  const uint64_t data_size = size - 8 - n;
  if (position != data_size)
    fail("safetensors data section is " + std::to_string(data_size) + " bytes but the tensors cover " +
         std::to_string(position) + " bytes");

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
        fail(tensor_what(e.name) + " has a shape too large for row-major strides");
    t.storage_offset = 0;
    t.storage_key = e.name;
    out->storages.emplace(e.name, std::move(storage));
    out->tensors.emplace(e.name, std::move(t));
  }
}

}  // namespace linfer::convert::detail
