// SPDX-License-Identifier: Apache-2.0
// Format detection, file mapping, Value accessors and tensor_to_f32.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <new>

#include "linfer/types/half.h"
#include "reader_internal.h"

namespace linfer::convert {

const char* dtype_name(SourceDType dtype) {
  switch (dtype) {
    case SourceDType::F32:
      return "F32";
    case SourceDType::F64:
      return "F64";
    case SourceDType::F16:
      return "F16";
    case SourceDType::BF16:
      return "BF16";
    case SourceDType::I64:
      return "I64";
    case SourceDType::I32:
      return "I32";
    case SourceDType::I16:
      return "I16";
    case SourceDType::I8:
      return "I8";
    case SourceDType::U8:
      return "U8";
    case SourceDType::Bool:
      return "BOOL";
  }
  return "?";
}

size_t dtype_size(SourceDType dtype) {
  switch (dtype) {
    case SourceDType::F64:
    case SourceDType::I64:
      return 8;
    case SourceDType::F32:
    case SourceDType::I32:
      return 4;
    case SourceDType::F16:
    case SourceDType::BF16:
    case SourceDType::I16:
      return 2;
    case SourceDType::I8:
    case SourceDType::U8:
    case SourceDType::Bool:
      return 1;
  }
  return 1;
}

// ---------------------------------------------------------------------------------------------
// Value accessors

const Value* Value::get(std::string_view key) const {
  if (kind == Kind::Opaque) return state ? state->get(key) : nullptr;
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::String && k->text == key) return v;
  return nullptr;
}

const Value* Value::get(int64_t key) const {
  if (kind == Kind::Opaque) return state ? state->get(key) : nullptr;
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k->kind == Kind::Int && k->integer == key) return v;
    if (k->kind == Kind::Bool && int64_t(k->boolean) == key) return v;
  }
  return nullptr;
}

const std::string* Value::get_string(std::string_view key) const {
  const Value* v = get(key);
  return v && v->kind == Kind::String ? &v->text : nullptr;
}

size_t Value::size() const {
  if (kind == Kind::List || kind == Kind::Tuple) return items.size();
  if (kind == Kind::Dict) return entries.size();
  return 0;
}

const Value* Value::at(size_t i) const {
  if ((kind == Kind::List || kind == Kind::Tuple) && i < items.size()) return items[i];
  return nullptr;
}

bool Value::as_number(double* out) const {
  switch (kind) {
    case Kind::Int:
      *out = double(integer);
      return true;
    case Kind::Float:
      *out = number;
      return true;
    case Kind::Bool:
      *out = boolean ? 1.0 : 0.0;
      return true;
    default:
      return false;
  }
}

const char* Value::kind_name() const {
  switch (kind) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
    case Kind::Tensor:
      return "tensor";
    case Kind::Opaque:
      return "object";
    case Kind::Global:
      return "global";
    case Kind::Storage:
      return "storage";
  }
  return "?";
}

namespace detail {

void throw_reader_error(linfer_status code, const char* text, const err::MessageArg* args, size_t count) {
  throw ReaderError{err::format_status(code, text, args, count)};
}

std::string quote(std::string_view text) {
  constexpr size_t kMax = 160;
  std::string out = "'";
  size_t n = text.size() < kMax ? text.size() : kMax;
  // Do not cut inside a UTF-8 sequence; escape every non-ASCII byte if the text is not UTF-8.
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  const bool utf8 = find_invalid_utf8(text.substr(0, n), false) == std::string_view::npos;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'' || (c >= 0x80 && !utf8)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (n < text.size()) out += "...";
  out += "'";
  return out;
}

size_t find_invalid_utf8(std::string_view text, bool allow_surrogates) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else
      return i;
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return i;
    if (!allow_surrogates && cp >= 0xd800 && cp <= 0xdfff) return i;
    i += len;
  }
  return std::string_view::npos;
}

uint64_t checked_numel(const std::string& what, const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) fail("{} has a negative dimension ({})", what, d);
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : shape)
    if (!mul_u64(numel, uint64_t(d), &numel) || numel > uint64_t(INT64_MAX))
      fail("{} has too many elements (shape product overflows)", what);
  return numel;
}

