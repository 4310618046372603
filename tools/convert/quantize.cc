// SPDX-License-Identifier: Apache-2.0
#include "quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "linfer/types/half.h"
#include "linfer/types/int8.h"

namespace linfer::convert {

err::Status quantize_description(EncoderDescription* desc, DType dtype, QuantizedStore* store) {
  std::map<const void*, WeightView> done;  // shared tensors stay shared
  err::Status status;
  for_each_weight(*desc, [&](const std::string& name, WeightView& w) {
    if (!status.ok() || !w.present() || !weight_may_be_quantized(name) || w.dtype != DType::F32) return;
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
          status = err::failure(LINFER_ERROR_INVALID_ARGUMENT, "{}: value {} does not fit in f16", name,
                                std::to_string(src[i]));
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
        (*scales)[r] =
            linfer::quantize_row_int8(src + r * cols, cols, reinterpret_cast<int8_t*>(bytes->data()) + r * cols);
      w.data = bytes->data();
      w.scales = scales->data();
      store->data.push_back(std::move(bytes));
      store->scales.push_back(std::move(scales));
    }
    w.dtype = dtype;
    done[original.data] = w;
  });
  return status;
}

bool reads_normalized_stream(const std::string& name) {
  for (const char* end :
       {".attention.q.weight", ".attention.k.weight", ".attention.v.weight", ".attention.q_global.weight",
        ".attention.k_global.weight", ".attention.v_global.weight", ".feed_forward.fc1.weight"})
    if (name.size() > std::strlen(end) && name.compare(name.size() - std::strlen(end), std::string::npos, end) == 0)
      return true;
  return false;
}

size_t smooth_dense_weights(EncoderDescription* desc, const std::map<std::string, std::vector<float>>& max_abs,
                            float alpha, QuantizedStore* store) {
  std::map<const void*, int> users;  // a weight another slot shares (a tied embedding) keeps its values
  for_each_weight(*desc, [&](const std::string&, const WeightView& w) {
    if (w.present()) ++users[w.data];
  });
  size_t smoothed = 0;
  for_each_weight(*desc, [&](const std::string& name, WeightView& w) {
    auto it = max_abs.find(name);
    if (it == max_abs.end() || !reads_normalized_stream(name) || !w.present() || w.dtype != DType::F32 ||
        w.layout != Layout::RowMajor || w.shape.size() != 2 || users[w.data] != 1 || it->second.size() != w.shape[1])
      return;
    const size_t out = w.shape[0], in = w.shape[1];
    const float* src = static_cast<const float*>(w.data);
    std::vector<float> wmax(in, 0.0f);
    for (size_t n = 0; n < out; ++n)
      for (size_t j = 0; j < in; ++j) wmax[j] = std::max(wmax[j], std::fabs(src[n * in + j]));
    auto bytes = std::make_unique<std::vector<uint8_t>>(out * in * sizeof(float));
    auto inverse = std::make_unique<std::vector<float>>(in);
    float* dst = reinterpret_cast<float*>(bytes->data());
    std::vector<float> s(in);
    for (size_t j = 0; j < in; ++j) {
      const double x = std::max(double(it->second[j]), 1e-5), m = std::max(double(wmax[j]), 1e-5);
      s[j] = float(std::min(std::max(std::pow(x, alpha) / std::pow(m, 1.0 - alpha), 1e-5), 1e5));
      (*inverse)[j] = 1.0f / s[j];
    }
    for (size_t n = 0; n < out; ++n)
      for (size_t j = 0; j < in; ++j) dst[n * in + j] = src[n * in + j] * s[j];
    w.data = bytes->data();
    w.input_scales = inverse->data();
    store->data.push_back(std::move(bytes));
    store->scales.push_back(std::move(inverse));
    ++smoothed;
  });
  return smoothed;
}

bool is_feed_forward_output(const std::string& name) {
  const std::string end = ".feed_forward.fc2.weight";
  return name.size() > end.size() && name.compare(name.size() - end.size(), std::string::npos, end) == 0;
}

size_t keep_f32_inputs(EncoderDescription* desc, const std::map<std::string, std::vector<float>>& max_abs,
                       uint32_t count, QuantizedStore* store) {
  std::map<const void*, int> users;  // a weight another slot shares keeps its values
  for_each_weight(*desc, [&](const std::string&, const WeightView& w) {
    if (w.present()) ++users[w.data];
  });
  size_t kept = 0;
  for_each_weight(*desc, [&](const std::string& name, WeightView& w) {
    auto it = max_abs.find(name);
    if (count == 0 || count > Limits::kMaxF32Inputs || it == max_abs.end() || !is_feed_forward_output(name) ||
        !w.present() || w.dtype != DType::F32 || w.layout != Layout::RowMajor || w.shape.size() != 2 ||
        users[w.data] != 1 || it->second.size() != w.shape[1] || count >= w.shape[1])
      return;
    const size_t out = w.shape[0], in = w.shape[1];
    // The channels as the int8 product sees them: times the input scales.
    std::vector<std::pair<float, uint32_t>> score(in);
    for (size_t j = 0; j < in; ++j)
      score[j] = {it->second[j] * (w.input_scales ? w.input_scales[j] : 1.0f), uint32_t(j)};
    std::partial_sort(score.begin(), score.begin() + count, score.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    auto indices = std::make_unique<std::vector<uint32_t>>(count);
    for (uint32_t k = 0; k < count; ++k) (*indices)[k] = score[k].second;
    std::sort(indices->begin(), indices->end());
    const float* src = static_cast<const float*>(w.data);
    auto bytes = std::make_unique<std::vector<uint8_t>>(out * in * sizeof(float));
    auto columns = std::make_unique<std::vector<float>>(out * count);
    float* dst = reinterpret_cast<float*>(bytes->data());
    std::memcpy(dst, src, out * in * sizeof(float));
    for (size_t n = 0; n < out; ++n)
      for (uint32_t k = 0; k < count; ++k) {
        (*columns)[k * out + n] = dst[n * in + (*indices)[k]];
        dst[n * in + (*indices)[k]] = 0.0f;
      }
    w.data = bytes->data();
    w.f32_inputs = indices->data();
    w.f32_input_count = count;
    w.f32_input_weights = columns->data();
    store->data.push_back(std::move(bytes));
    store->scales.push_back(std::move(columns));
    store->indices.push_back(std::move(indices));
    ++kept;
  });
  return kept;
}

}  // namespace linfer::convert
