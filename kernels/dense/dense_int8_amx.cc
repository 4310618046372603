// SPDX-License-Identifier: Apache-2.0
// Dense layers with int8 weights on AMX (Intel's tile multiply: Sapphire Rapids and later), the
// arithmetic of dense_int8_avx512vnni.cc: activations quantized per row at run time and stored as
// q + 128 (u8), weights s8, 128 * the channel sums subtracted, then the scales, bias and epilogue.
//
// The panels are read in place: a panel's 64-byte groups (16 channels x 4 inputs, vpdpbusd's
// layout) are the rows of an AMX B tile, so 16 groups (64 inputs) of a panel are one tile, 64
// bytes apart. A tiles are 16 quantized rows x 64 inputs. One block is 32 rows x 32 channels: 2 A
// tiles, 2 B tiles and 4 C tiles (16 x 16 int32), 4 TDPBUSD (16 x 16 x 64 multiply-adds each) per
// 64 inputs. Rows past the last (a block of fewer than 32) and inputs past the last full 64 are
// copied into zero-filled 1 KiB tiles on the stack; everything else loads from the layer's own
// memory.
#if defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "dense/dense_avx512_tile.h"

#define LINFER_AMX __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

namespace linfer::kernels::dense {
namespace {

constexpr size_t kTileRows = 16, kTileBytes = 64, kBlockRows = 32, kBlockChannels = 32;
// Rows per pass over the channel strips: each strip of weights (32 channels x all inputs) then
// serves 128 rows from L1/L2 before the next; its quantized rows (128 x the inputs, 384 KiB at
// 3072 inputs) stay in L2. Measured on M's layers: 128 runs 1.3-2x faster than 32 (weights
// streamed once per 32 rows), and 256 no faster than 128.
constexpr size_t kRowGroup = 128;

// LDTILECFG's 64-byte operand (palette 1): tiles 0-1 A, 2-3 B, 4-7 C, every one 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved0[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

inline void load_config(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c)); }
inline void release_tiles() { __asm__ volatile("tilerelease" ::); }

#define LINFER_TILE_LOAD(t, base, stride) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(size_t(stride)) : "memory")
#define LINFER_TILE_STORE(t, base) \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(size_t(kTileBytes)) : "memory")
// C(c) += A(a) . B(b): u8 rows of A times s8 columns of B, 4 products per int32.
#define LINFER_TDPBUSD(c, a, b) __asm__ volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

// A 16-row x 64-byte tile of a matrix (`stride` apart, `rows` rows and `bytes` bytes of them
// present), copied into `dst` with zeros past them.
void copy_tile(const int8_t* src, size_t stride, size_t rows, size_t bytes, int8_t (&dst)[kTileRows][kTileBytes]) {
  std::memset(dst, 0, sizeof dst);
  for (size_t r = 0; r < rows; ++r) std::memcpy(dst[r], src + r * stride, bytes);
}

