// SPDX-License-Identifier: Apache-2.0
#include "quantize.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "linfer/types/half.h"
#include "linfer/types/int8.h"

namespace linfer::convert {

std::string quantize_description(EncoderDescription* desc, DType dtype, QuantizedStore* store) {
  std::map<const void*, WeightView> done;  // shared tensors stay shared
  std::string err;
  for_each_weight(*desc, [&](const std::string& name, WeightView& w) {
    if (!err.empty() || !w.present() || !weight_may_be_quantized(name) || w.dtype != DType::F32) return;
    auto it = done.find(w.data);
    if (it != done.end()) {
      w = it->second;
      return;
    }
    const WeightView original = w;
    const float* src = static_cast<const float*>(w.data);
    const uint64_t n = w.elements();
    if (dtype == DType::F16) {
      auto bytes = std::make_unique<std::vector<uint8_t>>(n * 2);
      uint16_t* dst = reinterpret_cast<uint16_t*>(bytes->data());
      for (uint64_t i = 0; i < n; ++i) {
        if (std::isfinite(src[i]) && std::fabs(src[i]) > 65504.0f) {
          err = name + ": value " + std::to_string(src[i]) + " does not fit in f16";
          return;
        }
        dst[i] = float_to_half(src[i]);
      }
      w.data = bytes->data();
      store->data.push_back(std::move(bytes));
    } else {
      const uint64_t cols = w.shape.back(), rows = n / cols;
      auto bytes = std::make_unique<std::vector<uint8_t>>(n);
      auto scales = std::make_unique<std::vector<float>>(rows);
      for (uint64_t r = 0; r < rows; ++r)
        (*scales)[r] = linfer::quantize_row_int8(src + r * cols, cols,
                                         reinterpret_cast<int8_t*>(bytes->data()) + r * cols);
      w.data = bytes->data();
      w.scales = scales->data();
      store->data.push_back(std::move(bytes));
      store->scales.push_back(std::move(scales));
    }
    w.dtype = dtype;
    done[original.data] = w;
  });
  return err;
}

}  // namespace linfer::convert
