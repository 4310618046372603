// SPDX-License-Identifier: Apache-2.0
// Tests of the linfer-convert checkpoint readers (tools/convert/reader).
//
// Fixtures in tests/readers/ were written by real torch (tests/readers/make_fixtures.py); the
// corrupt cases are built here in memory with a tiny zip writer and pickle builder.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.h"

using namespace linfer::convert;

namespace {

// ---- fixtures ---------------------------------------------------------------------------------

std::string fixture_dir() {
#if defined(LINFER_READER_FIXTURES)
  return LINFER_READER_FIXTURES;
#elif defined(LINFER_SOURCE_DIR)
  return std::string(LINFER_SOURCE_DIR) + "/tests/readers";
#else
  std::string here = __FILE__;  // .../tests/unit/test_readers.cc
  size_t slash = here.rfind('/');
  std::string dir = slash == std::string::npos ? std::string(".") : here.substr(0, slash);
  return dir + "/../readers";
#endif
}

std::string fixture(const std::string& name) { return fixture_dir() + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open fixture " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using Loaded = linfer::err::Result<std::unique_ptr<Checkpoint>>;

Loaded load_bytes(const std::string& bytes) {
  return read_checkpoint_from_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::unique_ptr<Checkpoint> must_load(const std::string& bytes) {
  Loaded ck = load_bytes(bytes);
  INFO("error: " << ck.status().message());
  REQUIRE(ck.ok());
  return std::move(ck.value());
}

std::unique_ptr<Checkpoint> must_load_file(const std::string& name) {
  Loaded ck = read_checkpoint(fixture(name));
  INFO("fixture " << name << ": " << ck.status().message());
  REQUIRE(ck.ok());
  return std::move(ck.value());
}

// Loading must fail with a one-line message containing `words`.
void expect_error(const std::string& bytes, const std::string& words) {
  Loaded ck = load_bytes(bytes);
  const std::string& error = ck.status().message();
  INFO("expected an error containing \"" << words << "\", got: \"" << error << "\"");
  CHECK(!ck.ok());
  CHECK(error.find(words) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

std::vector<float> f32(const Checkpoint& ck, const std::string& name) {
  auto it = ck.tensors.find(name);
  REQUIRE_MESSAGE(it != ck.tensors.end(), "no tensor " << name);
  linfer::err::Result<std::vector<float>> out = tensor_to_f32(ck, it->second);
  INFO("tensor " << name << ": " << out.status().message());
  REQUIRE(out.ok());
  return out.value();
}

// tensor_to_f32's failure ("" when it succeeds).
std::string f32_error(const Checkpoint& ck, const SourceTensor& t) { return tensor_to_f32(ck, t).status().message(); }

// ---- byte builders ----------------------------------------------------------------------------

void put16(std::string& s, uint16_t v) {
  for (int i = 0; i < 2; ++i) s += char((v >> (8 * i)) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xff);
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

struct ZipEntry {
  ZipEntry(std::string n, std::string d, uint16_t m = 0) : name(std::move(n)), data(std::move(d)), method(m) {}
  std::string name;
  std::string data;
  uint16_t method = 0;
  std::string local_name;  // if non-empty, written in the local header instead of `name`
};

// A minimal zip writer. With zip64, sizes/offsets go into ZIP64 extra fields and a ZIP64 EOCD
// record + locator are written, like PyTorch's writer.
std::string make_zip(const std::vector<ZipEntry>& entries, bool zip64 = false) {
  std::string out, central;
  for (const ZipEntry& e : entries) {
    const std::string& lname = e.local_name.empty() ? e.name : e.local_name;
    uint64_t local = out.size();
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);
    put16(out, e.method);
    put32(out, 0);  // time, date
    put32(out, 0);  // crc (not checked)
    put32(out, uint32_t(e.data.size()));
    put32(out, uint32_t(e.data.size()));
    put16(out, uint16_t(lname.size()));
    put16(out, 0);
    out += lname;
    out += e.data;

    std::string extra;
    if (zip64) {
      put16(extra, 1);
      put16(extra, 24);
      put64(extra, e.data.size());
      put64(extra, e.data.size());
      put64(extra, local);
    }
    put32(central, 0x02014b50);
    put16(central, 45);
    put16(central, 45);
    put16(central, 0);
    put16(central, e.method);
    put32(central, 0);
    put32(central, 0);
    put32(central, zip64 ? 0xffffffffu : uint32_t(e.data.size()));
    put32(central, zip64 ? 0xffffffffu : uint32_t(e.data.size()));
    put16(central, uint16_t(e.name.size()));
    put16(central, uint16_t(extra.size()));
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, zip64 ? 0xffffffffu : uint32_t(local));
    central += e.name;
    central += extra;
  }
  uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    uint64_t z64 = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, entries.size());
    put64(out, entries.size());
    put64(out, central.size());
    put64(out, cd_offset);
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, z64);
    put32(out, 1);
  }
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, zip64 ? 0xffff : uint16_t(entries.size()));
  put16(out, zip64 ? 0xffff : uint16_t(entries.size()));
  put32(out, zip64 ? 0xffffffffu : uint32_t(central.size()));
  put32(out, zip64 ? 0xffffffffu : uint32_t(cd_offset));
  put16(out, 0);
  return out;
}

// Pickle builder (protocol 2 opcodes).
struct Pickle {
  std::string s;
  Pickle& raw(const std::string& b) {
    s += b;
    return *this;
  }
  Pickle& op(uint8_t c) {
    s += char(c);
    return *this;
  }
  Pickle& proto(int v = 2) { return op(0x80).op(uint8_t(v)); }
  Pickle& global(const std::string& module, const std::string& name) {
    s += 'c' + module + '\n' + name + '\n';
    return *this;
  }
  Pickle& str(const std::string& t) {
    s += 'X';
    put32(s, uint32_t(t.size()));
    s += t;
    return *this;
  }
  Pickle& integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      s += 'J';
      put32(s, uint32_t(int32_t(v)));
    } else {
      s += char(0x8a);
      s += char(8);
      put64(s, uint64_t(v));
    }
    return *this;
  }
  Pickle& mark() { return op('('); }
  Pickle& tuple() { return op('t'); }
  Pickle& ints(const std::vector<int64_t>& v) {
    mark();
    for (int64_t x : v) integer(x);
    return tuple();
  }
  // ('storage', torch.<cls>, key, 'cpu', numel) + `extra` (raw opcodes of more fields: the legacy
  // format's view_metadata is "N").
  Pickle& pid(const std::string& cls, const std::string& key, int64_t numel, const std::string& extra = "") {
    mark().str("storage").global("torch", cls).str(key).str("cpu").integer(numel).raw(extra).tuple();
    return op('Q');
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  Pickle& tensor(const std::string& cls, const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                 const std::string& pid_extra = "") {
    global("torch._utils", "_rebuild_tensor_v2").mark().pid(cls, key, numel, pid_extra).integer(offset);
    ints(size).ints(stride).op(0x89).global("collections", "OrderedDict").op(')').op('R').tuple();
    return op('R');
  }
  Pickle& stop() { return op('.'); }
};

// Pickle of {name: tensor} for a float storage "0" of `numel` elements.
std::string one_tensor_pickle(int64_t numel, int64_t offset, const std::vector<int64_t>& size,
                              const std::vector<int64_t>& stride, const std::string& cls = "FloatStorage") {
  Pickle p;
  p.proto().op('}').mark().str("w").tensor(cls, "0", numel, offset, size, stride).op('u').stop();
  return p.s;
}

