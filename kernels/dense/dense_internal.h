// SPDX-License-Identifier: Apache-2.0
// What the dense kernel files share: the entry points that dense_select.cc lists in its tables,
// and the per-channel values of the last, partial panel.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels.h"
#include "linfer/types/panel_layout.h"

namespace linfer::kernels::dense {

// Values [n, n + 16) of a per-channel array of `count` entries as 16 readable values: the array
// itself when all 16 exist, else a copy with zeros past the end (a null array reads as zeros).
template <class T>
const T* channel_block(const T* values, size_t n, size_t count, T (&tail)[kPanelRows]) {
  if (values && n + kPanelRows <= count) return values + n;
  for (size_t j = 0; j < kPanelRows; ++j) tail[j] = values && n + j < count ? values[n + j] : T(0);
  return tail;
}

// The walk every dense kernel makes over rows [0, rows) x output channels [n_begin, n_end):
// blocks of `row_block` rows (sized by the kernel to stay in cache) meet every strip of kStrip
// channels in turn, the register tiles of kTileRows rows walking down the block; then the block's
// outputs, still in cache, get the activations that do not fit a register epilogue (GELU).
// tile(r, R, n, n_stop) computes rows [r, r + R) (R <= kTileRows) x channels [n, n_stop).
template <size_t kTileRows, size_t kStrip, class Tile>
void for_each_tile(size_t rows, size_t row_block, size_t n_begin, size_t n_end, float* y, size_t y_stride,
                   DenseActivation activation, Tile&& tile) {
  const bool gelu = activation == DenseActivation::GeluErf || activation == DenseActivation::GeluTanh;
  for (size_t r0 = 0; r0 < rows; r0 += row_block) {
    const size_t r_end = std::min(rows, r0 + row_block);
    for (size_t n = n_begin; n < n_end; n += kStrip)
      for (size_t r = r0; r < r_end; r += kTileRows)
        tile(r, std::min(kTileRows, r_end - r), n, std::min(n_end, n + kStrip));
    if (gelu)
      for (size_t r = r0; r < r_end; ++r) activation_f32_hwy(y + r * y_stride + n_begin, n_end - n_begin, activation);
  }
}

// In WebAssembly every engine that runs the module has SIMD128 (the module does not compile
// without it), so the portable dense kernels run there only under a session's max_isa cap of
// generic: they and their scalar epilogue are compiled for size (14 KB less of every page's
// download), function by function and not with a per-file -Os, so that the inline helpers
// dense_generic.cc shares with the SIMD128 kernels (channel_block) keep their -O3 copies
// whichever file the linker takes them from.
#if defined(__EMSCRIPTEN__)
#define LINFER_PORTABLE_SIZE __attribute__((minsize))
#else
#define LINFER_PORTABLE_SIZE
#endif

// The scalar epilogue of the portable kernels (dense_generic.cc, dense_int8_dsp.cc): a tile of R
// rows x channels [n, n_stop) gets its bias (if any), ReLU and accumulate; GELU runs over whole
// row ranges afterwards (gelu_rows).
template <size_t kTileRows>
LINFER_PORTABLE_SIZE void store_tile(const float (&acc)[kTileRows][kPanelRows], size_t R, size_t n, size_t n_stop,
                                     const float* bias, float* y, size_t y_stride, DenseEpilogue e) {
  for (size_t r = 0; r < R; ++r)
    for (size_t j = 0; j < n_stop - n; ++j) {
      float v = bias ? acc[r][j] + bias[j] : acc[r][j];
      if (e.activation == DenseActivation::Relu) v = v > 0.0f ? v : 0.0f;
      float& dst = y[r * y_stride + n + j];
      dst = e.accumulate ? dst + v : v;
    }
}

LINFER_PORTABLE_SIZE inline void gelu_rows(size_t rows, float* y, size_t y_stride, size_t n_begin, size_t n_end,
                                           DenseEpilogue e) {
  if (e.activation == DenseActivation::GeluErf || e.activation == DenseActivation::GeluTanh)
    for (size_t r = 0; r < rows; ++r) activation_f32_hwy(y + r * y_stride + n_begin, n_end - n_begin, e.activation);
}

// Which of the row block's tiles a tile is (index of count), for the kernels that spread work
// over a strip's tiles (the x86 kernels' prefetch of the next strip's weights).
struct TileSlice {
  size_t index, count;
};

// The slice of the tile at row r in a walk of row blocks of row_block rows (from row 0) over rows.
template <size_t kTileRows>
TileSlice tile_slice(size_t r, size_t rows, size_t row_block) {
  const size_t r0 = r - r % row_block, r_end = std::min(rows, r0 + row_block);
  return {(r - r0) / kTileRows, (r_end - r0 + kTileRows - 1) / kTileRows};
}

// A tile's share of the weights the next strip of channels will read (its strip_panels panels
// from first_panel, of panel_bytes each, of a layer of `channels` outputs; in each, `span` bytes
// from `offset`: the K block), to
// prefetch into L2 while the tile runs, one 64-byte line at a time between its steps. The strip's
// tiles (slice.count) fetch a share each, so that the next strip's first tile finds its weights
// in L2 and does not wait on memory (the x86 kernels: M f32 at n = 128 16% faster on AVX-512). A
// share stops at the end of its panel.
struct PrefetchShare {
  const char* line;
  size_t lines;
};
inline PrefetchShare next_strip_share(const void* panels, size_t panel_bytes, size_t offset, size_t span,
                                      size_t first_panel, size_t strip_panels, size_t channels, TileSlice slice) {
  const size_t panels_in_layer = panel_count(uint32_t(channels));
  if (first_panel >= panels_in_layer || span == 0 || slice.count < 2) return {nullptr, 0};
  const size_t total = std::min(strip_panels, panels_in_layer - first_panel) * span;
  const size_t begin = slice.index * total / slice.count, end = (slice.index + 1) * total / slice.count;
  const size_t panel = begin / span, stop = std::min(end, (panel + 1) * span);
  return {static_cast<const char*>(panels) + (first_panel + panel) * panel_bytes + offset + (begin - panel * span),
          (stop - begin + 63) / 64};
}

// The same for the K-blocked float kernels (for_each_k_block_tile), whose panels hold K lines of
// line_bytes: the next strip is the strip_panels panels from `next` in this K block [k0, k0 + kn),
// or after the last panel the next K block's first strip (a thread given a channel range from
// elsewhere guesses wrong once per block).
inline PrefetchShare next_k_block_strip_share(const void* panels, size_t K, size_t line_bytes, size_t next,
                                              size_t strip_panels, size_t channels, size_t k0, size_t kn,
                                              TileSlice slice) {
  const bool same_block = next < panel_count(uint32_t(channels));
  const size_t next_k0 = same_block ? k0 : k0 + kn, next_kn = same_block ? kn : std::min(kn, K - next_k0);
  return next_strip_share(panels, K * line_bytes, next_k0 * line_bytes, next_kn * line_bytes, same_block ? next : 0,
                          strip_panels, channels, slice);  // past the last K block: span 0, no share
}

// The walk of the x86 f32 / f16 kernels (dense_avx2_tile.h, dense_avx512_tile.h): rows in blocks
// of kRowBlockBytes of inputs (of a K block of each row), each block meeting every strip of
// kStrip channels; a layer of more than kSplitAbove inputs sums them in K blocks of about 512,
// adding each block's partial sums to y, so that a block still holds a few hundred rows and each
// weight read from L3 serves that many (whole rows of M's 3072-input layer: 21 rows in 256 KiB).
// ReLU with accumulate keeps K whole: ReLU applies to the layer's sum before the residual is
// added, and a K block's store mixes the two. The blocks depend on the layer only, so a row's
// sums are the same whichever rows a thread is given.
// tile(r, R, n, n_stop, k0, kn, last_block, slice) computes rows [r, r + R) x channels [n, n_stop)
// over inputs [k0, k0 + kn): the first K block (k0 = 0) adds the bias and, if e.accumulate, y;
// later ones add y (the partial sums so far); the last applies ReLU. slice: which of the block's
// tiles down this strip it is.
template <size_t kTileRows, size_t kStrip, size_t kRowBlockBytes, size_t kSplitAbove, class Tile>
void for_each_k_block_tile(size_t K, size_t rows, size_t n_begin, size_t n_end, float* y, size_t y_stride,
                           DenseEpilogue e, Tile&& tile) {
  constexpr size_t kKBlock = 512;
  const bool split = K > kSplitAbove && !(e.accumulate && e.activation == DenseActivation::Relu);
  const size_t blocks = split ? (K + kKBlock - 1) / kKBlock : 1;
  const size_t kc = (K + blocks - 1) / blocks;  // equal blocks, the last one shorter by < blocks
  const size_t row_block = std::max(kTileRows, kRowBlockBytes / (kc * sizeof(float)) / kTileRows * kTileRows);
  for (size_t r0 = 0; r0 < rows; r0 += row_block) {
    const size_t r_end = std::min(rows, r0 + row_block);
    for (size_t k0 = 0; k0 < K; k0 += kc) {
      const size_t kn = std::min(kc, K - k0);
      for (size_t n = n_begin; n < n_end; n += kStrip)
        for (size_t r = r0; r < r_end; r += kTileRows)
          tile(r, std::min(kTileRows, r_end - r), n, std::min(n_end, n + kStrip), k0, kn, k0 + kn == K,
               tile_slice<kTileRows>(r, rows, row_block));
    }
    gelu_rows(r_end - r0, y + r0 * y_stride, y_stride, n_begin, n_end, e);  // while the block is in cache
  }
}

// The panel walk of the 2-row x 2-channel int8 kernels (dense_int8_dsp.cc, dense_int8_mve.cc):
// each pair of channels of each panel meets the rows two at a time (a single last row is read
// twice and kept once); Tile().groups(w, x0, x1, groups) sums rows x0, x1 (in the kernel's
// quantized form, q_stride apart) against channels w, w + 1 (w: the panel at its channel, 64
// bytes per group of four inputs) into a00 a01 a10 a11; then the same dequantization as
// dense_int8_ref, fma(float(sum), x_scale * w_scale, bias), and the scalar epilogue.
template <class Tile>
void run_int8_2x2(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin,
                  size_t n_end, DenseEpilogue e) {
  constexpr size_t kRows = 2;
  const int8_t* panels = static_cast<const int8_t*>(w.panels);
  const size_t groups = int8_padded_inputs(uint32_t(w.in)) / kInt8GroupInputs;  // >= 1
  const size_t panel_size = panel_bytes(DType::I8, uint32_t(w.in));
  for (size_t n = n_begin; n < n_end; n += kPanelRows) {
    const int8_t* panel = panels + (n / kPanelRows) * panel_size;
    float bias_tail[kPanelRows], scale_tail[kPanelRows];
    const float* bias = channel_block(w.bias, n, w.out, bias_tail);
    const float* scale = channel_block(w.scales, n, w.out, scale_tail);
    const size_t n_stop = std::min<size_t>(n_end, n + kPanelRows);
    for (size_t r0 = 0; r0 < rows; r0 += kRows) {
      const size_t R = std::min(kRows, rows - r0);
      const int8_t* x0 = in.q + r0 * in.q_stride;
      const int8_t* x1 = R == 2 ? x0 + in.q_stride : x0;
      const float s0 = in.q_scales[r0], s1 = in.q_scales[r0 + R - 1];
      float out[kRows][kPanelRows];
      for (size_t j = 0; j < kPanelRows; j += 2) {
        Tile t;
        t.groups(panel + j * kInt8GroupInputs, x0, x1, groups);
        out[0][j] = std::fma(float(t.a00), s0 * scale[j], bias[j]);
        out[0][j + 1] = std::fma(float(t.a01), s0 * scale[j + 1], bias[j + 1]);
        out[1][j] = std::fma(float(t.a10), s1 * scale[j], bias[j]);
        out[1][j + 1] = std::fma(float(t.a11), s1 * scale[j + 1], bias[j + 1]);
      }
      store_tile(out, R, n, n_stop, nullptr, y + r0 * y_stride, y_stride, e);
    }
  }
  gelu_rows(rows, y, y_stride, n_begin, n_end, e);
}

// Entry points (DenseKernel::run and ::quantize), by instruction set.
#define LINFER_DENSE_RUN(fn)                                                                                   \
  void fn(const DenseWeights& w, const DenseInput& in, size_t rows, float* y, size_t y_stride, size_t n_begin, \
          size_t n_end, DenseEpilogue e)
#define LINFER_DENSE_QUANTIZE(fn) \
  void fn(const float* x, size_t x_stride, size_t rows, size_t k, int8_t* q, size_t q_stride, float* scales)

LINFER_DENSE_RUN(run_f32_ref);
LINFER_DENSE_RUN(run_f16_ref);
LINFER_DENSE_RUN(run_int8_ref);  // reads q as int8
LINFER_DENSE_QUANTIZE(quantize_s8_ref);
LINFER_DENSE_RUN(run_f32_generic);
LINFER_DENSE_RUN(run_f16_generic);
LINFER_DENSE_RUN(run_int8_generic);  // reads q as int8 (quantize_s8_ref)

#if defined(__x86_64__)
LINFER_DENSE_RUN(run_f32_avx512);
LINFER_DENSE_RUN(run_f16_avx512);
LINFER_DENSE_RUN(run_int8_avx512vnni);  // reads q + 128
LINFER_DENSE_RUN(run_int8_amx);         // reads q + 128
bool amx_permitted();                   // asks Linux for AMX's tile state (once per process)
LINFER_DENSE_QUANTIZE(quantize_u8_avx512);
LINFER_DENSE_RUN(run_f32_avx2);
LINFER_DENSE_RUN(run_f16_avx2);
LINFER_DENSE_RUN(run_int8_avxvnni);  // reads q + 128 (quantize_u8_avx2)
LINFER_DENSE_QUANTIZE(quantize_u8_avx2);
LINFER_DENSE_RUN(run_int8_avx2);  // reads q as int16 (quantize_s16_avx2)
LINFER_DENSE_QUANTIZE(quantize_s16_avx2);
#endif

#if defined(__aarch64__)
LINFER_DENSE_RUN(run_f32_neon);
LINFER_DENSE_RUN(run_f16_neon);
LINFER_DENSE_RUN(run_f16_neonfp16);  // fp16 arithmetic (FMLA .8H, ASIMDHP): opt-in only
LINFER_DENSE_RUN(run_int8_neon);     // ARMv8.0: widening multiplies (SMULL/SMLAL/SADALP)
LINFER_DENSE_RUN(run_int8_neondot);  // SDOT
LINFER_DENSE_RUN(run_int8_i8mm);     // SMMLA
LINFER_DENSE_QUANTIZE(quantize_s8_neon);
#endif

#if defined(__arm__)  // 32-bit ARMv7 NEON with VFPv4
LINFER_DENSE_RUN(run_f32_neonv7);
LINFER_DENSE_RUN(run_f16_neonv7);
LINFER_DENSE_RUN(run_int8_neonv7);  // widening multiplies (VMULL/VMLAL/VPADAL)
LINFER_DENSE_QUANTIZE(quantize_s8_neonv7);
#endif

#if defined(__arm__) && defined(__ARM_FEATURE_DSP)  // SMLAD: 32-bit Arm cores, Cortex-M4 and up
LINFER_DENSE_RUN(run_int8_dsp);                     // reads q as int16 in SMLAD's pairs (quantize_s16_pairs)
LINFER_DENSE_QUANTIZE(quantize_s16_pairs);
#endif

#if defined(__ARM_FEATURE_MVE)   // Helium (M-profile vector extension): Cortex-M55, M85
LINFER_DENSE_RUN(run_int8_mve);  // reads q as int8 (quantize_s8_ref)
#endif

#if defined(__wasm_simd128__)  // WebAssembly SIMD128 (dense_wasm_simd128.h)
LINFER_DENSE_RUN(run_f32_wasm_simd128);
LINFER_DENSE_RUN(run_f16_wasm_simd128);
LINFER_DENSE_RUN(run_int8_wasm_simd128);  // reads q as int16 (quantize_s16_wasm_simd128)
LINFER_DENSE_QUANTIZE(quantize_s16_wasm_simd128);
#if defined(__wasm_relaxed_simd__)        // the relaxed module (dense_int8_wasm_relaxed.cc)
LINFER_DENSE_RUN(run_int8_wasm_relaxed);  // reads q as q+, q- bytes (quantize_split_u7_wasm_relaxed)
LINFER_DENSE_QUANTIZE(quantize_split_u7_wasm_relaxed);
#endif
#endif

}  // namespace linfer::kernels::dense