void check_view(const std::string& what, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                uint64_t offset, uint64_t storage_numel) {
  if (shape.size() > size_t(kMaxRank)) fail("{} has rank {} (more than {})", what, shape.size(), kMaxRank);
  if (shape.size() != strides.size()) fail("{} has {} sizes but {} strides", what, shape.size(), strides.size());
  for (int64_t s : strides)
    if (s < 0) fail("{} has a negative stride ({})", what, s);
  uint64_t numel = checked_numel(what, shape);
  if (numel == 0) {
    if (offset > storage_numel)
      fail("{} starts at element {} past the end of its storage ({} elements)", what, offset, storage_numel);
    return;
  }
  uint64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t step;
    if (!mul_u64(uint64_t(shape[i] - 1), uint64_t(strides[i]), &step) || !add_u64(last, step, &last))
      fail("{} view extent overflows", what);
  }
  if (last >= storage_numel)
    fail("{} view reaches element {} but its storage has only {} elements", what, last, storage_numel);
}

namespace {

void parse_any(Checkpoint* ck) {
  const uint8_t* d = ck->file_data;
  uint64_t n = ck->file_size;
  if (n >= 4 && d[0] == 'P' && d[1] == 'K' &&
      ((d[2] == 3 && d[3] == 4) || (d[2] == 5 && d[3] == 6) || (d[2] == 6 && d[3] == 6))) {
    parse_torch_zip(d, n, ck);
    return;
  }
  if (n >= 8 && std::memcmp(d, "PYTORCH1", 8) == 0)
    refuse("PyTorch preview archive format (PYTORCH1 magic) is not supported");
  if (is_legacy_torch(d, n)) {
    parse_torch_legacy(d, n, ck);
    return;
  }
  if (n >= 512 && std::memcmp(d + 257, "ustar", 5) == 0)
    refuse(
        "tar archive: the tar-based torch.save format of early PyTorch releases is not supported; "
        "load it with torch and save it again with torch.save");
  parse_safetensors(d, n, ck);
}

err::Result<std::unique_ptr<Checkpoint>> finish(std::unique_ptr<Checkpoint> ck) {
  try {
    parse_any(ck.get());
    return ck;
  } catch (ReaderError& e) {
    return std::move(e.status);
  } catch (const std::bad_alloc&) {
    return err::Status(LINFER_ERROR_OUT_OF_MEMORY, "out of memory while reading the checkpoint");
  } catch (const std::exception& e) {  // (a library's exception on a file the checks let through)
    return err::invalid_model("cannot read the checkpoint: {}", e.what());
  }
}

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) munmap(addr, size);
  }
};

}  // namespace
}  // namespace detail

err::Result<std::unique_ptr<Checkpoint>> read_checkpoint_from_memory(const uint8_t* data, size_t size) {
  try {
    auto buffer = std::make_shared<std::vector<uint8_t>>(data, data + size);
    auto ck = std::make_unique<Checkpoint>();
    ck->file_data = buffer->data();
    ck->file_size = buffer->size();
    ck->bytes_owner = buffer;
    return detail::finish(std::move(ck));
  } catch (const std::bad_alloc&) {
    return err::Status(LINFER_ERROR_OUT_OF_MEMORY, "out of memory while copying the checkpoint");
  }
}

err::Result<std::unique_ptr<Checkpoint>> read_checkpoint(const std::string& path) {
  auto sys_error = [&](const char* what) {
    return err::failure(LINFER_ERROR_IO, "cannot {} {}: {}", what, detail::quote(path), std::strerror(errno));
  };
  auto too_large = [&] {
    return err::failure(LINFER_ERROR_IO, "{} is too large for a 32-bit process to map", detail::quote(path));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    if (saved == EOVERFLOW) return too_large();  // 2 GiB or more, on a 32-bit system whose off_t is 32 bits
    return sys_error("stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return err::failure(LINFER_ERROR_IO, "{} is not a regular file", detail::quote(path));
  }
  if (uint64_t(st.st_size) > uint64_t(PTRDIFF_MAX)) {  // not cut short to size_t (64-bit off_t)
    ::close(fd);
    return too_large();
  }
  try {
    auto ck = std::make_unique<Checkpoint>();
    size_t size = size_t(st.st_size);
    if (size == 0) {
      ::close(fd);
      return err::invalid_model("{} is empty", detail::quote(path));
    }
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr != MAP_FAILED) {
      auto m = std::make_shared<detail::Mapping>();
      m->addr = addr;
      m->size = size;
      ck->file_data = static_cast<const uint8_t*>(addr);
      ck->bytes_owner = m;
    } else {  // fall back to reading the file
      auto buffer = std::make_shared<std::vector<uint8_t>>(size);
      size_t got = 0;
      while (got < size) {
        ssize_t r = ::read(fd, buffer->data() + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          int saved = r < 0 ? errno : EIO;
          ::close(fd);
          errno = saved;
          return sys_error("read");
        }
        got += size_t(r);
      }
      ck->file_data = buffer->data();
      ck->bytes_owner = buffer;
    }
    ck->file_size = size;
    ::close(fd);
    return detail::finish(std::move(ck));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    return err::failure(LINFER_ERROR_OUT_OF_MEMORY, "out of memory while reading {}", detail::quote(path));
  }
}