// A torch.save-style archive: <prefix>/data.pkl, <prefix>/data/<key>..., <prefix>/version.
std::string torch_zip(const std::string& pkl, const std::vector<std::pair<std::string, std::string>>& storages,
                      const std::string& prefix = "archive", bool zip64 = false) {
  std::vector<ZipEntry> entries;
  entries.push_back({prefix + "/data.pkl", pkl});
  for (const auto& [key, data] : storages) entries.push_back({prefix + "/data/" + key, data});
  entries.push_back({prefix + "/version", "3\n"});
  return make_zip(entries, zip64);
}

std::string pickle_zip(const std::string& pkl) { return torch_zip(pkl, {{"0", floats({1, 2, 3, 4, 5, 6})}}); }

// safetensors file from a header string and a data section.
std::string safetensors(const std::string& header, const std::string& data) {
  std::string out;
  put64(out, header.size());
  return out + header + data;
}

}  // namespace

// ================================================================================================
// safetensors

TEST_CASE("safetensors: valid file with several dtypes and metadata") {
  std::string data = floats({1, 2, 3, 4, 5, 6});  // a: F32 [2, 3]
  data += std::string("\x00\x3c\x00\xc0", 4);     // h: F16 [2] = 1, -2
  data += std::string("\x40\x40", 2);             // s: BF16 [] = 3
  std::string header = R"({"__metadata__":{"linfer_config":"{\"dim\": 4}"},)"
                       R"("h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},)"
                       R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("e":{"dtype":"I64","shape":[0,5],"data_offsets":[30,30]},)"
                       R"("s":{"dtype":"BF16","shape":[],"data_offsets":[28,30]}})";
  header += std::string((8 - header.size() % 8) % 8, ' ');  // padded like the reference writer
  auto ck = must_load(safetensors(header, data));
  CHECK(ck->format == "safetensors");
  CHECK(ck->root == nullptr);
  REQUIRE(ck->tensors.size() == 4);
  CHECK(ck->metadata.at("linfer_config") == "{\"dim\": 4}");
  const SourceTensor& a = ck->tensors.at("a");
  CHECK(a.dtype == SourceDType::F32);
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.strides == std::vector<int64_t>{3, 1});
  CHECK(a.storage_key == "a");
  CHECK(ck->storages.at("a").bytes == 24);
  CHECK(f32(*ck, "a") == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(f32(*ck, "h") == std::vector<float>{1, -2});
  CHECK(f32(*ck, "s") == std::vector<float>{3});
  CHECK(ck->tensors.at("s").shape.empty());
  CHECK(ck->tensors.at("e").shape == std::vector<int64_t>{0, 5});
  CHECK(f32_error(*ck, ck->tensors.at("e")).find("only F32, F16, BF16 and F64") != std::string::npos);
}

TEST_CASE("safetensors: leading header whitespace and reading from a file") {
  std::string file = safetensors(R"(  {"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                 std::string("\0\0\0\0\0\0\xf0\x3f", 8));
  char path[] = "/tmp/linfer_reader_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, file.data(), file.size()) == ssize_t(file.size()));
  close(fd);
  Loaded ck = read_checkpoint(path);
  std::remove(path);
  INFO(ck.status().message());
  REQUIRE(ck.ok());
  CHECK(f32(*ck.value(), "x") == std::vector<float>{1.0f});
}

TEST_CASE("safetensors: corrupt files are refused with a message naming the problem") {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8 = floats({1, 2});
  SUBCASE("shorter than 8 bytes") { expect_error(std::string("\x05\0\0", 3), "too small"); }
  SUBCASE("header length over the limit") {
    std::string f;
    put64(f, 100000001);
    expect_error(f + "{}", "exceeds the limit");
  }
  SUBCASE("header length past the end of the file") {
    std::string f;
    put64(f, 1000);
    expect_error(f + "{}", "exceeds the file size");
  }
  SUBCASE("invalid UTF-8") { expect_error(safetensors("{\"a\xff\":1}", ""), "not valid UTF-8"); }
  SUBCASE("invalid JSON") { expect_error(safetensors("{\"a\":", ""), "not valid JSON"); }
  SUBCASE("JSON that is not an object") { expect_error(safetensors("[1, 2]", ""), "not a JSON object"); }
  SUBCASE("duplicate tensor names") {
    expect_error(safetensors("{" + ok_entry + "," + ok_entry + "}", data8), "duplicate key 'a'");
  }
  SUBCASE("missing dtype") {
    expect_error(safetensors(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", data8), "'a' has no 'dtype'");
  }
  SUBCASE("missing shape") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", data8), "'a' has no 'shape'");
  }
  SUBCASE("missing data_offsets") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", data8), "'a' has no 'data_offsets'");
  }
  SUBCASE("entry is not an object") { expect_error(safetensors(R"({"a":[1]})", ""), "not an object"); }
  SUBCASE("unknown dtype") {
    expect_error(safetensors(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", data8), "unknown dtype 'Q7'");
  }
  SUBCASE("known but unsupported dtype") {
    expect_error(safetensors(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", data8),
                 "'F8_E4M3', which is not supported");
  }
  SUBCASE("negative dimension") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
                 "non-negative integers");
  }
  SUBCASE("bad data_offsets") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8),
                 "'data_offsets' must be two");
  }
  SUBCASE("shape product overflows") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data8),
                 "overflows");
  }
  SUBCASE("gap between tensors") {
    expect_error(
        safetensors(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
            floats({1, 2, 3})),
        "'b' data_offsets [8, 12] do not start where the previous tensor ends (4)");
  }
  SUBCASE("overlapping tensors") {
    expect_error(
        safetensors(
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            data8),
        "gap or overlap");
  }
  SUBCASE("data not starting at 0") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8), "do not start where");
  }
  SUBCASE("end before begin") {
    expect_error(
        safetensors(
            R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"c":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
            data8),
        "end before they begin");
  }
  SUBCASE("byte size does not match the shape") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
                 "'a' has 8 bytes of data");
  }
  SUBCASE("trailing bytes after the data") {
    expect_error(safetensors("{" + ok_entry + "}", data8 + "xx"), "data section is 10 bytes but the tensors cover 8");
  }
  SUBCASE("data section too short") {
    expect_error(safetensors("{" + ok_entry + "}", "1234"), "data section is 4 bytes");
  }
  SUBCASE("metadata value not a string") {
    expect_error(safetensors(R"({"__metadata__":{"k":1}})", ""), "__metadata__ value for 'k' is not a string");
  }
  SUBCASE("metadata not an object") {
    expect_error(safetensors(R"({"__metadata__":"x"})", ""), "__metadata__ is not an object");
  }
  SUBCASE("nesting too deep") {
    expect_error(safetensors("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", ""), "nests deeper");
  }
  SUBCASE("rank too high") {
    expect_error(safetensors(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", "1234"),
                 "rank 9");
  }
}

// ================================================================================================
// torch.save zip: fixtures written by torch 1.13

