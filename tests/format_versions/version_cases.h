// SPDX-License-Identifier: Apache-2.0
// The files of tests/format_versions/: which versions, kinds and weight types were written, their
// names, and the inputs their outputs are of. Shared by the writer (write_files.cc) and the test
// (tests/unit/test_format_versions.cc), which needs nothing else of the tree that wrote them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linfer::testing {

struct VersionCase {
  uint32_t version;
  std::string kind;   // the table of kinds' name
  std::string dtype;  // of the dense layers: f32, f16 or int8
};

// Version 1 (row-major), 2 (panels), 3 (int8 with input scales), 4 (each kind's part in its own
// tables; int8 with input scales) and 5 (int8 with input scales and f32 input channels): every kind in versions 2 and
// 4, and each weight type where its version holds it.
inline const std::vector<VersionCase> kVersionCases = {
    {1, "linformer", "f32"},
    {1, "full", "f16"},
    {1, "givetake", "int8"},
    {1, "lsh", "f32"},
    {2, "linformer", "f32"},
    {2, "linformer", "int8"},
    {2, "full", "f32"},
    {2, "linear_elu", "f32"},
    {2, "givetake", "f32"},
    {2, "performer", "f16"},
    {2, "sliding_window", "f32"},
    {2, "block_sparse", "f32"},
    {2, "lsh", "int8"},
    {3, "linformer", "int8"},
    {3, "sliding_window", "int8"},
    {4, "linformer", "f32"},
    {4, "linformer", "int8"},
    {4, "full", "f16"},
    {4, "linear_elu", "f32"},
    {4, "givetake", "f32"},
    {4, "performer", "f16"},
    {4, "sliding_window", "int8"},
    {4, "block_sparse", "f32"},
    {4, "lsh", "int8"},
    {5, "full", "int8"},
    {5, "linformer", "int8"},
};

inline std::string version_case_name(const VersionCase& c) {
  return "v" + std::to_string(c.version) + "_" + c.kind + "_" + c.dtype;
}

// Each file's outputs: a run of 5 tokens, then one of the longest input, one after the other.
inline std::vector<size_t> version_case_lengths(size_t max_seq_len) { return {5, max_seq_len}; }
inline std::vector<int32_t> version_case_ids(size_t length, uint32_t vocab_size) {
  std::vector<int32_t> ids(length);
  for (size_t i = 0; i < length; ++i) ids[i] = int32_t((7 * i + 3) % vocab_size);
  return ids;
}

}  // namespace linfer::testing
