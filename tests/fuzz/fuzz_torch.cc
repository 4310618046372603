// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: torch.save bytes (zip archive or legacy stream) -> read_checkpoint_from_memory,
// then tensor_to_f32 on every tensor and a bounded walk of the unpickled object and its metadata.
// Inputs that would go to the safetensors reader are skipped (fuzz_safetensors covers them).
#include <cstring>
#include <unordered_set>

#include "checkpoint.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool zip = data[0] == 'P' && data[1] == 'K';
  const bool pickle = data[0] == 0x80;
  if (!zip && !pickle) return 0;
  auto read = linfer::convert::read_checkpoint_from_memory(data, size);
  if (!read.ok()) {
    if (read.status().message().empty()) abort();
    return 0;
  }
  const std::unique_ptr<linfer::convert::Checkpoint>& ck = read.value();
  if (!ck->root) abort();  // torch files keep the unpickled object
  for (const auto& [k, v] : ck->metadata) (void)(k.size() + v.size());
  std::unordered_set<const linfer::convert::Value*> seen;
  linfer::fuzz::walk(ck->root.get(), 0, &seen, 200000);
  linfer::fuzz::convert_all(*ck, uint64_t(1) << 24);
  return 0;
}
