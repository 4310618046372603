// SPDX-License-Identifier: Apache-2.0
// Highway on 32-bit Arm, included by every Highway kernel file before Highway's own headers.
// Highway 1.0.3's NEON target for ARMv7 is compiled with "+neon-vfpv4" attributes, for run-time
// dispatch from a baseline without NEON (Debian armhf); its MulAdd family asks the compiler's
// __ARM_VFPV4__ whether to fuse, which a VFPv3 baseline leaves undefined even inside functions
// compiled for VFPv4: multiply-adds would become a multiply and an add, two roundings (GELU would
// miss its 1e-6 bound). Defined here: only Highway's NEON code reads it (GCC's and the C library's
// headers do not), and that code always carries the VFPv4 attribute.
// (Which target runs is hwy_targets.cc's choice, from NEON and VFPv4 in AT_HWCAP. Highway's other
// approximations on ARMv7 NEON, Div and Sqrt by Newton-Raphson steps and subnormals flushed to
// zero, are handled where a kernel's exactness depends on them: gemm_hwy.cc, elementwise_hwy.cc.)
#pragma once

#if defined(__arm__) && !defined(__aarch64__) && !defined(__ARM_VFPV4__)
#define __ARM_VFPV4__ 1
#endif

// Inside a Highway kernel's per-target code: a target without a vector unit (Highway's scalar and
// emulated 128-bit targets: the Cortex-M builds', Highway having no Helium target). There some
// kernels are their references, which give the same results with no more instructions and a
// fraction of the code (docs/microcontrollers.md).
#define LINFER_HWY_NO_SIMD (HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128)
