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

std::string read_file(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open '" + path + "': " + std::strerror(errno);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) return "cannot read '" + path + "'";
  f.seekg(0);
  out->resize(size_t(size));
  if (size && !f.read(reinterpret_cast<char*>(out->data()), size)) return "cannot read '" + path + "'";
  return "";
}

std::string write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return "cannot create '" + tmp + "': " + std::strerror(errno);
  const bool ok = (size == 0 || std::fwrite(data, 1, size, f) == size);
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return "cannot write '" + path + "': " + std::strerror(errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return "cannot rename to '" + path + "': " + err;
  }
  return "";
}

std::string npy_bytes(const float* data, const std::vector<size_t>& shape, std::vector<uint8_t>* out) {
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
  out->assign(10 + header.size() + data_bytes, 0);
  uint8_t* w = out->data();
  std::memcpy(w, "\x93NUMPY\x01\x00", 8);
  w[8] = uint8_t(header.size() & 0xff);
  w[9] = uint8_t(header.size() >> 8);
  std::memcpy(w + 10, header.data(), header.size());
  if (data_bytes) std::memcpy(w + 10 + header.size(), data, data_bytes);
  return "";
}

std::string read_npy_f32(const std::string& path, std::vector<float>* data, std::vector<size_t>* shape) {
  std::vector<uint8_t> bytes;
  std::string err = read_file(path, &bytes);
  if (!err.empty()) return err;
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) return "'" + path + "' is not a .npy file";
  size_t hlen, hstart;
  if (bytes[6] == 1) {
    hlen = bytes[8] | (size_t(bytes[9]) << 8);
    hstart = 10;
  } else {
    if (bytes.size() < 12) return "'" + path + "' is truncated";
    hlen = bytes[8] | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    hstart = 12;
  }
  if (hstart + hlen > bytes.size()) return "'" + path + "' is truncated";
  const std::string header(bytes.begin() + hstart, bytes.begin() + hstart + hlen);
  if (header.find("'<f4'") == std::string::npos) return "'" + path + "' is not float32";
  if (header.find("'fortran_order': False") == std::string::npos) return "'" + path + "' is Fortran ordered";
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return "'" + path + "' has no shape";
  shape->clear();
  std::stringstream ss(header.substr(open + 1, close - open - 1));
  std::string item;
  size_t n = 1;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) {
      shape->push_back(std::stoul(item));
      n *= shape->back();
    }
  const size_t start = hstart + hlen;
  if (bytes.size() - start != n * 4) return "'" + path + "' has the wrong data size";
  data->resize(n);
  std::memcpy(data->data(), bytes.data() + start, n * 4);
  return "";
}

std::string read_token_ids(const std::string& path, std::vector<int32_t>* ids) {
  std::ifstream f(path);
  if (!f) return "cannot open '" + path + "': " + std::strerror(errno);
  ids->clear();
  std::string token;
  while (f >> token) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(token.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
      return "'" + path + "': token " + std::to_string(ids->size()) + " ('" + token.substr(0, 32) +
             "') is not an integer id";
    ids->push_back(int32_t(v));
  }
  return "";
}

bool parse_uint(const char* s, uint32_t lo, uint32_t hi, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi || s[0] == '-' || s[0] == '+') return false;
  *out = uint32_t(v);
  return true;
}

std::string read_text_bytes(const std::string& path, std::vector<int32_t>* ids) {
  std::vector<uint8_t> bytes;
  std::string err = read_file(path, &bytes);
  if (!err.empty()) return err;
  ids->assign(bytes.begin(), bytes.end());
  return "";
}

}  // namespace linfer::tools
