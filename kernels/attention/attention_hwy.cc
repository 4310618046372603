// SPDX-License-Identifier: Apache-2.0
// Attention cores with Highway: softmax attention over blocks of keys (online softmax), and the
// int8 attention's quantized probabilities.
// Compiled for every target Highway knows (AVX-512, AVX2, SSE4, NEON, scalar); HWY_DYNAMIC_DISPATCH
// picks the best one for the running CPU. Remainders that do not fill a vector run as scalar code
// with the same arithmetic order, or through the vector code on a padded copy where scalar code
// would round differently.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/attention_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "kernels.h"
#include "linfer/types/panel_layout.h"
#include "attention/exp2-inl.h"
#include "mul_add_lane-inl.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

// The two products of AttentionRows as functions of their own, kept out of line on WebAssembly:
// inside the large AttentionRows, V8's register allocator kept the accumulators on the stack
// (a load and a store per multiply-add); on their own they stay in registers. (Binaryen's link
// inlines a function with one caller whatever its attribute: the toolchain file limits that,
// cmake/toolchains/wasm32-emscripten.cmake. Both: one head of S 15.1 -> 28.8 GFLOP/s.)
#if HWY_TARGET == HWY_WASM
#define LINFER_ATTENTION_TILE HWY_NOINLINE
#else
#define LINFER_ATTENTION_TILE HWY_INLINE
#endif

// s[r][j + c] = scale * sum_t q[r][t] * k[t * k_stride + c] for c in [0, NV vectors).
template <size_t R, size_t NV>
LINFER_ATTENTION_TILE void ScoreTile(const float* const* q, size_t dh, const float* k, size_t k_stride, float scale,
                                     float* const* s, size_t j) {
  const D d;
  const size_t L = hn::Lanes(d);
  using V = decltype(hn::Zero(d));
  V acc[R][NV];
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::Zero(d);
  size_t t = 0;
  if constexpr (kHasMulAddLane && R > 1)  // 4 steps of t: each row's 4 query values in one load
    for (; t + 4 <= dh; t += 4) MulAdd4Steps(d, acc, q, t, k + t * k_stride, k_stride);
  for (const float* kr = k + t * k_stride; t < dh; ++t, kr += k_stride) {  // a pointer walks (no multiply per step)
    V kv[NV];
    for (size_t i = 0; i < NV; ++i) kv[i] = hn::LoadU(d, kr + i * L);
    for (size_t r = 0; r < R; ++r) {
      const V bq = hn::Set(d, q[r][t]);
      for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::MulAdd(bq, kv[i], acc[r][i]);
    }
  }
  const V vscale = hn::Set(d, scale);
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < NV; ++i) hn::StoreU(hn::Mul(acc[r][i], vscale), d, s[r] + j + i * L);
}

// acc_row[r][c + ...] = acc_row[r][c + ...] * correction[r] + sum_t p[r][t] * v[t * v_stride + ...]
// for NV vectors of columns from c (v points at column c of key 0).
template <size_t R, size_t NV>
LINFER_ATTENTION_TILE void WeightedValuesTile(float* const* acc_row, const float* correction, const float* const* p,
                                              size_t nb, const float* v, size_t v_stride, size_t c) {
  const D d;
  const size_t L = hn::Lanes(d);
  using V = decltype(hn::Zero(d));
  V acc[R][NV];
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < NV; ++i)
      acc[r][i] = hn::Mul(hn::LoadU(d, acc_row[r] + c + i * L), hn::Set(d, correction[r]));
  size_t t = 0;
  if constexpr (kHasMulAddLane && R > 1)  // 4 keys at a time: each row's 4 weights in one load
    for (; t + 4 <= nb; t += 4) MulAdd4Steps(d, acc, p, t, v + t * v_stride, v_stride);
  for (const float* vr = v + t * v_stride; t < nb; ++t, vr += v_stride) {
    V vv[NV];
    for (size_t i = 0; i < NV; ++i) vv[i] = hn::LoadU(d, vr + i * L);
    for (size_t r = 0; r < R; ++r) {
      const V bp = hn::Set(d, p[r][t]);
      for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::MulAdd(bp, vv[i], acc[r][i]);
    }
  }
  for (size_t r = 0; r < R; ++r)
    for (size_t i = 0; i < NV; ++i) hn::StoreU(acc[r][i], d, acc_row[r] + c + i * L);
}

