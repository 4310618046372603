// SPDX-License-Identifier: Apache-2.0
// A loaded model: the file's bytes (mapped, or an aligned copy), its description, and the weights
// every session reads. Immutable after load, so sessions on many threads share one LoadedModel
// and no session holds weights of its own.
//
// Weights stay in their file dtype (f32, f16 or int8) on every CPU. Dense layers are read in the
// panel layout (linfer/format/panel.h): a version 2 file stores them that way, so loading is a
// mapping and a verification; a version 1 file is packed once here, at load, and the file pages
// of the row-major originals are dropped from memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "linfer/format/encoder.h"
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/linfer.h"
#include "status.h"
#include "tokenizer/tokenizer.h"

namespace linfer::rt {

// What an attention kind's module makes of a model once, at load, for every session (its own
// subclass, e.g. weights rearranged for its kernels), and the bytes it holds.
struct AttentionModelData {
  virtual ~AttentionModelData() = default;
  virtual uint64_t bytes() const = 0;
};

struct LoadedModel {
  ~LoadedModel();
  // The file bytes: an mmap (mapped != nullptr), an aligned copy, or the caller's bytes read in
  // place (in_place: a model in flash on a microcontroller).
  void* mapped = nullptr;
  size_t mapped_size = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> copy{nullptr, free};
  const uint8_t* in_place = nullptr;
  const uint8_t* bytes() const {
    return mapped ? static_cast<const uint8_t*>(mapped) : in_place ? in_place : copy.get();
  }
  size_t size = 0;
  uint32_t format_version = 0;

  // What the kernels read: every dense weight in panel layout (in the file, or in `packed`), the
  // other weights as the file stores them.
  EncoderDescription desc;
  PanelStore packed;                                   // version 1 files: the dense weights, packed at load
  std::unique_ptr<AttentionModelData> attention_data;  // null where the kind makes nothing

  std::unique_ptr<Tokenizer> tokenizer;  // when the file carries one
};

// What linfer_model_get_info reports of the weights, counted when asked (an application that
// never asks links none of it).
struct WeightCounts {
  uint64_t parameters = 0;
  uint64_t bytes = 0;               // of the weights as held: in the file (read in place) or packed, and the kind's own
  const char* dense_dtype = "f32";  // "f32", "f16", "int8" or "mixed": the dtype of the dense weights
};
WeightCounts count_weights(const LoadedModel& m);

// The loaded model, or LINFER_ERROR_IO (the file), LINFER_ERROR_INVALID_MODEL (its contents),
// LINFER_ERROR_OUT_OF_MEMORY or LINFER_ERROR_INVALID_ARGUMENT with the message of what failed.
Result<std::unique_ptr<LoadedModel>> load_model_file(const std::string& path);
Result<std::unique_ptr<LoadedModel>> load_model_memory(const void* data, size_t size);
// The caller's bytes, not copied: 64-byte aligned, unchanged and alive while the model is.
Result<std::unique_ptr<LoadedModel>> load_model_in_place(const void* data, size_t size);

}  // namespace linfer::rt
