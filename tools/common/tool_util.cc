// SPDX-License-Identifier: Apache-2.0
#include "tool_util.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace linfer::tools {

err::Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return err::failure(LINFER_ERROR_IO, "cannot open '{}': {}", path, std::strerror(errno));
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) return err::failure(LINFER_ERROR_IO, "cannot read '{}'", path);
  f.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size && !f.read(reinterpret_cast<char*>(bytes.data()), size))
    return err::failure(LINFER_ERROR_IO, "cannot read '{}'", path);
  return bytes;
}

err::Status write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return err::failure(LINFER_ERROR_IO, "cannot create '{}': {}", tmp, std::strerror(errno));
  const bool ok = (size == 0 || std::fwrite(data, 1, size, f) == size);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    return err::failure(LINFER_ERROR_IO, "cannot write '{}': {}", path, reason);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    return err::failure(LINFER_ERROR_IO, "cannot rename to '{}': {}", path, reason);
  }
  return {};
}

std::vector<uint8_t> npy_bytes(const float* data, const std::vector<size_t>& shape) {
  std::string shape_str = "(";
  size_t n = 1;
  for (size_t s : shape) {
    shape_str += std::to_string(s) + ",";
    n *= s;
  }
  if (shape.size() > 1) shape_str.pop_back();
  shape_str += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_str + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  // Sized once, then filled: magic and version (8 bytes), the header's length (2), the header, the data.
  const size_t data_bytes = n * sizeof(float);
  std::vector<uint8_t> out(10 + header.size() + data_bytes, 0);
  uint8_t* w = out.data();
  std::memcpy(w, "\x93NUMPY\x01\x00", 8);
  w[8] = uint8_t(header.size() & 0xff);
  w[9] = uint8_t(header.size() >> 8);
  std::memcpy(w + 10, header.data(), header.size());
  if (data_bytes) std::memcpy(w + 10 + header.size(), data, data_bytes);
  return out;
}

err::Result<NpyArray> read_npy_f32(const std::string& path) {
  err::Result<std::vector<uint8_t>> file = read_file(path);
  if (!file.ok()) return file.status();
  const std::vector<uint8_t>& bytes = file.value();
  auto bad = [&](const char* what) { return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "'{}' {}", path, what); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) return bad("is not a .npy file");
  size_t hlen, hstart;
  if (bytes[6] == 1) {
    hlen = bytes[8] | (size_t(bytes[9]) << 8);
    hstart = 10;
  } else {
    if (bytes.size() < 12) return bad("is truncated");
    hlen = bytes[8] | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    hstart = 12;
  }
  if (hstart + hlen > bytes.size()) return bad("is truncated");
  const std::string header(bytes.begin() + hstart, bytes.begin() + hstart + hlen);
  if (header.find("'<f4'") == std::string::npos) return bad("is not float32");
  if (header.find("'fortran_order': False") == std::string::npos) return bad("is Fortran ordered");
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return bad("has no shape");
  NpyArray array;
  std::stringstream ss(header.substr(open + 1, close - open - 1));
  std::string item;
  size_t n = 1;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) {
      array.shape.push_back(std::stoul(item));
      n *= array.shape.back();
    }
  const size_t start = hstart + hlen;
  if (bytes.size() - start != n * 4) return bad("has the wrong data size");
  array.data.resize(n);
  std::memcpy(array.data.data(), bytes.data() + start, n * 4);
  return array;
}

err::Result<std::vector<int32_t>> read_token_ids(const std::string& path) {
  std::ifstream f(path);
  if (!f) return err::failure(LINFER_ERROR_IO, "cannot open '{}': {}", path, std::strerror(errno));
  std::vector<int32_t> ids;
  std::string token;
  while (f >> token) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(token.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
      return err::failure(LINFER_ERROR_INVALID_ARGUMENT, "'{}': token {} ('{}') is not an integer id", path, ids.size(),
                          token.substr(0, 32));
    ids.push_back(int32_t(v));
  }
  return ids;
}

bool parse_uint(const char* s, uint32_t lo, uint32_t hi, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi || s[0] == '-' || s[0] == '+') return false;
  *out = uint32_t(v);
  return true;
}

err::Result<std::vector<int32_t>> read_text_bytes(const std::string& path) {
  err::Result<std::vector<uint8_t>> bytes = read_file(path);
  if (!bytes.ok()) return bytes.status();
  return std::vector<int32_t>(bytes.value().begin(), bytes.value().end());
}

}  // namespace linfer::tools
