// SPDX-License-Identifier: Apache-2.0
// Plain f32 matrix product with Highway: the sequence compression E X; and X's columns packed as
// int8 weights for the compression of int8 models.
// Compiled for every target Highway knows (AVX-512, AVX2, SSE4, NEON, scalar); HWY_DYNAMIC_DISPATCH
// picks the best one for the running CPU. Remainders that do not fill a vector run as scalar code
// with the same arithmetic order, or through the vector code on a padded copy where scalar code
// would round differently.
#include "hwy_targets.h"  // before Highway: see there
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "gemm/gemm_hwy.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels.h"
#include "linfer/types/panel_layout.h"
#include "mul_add_lane-inl.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

// C = A B, in register tiles of TR rows of A by NV vectors of B's columns: the K loop broadcasts
// elements of A and streams rows of B; K is split into panels so the B panel stays in L2. Each
// output is one chain of fused multiply-adds in the order of t whatever the tile (the rows and
// columns left over included), so the tiles are a choice of speed only.
// The tile fits the target's vector registers. x86 below AVX-512 has 16: 6 x 2 (12
// accumulators, 2 vectors of B, a broadcast; up to 4 rows left over in a tile of 4). 4 x 4
// needed 21 and spilled: E X of 256 x 768 x 128 on one thread of an AMD EPYC (Zen 3, AVX2)
// 21-25 -> 42-58 GFLOP/s, the suite's M f32 compression at n = 128 36-41 -> 28-32 ms per run.
// Elsewhere 4 x 4 (AVX-512 and aarch64 have 32 registers; on 32-bit Arm GCC 12 stores the
// accumulators to the stack every step with either tile, seen in objdump), but WebAssembly takes
// 4 x 2: 16 accumulators spill in V8, which allocates 15 of x86-64's 16 vector registers to
// v128 (and MulAdd is a multiply and an add there, one more temporary).
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr size_t kTileRows = 6, kCols = 2;
#elif HWY_TARGET == HWY_WASM
constexpr size_t kTileRows = 4, kCols = 2;
#else
constexpr size_t kTileRows = 4, kCols = 4;
#endif

// Rows [0, R) (R <= TR: the missing rows repeat the last and are not stored) by NV vectors of
// columns, over t in [k0, k1). A, B and C point at the tile's first row and column.
template <size_t TR, size_t NV>
HWY_INLINE void GemmTile(size_t R, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
                         size_t k0, size_t k1, bool first) {
  const D d;
  const size_t L = hn::Lanes(d);
  using V = decltype(hn::Zero(d));
  const float* a_rows[TR];
  size_t a_offsets[TR];
  float* c_rows[TR];
  for (size_t r = 0; r < TR; ++r) {
    a_offsets[r] = std::min(r, R - 1) * lda, a_rows[r] = A + a_offsets[r];
    c_rows[r] = C + std::min(r, R - 1) * ldc;
  }
  // acc is indexed by constants only: indexed by anything of the run-time R (an address, a loop
  // bound), GCC 12 kept it in memory and stored all of it on every step of the loops (aarch64: 8
  // STP per 64 FMLA; AVX-512 and AVX2 in the tile loops).
  V acc[TR][NV];
  for (size_t r = 0; r < TR; ++r)
    for (size_t c = 0; c < NV; ++c) acc[r][c] = first ? hn::Zero(d) : hn::LoadU(d, c_rows[r] + c * L);
  size_t t = k0;
  if constexpr (kHasMulAddLane) {  // 4 steps of t: each row's 4 scalars in one load
    for (; t + 4 <= k1; t += 4) MulAdd4Steps(d, acc, a_rows, t, B + t * ldb, ldb);
  }
  // Pointers walk the loop, not t: wasm has no scaled-index addressing, and V8 computed each
  // address from t with instructions of their own (WebAssembly: 1.12x).
  const float* b = B + t * ldb;
  for (const float *a = A + t, *a_end = A + k1; a != a_end; ++a, b += ldb) {
    V bv[NV];
    for (size_t c = 0; c < NV; ++c) bv[c] = hn::LoadU(d, b + c * L);
    for (size_t r = 0; r < TR; ++r) {
      const V av = hn::Set(d, a[a_offsets[r]]);
      for (size_t c = 0; c < NV; ++c) acc[r][c] = hn::MulAdd(av, bv[c], acc[r][c]);
    }
  }
  // The rows past R repeat row R - 1, so storing them writes row R - 1's values again.
  for (size_t r = 0; r < TR; ++r)
    for (size_t c = 0; c < NV; ++c) hn::StoreU(acc[r][c], d, c_rows[r] + c * L);
}

