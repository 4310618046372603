#include "model.h"

#include "half.h"
#include "int8/dense_int8.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace linfer::rt {

Model::~Model() {
  if (mapped) munmap(mapped, mapped_size);
}

namespace {

// Validates the bytes, builds the f32 description and fills the bookkeeping.
LoadResult finish_load(std::unique_ptr<Model>& m) {
  const uint8_t* bytes = m->mapped ? static_cast<const uint8_t*>(m->mapped) : m->copy.get();
  std::string err = parse_lfm(bytes, m->size, &m->file_desc, &m->info);
  if (!err.empty()) return {LINFER_ERROR_INVALID_MODEL, err};
  m->desc = m->file_desc;
  // Shared weights are widened once. Keyed by address alone because parse_lfm only accepts
  // tensors that share bytes as exact aliases (same offset, size, dtype and scales).
  std::map<const void*, const float*> done;
  bool any_f16 = false, any_i8 = false;
  std::string alloc_error;
  for_each_weight(m->desc, [&](const std::string& name, WeightView& w) {
    if (!w.present() || !alloc_error.empty()) return;
    m->parameter_count += w.elements();
    if (w.dtype == DType::F32) return;
    (w.dtype == DType::F16 ? any_f16 : any_i8) = true;
    // Dense int8 weights stay int8 where the CPU has the int8 kernels; everything else that is
    // not f32 is widened once here (f16 arithmetic is not used on any target yet).
    if (w.dtype == DType::I8 && is_dense_weight(name) && kernels::int8_fast_path_available()) return;
    auto it = done.find(w.data);
    if (it == done.end()) {
      const uint64_t n = w.elements();
      std::unique_ptr<float[]> f(new (std::nothrow) float[n]);
      if (!f) {
        alloc_error = "out of memory widening " + name;
        return;
      }
      if (w.dtype == DType::F16) {
        const uint8_t* src = static_cast<const uint8_t*>(w.data);
        for (uint64_t i = 0; i < n; ++i) {
          uint16_t h;
          std::memcpy(&h, src + 2 * i, 2);
          f[i] = half_to_float(h);
        }
      } else {
        const int8_t* src = static_cast<const int8_t*>(w.data);
        const uint64_t row = w.shape.back();
        for (uint64_t i = 0; i < n; ++i) f[i] = w.scales[i / row] * float(src[i]);
      }
      m->widened_bytes += n * sizeof(float);
      it = done.emplace(w.data, f.get()).first;
      m->widened.push_back(std::move(f));
    }
    w.data = it->second;
    w.dtype = DType::F32;
    w.scales = nullptr;
  });
  if (!alloc_error.empty()) return {LINFER_ERROR_OUT_OF_MEMORY, alloc_error};
  // Norms and biases are always f32; the matrices decide what the file is called.
  m->weight_dtype = any_f16 && any_i8 ? "mixed" : any_i8 ? "int8" : any_f16 ? "f16" : "f32";
  return {};
}

}  // namespace

LoadResult load_model_file(const std::string& path, std::unique_ptr<Model>* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {LINFER_ERROR_IO, "cannot open '" + path + "': " + std::strerror(errno)};
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return {LINFER_ERROR_IO, "'" + path + "' is not a regular file"};
  }
  auto m = std::make_unique<Model>();
  m->size = size_t(st.st_size);
  if (m->size < 8) {
    close(fd);
    return {LINFER_ERROR_INVALID_MODEL, "file is too small to be a linfer model (" +
                                            std::to_string(m->size) + " bytes)"};
  }
  void* p = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return {LINFER_ERROR_IO, "cannot map '" + path + "': " + std::strerror(errno)};
  m->mapped = p;
  m->mapped_size = m->size;
  LoadResult r = finish_load(m);
  if (r.status == LINFER_OK) *out = std::move(m);
  return r;
}

void Model::release_pages(const void* p, size_t bytes) const {
  if (!mapped || bytes == 0) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = uintptr_t(mapped), hi = lo + mapped_size;
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page;
  const uintptr_t end = std::min(hi, uintptr_t(p) + bytes) / page * page;
  if (uintptr_t(p) < lo || begin >= end) return;
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

LoadResult load_model_memory(const void* data, size_t size, std::unique_ptr<Model>* out) {
  if (!data && size) return {LINFER_ERROR_INVALID_ARGUMENT, "model data is null"};
  auto m = std::make_unique<Model>();
  void* p = nullptr;
  if (posix_memalign(&p, kDataAlignment, size ? size : 1) != 0)
    return {LINFER_ERROR_OUT_OF_MEMORY, "out of memory copying the model"};
  m->copy.reset(static_cast<uint8_t*>(p));
  if (size) std::memcpy(p, data, size);
  m->size = size;
  LoadResult r = finish_load(m);
  if (r.status == LINFER_OK) *out = std::move(m);
  return r;
}

}  // namespace linfer::rt
