// SPDX-License-Identifier: Apache-2.0
// Packing dense layer weights into the panel layout (linfer/types/panel_layout.h has the layout
// and its sizes, which the kernels share), and reading them back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "linfer/format/encoder.h"
#include "linfer/types/panel_layout.h"

namespace linfer {

// Bytes of an [out x in] matrix packed in `groups` groups (groups divides out).
uint64_t panel_matrix_bytes(DType dtype, uint32_t out, uint32_t in, uint32_t groups);
// Byte offset of element (row, col) in such a matrix.
uint64_t panel_element_offset(DType dtype, uint32_t out, uint32_t in, uint32_t groups, uint32_t row, uint32_t col);

// Packs a row-major [out x in] matrix of dtype (f32, f16 or int8) into dst, which must hold
// panel_matrix_bytes; padding is zero.
void pack_panels(DType dtype, const void* src, uint32_t out, uint32_t in, uint32_t groups, void* dst);
// Per row of a row-major int8 matrix, the sum of its values.
void int8_row_sums(const int8_t* src, uint32_t rows, uint32_t cols, int32_t* sums);

// Row `row` of a 2-D weight view (any dtype, either layout) as f32 values: q * scale for int8.
// out receives shape[1] values.
void read_row_f32(const WeightView& w, uint32_t row, float* out);

// Memory of packed matrices (64-byte aligned blocks).
struct PanelStore {
  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> blocks;
  uint64_t bytes = 0;          // of all blocks
  void* allocate(uint64_t n);  // nullptr when out of memory
};

// Rewrites every row-major dense weight of desc (is_dense_weight) in panel layout, in memory of
// `store`, with the groups dense_panel_groups gives, and (int8) its row sums. Weights that shared
// one buffer share one packed buffer. A token embedding that is the same tensor as a dense weight
// (a tied LM head) follows it into panel layout when move_tied_embedding (the converter: the file
// then holds one copy; embedding lookups read panels); otherwise it stays row-major. `packed`,
// if given, receives the (data, bytes) of each row-major original that was packed. Its only failure
// is LINFER_ERROR_OUT_OF_MEMORY, naming the bytes.
err::Status pack_dense_weights(EncoderDescription* desc, PanelStore* store, bool move_tied_embedding,
                               std::vector<std::pair<const void*, uint64_t>>* packed = nullptr);

}  // namespace linfer