// Rows [0, R) of C (R <= TR) over t in [k0, k1), the columns that fill a vector.
template <size_t TR>
void GemmRows(size_t R, size_t N, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
              size_t k0, size_t k1, bool first) {
  const size_t L = hn::Lanes(D());
  size_t j = 0;
  for (; j + kCols * L <= N; j += kCols * L) GemmTile<TR, kCols>(R, A, lda, B + j, ldb, C + j, ldc, k0, k1, first);
  for (; j + L <= N; j += L) GemmTile<TR, 1>(R, A, lda, B + j, ldb, C + j, ldc, k0, k1, first);
}

void Gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
          bool accumulate) {
  const size_t L = hn::Lanes(D());
  constexpr size_t kPanel = 256;
  for (size_t k0 = 0; k0 < K; k0 += kPanel) {
    const size_t k1 = K - k0 < kPanel ? K : k0 + kPanel;
    const bool first = k0 == 0 && !accumulate;
    for (size_t i = 0; i < M; i += kTileRows) {
      const size_t R = std::min(kTileRows, M - i);
      if (R <= 4)  // (a whole tile where kTileRows is 4)
        GemmRows<4>(R, N, A + i * lda, lda, B, ldb, C + i * ldc, ldc, k0, k1, first);
      else
        GemmRows<kTileRows>(R, N, A + i * lda, lda, B, ldb, C + i * ldc, ldc, k0, k1, first);
    }
    for (size_t j = N - N % L; j < N; ++j)
      for (size_t i = 0; i < M; ++i) {
        float s = first ? 0.0f : C[i * ldc + j];
        for (size_t t = k0; t < k1; ++t) s += A[i * lda + t] * B[t * ldb + j];
        C[i * ldc + j] = s;
      }
  }
  if (K == 0)
    for (size_t i = 0; i < M; ++i)
      for (size_t j = 0; j < N; ++j) C[i * ldc + j] = 0.0f;
}