// The softmax row out of line on aarch64: inlined into AttentionRows, GCC 12 reloaded the
// exponent's constants from memory on every vector (37 instructions per 4 values against 28).
#if HWY_TARGET == HWY_NEON && HWY_ARCH_ARM_A64
#define LINFER_SOFTMAX_ROW HWY_NOINLINE
#else
#define LINFER_SOFTMAX_ROW
#endif
LINFER_SOFTMAX_ROW float ExpShiftedSumExported(float* x, size_t n, float shift) { return ExpShiftedSum(x, n, shift); }

// Attention for R (1..4) rows at a time, over the keys in blocks of kKeyBlock with an online
// softmax (running max and sum per row), so any number of keys works in O(block) scratch: k
// compressed keys are one block, all T keys of a long input are many. Each K'^T or V'
// vector loaded feeds R rows, and 4 vectors per row keep 4R accumulators in flight.
template <size_t R, size_t NV>
void AttentionRows(const AttentionHeadArgs& a, size_t r0, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d);
  using V = decltype(hn::Zero(d));
  const size_t block = std::min(a.keys, kAttentionKeyBlock);
  const size_t ks = block + 16, dh = a.head_dim;
  const float* q[R];
  float* s[R];
  float* acc_row[R];
  float* o[R];
  float m[R], l[R];
  for (size_t r = 0; r < R; ++r) {
    q[r] = a.q + (r0 + r) * a.q_stride;
    s[r] = scratch + r * ks;
    acc_row[r] = scratch + R * ks + r * (dh + 16);
    o[r] = a.o + (r0 + r) * a.o_stride;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (size_t c = 0; c < dh; ++c) acc_row[r][c] = 0.0f;
  }
  const auto vscale = hn::Set(d, a.scale);
  // The keys to walk: all of them; or (windowed) the global keys, then the span of the R rows'
  // windows past them, where each row masks the keys outside its own window; or (key spans) the
  // listed spans, a key listed twice walked twice.
  size_t window_span[4] = {0, a.keys, 0, 0}, spans = 1;
  const size_t radius = a.window_radius, p0 = a.first_row + r0;
  if (a.windowed) {
    const size_t g = std::min(a.global_keys, a.keys);
    window_span[1] = g;
    window_span[2] = std::max(g, p0 >= radius ? p0 - radius : 0);
    window_span[3] = std::min(a.keys, p0 + R + radius);
    spans = 2;
  }
  const bool listed = a.key_span_count > 0;
  if (listed) spans = a.key_span_count;
  for (size_t span = 0; span < spans; ++span) {
    const size_t span_begin = listed ? a.key_spans[2 * span] : window_span[2 * span],
                 span_end = listed ? a.key_spans[2 * span + 1] : window_span[2 * span + 1];
    for (size_t j0 = span_begin; j0 < span_end; j0 += block) {
      const size_t nb = std::min(block, span_end - j0);
      const float* kt = a.kt + j0;
      // Scores: s[r][j] = scale * sum_t q[r][t] * kt[t][j0 + j].
      size_t j = 0;
      for (; j + NV * L <= nb; j += NV * L) ScoreTile<R, NV>(q, dh, kt + j, a.kt_stride, a.scale, s, j);
      for (; j + L <= nb; j += L) {
        V acc[R];
        for (size_t r = 0; r < R; ++r) acc[r] = hn::Zero(d);
        for (size_t t = 0; t < dh; ++t) {
          const V k0 = hn::LoadU(d, kt + t * a.kt_stride + j);
          for (size_t r = 0; r < R; ++r) acc[r] = hn::MulAdd(hn::Set(d, q[r][t]), k0, acc[r]);
        }
        for (size_t r = 0; r < R; ++r) hn::StoreU(hn::Mul(acc[r], vscale), d, s[r] + j);
      }
      for (; j < nb; ++j)
        for (size_t r = 0; r < R; ++r) {
          float acc = 0.0f;
          for (size_t t = 0; t < dh; ++t) acc += q[r][t] * kt[t * a.kt_stride + j];
          s[r][j] = acc * a.scale;
        }
      if (a.windowed && span == 1)  // keys outside row r's window [p - radius, p + radius] get -inf
        for (size_t r = 0; r < R; ++r) {
          const size_t p = p0 + r, lo = p >= radius ? p - radius : 0, hi = p + radius + 1;
          for (size_t jj = j0; jj < std::min(j0 + nb, lo); ++jj) s[r][jj - j0] = -INFINITY;
          for (size_t jj = std::max(j0, hi); jj < j0 + nb; ++jj) s[r][jj - j0] = -INFINITY;
        }
      // Online softmax: rescale what was accumulated to the new running max.
      float correction[R];
      for (size_t r = 0; r < R; ++r) {
        float* sr = s[r];
        auto vmax = hn::Set(d, -INFINITY);
        for (j = 0; j + L <= nb; j += L) vmax = hn::Max(vmax, hn::LoadU(d, sr + j));
        float block_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
        for (; j < nb; ++j) block_max = sr[j] > block_max ? sr[j] : block_max;
        if (block_max == -INFINITY && m[r] == -INFINITY) {  // (windowed) no key of this row yet
          correction[r] = 1.0f;
          std::fill(sr, sr + nb, 0.0f);
          continue;
        }
        const float m_new = block_max > m[r] ? block_max : m[r];
        correction[r] = std::exp(m[r] - m_new);  // 0 on the first block (m = -inf)
        m[r] = m_new;
        l[r] = l[r] * correction[r] + ExpShiftedSumExported(sr, nb, m_new);
      }
      // acc[r] = acc[r] * correction + p[r] @ v[j0 : j0 + nb], vectorised over head_dim.
      const float* vb = a.v + j0 * a.v_stride;
      size_t c = 0;
      for (; c + NV * L <= dh; c += NV * L)
        WeightedValuesTile<R, NV>(acc_row, correction, s, nb, vb + c, a.v_stride, c);
      for (; c + L <= dh; c += L) {
        V acc[R];
        for (size_t r = 0; r < R; ++r) acc[r] = hn::Mul(hn::LoadU(d, acc_row[r] + c), hn::Set(d, correction[r]));
        for (size_t t = 0; t < nb; ++t) {
          const V v0 = hn::LoadU(d, vb + t * a.v_stride + c);
          for (size_t r = 0; r < R; ++r) acc[r] = hn::MulAdd(hn::Set(d, s[r][t]), v0, acc[r]);
        }
        for (size_t r = 0; r < R; ++r) hn::StoreU(acc[r], d, acc_row[r] + c);
      }
      for (; c < dh; ++c)
        for (size_t r = 0; r < R; ++r) {
          float acc = acc_row[r][c] * correction[r];
          for (size_t t = 0; t < nb; ++t) acc += s[r][t] * vb[t * a.v_stride + c];
          acc_row[r][c] = acc;
        }
    }
  }
  for (size_t r = 0; r < R; ++r) {
    const float inv = 1.0f / l[r];
    for (size_t c = 0; c < dh; ++c) o[r][c] = acc_row[r][c] * inv;
  }
}

