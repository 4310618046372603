// SPDX-License-Identifier: Apache-2.0
// The panel layout of dense layer weights: what format version 2 stores, what the runtime packs
// version 1 files into (once per model, at load) and what every dense kernel reads.
//
// A matrix [out x in] (row n = the weights of output channel n) is cut into `groups` equal groups
// of rows (one group unless the layer is read a head at a time: format/encoder.h's
// dense_panel_groups), and each group into panels of 16 rows, the last one zero-padded. Inside a
// panel:
//   f32, f16: for each input k, the 16 rows' values side by side      [in][16]
//   int8:     for each group of 4 inputs, the 16 rows' 4 bytes         [ceil(in / 4)][16][4]
// ISA-neutral: one panel row is one 512-bit vector (AVX-512), two 256-bit ones (AVX2), four
// 128-bit ones (NEON); the int8 groups of 4 are the operand of x86 VNNI (vpdpbusd) and of Arm's
// dot product (SDOT) alike. int8 panels carry one scale (int8.h) and the sum of the int8 values
// per row (x86 kernels feed activations as q + 128 and subtract 128 * sum).
// Packing lives in the format (format/panel.h); the kernels need only these sizes.
#pragma once

#include <cstdint>

#include "linfer/types/enums.h"

namespace linfer {

constexpr uint32_t kPanelRows = 16;
constexpr uint32_t kInt8GroupInputs = 4;

inline uint32_t panel_count(uint32_t rows) { return (rows + kPanelRows - 1) / kPanelRows; }
inline uint32_t int8_padded_inputs(uint32_t in) {
  return (in + kInt8GroupInputs - 1) / kInt8GroupInputs * kInt8GroupInputs;
}
// Bytes of one panel of a matrix with `in` inputs.
inline uint64_t panel_bytes(DType dtype, uint32_t in) {
  return dtype == DType::I8 ? uint64_t(int8_padded_inputs(in)) * kPanelRows
                            : uint64_t(in) * kPanelRows * dtype_size(dtype);
}

}  // namespace linfer
