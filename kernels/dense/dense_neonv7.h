// SPDX-License-Identifier: Apache-2.0
// What the 32-bit Arm NEON dense kernels (dense_{f32,f16,int8}_neonv7.cc) share: the target
// attribute, the row blocks, the output epilogues and the broadcast of an int8 input group.
// ARMv7-A with NEON and VFPv4 (Cortex-A7: Raspberry Pi 2; Cortex-A53 and A72 under a 32-bit OS:
// Pi 3 and 4). The build's baseline stays Debian armhf's (ARMv7 with VFPv3-D16, no NEON): only
// functions that carry LINFER_NEONV7 contain NEON instructions, and the kernels run only when
// the CPU reports NEON and VFPv4 (dense_select.cc). No per-file flag, so that no inline function
// shared with other files comes out with NEON in it.
#pragma once

#if defined(__arm__)
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dense/dense_internal.h"
#include "dense/dense_neon.h"

// VFPv4 brings the fused multiply-add (VFMA) and the half-precision conversions (VCVT.F32.F16)
// to NEON; GCC 12's arm_neon.h declares its intrinsics under the same FPU pragma.
#define LINFER_NEONV7 __attribute__((target("fpu=neon-vfpv4")))

namespace linfer::kernels::dense::neonv7 {

// Bytes of x rows per block, kept in L2 next to the panel while every panel of the weights
// passes (dense_neon.h explains the choice): half of the 64-bit kernels' blocks, since the Pi 2
// and 3 share 512 KiB of L2 among four cores (the Pi 4 has 1 MiB).
constexpr size_t kFloatRowBlockBytes = 64 * 1024;
constexpr size_t kInt8RowBlockBytes = 32 * 1024;

// Stores one row of 4N outputs (bias already added) with ReLU and accumulate; only the first
// `count` channels when the panel is partial.
template <size_t N>
LINFER_NEONV7 inline void store_outputs(float* dst, float32x4_t (&v)[N], size_t count, DenseEpilogue e) {
  if (e.activation == DenseActivation::Relu)
    for (auto& x : v) x = vmaxq_f32(x, vdupq_n_f32(0.0f));
  if (count >= 4 * N) {
    for (size_t i = 0; i < N; ++i)
      vst1q_f32(dst + 4 * i, e.accumulate ? vaddq_f32(vld1q_f32(dst + 4 * i), v[i]) : v[i]);
    return;
  }
  float tmp[4 * N];
  for (size_t i = 0; i < N; ++i) vst1q_f32(tmp + 4 * i, v[i]);
  for (size_t j = 0; j < count; ++j) dst[j] = e.accumulate ? dst[j] + tmp[j] : tmp[j];
}

// The 4 input bytes of group g of a row, twice (one d register: the input group of the 2
// channels whose weights share a d register of the panel).
LINFER_NEONV7 inline int8x8_t broadcast_group(const int8_t* row, size_t g) {
  int32_t v;
  std::memcpy(&v, row + g * kInt8GroupInputs, 4);
  return vreinterpret_s8_s32(vdup_n_s32(v));
}

}  // namespace linfer::kernels::dense::neonv7
#endif  // __arm__
