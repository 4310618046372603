// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the command-line tools and tests: .npy files, token files, atomic
// output files (written to a temporary name and renamed, so a failure leaves nothing behind).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linfer::tools {

// Writes `data` to `path` through `path.tmp.<pid>` and a rename. Returns "" or a message.
std::string write_file_atomic(const std::string& path, const void* data, size_t size);

// A float32 .npy file (C order) of the given shape.
std::string npy_bytes(const float* data, const std::vector<size_t>& shape, std::vector<uint8_t>* out);
// Reads a little-endian float32 C-order .npy. Returns "" or a message.
std::string read_npy_f32(const std::string& path, std::vector<float>* data, std::vector<size_t>* shape);

// Whitespace-separated decimal token ids. Returns "" or a message naming the bad token.
std::string read_token_ids(const std::string& path, std::vector<int32_t>* ids);
// The file's bytes as ids 0..255.
std::string read_text_bytes(const std::string& path, std::vector<int32_t>* ids);

std::string read_file(const std::string& path, std::vector<uint8_t>* out);

// A whole decimal string in [lo, hi] (no sign, no trailing characters).
bool parse_uint(const char* text, uint32_t lo, uint32_t hi, uint32_t* out);

}  // namespace linfer::tools
