// SPDX-License-Identifier: Apache-2.0
// Highway's run-time dispatch without libhwy. HWY_EXPORT tables and HWY_DYNAMIC_DISPATCH are
// header code; they call two functions that libhwy would define (hwy/targets.h): SupportedTargets
// (what this CPU runs) and GetChosenTarget (the table index in use). Defining them here lets the
// runtime need Highway's headers only: no libhwy on the device, and riscv64 or any target without a
// libhwy package builds the same way. The CPU checks are Highway 1.0's own (hwy/targets.cc): a target
// counts only when the CPU has every feature its code is compiled for, and the OS saves its
// registers.
//
// The chosen target is per thread, so that a session's cap on the instruction sets (max_isa) holds
// for the Highway kernels it runs without touching other sessions: the session sets it on the
// calling thread and on each worker as a parallel chunk starts (set_hwy_cap).
#include <hwy/highway.h>

#include "kernels.h"

#if HWY_ARCH_X86
#include <cpuid.h>
#elif HWY_ARCH_ARM_V7 && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

static_assert(HWY_MAJOR == 1, "hwy_targets.cc implements Highway 1.x's dispatch functions");

namespace linfer::kernels {
namespace {

#if HWY_ARCH_X86
bool bit(uint32_t reg, int i) { return (reg >> i) & 1u; }
#endif

// Every Highway target this CPU runs (HWY_* bits), as hwy/targets.cc of Highway 1.0 decides.
int64_t detect_targets() {
  int64_t targets = HWY_SCALAR | HWY_EMU128;
#if HWY_ARCH_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return targets;
  const bool sse3 = bit(c, 0), clmul = bit(c, 1), ssse3 = bit(c, 9), fma = bit(c, 12), sse41 = bit(c, 19),
             sse42 = bit(c, 20), aes = bit(c, 25), osxsave = bit(c, 27), avx = bit(c, 28), f16c = bit(c, 29),
             sse = bit(d, 25), sse2 = bit(d, 26);
  bool lzcnt = false;
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) lzcnt = bit(c, 5);
  bool bmi = false, avx2 = false, bmi2 = false, f = false, dq = false, bw = false, vl = false;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    bmi = bit(b, 3), avx2 = bit(b, 5), bmi2 = bit(b, 8), f = bit(b, 16), dq = bit(b, 17), bw = bit(b, 30),
    vl = bit(b, 31);
  }
  const bool g_ssse3 = sse && sse2 && sse3 && ssse3;
  const bool g_sse4 = g_ssse3 && sse41 && sse42 && clmul && aes;
  const bool g_avx2 = g_sse4 && avx && avx2 && lzcnt && bmi && bmi2 && fma && f16c;
  const bool g_avx3 = g_avx2 && f && vl && dq && bw;
  if (g_ssse3) targets |= HWY_SSSE3;
  if (g_sse4) targets |= HWY_SSE4;
  if (g_avx2) targets |= HWY_AVX2;
  if (g_avx3) targets |= HWY_AVX3;
  if (osxsave) {  // registers the OS saves on a context switch (XCR0)
    unsigned xcr0, xcr0_high;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
    if (!bit(xcr0, 1)) targets &= ~(HWY_SSSE3 | HWY_SSE4 | HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL);
    if (!bit(xcr0, 2)) targets &= ~(HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL);
    if (!bit(xcr0, 5) || !bit(xcr0, 6) || !bit(xcr0, 7)) targets &= ~(HWY_AVX3 | HWY_AVX3_DL);
  } else {
    targets &= ~(HWY_AVX2 | HWY_AVX3 | HWY_AVX3_DL);
  }
#elif HWY_ARCH_ARM_A64
  // Advanced SIMD is part of ARMv8-A. (Highway's own check also asks for AES, which its NEON code
  // may use and the Raspberry Pi 4 lacks; linfer's kernels use none.)
  targets |= HWY_NEON;
#elif HWY_ARCH_ARM_V7 && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  if ((hwcap & HWCAP_NEON) && (hwcap & HWCAP_VFPv4)) targets |= HWY_NEON;
#endif
  return targets | HWY_STATIC_TARGET;  // what the build's baseline runs
}

[[maybe_unused]] int64_t detected_targets() {  // (bare metal: nothing to detect)
  static const int64_t targets = detect_targets();
  return targets;
}

// The Highway targets a cap allows.
[[maybe_unused]] int64_t targets_within(Isa max) {
  int64_t allowed = HWY_SCALAR | HWY_EMU128;
  switch (max) {
    case Isa::X86Avx512:
    case Isa::X86Avx512Vnni:
    case Isa::X86Avx512Bf16:
    case Isa::X86Amx:
      allowed |= HWY_AVX3 | HWY_AVX3_DL;
      [[fallthrough]];
    case Isa::X86Avx2:
    case Isa::X86AvxVnni:
      allowed |= HWY_AVX2;
      [[fallthrough]];
    case Isa::X86Sse4:
      allowed |= HWY_SSE4 | HWY_SSSE3;
      break;
    case Isa::ArmNeon:
    case Isa::ArmNeonDot:
    case Isa::ArmNeonI8mm:
      allowed |= HWY_NEON;
      break;
    case Isa::WasmSimd128:
      allowed |= HWY_WASM;
      break;
    case Isa::ArmDsp:
    case Isa::ArmMve:
      break;  // no Highway target of their own (Highway has none for Helium)
    case Isa::Generic:
      break;
  }
  // A build that compiles no portable Highway target (wasm: its SIMD128 baseline alone, for
  // size) keeps that baseline under every cap: a table with no allowed entry has nothing to call.
  if ((HWY_TARGETS & (HWY_SCALAR | HWY_EMU128)) == 0) allowed |= HWY_STATIC_TARGET;
  return allowed;
}

#if !LINFER_BARE_METAL
// The cap the calling thread's chosen target was last set from (Generic before any).
thread_local Isa t_cap = Isa::Generic;
thread_local bool t_capped = false;

}  // namespace

void set_hwy_cap(Isa max) {
  if (t_capped && t_cap == max) return;
  t_cap = max;
  t_capped = true;
  hwy::GetChosenTarget().Update(detected_targets() & targets_within(max));
}

Isa hwy_cap() { return t_capped ? t_cap : best_isa(); }
#else
}  // namespace
// Bare metal: the one target the build compiles (HWY_COMPILE_ONLY_STATIC, kernels/CMakeLists.txt)
// is called directly; there is nothing to choose, and no thread-local storage without an OS.
void set_hwy_cap(Isa) {}
Isa hwy_cap() { return best_isa(); }
#endif

}  // namespace linfer::kernels
#if !LINFER_BARE_METAL

namespace hwy {

// Called by a dispatch table's first entry on a thread's first dispatch: everything the CPU has.
int64_t SupportedTargets() { return linfer::kernels::detected_targets(); }

ChosenTarget& GetChosenTarget() {
  static thread_local ChosenTarget chosen;  // constant-initialised: no TLS guard on access
  return chosen;
}

}  // namespace hwy
#endif  // !LINFER_BARE_METAL