// Rows at a time and vectors per row: 8 x 2 keeps 16 accumulators and halves the loads of K'^T
// and V' per score against 4 x 4 (those loads, from L2, limited the kernel); AVX2's 16 registers
// take 6 x 2 (12 accumulators, 2 loaded vectors and a broadcast: all-MiniLM-L6-v2's attention
// 8% faster than 4 x 2 on an AMD EPYC), SSE4 4 x 2, and so does WebAssembly (V8 allocates 15 of
// x86-64's 16 to v128: 8 x 2 spilled there). Rows left over go 1 at a time (on AVX2 4, then 1).
#if HWY_TARGET == HWY_AVX2
constexpr size_t kAttnRows = 6;
#elif HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_WASM
constexpr size_t kAttnRows = 4;
#else
constexpr size_t kAttnRows = 8;
#endif
static_assert(kAttnRows <= kAttentionMaxRows, "scratch is sized for kAttentionMaxRows");
constexpr size_t kAttnVectors = 2;

// A tile of one row walks all of K'^T and V' for 2 accumulators (their FMA latency bounds it):
// it costs far more per row than a tile of 4 or 6. So on AVX2 the tiles of 6 leave no 2 or 3
// rows behind where two tiles of 4 can take them with one tile of 6 fewer: the row blocks of 32
// (kAttentionRowBlock) go as 6 x 4 + 4 x 2, not 6 x 5 + 1 + 1 (AMD EPYC Zen 3, one process
// alternating the two: all-MiniLM-L6-v2's heads at n = 128 and 256, 1.07-1.09x as fast). Each
// row's arithmetic is the same in a tile of any size, so the outputs are too.
void Attention(const AttentionHeadArgs& a, size_t row_begin, size_t row_end, float* scratch) {
  const size_t rows = row_end - row_begin;
  size_t fours = 0;
  if constexpr (kAttnRows == 6)  // (AVX2)
    fours = rows % 6 >= 4 ? 1 : rows >= 8 && rows % 6 >= 2 ? 2 : 0;
  const size_t full_end = row_begin + (rows - 4 * fours) / kAttnRows * kAttnRows;
  size_t r = row_begin;
  for (; r < full_end; r += kAttnRows) AttentionRows<kAttnRows, kAttnVectors>(a, r, scratch);
  if constexpr (kAttnRows == 6)
    for (size_t i = 0; i < fours; ++i, r += 4) AttentionRows<4, kAttnVectors>(a, r, scratch);
  for (; r < row_end; ++r) AttentionRows<1, kAttnVectors>(a, r, scratch);
}