TEST_CASE("torch zip fixture: plain OrderedDict state_dict saved to a path") {
  auto ck = must_load_file("plain.pt");
  CHECK(ck->format == "torch-zip");
  REQUIRE(ck->tensors.size() == 4);
  const SourceTensor& w = ck->tensors.at("0.weight");
  CHECK(w.name == "0.weight");
  CHECK(w.dtype == SourceDType::F32);
  CHECK(w.shape == std::vector<int64_t>{3, 4});
  CHECK(w.strides == std::vector<int64_t>{4, 1});
  std::vector<float> expect;
  for (int i = 0; i < 12; ++i) expect.push_back(float(i) / 4);
  CHECK(f32(*ck, "0.weight") == expect);
  CHECK(f32(*ck, "0.bias") == std::vector<float>{0.5f, -1.0f, 2.0f});
  CHECK(f32(*ck, "1.weight") == std::vector<float>{1, 2, 3});
  CHECK(f32(*ck, "1.bias") == std::vector<float>{-0.25f, 0.0f, 0.25f});
  CHECK(ck->storages.size() == 4);
  // The root is the OrderedDict itself; BUILD attached its _metadata attribute.
  REQUIRE(ck->root);
  CHECK(ck->root->is_dict());
  REQUIRE(ck->root->state != nullptr);
  const Value* meta = ck->root->state->get("_metadata");
  REQUIRE(meta != nullptr);
  CHECK(meta->is_dict());
  CHECK(ck->metadata.empty());
}

TEST_CASE("torch zip fixture: shared storages") {
  auto ck = must_load_file("shared.pt");
  const SourceTensor& a = ck->tensors.at("embed.weight");
  const SourceTensor& b = ck->tensors.at("head.weight");
  const SourceTensor& row = ck->tensors.at("row");
  CHECK(a.storage_key == b.storage_key);
  CHECK(a.storage_key == row.storage_key);
  CHECK(ck->storages.size() == 1);
  CHECK(row.storage_offset == 3);
  CHECK(row.shape == std::vector<int64_t>{3});
  CHECK(f32(*ck, "head.weight") == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(f32(*ck, "row") == std::vector<float>{3, 4, 5});
}

TEST_CASE("torch zip fixture: non-contiguous views") {
  auto ck = must_load_file("views.pt");
  const SourceTensor& t = ck->tensors.at("transposed");
  CHECK(t.shape == std::vector<int64_t>{5, 4});
  CHECK(t.strides == std::vector<int64_t>{1, 5});
  std::vector<float> expect;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) expect.push_back(float(j * 5 + i));
  CHECK(f32(*ck, "transposed") == expect);
  const SourceTensor& s = ck->tensors.at("sliced");
  CHECK(s.storage_offset == 7);
  CHECK(s.strides == std::vector<int64_t>{5, 1});
  CHECK(f32(*ck, "sliced") == std::vector<float>{7, 8, 9, 12, 13, 14, 17, 18, 19});
  CHECK(f32(*ck, "column") == std::vector<float>{3, 8, 13, 18});
  CHECK(t.storage_key == s.storage_key);
}

TEST_CASE("torch zip fixture: float16, bfloat16, float64, int64, 0-d and empty tensors") {
  auto ck = must_load_file("dtypes.pt");
  CHECK(ck->tensors.at("half").dtype == SourceDType::F16);
  CHECK(f32(*ck, "half") == std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24), 0.0f});
  CHECK(ck->tensors.at("bf16").dtype == SourceDType::BF16);
  CHECK(f32(*ck, "bf16") == std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, 100)});
  CHECK(f32(*ck, "double") == std::vector<float>{0.125f, -7.0f});
  CHECK(ck->tensors.at("scalar").shape.empty());
  CHECK(f32(*ck, "scalar") == std::vector<float>{3.5f});
  CHECK(f32(*ck, "empty").empty());
  const SourceTensor& l = ck->tensors.at("long");
  CHECK(l.dtype == SourceDType::I64);
  const Storage& ls = ck->storages.at(l.storage_key);
  REQUIRE(ls.bytes == 24);
  int64_t values[3];
  std::memcpy(values, ls.data, 24);
  CHECK(values[2] == (int64_t(1) << 40));
  CHECK(f32_error(*ck, l).find("has dtype I64") != std::string::npos);
}

TEST_CASE("torch zip fixture: linfer_config next to the state_dict") {
  auto ck = must_load_file("with_config.pt");
  CHECK(ck->metadata.at("linfer_config") == "{\"dim\": 4, \"num_layers\": 1}");
  CHECK(ck->tensors.size() == 4);
  CHECK(f32(*ck, "1.weight") == std::vector<float>{1, 2, 3});
  REQUIRE(ck->root->get_string("linfer_config") != nullptr);
}

TEST_CASE("torch zip fixture: pickle protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL)") {
  auto ck = must_load_file("proto4.pt");
  CHECK(ck->tensors.size() == 4);
  CHECK(f32(*ck, "0.bias") == std::vector<float>{0.5f, -1.0f, 2.0f});
}

TEST_CASE("torch zip fixture: fairseq-like checkpoint with argparse.Namespace") {
  auto ck = must_load_file("fairseq_like.pt");
  REQUIRE(ck->tensors.size() == 4);
  CHECK(ck->tensors.at("0.weight").dtype == SourceDType::F16);
  CHECK(f32(*ck, "0.bias") == std::vector<float>{0.5f, -1.0f, 2.0f});
  const Value* args = ck->root->get("args");
  REQUIRE(args != nullptr);
  CHECK(args->is_opaque());
  CHECK(args->module == "argparse");
  CHECK(args->name == "Namespace");
  REQUIRE(args->get_string("arch") != nullptr);
  CHECK(*args->get_string("arch") == "linformer_roberta_base");
  const Value* lr = args->get("lr");
  REQUIRE(lr != nullptr);
  REQUIRE(lr->is_list());
  REQUIRE(lr->size() == 1);
  CHECK(lr->at(0)->number == doctest::Approx(0.0001));
  CHECK(args->get("fp16")->boolean == true);
  CHECK(args->get("big")->integer == (int64_t(1) << 40));
  CHECK(args->get("neg")->integer == -5);
  CHECK(args->get("max_positions")->integer == 512);
  CHECK(args->get("nothing")->is_none());
  CHECK(ck->root->get("cfg")->is_none());
  const Value* history = ck->root->get("optimizer_history");
  REQUIRE(history != nullptr);
  REQUIRE(history->size() == 1);
  CHECK(history->at(0)->get("num_updates")->integer == 10);
  const Value* flags = ck->root->get("extra_state")->get("flags");
  REQUIRE(flags->is_tuple());
  CHECK(flags->at(0)->boolean == true);
  CHECK(flags->at(1)->boolean == false);
}

TEST_CASE("torch zip fixture: dict of nn.Parameters (_rebuild_parameter)") {
  auto ck = must_load_file("parameters.pt");
  CHECK(ck->tensors.size() == 4);
  CHECK(f32(*ck, "1.bias") == std::vector<float>{-0.25f, 0.0f, 0.25f});
}

TEST_CASE("torch zip fixtures that must be refused") {
  SUBCASE("malicious pickle naming posix.system") {
    const Loaded ck = read_checkpoint(fixture("malicious_system.pt"));
    CHECK(ck.status().code() == LINFER_ERROR_INVALID_MODEL);
    CHECK(ck.status().message() == "checkpoint refers to forbidden global 'posix.system'");
  }
  SUBCASE("TorchScript archive") {
    const Loaded ck = read_checkpoint(fixture("torchscript.pt"));
    CHECK(ck.status().code() == LINFER_ERROR_UNSUPPORTED);
    CHECK(ck.status().message().find("TorchScript") != std::string::npos);
  }
  SUBCASE("missing file") {
    const Loaded ck = read_checkpoint(fixture("does_not_exist.pt"));
    CHECK(ck.status().code() == LINFER_ERROR_IO);
    CHECK(ck.status().message().find("cannot open") != std::string::npos);
  }
}

// ================================================================================================
// torch.save zip: hand-built archives

