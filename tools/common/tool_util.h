// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the command-line tools and tests: .npy files, token files, atomic
// output files (written to a temporary name and renamed, so a failure leaves nothing behind).
// Failures are the project's Status (linfer/types/status.h): LINFER_ERROR_IO for a file that
// cannot be opened, read or written, LINFER_ERROR_INVALID_ARGUMENT for one whose contents are bad.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linfer/types/status.h"

namespace linfer::tools {

// Writes `data` to `path` through `path.tmp.<pid>` and a rename.
err::Status write_file_atomic(const std::string& path, const void* data, size_t size);

// A float32 .npy file (C order) of the given shape.
std::vector<uint8_t> npy_bytes(const float* data, const std::vector<size_t>& shape);

struct NpyArray {
  std::vector<float> data;
  std::vector<size_t> shape;
};
// A little-endian float32 C-order .npy.
err::Result<NpyArray> read_npy_f32(const std::string& path);

// Whitespace-separated decimal token ids; a bad token is named.
err::Result<std::vector<int32_t>> read_token_ids(const std::string& path);
// The file's bytes as ids 0..255.
err::Result<std::vector<int32_t>> read_text_bytes(const std::string& path);

err::Result<std::vector<uint8_t>> read_file(const std::string& path);

// A whole decimal string in [lo, hi] (no sign, no trailing characters).
bool parse_uint(const char* text, uint32_t lo, uint32_t hi, uint32_t* out);

}  // namespace linfer::tools