// Softmax rows quantized for an int8 kernel (kernels.h): the maximum, then one pass that takes
// e = 2^(log2(e) scale (x - m)), adds it to the sum and stores round(127 e) in the kernel's form.
// The remainder and the padding to whole groups of 4 inputs through a copy padded with -inf.
void SoftmaxQuantizeRows(const float* x, size_t stride, size_t rows, size_t n, float scale, Int8Form form, int8_t* q,
                         size_t q_stride, float* scales) {
  const D d;
  const size_t L = hn::Lanes(d);
  const hn::RebindToUnsigned<D> du32;
  const hn::Rebind<uint8_t, D> du8;
  const hn::Rebind<int16_t, D> di16;
  const auto vscale = hn::Set(d, scale * 1.44269504f), v127 = hn::Set(d, 127.0f), zero = hn::Zero(d);
  // v + 1.5 * 2^23 holds round(v) in its low mantissa bits (ties to even, as NearestInt) for the
  // v in [0, 127] here; + 128 more, the U8Offset form's offset. The low byte is then the int8
  // value, and a NaN score (0x7fc00000: low byte 0) gives 0.
  const auto byte_bias = hn::Set(d, form == Int8Form::U8Offset ? 12583040.0f : 12582912.0f);
  const size_t padded = int8_padded_inputs(uint32_t(n)), full = n / L * L;
  HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN int16_t tail_q[HWY_MAX_BYTES / sizeof(float)];  // the last vector's values in form
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * stride;
    int8_t* qr = q + r * q_stride;
    auto vmax = hn::Set(d, -INFINITY);
    for (size_t j = 0; j < full; j += L) vmax = hn::Max(vmax, hn::LoadU(d, xr + j));
    float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (size_t j = full; j < n; ++j) m = std::max(m, xr[j]);
    const auto vm = hn::Set(d, m);
    auto vsum = hn::Zero(d);
    // 127 e clamped to [0, 127]; a NaN score gives 0 (on x86 through Max, which returns its
    // second operand then; on Arm through the conversion or the low byte, below).
    auto quantize = [&](auto scores) {
      const auto e = Exp2NonPositive<4>(hn::Mul(hn::Sub(scores, vm), vscale));
      vsum = hn::Add(vsum, e);
      return hn::Min(hn::Max(hn::Mul(e, v127), zero), v127);
    };
    // round(v) in the kernel's form. The one-byte forms take the low byte of v + byte_bias: two
    // instructions where NearestInt's overflow fix and the saturating narrowing took nine on
    // AVX-512 (half of this function's time, M int8 at n = 128 on an AMD EPYC Zen 4).
    auto store_form = [&](auto v, auto* dst) {
      if (!int8_form_built(form)) return;  // (no kernel of this build reads it)
      switch (form) {
        case Int8Form::S8:
        case Int8Form::U8Offset: {
          const auto bits = hn::BitCast(du32, hn::Add(v, byte_bias));
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
          // vpmovdb to a register and a plain store (Highway's TruncateTo shuffles twice).
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(bits.raw));
#else
          hn::StoreU(hn::TruncateTo(du8, bits), du8, reinterpret_cast<uint8_t*>(dst));
#endif
          break;
        }
        case Int8Form::S16:
        case Int8Form::S16Pairs:
        case Int8Form::SplitU7:
          hn::StoreU(hn::DemoteTo(di16, hn::NearestInt(v)), di16, reinterpret_cast<int16_t*>(dst));
          break;
      }
    };
    const size_t bytes = int8_form_two_bytes(form) ? 2 : 1;
    for (size_t j = 0; j < full; j += L) store_form(quantize(hn::LoadU(d, xr + j)), qr + j * bytes);
    // The rest of the scores and the padding, L at a time through the padded copies.
    for (size_t j = full; j < padded; j += L) {
      std::fill(tail, tail + L, -INFINITY);
      if (j < n) std::copy(xr + j, xr + std::min(n, j + L), tail);
      store_form(quantize(hn::Load(d, tail)), tail_q);
      std::copy_n(reinterpret_cast<const int8_t*>(tail_q), (std::min(padded, j + L) - j) * bytes, qr + j * bytes);
    }
    if (form == Int8Form::S16Pairs) swap_middle_pairs(reinterpret_cast<int16_t*>(qr), padded);
    if (form == Int8Form::SplitU7) s16_to_split_u7(reinterpret_cast<int16_t*>(qr), padded);
    scales[r] = 1.0f / (127.0f * hn::GetLane(hn::SumOfLanes(d, vsum)));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(Attention);
HWY_EXPORT(SoftmaxQuantizeRows);
HWY_EXPORT(ExpShiftedSumExported);

float exp_shifted_sum_f32_hwy(float* x, size_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(ExpShiftedSumExported)(x, n, shift);
}

void softmax_quantize_rows_hwy(const float* x, size_t stride, size_t rows, size_t n, float scale, Int8Form form,
                               int8_t* q, size_t q_stride, float* scales) {
  HWY_DYNAMIC_DISPATCH(SoftmaxQuantizeRows)(x, stride, rows, n, scale, form, q, q_stride, scales);
}

void attention_f32_hwy(const AttentionHeadArgs& args, size_t row_begin, size_t row_end, float* scratch) {
  HWY_DYNAMIC_DISPATCH(Attention)(args, row_begin, row_end, scratch);
}
}  // namespace linfer::kernels
#endif