TEST_CASE("torch zip: any folder name, record order, storage keys and ZIP64 fields") {
  Pickle p;
  p.proto().op('}').mark().str("note").str("hello").str("state_dict").op('}').mark();
  p.str("a").tensor("FloatStorage", "140234567", 6, 0, {2, 3}, {3, 1});
  p.str("b").tensor("HalfStorage", "7", 2, 1, {1}, {1});
  p.op('u').op('u').stop();
  std::vector<ZipEntry> entries = {
      {"my_ckpt/version", "3\n"},      {"my_ckpt/data/7", std::string("\x00\x3c\x00\x40", 4)},  // 1.0, 2.0 as F16
      {"my_ckpt/data.pkl", p.s},       {"my_ckpt/data/140234567", floats({1, 2, 3, 4, 5, 6})},
      {"my_ckpt/byteorder", "little"},
  };
  for (bool zip64 : {false, true}) {
    auto ck = must_load(make_zip(entries, zip64));
    CHECK(ck->tensors.at("a").storage_key == "140234567");
    CHECK(f32(*ck, "a") == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(f32(*ck, "b") == std::vector<float>{2});
    CHECK(ck->metadata.at("note") == "hello");
  }
}

TEST_CASE("torch zip: state dict under 'model' and duplicate keys keep the last value") {
  Pickle p;
  p.proto().op('}').mark().str("model").op('}').mark();
  p.str("w").tensor("FloatStorage", "0", 6, 0, {1}, {1});
  p.str("w").tensor("FloatStorage", "0", 6, 5, {1}, {1});
  p.op('u').str("epoch").integer(3).op('u').stop();
  auto ck = must_load(pickle_zip(p.s));
  REQUIRE(ck->tensors.size() == 1);
  CHECK(f32(*ck, "w") == std::vector<float>{6});
  CHECK(ck->root->get("model")->size() == 1);
}

TEST_CASE("torch zip: corrupt archives are refused with a message naming the problem") {
  const std::string pkl = one_tensor_pickle(6, 0, {6}, {1});
  const std::string good = pickle_zip(pkl);
  must_load(good);
  SUBCASE("compressed record") {
    expect_error(make_zip({{"archive/data.pkl", pkl, 8}, {"archive/data/0", floats({1, 2, 3, 4, 5, 6})}}),
                 "'archive/data.pkl' is compressed (method 8)");
  }
  SUBCASE("truncated file (no end of central directory)") {
    expect_error(good.substr(0, good.size() - 10), "no end-of-central-directory record");
  }
  SUBCASE("central directory offset out of range") {
    std::string bad = good;
    size_t eocd = bad.size() - 22;
    bad[eocd + 16] = '\xff';
    bad[eocd + 17] = '\xff';
    expect_error(bad, "central directory");
  }
  SUBCASE("entry count larger than the central directory") {
    std::string bad = good;
    size_t eocd = bad.size() - 22;
    bad[eocd + 8] = bad[eocd + 10] = '\xff';
    bad[eocd + 9] = bad[eocd + 11] = '\x7f';
    expect_error(bad, "cannot hold");
  }
  SUBCASE("local header name differs from the central directory") {
    ZipEntry e{"archive/data.pkl", pkl};
    e.local_name = "archive/evil.pkl";
    expect_error(make_zip({e, {"archive/data/0", floats({1, 2, 3, 4, 5, 6})}}), "does not match the central directory");
  }
  SUBCASE("record size past the end of the file") {
    std::string bad = good;
    size_t cd = bad.find(std::string("PK\x01\x02", 4));
    REQUIRE(cd != std::string::npos);
    for (int i = 20; i < 28; ++i) bad[cd + i] = '\x7f';  // compressed and uncompressed size
    expect_error(bad, "runs past the end of the file");
  }
  SUBCASE("bad local header offset") {
    std::string bad = good;
    size_t cd = bad.find(std::string("PK\x01\x02", 4));
    bad[cd + 42] = '\x05';
    expect_error(bad, "bad local header signature");
  }
  SUBCASE("ZIP64 EOCD offset out of range") {
    std::string z = torch_zip(pkl, {{"0", floats({1, 2, 3, 4, 5, 6})}}, "archive", true);
    size_t loc = z.size() - 22 - 20;
    z[loc + 8 + 6] = '\x01';
    expect_error(z, "ZIP64 end-of-central-directory offset");
  }
  SUBCASE("PYTORCH1 preview magic") { expect_error("PYTORCH1" + std::string(64, '\0'), "PYTORCH1"); }
  SUBCASE("no data.pkl") { expect_error(make_zip({{"archive/version", "3\n"}}), "no record 'archive/data.pkl'"); }
  SUBCASE("TorchScript constants.pkl") {
    expect_error(make_zip({{"m/data.pkl", pkl}, {"m/constants.pkl", "x"}}), "TorchScript archive");
  }
  SUBCASE("first record not in a folder") { expect_error(make_zip({{"data.pkl", pkl}}), "not inside a folder"); }
  SUBCASE("record outside the archive folder") {
    expect_error(make_zip({{"archive/data.pkl", pkl}, {"other/data/0", floats({1})}}),
                 "outside the archive folder 'archive/'");
  }
  SUBCASE("duplicate records") {
    expect_error(make_zip({{"archive/data.pkl", pkl}, {"archive/data.pkl", pkl}}),
                 "duplicate record 'archive/data.pkl'");
  }
  SUBCASE("big-endian byteorder") {
    expect_error(
        make_zip(
            {{"archive/data.pkl", pkl}, {"archive/byteorder", "big"}, {"archive/data/0", floats({1, 2, 3, 4, 5, 6})}}),
        "big-endian");
  }
  SUBCASE("bad version record") {
    expect_error(
        make_zip(
            {{"archive/data.pkl", pkl}, {"archive/version", "x3"}, {"archive/data/0", floats({1, 2, 3, 4, 5, 6})}}),
        "bad version record");
  }
  SUBCASE("storage record missing") {
    expect_error(torch_zip(pkl, {}), "storage '0' has no data record 'archive/data/0'");
  }
  SUBCASE("storage record smaller than numel * itemsize") {
    expect_error(torch_zip(pkl, {{"0", floats({1, 2, 3})}}),
                 "storage '0' needs 24 bytes (6 x F32) but its data record has only 12");
  }
  SUBCASE("legacy magic alone") {
    expect_error(std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15),
                 "legacy torch.save: the file ends before the protocol-version pickle (offset 15)");
  }
}

// ================================================================================================
// restricted unpickler

