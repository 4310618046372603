// SPDX-License-Identifier: Apache-2.0
#include "linfer/format/panel.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#include "linfer/types/aligned_alloc.h"
#include "linfer/types/half.h"

namespace linfer {

uint64_t panel_matrix_bytes(DType dtype, uint32_t out, uint32_t in, uint32_t groups) {
  if (groups == 0 || out % groups) return 0;
  return uint64_t(groups) * panel_count(out / groups) * panel_bytes(dtype, in);
}

namespace {
// Offset of the start of row `row`'s lane in its panel, and the stride between its inputs.
struct RowPlace {
  uint64_t base;  // byte offset of (row, 0)
  uint64_t step;  // f32/f16: bytes from input k to k + 1 (int8 uses groups of 4)
};
RowPlace row_place(DType dtype, uint32_t out, uint32_t in, uint32_t groups, uint32_t row) {
  const uint32_t group_rows = out / groups, g = row / group_rows, r = row % group_rows;
  const uint64_t group_bytes = uint64_t(panel_count(group_rows)) * panel_bytes(dtype, in);
  const uint64_t panel = uint64_t(g) * group_bytes + uint64_t(r / kPanelRows) * panel_bytes(dtype, in);
  const uint32_t lane = r % kPanelRows;
  if (dtype == DType::I8) return {panel + lane * kInt8GroupInputs, 0};
  return {panel + uint64_t(lane) * dtype_size(dtype), uint64_t(kPanelRows) * dtype_size(dtype)};
}
uint64_t input_offset(DType dtype, const RowPlace& p, uint32_t col) {
  if (dtype == DType::I8)
    return p.base + uint64_t(col / kInt8GroupInputs) * kPanelRows * kInt8GroupInputs + col % kInt8GroupInputs;
  return p.base + col * p.step;
}
}  // namespace

uint64_t panel_element_offset(DType dtype, uint32_t out, uint32_t in, uint32_t groups, uint32_t row, uint32_t col) {
  return input_offset(dtype, row_place(dtype, out, in, groups, row), col);
}

void pack_panels(DType dtype, const void* src, uint32_t out, uint32_t in, uint32_t groups, void* dst) {
  const size_t size = dtype_size(dtype);
  uint8_t* d = static_cast<uint8_t*>(dst);
  std::memset(d, 0, panel_matrix_bytes(dtype, out, in, groups));
  const uint8_t* s = static_cast<const uint8_t*>(src);
  for (uint32_t row = 0; row < out; ++row) {
    const RowPlace p = row_place(dtype, out, in, groups, row);
    const uint8_t* from = s + uint64_t(row) * in * size;
    for (uint32_t col = 0; col < in; ++col)
      std::memcpy(d + input_offset(dtype, p, col), from + uint64_t(col) * size, size);
  }
}

void int8_row_sums(const int8_t* src, uint32_t rows, uint32_t cols, int32_t* sums) {
  for (uint32_t r = 0; r < rows; ++r) {
    int32_t s = 0;
    for (uint32_t c = 0; c < cols; ++c) s += src[uint64_t(r) * cols + c];
    sums[r] = s;
  }
}

void read_row_f32(const WeightView& w, uint32_t row, float* out) {
  const uint32_t cols = w.shape.back();
  const uint8_t* bytes = static_cast<const uint8_t*>(w.data);
  const size_t size = dtype_size(w.dtype);
  RowPlace p{uint64_t(row) * cols * size, size};
  if (w.layout == Layout::Panel16) p = row_place(w.dtype, w.shape[0], cols, w.panel_groups, row);
  const bool panel = w.layout == Layout::Panel16;
  for (uint32_t c = 0; c < cols; ++c) {
    const uint64_t at = panel ? input_offset(w.dtype, p, c) : p.base + uint64_t(c) * size;
    switch (w.dtype) {
      case DType::F32:
        std::memcpy(&out[c], bytes + at, 4);
        break;
      case DType::F16: {
        uint16_t h;
        std::memcpy(&h, bytes + at, 2);
        out[c] = half_to_float(h);
        break;
      }
      case DType::I8:
        out[c] = w.scales[row] * float(int8_t(bytes[at]));
        break;
    }
  }
}

void* PanelStore::allocate(uint64_t n) {
  if (n > uint64_t(PTRDIFF_MAX)) return nullptr;  // 32-bit builds: not cut short to size_t
  void* p = aligned_block(64, size_t(n));
  if (!p) return nullptr;
  blocks.emplace_back(static_cast<uint8_t*>(p), free);
  bytes += n;
  return p;
}

err::Status pack_dense_weights(EncoderDescription* desc, PanelStore* store, bool move_tied_embedding,
                               std::vector<std::pair<const void*, uint64_t>>* packed) {
  std::map<const void*, WeightView> done;  // original data -> its packed view
  err::Status status;
  for_each_weight(*desc, [&](const std::string& name, WeightView& w) {
    if (!status.ok() || !w.present() || !is_dense_weight(name) || w.layout != Layout::RowMajor || w.shape.size() != 2)
      return;
    auto it = done.find(w.data);
    if (it != done.end()) {
      w = it->second;
      return;
    }
    const uint32_t out = w.shape[0], in = w.shape[1];
    const uint32_t groups = dense_panel_groups(desc->config, name);
    WeightView p = w;
    p.layout = Layout::Panel16;
    p.panel_groups = groups;
    const uint64_t bytes = panel_matrix_bytes(w.dtype, out, in, groups);
    void* data = store->allocate(bytes);
    if (!data) {
      status = err::out_of_memory(err::message("the packed {}", name), bytes);
      return;
    }
    pack_panels(w.dtype, w.data, out, in, groups, data);
    p.data = data;
    if (w.dtype == DType::I8) {
      int32_t* sums = static_cast<int32_t*>(store->allocate(uint64_t(out) * sizeof(int32_t)));
      if (!sums) {
        status = err::out_of_memory(err::message("the row sums of {}", name), uint64_t(out) * sizeof(int32_t));
        return;
      }
      int8_row_sums(static_cast<const int8_t*>(w.data), out, in, sums);
      p.channel_sums = sums;
    }
    if (packed) packed->emplace_back(w.data, w.bytes());
    done.emplace(w.data, p);
    w = p;
  });
  if (!status.ok() || !move_tied_embedding) return status;
  WeightView& e = desc->token_embedding;
  auto it = done.find(e.data);
  if (e.present() && it != done.end() && it->second.panel_groups == 1 && e.shape == it->second.shape) e = it->second;
  return status;
}

}  // namespace linfer