// Rows [r0, r0 + R) (R <= 32) x channels [n0, n_stop) (at most 32) of the layer.
LINFER_AMX void block(const DenseWeights& w, const DenseInput& in, size_t r0, size_t R, float* y, size_t y_stride,
                      size_t n0, size_t n_stop, DenseEpilogue e) {
  const size_t kp = int8_padded_inputs(uint32_t(w.in)), steps = kp / kTileBytes, tail = kp % kTileBytes;
  const int8_t* panels = static_cast<const int8_t*>(w.panels);
  const size_t panel_size = kp * kPanelRows, NP = (n_stop - n0 + 15) / 16;
  const int8_t* b0 = panels + (n0 / 16) * panel_size;
  const int8_t* b1 = NP > 1 ? b0 + panel_size : b0;
  const int8_t* a0 = in.q + r0 * in.q_stride;
  const size_t rows1 = R > kTileRows ? R - kTileRows : 0;
  const int8_t* a1 = rows1 > 0 ? a0 + kTileRows * in.q_stride : a0;
  alignas(64) int8_t pad_a0[kTileRows][kTileBytes], pad_a1[kTileRows][kTileBytes];
  alignas(64) int8_t pad_b0[kTileRows][kTileBytes], pad_b1[kTileRows][kTileBytes];
  __asm__ volatile("tilezero %%tmm4\n\ttilezero %%tmm5\n\ttilezero %%tmm6\n\ttilezero %%tmm7" ::);
  for (size_t s = 0; s <= steps; ++s) {
    const size_t k = s * kTileBytes, bytes = s < steps ? kTileBytes : tail;
    if (bytes == 0) break;
    // A: the rows in place when all 16 exist and the step is whole, else a padded copy.
    if (R >= kTileRows && bytes == kTileBytes) {
      LINFER_TILE_LOAD(0, a0 + k, in.q_stride);
    } else {
      copy_tile(a0 + k, in.q_stride, R < kTileRows ? R : kTileRows, bytes, pad_a0);
      LINFER_TILE_LOAD(0, &pad_a0[0][0], kTileBytes);
    }
    if (rows1 == kTileRows && bytes == kTileBytes) {
      LINFER_TILE_LOAD(1, a1 + k, in.q_stride);
    } else if (rows1 > 0) {
      copy_tile(a1 + k, in.q_stride, rows1, bytes, pad_a1);
      LINFER_TILE_LOAD(1, &pad_a1[0][0], kTileBytes);
    }
    // B: 16 groups of 4 inputs = 64 inputs of a panel, 64 bytes per group (k bytes of inputs are
    // k * 16 bytes into the panel). The last, partial step: its groups then zeros.
    if (bytes == kTileBytes) {
      LINFER_TILE_LOAD(2, b0 + k * 16, kTileBytes);
      LINFER_TILE_LOAD(3, b1 + k * 16, kTileBytes);
    } else {
      copy_tile(b0 + k * 16, kTileBytes, bytes / 4, kTileBytes, pad_b0);
      copy_tile(b1 + k * 16, kTileBytes, bytes / 4, kTileBytes, pad_b1);
      LINFER_TILE_LOAD(2, &pad_b0[0][0], kTileBytes);
      LINFER_TILE_LOAD(3, &pad_b1[0][0], kTileBytes);
    }
    LINFER_TDPBUSD(4, 0, 2);
    LINFER_TDPBUSD(5, 0, 3);
    if (rows1 > 0) {
      LINFER_TDPBUSD(6, 1, 2);
      LINFER_TDPBUSD(7, 1, 3);
    }
  }
  alignas(64) int32_t acc[4][kTileRows][16];
  LINFER_TILE_STORE(4, &acc[0][0][0]);
  LINFER_TILE_STORE(5, &acc[1][0][0]);
  LINFER_TILE_STORE(6, &acc[2][0][0]);
  LINFER_TILE_STORE(7, &acc[3][0][0]);
  for (size_t j = 0; j < NP; ++j) {
    const size_t n = n0 + j * 16;
    const avx512::U8Channels c = avx512::u8_channels(w, n, n_stop);
    for (size_t r = 0; r < R; ++r) {
      const __m512i sums = _mm512_load_si512(acc[(r >= kTileRows ? 2 : 0) + j][r % kTileRows]);
      avx512::store_u8_row(c, sums, in.q_scales[r0 + r], y + (r0 + r) * y_stride + n, e);
    }
  }
}

}  // namespace

LINFER_DENSE_RUN(run_int8_amx) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.rows[t] = kTileRows, config.colsb[t] = kTileBytes;
  load_config(config);  // per thread: the tile state belongs to the thread that runs the layer
  // Groups of 128 rows meet every 32-channel strip in 32-row blocks; the GELU of a group's
  // outputs follows it.
  for_each_tile<kBlockRows, kBlockChannels>(
      rows, kRowGroup, n_begin, n_end, y, y_stride, e.activation,
      [&](size_t r, size_t R, size_t n, size_t n_stop) { block(w, in, r, R, y, y_stride, n, n_stop, e); });
  release_tiles();
}

// Whether this process may use AMX's tile data: Linux grants it on request (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), once per process, and refuses it where the kernel or
// the machine does not allow it.
bool amx_permitted() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace linfer::kernels::dense
#endif