TEST_CASE("unpickler: corrupt or hostile pickles are refused with a message") {
  auto zip = [](const std::string& pkl) { return pickle_zip(pkl); };
  SUBCASE("forbidden GLOBAL") {
    Pickle p;
    p.proto().global("builtins", "eval").str("1").op(0x85).op('R').stop();
    expect_error(zip(p.s), "checkpoint refers to forbidden global 'builtins.eval'");
  }
  SUBCASE("forbidden STACK_GLOBAL") {
    Pickle p;
    p.proto(4)
        .op(0x8c)
        .raw(std::string(1, '\x02'))
        .raw("os")
        .op(0x8c)
        .raw(std::string(1, '\x06'))
        .raw("system")
        .op(0x93)
        .stop();
    expect_error(zip(p.s), "forbidden global 'os.system'");
  }
  SUBCASE("torch.Size is not allowed") {
    Pickle p;
    p.proto().global("torch", "Size").stop();
    expect_error(zip(p.s), "forbidden global 'torch.Size'");
  }
  SUBCASE("unknown opcode") {
    Pickle p;
    p.proto().raw("I12\n").stop();  // INT (protocol 0)
    expect_error(zip(p.s), "unsupported pickle opcode 0x49 at offset 2");
  }
  SUBCASE("truncated string") {
    Pickle p;
    p.proto().op('X');
    put32(p.s, 100);
    p.raw("abc");
    expect_error(zip(p.s), "truncated pickle stream: BINUNICODE at offset 2");
  }
  SUBCASE("no STOP") {
    Pickle p;
    p.proto().op('}');
    expect_error(zip(p.s), "ended without STOP");
  }
  SUBCASE("undefined memo key") {
    Pickle p;
    p.proto().op('h').raw(std::string(1, '\x07')).stop();
    expect_error(zip(p.s), "memo key 7 is not defined");
  }
  SUBCASE("stack underflow") {
    Pickle p;
    p.proto().op('N').op(0x86).stop();
    expect_error(zip(p.s), "stack underflow in TUPLE2");
  }
  SUBCASE("items below a MARK are out of reach") {
    Pickle p;
    p.proto().op(']').mark().op('a').stop();
    expect_error(zip(p.s), "stack underflow in APPEND");
  }
  SUBCASE("APPEND to a non-list") {
    Pickle p;
    p.proto().op('}').op('N').op('a').stop();
    expect_error(zip(p.s), "only lists");
  }
  SUBCASE("trailing bytes after STOP") {
    Pickle p;
    p.proto().op('}').stop().raw("junk");
    expect_error(zip(p.s), "trailing bytes after STOP");
  }
  SUBCASE("extra stack items at STOP") {
    Pickle p;
    p.proto().op('}').op('}').stop();
    expect_error(zip(p.s), "extra stack items");
  }
  SUBCASE("view past the end of its storage") {
    expect_error(zip(one_tensor_pickle(6, 2, {5}, {1})), "view reaches element 6 but its storage has only 6 elements");
  }
  SUBCASE("strided view past the end of its storage") {
    expect_error(zip(one_tensor_pickle(6, 0, {2, 3}, {1, 3})), "view reaches element 7");
  }
  SUBCASE("negative stride") { expect_error(zip(one_tensor_pickle(6, 5, {6}, {-1})), "negative stride"); }
  SUBCASE("negative size") { expect_error(zip(one_tensor_pickle(6, 0, {-1}, {1})), "negative dimension"); }
  SUBCASE("size and stride lengths differ") {
    expect_error(zip(one_tensor_pickle(6, 0, {2, 3}, {1})), "2 sizes but 1 strides");
  }
  SUBCASE("rank above 8") {
    expect_error(zip(one_tensor_pickle(6, 0, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1})), "rank 9");
  }
  SUBCASE("element count overflows") {
    expect_error(zip(one_tensor_pickle(6, 0, {int64_t(1) << 62, 8}, {0, 0})), "overflows");
  }
  SUBCASE("storage numel * itemsize overflows") {
    expect_error(zip(one_tensor_pickle(int64_t(1) << 62, 0, {1}, {1})), "is too large");
  }
  SUBCASE("persistent id with 4 fields") {
    Pickle p;
    p.proto().mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").tuple().op('Q').stop();
    expect_error(zip(p.s), "persistent id at offset");
  }
  SUBCASE("persistent id naming a non-storage class") {
    Pickle p;
    p.proto()
        .mark()
        .str("storage")
        .global("collections", "OrderedDict")
        .str("0")
        .str("cpu")
        .integer(6)
        .tuple()
        .op('Q')
        .stop();
    expect_error(zip(p.s), "storage class is a global 'collections.OrderedDict'");
  }
  SUBCASE("calling a storage class") {
    Pickle p;
    p.proto().global("torch", "FloatStorage").op(')').op('R').stop();
    expect_error(zip(p.s), "REDUCE at offset 23 of 'torch.FloatStorage' is not allowed");
  }
  SUBCASE("_rebuild_tensor_v2 with the wrong argument count") {
    Pickle p;
    p.proto().global("torch._utils", "_rebuild_tensor_v2").mark().integer(1).tuple().op('R').stop();
    expect_error(zip(p.s), "takes 6 or 7 arguments, got 1");
  }
  SUBCASE("one storage used with two dtypes") {
    Pickle p;
    p.proto().op('}').mark();
    p.str("a").tensor("FloatStorage", "0", 6, 0, {1}, {1});
    p.str("b").tensor("IntStorage", "0", 6, 0, {1}, {1});
    p.op('u').stop();
    expect_error(zip(p.s), "two different dtypes");
  }
  SUBCASE("huge string length") {
    Pickle p;
    p.proto().op(0x8d);
    put64(p.s, uint64_t(1) << 40);
    expect_error(zip(p.s), "exceeds the 64 MiB limit");
  }
  SUBCASE("integer wider than 64 bits") {
    Pickle p;
    p.proto().op(0x8a).raw(std::string(1, '\x09')).raw(std::string(9, '\x01')).stop();
    expect_error(zip(p.s), "integer of 9 bytes");
  }
  SUBCASE("protocol 6") {
    Pickle p;
    p.proto(6).op('}').stop();
    expect_error(zip(p.s), "unsupported pickle protocol 6");
  }
  SUBCASE("MARKs nested too deep") {
    Pickle p;
    p.proto().raw(std::string(100001, '('));
    expect_error(zip(p.s), "MARKs nested deeper than 100000");
  }
  SUBCASE("stack too deep") {
    Pickle p;
    p.proto().raw(std::string(100001, 'N'));
    expect_error(zip(p.s), "stack deeper than 100000");
  }
  SUBCASE("memo too large") {
    Pickle p;
    p.proto().op('N');
    for (uint32_t i = 0; i <= 1000000; ++i) {
      p.op('r');
      put32(p.s, i);
    }
    expect_error(zip(p.s), "memo has more than 1000000 entries");
  }
  SUBCASE("BUILD on a list") {
    Pickle p;
    p.proto().op(']').op('}').op('b').stop();
    expect_error(zip(p.s), "BUILD at offset 4 on a list is not allowed");
  }
  SUBCASE("no state dict: a list at the top") {
    Pickle p;
    p.proto().op(']').stop();
    expect_error(zip(p.s), "no state dict in the checkpoint");
  }
  SUBCASE("no state dict: 'model' holds something else") {
    Pickle p;
    p.proto().op('}').str("model").integer(3).op('s').stop();
    expect_error(zip(p.s), "its 'model' entry is a int");
  }
  SUBCASE("a list that contains itself is data, not a crash") {
    Pickle p;
    p.proto().op(']').op('q').raw(std::string(1, '\0')).op('h').raw(std::string(1, '\0')).op('a').stop();
    expect_error(zip(p.s), "the pickled object is a list");
  }
}

// ================================================================================================
// tensor_to_f32