// X's columns as int8 dense weights (kernels.h), a panel of 16 columns at a time: first each
// column's max |x| over all rows, then each group of 4 rows quantized and stored as one 32-bit
// lane per column holding its 4 bytes (byte i = row i: the panel's [group][16][4] order), so that
// no shuffle is needed. Arithmetic as linfer/types/int8.h, with the same bytes on every target:
// - amax on the bit patterns: |x| as unsigned integers orders like the magnitudes, subnormals
//   included (32-bit Arm NEON flushes them to zero in float compares); NaNs (patterns above
//   infinity's) are skipped as `fabs(x) > amax` skips them;
// - the scales and inverses in scalar code, the reference's expressions (Highway's Div on 32-bit
//   Arm is a reciprocal estimate refined by Newton-Raphson steps, not IEEE division);
// - a panel with a column whose amax is below 2^-117 goes through the reference: only there can
//   a subnormal x have a nonzero q, and 32-bit Arm NEON flushes subnormal products to zero
//   (above it they round to 0 anyway: |x| < 2^-126, inverse < 2^124);
// - rounding to nearest even, and 0 for a non-finite product.
void PackColumnsInt8(const float* x, size_t x_stride, size_t rows, size_t cols, size_t col_begin, size_t col_end,
                     int8_t* panels, float* scales, int32_t* sums) {
#if LINFER_HWY_NO_SIMD  // (the same bytes: 0.4 KB of code instead of 3.9 on a Cortex-M4)
  pack_columns_int8_ref(x, x_stride, rows, cols, col_begin, col_end, panels, scales, sums);
  return;
#endif
  const hn::CappedTag<float, kPanelRows> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::RebindToUnsigned<decltype(d)> du;
  const size_t L = hn::Lanes(d), V = kPanelRows / L;  // vectors per panel row
  const size_t groups = int8_padded_inputs(uint32_t(rows)) / kInt8GroupInputs;
  const auto limit = hn::Set(d, 127.0f), neg_limit = hn::Set(d, -127.0f), finite = hn::Set(d, 3e38f);
  const auto round_bias = hn::Set(d, 12582912.0f);                // 1.5 * 2^23
  const auto round_bias_bits = hn::Set(di, int32_t(0x4b400000));  // its bits
  const auto magnitude = hn::Set(du, 0x7fffffffu), infinity = hn::Set(du, 0x7f800000u);
  HWY_ALIGN float tail[kInt8GroupInputs][kPanelRows];  // a partial panel's rows, zero-padded
  for (size_t c0 = col_begin; c0 < col_end; c0 += kPanelRows) {
    const size_t width = std::min<size_t>(kPanelRows, cols - c0);
    // Row t of this panel's columns (16 readable floats).
    auto row = [&](size_t t, size_t slot) -> const float* {
      const float* p = x + t * x_stride + c0;
      if (width == kPanelRows) return p;
      std::fill(tail[slot], tail[slot] + kPanelRows, 0.0f);
      std::copy(p, p + width, tail[slot]);
      return tail[slot];
    };
    decltype(hn::Zero(du)) amax[kPanelRows];
    decltype(hn::Zero(d)) inv[kPanelRows];
    for (size_t v = 0; v < V; ++v) amax[v] = hn::Zero(du);
    for (size_t t = 0; t < rows; ++t) {
      const float* p = row(t, 0);
      for (size_t v = 0; v < V; ++v) {
        const auto a = hn::And(hn::BitCast(du, hn::LoadU(d, p + v * L)), magnitude);
        amax[v] = hn::Max(amax[v], hn::IfThenZeroElse(hn::Gt(a, infinity), a));
      }
    }
    HWY_ALIGN uint32_t lane_amax[kPanelRows];
    HWY_ALIGN float lane_scales[kPanelRows], lane_inv[kPanelRows];
    for (size_t v = 0; v < V; ++v) hn::Store(amax[v], du, lane_amax + v * L);
    bool tiny = false;
    for (size_t j = 0; j < kPanelRows; ++j) {
      float a;
      std::memcpy(&a, &lane_amax[j], 4);
      lane_scales[j] = a / 127.0f;
      lane_inv[j] = a > 0.0f ? 1.0f / lane_scales[j] : 0.0f;
      tiny |= j < width && lane_amax[j] != 0 && lane_amax[j] < 0x05000000u;  // (0, 2^-117)
    }
    if (tiny) {
      pack_columns_int8_ref(x, x_stride, rows, cols, c0, c0 + width, panels, scales, sums);
      continue;
    }
    for (size_t v = 0; v < V; ++v) inv[v] = hn::Load(d, lane_inv + v * L);
    std::copy(lane_scales, lane_scales + width, scales + c0);
    int32_t* out = reinterpret_cast<int32_t*>(panels + c0 / kPanelRows * groups * kPanelRows * kInt8GroupInputs);
    decltype(hn::Zero(di)) sum[kPanelRows];
    for (size_t v = 0; v < V; ++v) sum[v] = hn::Zero(di);
    for (size_t g = 0; g < groups; ++g) {
      const float* p[kInt8GroupInputs];
      for (size_t i = 0; i < kInt8GroupInputs; ++i) {
        const size_t t = g * kInt8GroupInputs + i;
        if (t < rows) {
          p[i] = row(t, i);
        } else {  // padding inputs are zero
          std::fill(tail[i], tail[i] + kPanelRows, 0.0f);
          p[i] = tail[i];
        }
      }
      for (size_t v = 0; v < V; ++v) {
        auto word = hn::Zero(di);
        for (size_t i = 0; i < kInt8GroupInputs; ++i) {
          auto prod = hn::Mul(hn::LoadU(d, p[i] + v * L), inv[v]);
          prod = hn::IfThenElseZero(hn::Le(hn::Abs(prod), finite), prod);  // NaN, inf: 0
          // round(prod) for prod in [-127, 127]: the low bits of prod + 1.5 * 2^23 (ties to
          // even, as Round; no conversion and its overflow fix), less those of 1.5 * 2^23.
          const auto q =
              hn::Sub(hn::BitCast(di, hn::Add(hn::Min(hn::Max(prod, neg_limit), limit), round_bias)), round_bias_bits);
          sum[v] = hn::Add(sum[v], q);
          word = hn::Or(word, hn::ShiftLeftSame(hn::And(q, hn::Set(di, 0xFF)), int(8 * i)));
        }
        hn::StoreU(word, di, out + g * kPanelRows + v * L);
      }
    }
    HWY_ALIGN int32_t lane_sums[kPanelRows];
    for (size_t v = 0; v < V; ++v) hn::Store(sum[v], di, lane_sums + v * L);
    std::copy(lane_sums, lane_sums + width, sums + c0);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(Gemm);

void gemm_f32_hwy(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb, float* C,
                  size_t ldc, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(Gemm)(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

HWY_EXPORT(PackColumnsInt8);

void pack_columns_int8_hwy(const float* x, size_t x_stride, size_t rows, size_t cols, size_t col_begin, size_t col_end,
                           int8_t* panels, float* scales, int32_t* sums) {
  HWY_DYNAMIC_DISPATCH(PackColumnsInt8)(x, x_stride, rows, cols, col_begin, col_end, panels, scales, sums);
}
}  // namespace linfer::kernels
#endif
