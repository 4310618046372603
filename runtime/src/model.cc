// SPDX-License-Identifier: Apache-2.0
#include "model.h"

#if !LINFER_BARE_METAL
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "attention/attention_kind.h"
#include "kernels.h"
#include "linfer/types/aligned_alloc.h"
#include "model_options.h"

namespace linfer::rt {

LoadedModel::~LoadedModel() {
#if !LINFER_BARE_METAL
  if (mapped) munmap(mapped, mapped_size);
#endif
}

namespace {

#if !LINFER_BARE_METAL
// Drops the whole pages of the mapping inside [p, p + bytes) from the resident set. They are
// clean file pages, read again from the file if anything touches them later.
void release_pages(const LoadedModel& m, const void* p, uint64_t bytes) {
  if (!m.mapped || bytes == 0) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = uintptr_t(m.mapped), hi = lo + m.mapped_size;
  if (uintptr_t(p) < lo || uintptr_t(p) >= hi) return;
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page;
  const uintptr_t end = std::min<uintptr_t>(hi, uintptr_t(p) + bytes) / page * page;
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}
#endif

// Verifies and validates the bytes, packs a version 1 file's dense weights (not on bare metal:
// refused), and fills the bookkeeping.
Status finish_load(LoadedModel* m) {
  LfmInfo info;
  if (Status s = parse_lfm(m->bytes(), m->size, &m->desc, &info); !s.ok()) return s;
  // A valid model of an attention kind this build left out (-DLINFER_ATTENTION_KINDS).
  if (Status s = attention_kind_built(m->desc.config.attention_kind); !s.ok()) return s;
  if (Status s = model_options_built(m->desc); !s.ok()) return s;  // (-DLINFER_MODEL_OPTIONS)
  m->format_version = info.format_version;
#if LINFER_TOKENIZERS  // (a build without them loads the model; linfer_tokenize refuses)
  if (m->desc.tokenizer.present) {
    Result<std::unique_ptr<Tokenizer>> t = Tokenizer::build(m->desc.tokenizer);
    if (!t.ok()) return t.status();
    m->tokenizer = std::move(t.value());
  }
#endif

  // Dense weights this build has no kernels for (LINFER_DTYPES), or, on bare metal, row-major
  // ones: a microcontroller reads a version 2 file's dense weights in place, from flash, and the
  // packing of row-major ones (version 1, pack_dense_weights: 5 KB of code) is not linked.
  std::string unbuilt, row_major;
  for_each_slot(m->desc, [&](Slot slot, uint32_t, const std::string& name, const WeightView& w) {
    if (!w.present() || !is_dense_slot(m->desc.config, slot)) return;
    if (unbuilt.empty() && !kernels::dense_dtype_built(w.dtype))
      unbuilt = message("{} is {}", name, to_string(w.dtype));
    if (row_major.empty() && w.layout == Layout::RowMajor) row_major = name;
  });
  if (!unbuilt.empty())
    return unsupported("{}: this build's dense layers take " LINFER_DENSE_DTYPES " weights only (LINFER_DTYPES)",
                       unbuilt);
#if LINFER_BARE_METAL
  if (!row_major.empty())
    return unsupported(
        "{}{} is row-major{}: a bare-metal build reads dense weights in place, in panels; convert the "
        "model with linfer-convert (format version 2)",
        m->format_version == 1 ? "format version 1 files need repacking (" : "", row_major,
        m->format_version == 1 ? ")" : "");
#else
  // Version 1: every dense weight row-major in the file. Packed once, for every session; the
  // originals' pages are released unless another slot still reads them (a tied embedding).
  std::vector<std::pair<const void*, uint64_t>> originals;
  if (Status s = pack_dense_weights(&m->desc, &m->packed, /*move_tied_embedding=*/false, &originals); !s.ok())
    return s;  // (out of memory, its only failure)
  std::set<const void*> still_read;
  for_each_weight(m->desc, [&](const std::string&, const WeightView& w) {
    if (w.present()) still_read.insert(w.data);
  });
  for (const auto& [data, n] : originals)
    if (!still_read.count(data)) release_pages(*m, data, n);
#endif

  // What the kind's module makes of the model once, for every session (AttentionModelData).
  const AttentionKindInfo& kind = *attention_kind_info(m->desc.config.attention_kind);  // (built: above)
  if (kind.prepare_model)
    if (Status s = kind.prepare_model(*m); !s.ok()) return s;
  return {};
}

#if !LINFER_BARE_METAL
template <class... Args>
Status io_error(const char* text, const Args&... args) {
  return failure(LINFER_ERROR_IO, text, args...);
}
#endif

}  // namespace

Result<std::unique_ptr<LoadedModel>> load_model_file(const std::string& path) {
#if LINFER_BARE_METAL
  return unsupported(
      "this build has no file system (bare metal): load '{}' from memory with linfer_model_load_in_place or "
      "linfer_model_load_from_memory",
      path);
#else
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    // EOVERFLOW: 2 GiB or more, on a 32-bit system whose off_t is 32 bits (Debian armhf).
    return io_error(err == EOVERFLOW ? "'{}' is too large for a 32-bit process to map" : "cannot stat '{}': {}", path,
                    std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return io_error("'{}' is not a regular file", path);
  }
  if (uint64_t(st.st_size) > uint64_t(PTRDIFF_MAX)) {  // not cut short to size_t (64-bit off_t)
    close(fd);
    return io_error("'{}' is too large for a 32-bit process to map", path);
  }
  if (size_t(st.st_size) < 8) {
    close(fd);
    return invalid_model("file is too small to be a linfer model ({} bytes)", kept(st.st_size));
  }
  std::unique_ptr<LoadedModel> m(new (std::nothrow) LoadedModel());
  if (!m) {
    close(fd);
    return out_of_memory("a model", sizeof(LoadedModel));
  }
  m->size = size_t(st.st_size);
  void* p = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  close(fd);
  if (p == MAP_FAILED) return io_error("cannot map '{}': {}", path, std::strerror(map_error));
  m->mapped = p;
  m->mapped_size = m->size;
  if (Status s = finish_load(m.get()); !s.ok()) return s;
  return m;
#endif
}

Result<std::unique_ptr<LoadedModel>> load_model_memory(const void* data, size_t size) {
  if (!data && size) return invalid_argument("model data is null");
  std::unique_ptr<LoadedModel> m(new (std::nothrow) LoadedModel());
  if (!m) return out_of_memory("a model", sizeof(LoadedModel));
  void* p = aligned_block(kDataAlignment, size);
  if (!p) return out_of_memory("a copy of the model", size);
  m->copy.reset(static_cast<uint8_t*>(p));
  if (size) std::memcpy(p, data, size);
  m->size = size;
  if (Status s = finish_load(m.get()); !s.ok()) return s;
  return m;
}

Result<std::unique_ptr<LoadedModel>> load_model_in_place(const void* data, size_t size) {
  if (!data) return invalid_argument("model data is null");
  // The format's weights are 64-byte aligned within the file: in place, the file must be too.
  if (uintptr_t(data) % kDataAlignment != 0)
    return invalid_argument("model data at {} is not {}-byte aligned (needed to read it in place)",
                            kept(uintptr_t(data)), kept(kDataAlignment));
  std::unique_ptr<LoadedModel> m(new (std::nothrow) LoadedModel());
  if (!m) return out_of_memory("a model", sizeof(LoadedModel));
  m->in_place = static_cast<const uint8_t*>(data);
  m->size = size;
  if (Status s = finish_load(m.get()); !s.ok()) return s;
  return m;
}

WeightCounts count_weights(const LoadedModel& m) {
  WeightCounts n;
  bool any_f16 = false, any_i8 = false, any_f32 = false;
  std::set<const void*> counted;  // (a tied embedding's bytes once)
  for_each_weight(m.desc, [&](const std::string& name, const WeightView& w) {
    if (!w.present()) return;
    n.parameters += w.elements();
    if (counted.insert(w.data).second) n.bytes += w.bytes();
    if (is_dense_weight(name)) (w.dtype == DType::F16 ? any_f16 : w.dtype == DType::I8 ? any_i8 : any_f32) = true;
  });
  if (m.attention_data) n.bytes += m.attention_data->bytes();
  n.dense_dtype = int(any_f16) + int(any_i8) + int(any_f32) > 1 ? "mixed" : any_i8 ? "int8" : any_f16 ? "f16" : "f32";
  return n;
}

}  // namespace linfer::rt