TEST_CASE("tensor_to_f32 checks every view against its storage") {
  auto ck = must_load(pickle_zip(one_tensor_pickle(6, 0, {2, 3}, {3, 1})));
  SourceTensor t = ck->tensors.at("w");
  SUBCASE("valid") { CHECK(f32(*ck, "w") == std::vector<float>{1, 2, 3, 4, 5, 6}); }
  SUBCASE("out of range") {
    t.storage_offset = 1;
    CHECK(f32_error(*ck, t).find("view reaches element 6") != std::string::npos);
  }
  SUBCASE("offset overflow") {
    t.storage_offset = UINT64_MAX;
    CHECK(f32_error(*ck, t).find("overflows") != std::string::npos);
  }
  SUBCASE("broadcast view of a huge size") {
    t.shape = {int64_t(1) << 40};
    t.strides = {0};
    CHECK(f32_error(*ck, t).find("broadcast") != std::string::npos);
  }
  SUBCASE("small broadcast is fine") {
    t.shape = {4};
    t.strides = {0};
    linfer::err::Result<std::vector<float>> out = tensor_to_f32(*ck, t);
    REQUIRE(out.ok());
    CHECK(out.value() == std::vector<float>{1, 1, 1, 1});
  }
  SUBCASE("unknown storage") {
    t.storage_key = "nope";
    CHECK(f32_error(*ck, t).find("unknown storage 'nope'") != std::string::npos);
  }
  SUBCASE("dtype differs from the storage") {
    t.dtype = SourceDType::F16;
    CHECK(f32_error(*ck, t).find("its storage holds F32") != std::string::npos);
  }
}

// ================================================================================================
// legacy torch.save (pre-1.6): magic, protocol version, sys_info, object pickle, key list, records

namespace {

const std::string kLegacyMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);

std::string record(int64_t count, const std::string& data) {
  std::string r;
  put64(r, uint64_t(count));
  return r + data;
}

std::string f16_bytes() { return std::string("\x00\x3c\x00\x40", 4); }  // 1.0, 2.0

// A legacy file built piece by piece; the defaults make a valid one whose records are in a
// different order from the pickle's first use (like the real writer: the key list is sorted).
struct Legacy {
  std::string magic = kLegacyMagic;
  int64_t version = 1001;
  bool little_endian = true;
  int64_t int_size = 4;
  int64_t long_size = 4;
  std::string object;  // the object pickle; default: {"w": F32 [2,3] "k1", "h": F16 [1] "k0"}
  std::vector<std::string> keys = {"k0", "k1"};
  std::string records = record(2, f16_bytes()) + record(6, floats({1, 2, 3, 4, 5, 6}));

  Legacy() {
    Pickle p;
    p.proto().op('}').mark();
    p.str("w").tensor("FloatStorage", "k1", 6, 0, {2, 3}, {3, 1}, "N");
    p.str("h").tensor("HalfStorage", "k0", 2, 1, {1}, {1}, "N");
    p.op('u').stop();
    object = p.s;
  }
  std::string version_pickle() const { return Pickle().proto().integer(version).stop().s; }
  std::string sys_info() const {
    Pickle p;
    p.proto().op('}').mark().str("protocol_version").integer(1001).str("little_endian").op(little_endian ? 0x88 : 0x89);
    p.str("type_sizes")
        .op('}')
        .mark()
        .str("short")
        .integer(2)
        .str("int")
        .integer(int_size)
        .str("long")
        .integer(long_size);
    p.op('u').op('u').stop();
    return p.s;
  }
  std::string key_list() const {
    Pickle p;
    p.proto().op(']').mark();
    for (const std::string& k : keys) p.str(k);
    p.op('e').stop();
    return p.s;
  }
  std::string head() const { return magic + version_pickle() + sys_info() + object; }
  std::string build() const { return head() + key_list() + records; }
};

// FNV-1a 64 of the bytes of `v`.
uint64_t fnv1a(const std::vector<float>& v) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = reinterpret_cast<const uint8_t*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

TEST_CASE("torch legacy fixture: plain state dict reads like the zip one") {
  auto ck = must_load_file("legacy.pt");
  auto zip = must_load_file("plain.pt");
  CHECK(ck->format == "torch-legacy");
  REQUIRE(ck->tensors.size() == 4);
  CHECK(ck->storages.size() == 4);
  CHECK(f32(*ck, "0.weight") ==
        std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2, 2.25f, 2.5f, 2.75f});
  CHECK(ck->tensors.at("0.weight").shape == std::vector<int64_t>{3, 4});
  for (const auto& [name, t] : zip->tensors) {
    CHECK(ck->tensors.at(name).shape == t.shape);
    CHECK(f32(*ck, name) == f32(*zip, name));
  }
  REQUIRE(ck->root != nullptr);
  CHECK(ck->root->state != nullptr);  // OrderedDict _metadata, as in the zip format
}

TEST_CASE("torch legacy fixture: shared storage") {
  auto ck = must_load_file("legacy_shared.pt");
  REQUIRE(ck->tensors.size() == 3);
  CHECK(ck->storages.size() == 1);
  const SourceTensor& e = ck->tensors.at("embed.weight");
  const SourceTensor& h = ck->tensors.at("head.weight");
  const SourceTensor& r = ck->tensors.at("row");
  CHECK(e.storage_key == h.storage_key);
  CHECK(e.storage_key == r.storage_key);
  CHECK(r.storage_offset == 3);
  CHECK(f32(*ck, "embed.weight") == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(f32(*ck, "head.weight") == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(f32(*ck, "row") == std::vector<float>{3, 4, 5});
}

TEST_CASE("torch legacy fixture: views with offsets and strides") {
  auto ck = must_load_file("legacy_views.pt");
  const SourceTensor& s = ck->tensors.at("sliced");
  CHECK(s.storage_offset == 7);
  CHECK(s.strides == std::vector<int64_t>{5, 1});
  CHECK(f32(*ck, "sliced") == std::vector<float>{7, 8, 9, 12, 13, 14, 17, 18, 19});
  CHECK(f32(*ck, "column") == std::vector<float>{3, 8, 13, 18});
  CHECK(ck->tensors.at("column").storage_offset == 3);
  CHECK(f32(*ck, "transposed") ==
        std::vector<float>{0, 5, 10, 15, 1, 6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14, 19});
  CHECK(ck->storages.size() == 1);
}

TEST_CASE("torch legacy fixture: float16 and other dtypes") {
  auto ck = must_load_file("legacy_dtypes.pt");
  CHECK(ck->tensors.at("half").dtype == SourceDType::F16);
  CHECK(ck->storages.at(ck->tensors.at("half").storage_key).bytes == 10);
  CHECK(f32(*ck, "half") == std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24), 0.0f});
  CHECK(ck->tensors.at("bf16").dtype == SourceDType::BF16);
  CHECK(f32(*ck, "bf16") == std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, 100)});
  CHECK(f32(*ck, "double") == std::vector<float>{0.125f, -7.0f});
  CHECK(ck->tensors.at("scalar").shape.empty());
  CHECK(f32(*ck, "scalar") == std::vector<float>{3.5f});
  CHECK(f32(*ck, "empty").empty());
  const Storage& ls = ck->storages.at(ck->tensors.at("long").storage_key);
  REQUIRE(ls.bytes == 24);
  int64_t values[3];
  std::memcpy(values, ls.data, 24);
  CHECK(values[1] == -2);
  CHECK(values[2] == (int64_t(1) << 40));
}

TEST_CASE("torch legacy fixture: pickle protocol 4 (FRAME in every pickle)") {
  auto ck = must_load_file("legacy_proto4.pt");
  CHECK(ck->format == "torch-legacy");
  CHECK(ck->tensors.size() == 4);
  CHECK(f32(*ck, "1.bias") == std::vector<float>{-0.25f, 0.0f, 0.25f});
}

TEST_CASE("torch legacy fixture: fairseq-like dict with argparse.Namespace and f16 model") {
  auto ck = must_load_file("legacy_fairseq_like.pt");
  REQUIRE(ck->tensors.size() == 4);
  CHECK(ck->tensors.at("0.weight").dtype == SourceDType::F16);
  CHECK(f32(*ck, "0.bias") == std::vector<float>{0.5f, -1.0f, 2.0f});
  REQUIRE(ck->root->get("args") != nullptr);
  CHECK(*ck->root->get("args")->get_string("arch") == "linformer_roberta_base");
  CHECK(ck->root->get("extra_state")->get("epoch")->integer == 3);
}

