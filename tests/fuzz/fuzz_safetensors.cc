// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: safetensors bytes -> read_checkpoint_from_memory, then tensor_to_f32 on every
// tensor. Inputs that the format detection would send to another reader (zip, legacy pickle,
// PYTORCH1, tar) are skipped: fuzz_torch covers those.
#include <cstring>

#include "checkpoint.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') return 0;
  if (size >= 1 && data[0] == 0x80) return 0;  // a pickle PROTO: legacy torch.save
  if (size >= 512 && std::memcmp(data + 257, "ustar", 5) == 0) return 0;
  auto read = linfer::convert::read_checkpoint_from_memory(data, size);
  if (!read.ok()) {
    if (read.status().message().empty()) abort();
    return 0;
  }
  const std::unique_ptr<linfer::convert::Checkpoint>& ck = read.value();
  if (ck->format != "safetensors") abort();
  for (const auto& [k, v] : ck->metadata) (void)(k.size() + v.size());
  linfer::fuzz::convert_all(*ck, uint64_t(1) << 24);
  return 0;
}