// ---------------------------------------------------------------------------------------------
// tensor_to_f32

namespace {

float load_as_f32(SourceDType dtype, const uint8_t* p) {
  switch (dtype) {
    case SourceDType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case SourceDType::F16:
      return half_to_float(detail::load_u16(p));
    case SourceDType::BF16: {
      uint32_t bits = uint32_t(detail::load_u16(p)) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case SourceDType::F64: {
      double d;
      std::memcpy(&d, p, 8);
      if (d > double(FLT_MAX)) return HUGE_VALF;
      if (d < -double(FLT_MAX)) return -HUGE_VALF;
      return static_cast<float>(d);
    }
    default:
      return 0.0f;
  }
}

}  // namespace

err::Result<std::vector<float>> tensor_to_f32(const Checkpoint& checkpoint, const SourceTensor& tensor) {
  using namespace detail;
  const std::string what = err::message("tensor {}", quote(tensor.name));
  try {
    auto it = checkpoint.storages.find(tensor.storage_key);
    if (it == checkpoint.storages.end()) fail("{} refers to unknown storage {}", what, quote(tensor.storage_key));
    const Storage& storage = it->second;
    if (storage.dtype != tensor.dtype)
      fail("{} has dtype {} but its storage holds {}", what, dtype_name(tensor.dtype), dtype_name(storage.dtype));
    switch (tensor.dtype) {
      case SourceDType::F32:
      case SourceDType::F16:
      case SourceDType::BF16:
      case SourceDType::F64:
        break;
      default:
        fail("{} has dtype {}; only F32, F16, BF16 and F64 tensors can be read as float32", what,
             dtype_name(tensor.dtype));
    }
    const uint64_t item = dtype_size(tensor.dtype);
    const uint64_t storage_numel = storage.bytes / item;
    check_view(what, tensor.shape, tensor.strides, tensor.storage_offset, storage_numel);
    const uint64_t numel = checked_numel(what, tensor.shape);
    if (numel > storage_numel && numel > (uint64_t(1) << 16))
      fail("{} expands {} stored elements into {} (broadcast views are not supported)", what, storage_numel, numel);
    std::vector<float> out(size_t(numel), 0.0f);
    if (numel == 0) return out;
    const uint8_t* base = storage.data;
    const size_t rank = tensor.shape.size();
    // Row-major contiguous?
    bool contiguous = true;
    int64_t expect = 1;
    for (size_t i = rank; i-- > 0;) {
      if (tensor.shape[i] != 1 && tensor.strides[i] != expect) contiguous = false;
      expect *= tensor.shape[i];
    }
    float* dst = out.data();
    if (contiguous) {
      const uint8_t* p = base + tensor.storage_offset * item;
      for (uint64_t i = 0; i < numel; ++i) dst[i] = load_as_f32(tensor.dtype, p + i * item);
      return out;
    }
    int64_t index[kMaxRank] = {0};
    uint64_t offset = tensor.storage_offset;  // every index visited is <= the checked maximum
    for (uint64_t i = 0; i < numel; ++i) {
      dst[i] = load_as_f32(tensor.dtype, base + offset * item);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < tensor.shape[d]) {
          offset += uint64_t(tensor.strides[d]);
          break;
        }
        offset -= uint64_t(tensor.strides[d]) * uint64_t(tensor.shape[d] - 1);
        index[d] = 0;
      }
    }
    return out;
  } catch (ReaderError& e) {
    return std::move(e.status);
  } catch (const std::bad_alloc&) {
    return err::failure(LINFER_ERROR_OUT_OF_MEMORY, "{} does not fit in memory", what);
  }
}

}  // namespace linfer::convert