TEST_CASE("torch legacy fixture: a whole pickled nn.Module is refused") {
  const Loaded ck = read_checkpoint(fixture("legacy_module.pt"));
  CHECK(!ck.ok());
  CHECK(ck.status().message() ==
        "legacy torch.save: checkpoint refers to forbidden global '__main__.Tiny' in a ('module', ...) "
        "persistent id: the file holds a whole nn.Module, not a state dict; save model.state_dict() instead");
}

TEST_CASE("torch legacy: real torch 1.13 file (golden lucidrains_share_kv_legacy) matches torch.load") {
  // legacy_golden_expected.txt: name dtype shape fnv1a64(float32 values), written from torch.load by
  // make_fixtures.py. The file's storage keys were renamed and its records follow the sorted key
  // list, not the pickle's order of first use.
  auto ck = must_load_file("../golden_layouts/lucidrains_share_kv_legacy/checkpoint.pt");
  CHECK(ck->format == "torch-legacy");
  std::istringstream expected(slurp(fixture("legacy_golden_expected.txt")));
  std::string name, dtype, shape, hash;
  size_t count = 0;
  while (expected >> name >> dtype >> shape >> hash) {
    ++count;
    INFO("tensor " << name);
    auto it = ck->tensors.find(name);
    REQUIRE(it != ck->tensors.end());
    CHECK(dtype == "float32");
    CHECK(it->second.dtype == SourceDType::F32);
    std::string got_shape;
    for (int64_t d : it->second.shape) got_shape += (got_shape.empty() ? "" : ",") + std::to_string(d);
    CHECK(got_shape == shape);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(f32(*ck, name))));
    CHECK(hash == buf);
  }
  CHECK(count == 30);
  CHECK(ck->tensors.size() == count);
}

