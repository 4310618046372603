// The panel layout of dense layer weights: what format version 2 stores, what the runtime packs
// version 1 files into (once per model, at load) and what every dense kernel reads.
//
// A matrix [out x in] (row n = the weights of output channel n) is cut into `groups` equal groups
// of rows (one group unless the layer is read a head at a time: dense_panel_groups), and each
// group into panels of 16 rows, the last one zero-padded. Inside a panel:
//   f32, f16: for each input k, the 16 rows' values side by side      [in][16]
//   int8:     for each group of 4 inputs, the 16 rows' 4 bytes         [ceil(in / 4)][16][4]
// ISA-neutral: one panel row is one 512-bit vector (AVX-512), two 256-bit ones (AVX2), four
// 128-bit ones (NEON); the int8 groups of 4 are the operand of x86 VNNI (vpdpbusd) and of Arm's
// dot product (SDOT) alike. int8 panels carry one scale (int8.h) and the sum of the int8 values
// per row (x86 kernels feed activations as q + 128 and subtract 128 * sum).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "linfer/format/encoder.h"

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
// Bytes of an [out x in] matrix packed in `groups` groups (groups divides out).
uint64_t panel_matrix_bytes(DType dtype, uint32_t out, uint32_t in, uint32_t groups);
// Byte offset of element (row, col) in such a matrix.
uint64_t panel_element_offset(DType dtype, uint32_t out, uint32_t in, uint32_t groups,
                              uint32_t row, uint32_t col);

// Packs a row-major [out x in] matrix of dtype (f32, f16 or int8) into dst, which must hold
// panel_matrix_bytes; padding is zero.
void pack_panels(DType dtype, const void* src, uint32_t out, uint32_t in, uint32_t groups,
                 void* dst);
// Per row of a row-major int8 matrix, the sum of its values.
void int8_row_sums(const int8_t* src, uint32_t rows, uint32_t cols, int32_t* sums);

// Row `row` of a 2-D weight view (any dtype, either layout) as f32 values: q * scale for int8.
// out receives shape[1] values.
void read_row_f32(const WeightView& w, uint32_t row, float* out);

// Memory of packed matrices (64-byte aligned blocks).
struct PanelStore {
  std::vector<std::unique_ptr<uint8_t, void (*)(void*)>> blocks;
  uint64_t bytes = 0;  // of all blocks
  void* allocate(uint64_t n);  // nullptr when out of memory
};

// Rewrites every row-major dense weight of desc (is_dense_weight) in panel layout, in memory of
// `store`, with the groups dense_panel_groups gives, and (int8) its row sums. Weights that shared
// one buffer share one packed buffer. A token embedding that is the same tensor as a dense weight
// (a tied LM head) follows it into panel layout when move_tied_embedding (the converter: the file
// then holds one copy; embedding lookups read panels); otherwise it stays row-major. `packed`,
// if given, receives the (data, bytes) of each row-major original that was packed. Returns "" or
// a message (out of memory).
std::string pack_dense_weights(EncoderDescription* desc, PanelStore* store, bool move_tied_embedding,
                               std::vector<std::pair<const void*, uint64_t>>* packed = nullptr);

}  // namespace linfer
