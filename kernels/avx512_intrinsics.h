// SPDX-License-Identifier: Apache-2.0
// <immintrin.h> for the AVX-512 kernels (dense/dense_avx512_tile.h, attention/attention_bf16_avx512.cc).
// GCC 12 warns about the deliberately undefined pass-through operand of the AVX-512 intrinsics
// once they are inlined into target-attribute functions (GCC bug 105593, fixed in GCC 13). Clang
// has neither the bug nor the -Wmaybe-uninitialized group.
#pragma once

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#endif
