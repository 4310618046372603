// A loaded model: the mapped file, its description, and f32 copies of any f16/int8 weights.
// Immutable after load, so sessions on many threads may share it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encoder.h"
#include "lfm_format.h"
#include "linfer/linfer.h"

namespace linfer::rt {

struct Model {
  ~Model();
  // The file bytes: either an mmap (mapped != nullptr) or an aligned copy.
  void* mapped = nullptr;
  size_t mapped_size = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> copy{nullptr, free};
  size_t size = 0;

  EncoderDescription file_desc;  // as stored in the file
  EncoderDescription desc;       // what the kernels use: every weight f32
  std::vector<std::unique_ptr<float[]>> widened;
  LfmInfo info;
  uint64_t parameter_count = 0;
  uint64_t widened_bytes = 0;
  std::string weight_dtype;

  // Drops the whole pages of the file mapping inside [p, p + bytes) from the resident set: a
  // session calls it for weights it has packed into its own layout. They are clean file pages,
  // read again from the file if anything touches them later, so the model stays usable and
  // unchanged; only memory is returned. No-op for models loaded from memory.
  void release_pages(const void* p, size_t bytes) const;
};

struct LoadResult {
  linfer_status status = LINFER_OK;
  std::string error;
};

LoadResult load_model_file(const std::string& path, std::unique_ptr<Model>* out);
LoadResult load_model_memory(const void* data, size_t size, std::unique_ptr<Model>* out);

}  // namespace linfer::rt
