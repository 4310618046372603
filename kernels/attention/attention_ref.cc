// SPDX-License-Identifier: Apache-2.0
// Softmax attention, and the int8 attention's quantized probabilities.
// Portable scalar reference kernels: the oracles of the tests. Written for clarity; they
// accumulate in double where that makes the oracle tighter than the code under test.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "linfer/types/panel_layout.h"

namespace linfer::kernels {

size_t attention_f32_scratch_floats(size_t keys, size_t head_dim) {
  return kAttentionMaxRows * (std::min(keys, kAttentionKeyBlock) + 16 + head_dim + 16);
}

// Two passes over all keys at once (softmax, then the weighted sum): the plain formula.
void attention_f32_ref(const AttentionHeadArgs& a, size_t row_begin, size_t row_end, float*) {
  std::vector<float> scores(a.keys);
  float* p = scores.data();
  // Key spans: how many times each key is listed (its weight in the softmax).
  std::vector<double> listed(a.key_span_count ? a.keys : 0, 0.0);
  for (size_t s = 0; s < a.key_span_count; ++s)
    for (size_t j = a.key_spans[2 * s]; j < a.key_spans[2 * s + 1]; ++j) listed[j] += 1.0;
  for (size_t r = row_begin; r < row_end; ++r) {
    const float* q = a.q + r * a.q_stride;
    const size_t i = a.first_row + r;  // the row's position, for the window
    auto seen = [&](size_t j) {
      if (a.key_span_count) return listed[j] > 0;
      return !a.windowed || j < a.global_keys || (j + a.window_radius >= i && j <= i + a.window_radius);
    };
    float max_score = -INFINITY;
    for (size_t j = 0; j < a.keys; ++j) {
      if (!seen(j)) {
        p[j] = -INFINITY;  // exp gives 0
        continue;
      }
      double s = 0;
      for (size_t d = 0; d < a.head_dim; ++d) s += double(q[d]) * a.kt[d * a.kt_stride + j];
      p[j] = float(s * a.scale);
      max_score = std::max(max_score, p[j]);
    }
    double sum = 0;
    for (size_t j = 0; j < a.keys; ++j) {
      p[j] = std::exp(p[j] - max_score) * (a.key_span_count ? float(listed[j]) : 1.0f);
      sum += p[j];
    }
    float* o = a.o + r * a.o_stride;
    for (size_t d = 0; d < a.head_dim; ++d) {
      double acc = 0;
      for (size_t j = 0; j < a.keys; ++j) acc += double(p[j]) * a.v[j * a.v_stride + d];
      o[d] = float(acc / sum);
    }
  }
}

size_t attention_bf16_scratch_floats(size_t keys, size_t head_dim) {
  // Per row of a tile of kAttentionMaxRows: the scores, their bf16 pairs, the accumulator
  // (attention_bf16_avx512.cc).
  const size_t block = std::min(attention_bf16_padded_keys(keys), kAttentionKeyBlock);
  return kAttentionMaxRows * (block + block / 2 + head_dim);
}

namespace {
// Half h (0: low) of a bf16 pair word as a float (bf16 is the top half of an f32).
float bf16_half(uint32_t w, int h) {
  const uint32_t bits = h ? w & 0xffff0000u : w << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// x rounded to bf16, to nearest even (finite x).
float bf16_round(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}
}  // namespace

// The plain formula on the packed values: the scores and the softmax in double, the
// probabilities rounded to bf16 as the kernel rounds them, their exact products with the values
// summed in double, the mean added back.
void attention_bf16_ref(const AttentionBf16Args& a, size_t row_begin, size_t row_end, float*) {
  const size_t dh = a.head_dim;
  std::vector<double> e(a.keys);
  for (size_t r = row_begin; r < row_end; ++r) {
    const float* q = a.q + r * a.q_stride;
    double max_score = -INFINITY;
    for (size_t j = 0; j < a.keys; ++j) {
      double s = 0;
      for (size_t t = 0; t < dh; ++t) s += double(q[t]) * a.kt[t * a.kt_stride + j];
      e[j] = s * a.scale;
      max_score = std::max(max_score, e[j]);
    }
    double sum = 0;
    for (size_t j = 0; j < a.keys; ++j) sum += (e[j] = std::exp(e[j] - max_score));
    float* o = a.o + r * a.o_stride;
    for (size_t c = 0; c < dh; ++c) {
      double acc = 0;
      for (size_t j = 0; j < a.keys; ++j)
        acc += double(bf16_round(float(e[j]))) * bf16_half(a.vp[(j / 2) * dh + c], int(j % 2));
      o[c] = float(acc / sum) + a.v_mean[c];
    }
  }
}

void softmax_quantize_rows_ref(const float* x, size_t stride, size_t rows, size_t n, float scale, Int8Form form,
                               int8_t* q, size_t q_stride, float* scales) {
  const size_t padded = int8_padded_inputs(uint32_t(n));
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
    float m = -INFINITY;
    for (size_t j = 0; j < n; ++j) m = std::max(m, xr[j]);
    double sum = 0;
    int8_t* qr = q + r * q_stride;
    for (size_t j = 0; j < padded; ++j) {
      const double e = j < n ? std::exp(double(scale) * (double(xr[j]) - m)) : 0.0;
      sum += e;
      const int v = std::isfinite(e) ? int(std::min(127.0, std::nearbyint(127.0 * e))) : 0;
      switch (form) {
        case Int8Form::S8:
          qr[j] = int8_t(v);
          break;
        case Int8Form::U8Offset:
          reinterpret_cast<uint8_t*>(qr)[j] = uint8_t(v + 128);
          break;
        case Int8Form::S16:
        case Int8Form::S16Pairs:
        case Int8Form::SplitU7:
          reinterpret_cast<int16_t*>(qr)[j] = int16_t(v);
          break;
      }
    }
    if (form == Int8Form::S16Pairs) swap_middle_pairs(reinterpret_cast<int16_t*>(qr), padded);
    if (form == Int8Form::SplitU7) s16_to_split_u7(reinterpret_cast<int16_t*>(qr), padded);
    scales[r] = float(1.0 / (127.0 * sum));
  }
}

}  // namespace linfer::kernels
