// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the converter behind the readers. Input: a 2-byte little-endian length L, L
// bytes of --config JSON (L = 0: none), then a checkpoint (any format). The checkpoint goes through
// every layout mapper; each description a mapper accepts is written as .lfm (f32, then f16 and
// int8) and loaded back through the C API, which must accept what the writer wrote.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "linfer/format/encoder.h"
#include "layouts.h"
#include "layouts/layout.h"
#include "linfer/format/lfm.h"
#include "linfer/linfer.h"
#include "quantize.h"

namespace {

void round_trip(const linfer::EncoderDescription& desc) {
  std::vector<uint8_t> bytes;
  if (!linfer::write_lfm(desc, "fuzz", {{"source_layout", "fuzz"}}, &bytes).ok())
    return;  // the mappers leave the final validation to the writer
  linfer_model* model = nullptr;
  if (linfer_model_load_from_memory(bytes.data(), bytes.size(), &model) != LINFER_OK) {
    std::fprintf(stderr, "the loader refused what the writer wrote: %s\n", linfer_last_error());
    abort();
  }
  linfer_model_free(model);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t config_len = size_t(data[0]) | (size_t(data[1]) << 8);
  if (config_len > size - 2) config_len = size - 2;
  const std::string config(reinterpret_cast<const char*>(data + 2), config_len);
  const uint8_t* ck_data = data + 2 + config_len;
  const size_t ck_size = size - 2 - config_len;

  auto read = linfer::convert::read_checkpoint_from_memory(ck_data, ck_size);
  if (!read.ok()) return 0;
  const linfer::convert::Checkpoint& ck = *read.value();
  (void)linfer::convert::detect_layout(ck);
  for (const linfer::convert::Layout* layout_entry : linfer::convert::registered_layouts()) {
    const char* layout = layout_entry->name;  // every layout, the Hugging Face ones included
    auto mapped = linfer::convert::map_checkpoint(layout, ck, config);
    if (!mapped.ok()) continue;
    round_trip(mapped.value().desc);
    for (linfer::DType dtype : {linfer::DType::F16, linfer::DType::I8}) {
      linfer::EncoderDescription desc = mapped.value().desc;
      linfer::convert::QuantizedStore store;
      if (linfer::convert::quantize_description(&desc, dtype, &store).ok()) round_trip(desc);
    }
  }
  return 0;
}