TEST_CASE("torch legacy: hand-built files") {
  SUBCASE("valid: records follow the key list, not the pickle order") {
    auto ck = must_load(Legacy().build());
    CHECK(ck->format == "torch-legacy");
    CHECK(f32(*ck, "w") == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(f32(*ck, "h") == std::vector<float>{2});
    CHECK(ck->storages.at("k0").bytes == 4);
  }
  SUBCASE("key list in another order than sorted is followed") {
    Legacy l;
    l.keys = {"k1", "k0"};
    l.records = record(6, floats({1, 2, 3, 4, 5, 6})) + record(2, f16_bytes());
    auto ck = must_load(l.build());
    CHECK(f32(*ck, "w") == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(f32(*ck, "h") == std::vector<float>{2});
  }
  SUBCASE("long size 8 in sys_info and up to 4095 zero bytes of padding are accepted") {
    Legacy l;
    l.long_size = 8;
    l.records += std::string(4095, '\0');
    must_load(l.build());
  }
  SUBCASE("empty storage and empty state dict") {
    Legacy l;
    Pickle p;
    p.proto().op('}').mark().str("e").tensor("FloatStorage", "z", 0, 0, {0}, {1}, "N").op('u').stop();
    l.object = p.s;
    l.keys = {"z"};
    l.records = record(0, "");
    auto ck = must_load(l.build());
    CHECK(f32(*ck, "e").empty());
    Legacy none;
    none.object = Pickle().proto().op('}').stop().s;
    none.keys = {};
    none.records = "";
    CHECK(must_load(none.build())->tensors.empty());
  }
}

TEST_CASE("torch legacy: corrupt files are refused with a one-line message naming the problem") {
  const Legacy good;
  must_load(good.build());
  SUBCASE("bad magic position: the protocol-version pickle comes first") {
    Legacy l;
    expect_error(
        l.version_pickle() + l.magic + l.sys_info() + l.object + l.key_list() + l.records,
        "legacy torch.save: the file must start with the magic-number pickle, but the magic number is at offset 10 instead of 2");
  }
  SUBCASE("magic pickle without STOP") {
    Legacy l;
    l.magic = l.magic.substr(0, 14) + "N.";
    expect_error(l.build(), "legacy torch.save: the magic-number pickle does not end with STOP at offset 14");
  }
  SUBCASE("protocol 4 magic with a bad FRAME length") {
    Legacy l;
    l.magic = std::string("\x80\x04\x95\x0e\0\0\0\0\0\0\0", 11) + kLegacyMagic.substr(2);
    expect_error(l.build(), "legacy torch.save: the magic-number pickle has a FRAME of 14 bytes (expected 13)");
  }
  SUBCASE("wrong protocol version") {
    Legacy l;
    l.version = 1000;
    expect_error(l.build(), "legacy torch.save: invalid protocol version 1000 (expected 1001)");
  }
  SUBCASE("protocol version is not an int") {
    Legacy l;
    std::string bad =
        l.magic + Pickle().proto().str("1001").stop().s + l.sys_info() + l.object + l.key_list() + l.records;
    expect_error(bad, "legacy torch.save: the protocol version is a str, not 1001");
  }
  SUBCASE("big-endian sys_info") {
    Legacy l;
    l.little_endian = false;
    expect_error(
        l.build(),
        "legacy torch.save: the file was written on a big-endian machine (sys_info little_endian is False); big-endian files are not supported");
  }
  SUBCASE("odd type sizes in sys_info") {
    Legacy l;
    l.int_size = 8;
    expect_error(l.build(), "legacy torch.save: sys_info type_sizes 'int' is 8 (expected 4)");
    l.int_size = 4;
    l.long_size = 2;
    expect_error(l.build(), "legacy torch.save: sys_info type_sizes 'long' is 2 (expected 4 or 8)");
  }
  SUBCASE("sys_info is not a dict") {
    Legacy l;
    expect_error(l.magic + l.version_pickle() + Pickle().proto().op(']').stop().s + l.object + l.key_list() + l.records,
                 "legacy torch.save: sys_info is a list, not a dict");
  }
  SUBCASE("key list missing a key") {
    Legacy l;
    l.keys = {"k0"};
    l.records = record(2, f16_bytes());
    expect_error(
        l.build(),
        "legacy torch.save: storage 'k1' used by the object pickle is missing from the storage key list (1 missing)");
  }
  SUBCASE("key list naming a storage the pickle does not use") {
    Legacy l;
    l.keys = {"k0", "k1", "k2"};
    l.records += record(1, floats({7}));
    expect_error(l.build(), "legacy torch.save: storage key 'k2' in the key list is not used by the object pickle");
  }
  SUBCASE("key listed twice") {
    Legacy l;
    l.keys = {"k0", "k0", "k1"};
    expect_error(l.build(), "legacy torch.save: storage key 'k0' appears twice in the key list");
  }
  SUBCASE("key list is not a list of strings") {
    Legacy l;
    std::string keys = Pickle().proto().op(']').mark().integer(5).op('e').stop().s;
    expect_error(l.head() + keys + l.records, "legacy torch.save: the storage key list holds a int, not a string");
  }
  SUBCASE("count mismatch") {
    Legacy l;
    l.records = record(2, f16_bytes()) + record(5, floats({1, 2, 3, 4, 5}));
    expect_error(l.build(), "holds 5 elements but the object pickle says 6");
  }
  SUBCASE("negative count") {
    Legacy l;
    l.records = record(-1, "") + record(6, floats({1, 2, 3, 4, 5, 6}));
    expect_error(l.build(), "has a negative element count (-1)");
  }
  SUBCASE("truncated record data") {
    std::string bytes = good.build();
    bytes.resize(bytes.size() - 14);
    expect_error(bytes, "storage 'k1' record at offset " + std::to_string(bytes.size() + 14 - 32) +
                            " needs 24 bytes (6 x F32) but the file has only 10 bytes left");
  }
  SUBCASE("truncated record count") {
    std::string bytes = good.head() + good.key_list() + record(2, f16_bytes()) + std::string("\x06\0\0", 3);
    expect_error(bytes, "is truncated: it needs an 8-byte element count but the file has 3 bytes left");
  }
  SUBCASE("record past the end of the file (count and numel agree)") {
    Legacy l;
    Pickle p;
    p.proto().op('}').mark().str("w").tensor("FloatStorage", "k", int64_t(1) << 40, 0, {2}, {1}, "N").op('u').stop();
    l.object = p.s;
    l.keys = {"k"};
    l.records = record(int64_t(1) << 40, floats({1, 2}));
    expect_error(l.build(), "storage 'k' record at offset");
    expect_error(l.build(), "needs 4398046511104 bytes (1099511627776 x F32) but the file has only 8 bytes left");
  }
  SUBCASE("numel * itemsize overflows") {
    Legacy l;
    Pickle p;
    p.proto().op('}').mark().str("w").tensor("DoubleStorage", "k", int64_t(1) << 62, 0, {2}, {1}, "N").op('u').stop();
    l.object = p.s;
    expect_error(l.build(), "legacy torch.save: storage 'k' element count 4611686018427387904 is too large");
  }
  SUBCASE("6-tuple with view_metadata") {
    Legacy l;
    Pickle p;
    Pickle meta;
    meta.str("k9").integer(0).integer(2).op(0x87);  // (view_key, offset, size)
    p.proto().op('}').mark().str("w").tensor("FloatStorage", "k1", 6, 0, {2}, {1}, meta.s).op('u').stop();
    l.object = p.s;
    l.keys = {"k1"};
    l.records = record(6, floats({1, 2, 3, 4, 5, 6}));
    expect_error(l.build(), "of storage 'k1' has view_metadata (a tuple): legacy storage views are not supported");
  }
  SUBCASE("5-tuple persistent id (zip style) in a legacy file") {
    Legacy l;
    l.object = one_tensor_pickle(6, 0, {6}, {1});
    expect_error(l.build(), "is not ('storage', StorageClass, key, location, numel, view_metadata)");
  }
  SUBCASE("('module', ...) persistent id") {
    Legacy l;
    Pickle p;
    p.proto().mark().str("module").op('N').str("f.py").str("src").tuple().op('Q').stop();
    l.object = p.s;
    expect_error(l.build(), "is a pickled module class ('module', ...): the file holds a whole nn.Module");
  }
  SUBCASE("persistent id in the key list pickle") {
    Legacy l;
    std::string keys = Pickle().proto().str("k0").op('Q').stop().s;
    expect_error(l.head() + keys + l.records,
                 "persistent id at offset " + std::to_string(l.head().size() + 9) + " in the storage key list pickle");
  }
  SUBCASE("forbidden global in the object pickle") {
    Legacy l;
    l.object = Pickle().proto().global("posix", "system").str("id").op(0x85).op('R').stop().s;
    expect_error(l.build(), "legacy torch.save: checkpoint refers to forbidden global 'posix.system'");
  }
  SUBCASE("error offsets are file offsets") {
    Legacy l;
    l.object = Pickle().proto().op('}').raw("I1\n").stop().s;
    expect_error(l.build(),
                 "unsupported pickle opcode 0x49 at offset " + std::to_string(l.head().size() - l.object.size() + 3));
  }
  SUBCASE("file ends after the object pickle") {
    expect_error(good.head(), "legacy torch.save: the file ends before the storage key list pickle (offset " +
                                  std::to_string(good.head().size()) + ")");
  }
  SUBCASE("object pickle without STOP") {
    Legacy l;
    expect_error(l.magic + l.version_pickle() + l.sys_info() + Pickle().proto().op('}').s,
                 "pickle stream ended without STOP (truncated object pickle?)");
  }
  SUBCASE("trailing garbage") {
    Legacy l;
    l.records += "x";
    expect_error(l.build(), "legacy torch.save: 1 trailing bytes after the last storage record");
  }
  SUBCASE("too much zero padding") {
    Legacy l;
    l.records += std::string(4096, '\0');
    expect_error(l.build(), "4096 trailing bytes after the last storage record at offset");
  }
  SUBCASE("view past the end of its storage") {
    Legacy l;
    Pickle p;
    p.proto().op('}').mark().str("w").tensor("FloatStorage", "k1", 6, 4, {3}, {1}, "N").op('u').stop();
    l.object = p.s;
    l.keys = {"k1"};
    l.records = record(6, floats({1, 2, 3, 4, 5, 6}));
    expect_error(l.build(), "view reaches element 6 but its storage has only 6 elements");
  }
  SUBCASE("tar archive (the oldest format) stays refused") {
    std::string tar(1024, '\0');
    std::memcpy(&tar[0], "storages", 8);
    std::memcpy(&tar[257], "ustar", 5);
    expect_error(tar, "tar archive: the tar-based torch.save format of early PyTorch releases is not supported");
  }
}

TEST_CASE("torch legacy: the real fixtures cut at every length are refused cleanly") {
  for (const char* name : {"legacy.pt", "legacy_shared.pt"}) {
    const std::string original = slurp(fixture(name));
    for (size_t len = 0; len < original.size(); ++len) {
      const Loaded ck = load_bytes(original.substr(0, len));
      const std::string& error = ck.status().message();
      INFO(name << " cut to " << len << " bytes");
      CHECK(!ck.ok());
      CHECK(!error.empty());
      CHECK(error.find('\n') == std::string::npos);
    }
  }
}

// ================================================================================================
// robustness: random corruptions of every fixture must give a clean error or a checkpoint

TEST_CASE("mutated fixtures never crash") {
  const char* names[] = {
      "plain.pt",         "shared.pt",       "views.pt",         "dtypes.pt",           "with_config.pt",
      "proto4.pt",        "fairseq_like.pt", "parameters.pt",    "malicious_system.pt", "legacy.pt",
      "legacy_shared.pt", "legacy_views.pt", "legacy_dtypes.pt", "legacy_proto4.pt",    "legacy_fairseq_like.pt",
      "legacy_module.pt"};
  std::mt19937 rng(1234);
  int loaded = 0, refused = 0;
  for (const char* name : names) {
    const std::string original = slurp(fixture(name));
    for (int round = 0; round < 300; ++round) {
      std::string bytes = original;
      int kind = int(rng() % 3);
      if (kind == 0) {  // flip a few bytes
        for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) bytes[rng() % bytes.size()] = char(rng());
      } else if (kind == 1) {  // truncate
        bytes.resize(rng() % bytes.size());
      } else {  // overwrite a byte inside the pickle region (the first ~600 bytes)
        bytes[64 + rng() % 600 % (bytes.size() - 64)] = char(rng());
      }
      const Loaded read = load_bytes(bytes);
      const std::string& error = read.status().message();
      if (!read.ok()) {
        ++refused;
        CHECK(!error.empty());
        CHECK(error.find('\n') == std::string::npos);
        continue;
      }
      ++loaded;
      for (const auto& [tname, t] : read.value()->tensors) (void)tensor_to_f32(*read.value(), t);
    }
  }
  CHECK(refused > 0);
  MESSAGE("mutations loaded: " << loaded << ", refused: " << refused);
}
