// SPDX-License-Identifier: Apache-2.0
// linfer-kernel-bench: single-thread speed of every dense kernel this CPU runs, against the peak
// of the instruction it is built on.
//
//   linfer-kernel-bench [--rows N] [--seconds S] [--kernel NAME] [--cold]
//
// Every kernel of every instruction set the CPU has, except the portable ones (the fallback for
// CPUs below AVX2 and NEON, 20-100x slower here), which --kernel NAME selects.
//
// x86: measures the FMA peak (vfmadd231ps on 512- and 256-bit vectors), the VNNI peak
// (vpdpbusd, 512- and 256-bit) and AVX2's two int8 forms without VNNI (vpmaddwd + vpaddd, and
// vpmaddubsw + vpmaddwd + vpaddd) with 12 independent accumulator chains. Then times each dense
// kernel (dense_<dtype>_<isa>, activation quantization included for int8) on the dense shapes of
// the benchmark models S and M, weights in the panel layout, and prints GFLOP/s (int8: GOP/s,
// the same multiply-adds counted) and the fraction of its peak (f32/f16 kernels: the FMA peak of
// their vector width; int8: the VNNI peak of their width; the AVX2 int8 kernel without VNNI:
// the vpmaddwd + vpaddd peak). On other CPUs it prints the speeds only. docs/performance.md quotes it.
// --cold: the weights in as many copies as fill 64 MiB, more than a last-level cache, each call
// on the next one, as a model's layers come to a kernel (from L3 or memory); otherwise one copy
// stays in cache from call to call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels.h"
#include "linfer/format/panel.h"
#include "linfer/types/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace {
using Clock = std::chrono::steady_clock;
using linfer::DType;
using linfer::kernels::DenseActivation;
using linfer::kernels::DenseKernel;
using linfer::kernels::Isa;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

#if defined(__x86_64__)
// Peaks: 12 independent accumulator chains of one instruction (its latency times its throughput
// needs at most 12 in flight on current x86 cores), run for `seconds`. GFLOP/s (2 per
// multiply-add). One function per instruction: vector types cannot cross a function boundary
// without the instruction set enabled, so a shared template would not do.
constexpr long kChunk = 1 << 20;
#define LINFER_PEAK(name, isa, V, init, x_value, y_value, step, reg, macs)            \
  __attribute__((target(isa))) double name(double seconds) {                          \
    V a[12];                                                                          \
    for (int i = 0; i < 12; ++i) a[i] = init;                                         \
    V x = x_value, y = y_value;                                                       \
    long steps = 0;                                                                   \
    const auto t0 = Clock::now();                                                     \
    while (seconds_since(t0) < seconds) {                                             \
      for (long i = 0; i < kChunk; ++i) {                                             \
        _Pragma("GCC unroll 12") for (int j = 0; j < 12; ++j) a[j] = step;            \
        __asm__ volatile("" : "+" reg(x)); /* x is opaque: nothing folds or hoists */ \
      }                                                                               \
      steps += kChunk;                                                                \
    }                                                                                 \
    const double rate = double(steps) * 12 * (macs)*2 / seconds_since(t0) / 1e9;      \
    for (int i = 1; i < 12; ++i) __asm__ volatile("" : : reg(a[i]));                  \
    __asm__ volatile("" : : reg(a[0]), reg(y));                                       \
    return rate;                                                                      \
  }
LINFER_PEAK(fma512_peak, "avx512f", __m512, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f), _mm512_set1_ps(1e-9f),
            _mm512_fmadd_ps(a[j], x, y), "v", 16)
LINFER_PEAK(fma256_peak, "avx2,fma", __m256, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f), _mm256_set1_ps(1e-9f),
            _mm256_fmadd_ps(a[j], x, y), "x", 8)
LINFER_PEAK(vnni512_peak, "avx512f,avx512bw,avx512vnni", __m512i, _mm512_set1_epi32(1), _mm512_set1_epi32(0x01010101),
            _mm512_set1_epi32(0x02020202), _mm512_dpbusd_epi32(a[j], x, y), "v", 64)
// GCC 12's _mm256_dpbusd_avx_epi32 copies the accumulator through another register, which
// made this loop measure the copies; the kernel's own one-instruction asm measures the instruction.
__attribute__((target("avx2,avxvnni"))) inline __m256i dpbusd_vex(__m256i acc, __m256i a, __m256i b) {
  __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
  return acc;
}
LINFER_PEAK(vnni256_peak, "avx2,avxvnni", __m256i, _mm256_set1_epi32(1), _mm256_set1_epi32(0x01010101),
            _mm256_set1_epi32(0x02020202), dpbusd_vex(a[j], x, y), "x", 32)
// int8 on AVX2 without VNNI, two ways: vpmaddwd + vpaddd, 16 exact multiply-adds of int16 values
// (the dense_int8_avx2 kernel's pair), and vpmaddubsw + vpmaddwd by ones + vpaddd, 32
// multiply-adds of u8 x s8 whose pairs are summed in 16 bits with saturation (ONNX Runtime's AVX2
// int8 kernels use it; inexact where two products of a pair add up past 32767). Volatile asm, as
// in the kernels: the products of loop-invariant operands are not merged across the 12 chains.
__attribute__((target("avx2"))) inline __m256i madd_add(__m256i acc, __m256i a, __m256i b) {
  __m256i t;
  __asm__ volatile("vpmaddwd %3, %2, %1\n\tvpaddd %1, %0, %0" : "+x"(acc), "=&x"(t) : "x"(a), "x"(b));
  return acc;
}
__attribute__((target("avx2"))) inline __m256i maddubs_add(__m256i acc, __m256i a, __m256i ones) {
  __m256i t;
  __asm__ volatile("vpmaddubsw %2, %2, %1\n\tvpmaddwd %3, %1, %1\n\tvpaddd %1, %0, %0"
                   : "+x"(acc), "=&x"(t)
                   : "x"(a), "x"(ones));
  return acc;
}
LINFER_PEAK(madd256_peak, "avx2", __m256i, _mm256_set1_epi32(1), _mm256_set1_epi16(3), _mm256_set1_epi16(5),
            madd_add(a[j], x, y), "x", 16)
LINFER_PEAK(maddubs256_peak, "avx2", __m256i, _mm256_set1_epi32(1), _mm256_set1_epi8(3), _mm256_set1_epi16(1),
            maddubs_add(a[j], x, y), "x", 32)

#undef LINFER_PEAK

// AMX's peak: TDPBUSD (16 x 16 x 64 multiply-adds) into 6 independent C tiles from one A and
// one B tile, enough in flight to cover its latency. Runs only where cpu_has(Isa::X86Amx), which
// has asked Linux for the tile state.
#define LINFER_TDPBUSD_INTO(c) "tdpbusd %%tmm1, %%tmm0, %%tmm" #c "\n\t"
double amx_peak(double seconds) {
  struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int t = 0; t < 8; ++t) config.colsb[t] = 64, config.rows[t] = 16;
  __asm__ volatile("ldtilecfg %0" ::"m"(config));
  __asm__ volatile(
      "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
      "tilezero %%tmm4\n\ttilezero %%tmm5\n\ttilezero %%tmm6\n\ttilezero %%tmm7" ::);
  constexpr long kSteps = 4096;
  long steps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    for (long i = 0; i < kSteps; ++i)
      __asm__ volatile(LINFER_TDPBUSD_INTO(2) LINFER_TDPBUSD_INTO(3) LINFER_TDPBUSD_INTO(4) LINFER_TDPBUSD_INTO(5)
                           LINFER_TDPBUSD_INTO(6) LINFER_TDPBUSD_INTO(7)::);
    steps += kSteps;
  }
  const double rate = double(steps) * 6 * (16 * 16 * 64) * 2 / seconds_since(t0) / 1e9;
  __asm__ volatile("tilerelease" ::);
  return rate;
}
#undef LINFER_TDPBUSD_INTO
#endif

#if defined(__wasm_simd128__)
// SIMD128's peaks as the engine runs them: 12 independent chains of a multiply and an add
// (f32x4: no fused multiply-add in SIMD128) or of i32x4.dot_i16x8_s and an add (int8 kernels'
// 8 multiply-adds per dot). x and y come from volatile memory, so nothing folds.
template <class Step>
double wasm_peak(double seconds, double macs_per_step, Step step) {
  static volatile float xv = 1.0f, yv = 1e-9f;
  v128_t a[12];
  for (auto& v : a) v = wasm_f32x4_splat(0.5f);
  long steps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    const v128_t x = wasm_f32x4_splat(xv), y = wasm_f32x4_splat(yv);
    for (long i = 0; i < (1 << 20); ++i)
#pragma clang loop unroll(full)
      for (int j = 0; j < 12; ++j) a[j] = step(a[j], x, y);
    steps += 1 << 20;
  }
  const double rate = double(steps) * 12 * macs_per_step * 2 / seconds_since(t0) / 1e9;
  v128_t s = a[0];
  for (int j = 1; j < 12; ++j) s = wasm_v128_xor(s, a[j]);
  xv = wasm_f32x4_extract_lane(s, 0);  // keeps the chains alive
  return rate;
}
#endif

// Best of `reps` timings of fn, in seconds.
template <class Fn>
double best_time(int reps, Fn fn) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// The peaks each kernel is held against (GFLOP/s, int8 GOP/s; 0: none measured), each measured on
// one thread for `seconds`, on the instruction sets this file has a measurement for.
struct Peaks {
  double fma512 = 0, fma256 = 0, vnni512 = 0, vnni256 = 0, amx = 0;  // x86-64
  double madd256 = 0, maddubs256 = 0;                                // x86-64 AVX2 int8 without VNNI
  double mul_add = 0, dot_add = 0;                                   // wasm SIMD128
};

Peaks measure_peaks(double seconds) {
  Peaks p;
#if defined(__x86_64__)
  if (linfer::kernels::cpu_has(Isa::X86Avx512)) p.fma512 = fma512_peak(seconds);
  if (linfer::kernels::cpu_has(Isa::X86Avx2)) p.fma256 = fma256_peak(seconds);
  if (linfer::kernels::cpu_has(Isa::X86Avx512Vnni)) p.vnni512 = vnni512_peak(seconds);
  if (linfer::kernels::cpu_has(Isa::X86AvxVnni)) p.vnni256 = vnni256_peak(seconds);
  if (linfer::kernels::cpu_has(Isa::X86Amx)) p.amx = amx_peak(seconds);
  if (linfer::kernels::cpu_has(Isa::X86Avx2)) {
    p.madd256 = madd256_peak(seconds);
    p.maddubs256 = maddubs256_peak(seconds);
  }
  std::printf(
      "one thread; peaks (GFLOP/s, int8 GOP/s): FMA zmm %.1f, FMA ymm %.1f, VNNI zmm %.1f, VNNI ymm %.1f, AMX %.1f, "
      "vpmaddwd+vpaddd ymm %.1f, vpmaddubsw+vpmaddwd+vpaddd ymm %.1f\n",
      p.fma512, p.fma256, p.vnni512, p.vnni256, p.amx, p.madd256, p.maddubs256);
#endif
#if defined(__wasm_simd128__)
  p.mul_add =
      wasm_peak(seconds, 4, [](v128_t a, v128_t x, v128_t y) { return wasm_f32x4_add(wasm_f32x4_mul(a, x), y); });
  p.dot_add =
      wasm_peak(seconds, 8, [](v128_t a, v128_t x, v128_t y) { return wasm_i32x4_add(wasm_i32x4_dot_i16x8(a, x), y); });
  std::printf("one thread; peaks (GFLOP/s, int8 GOP/s): f32x4 mul+add %.1f, i32x4.dot_i16x8 + add %.1f\n", p.mul_add,
              p.dot_add);
#endif
  return p;
}

struct Shape {
  const char* what;
  size_t in, out;
  DenseActivation act;
  bool accumulate;
};

}  // namespace

int main(int argc, char** argv) {
  size_t rows = 1024;
  double seconds = 1.0;
  std::string only;
  bool cold = false;
  const char* usage = "usage: linfer-kernel-bench [--rows N] [--seconds S] [--kernel NAME] [--cold]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--rows" || a == "--seconds") && i + 1 < argc) {
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(v > 0) || v > 1e6) {
        std::fprintf(stderr, "linfer-kernel-bench: %s needs a positive number\n", a.c_str());
        return 2;
      }
      if (a == "--rows")
        rows = size_t(v);
      else
        seconds = v;
    } else if (a == "--kernel" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--cold") {
      cold = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("%s", usage);
      return 0;
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  // The peak each kernel is held against, by its instruction set and dtype.
  const Peaks peaks = measure_peaks(seconds);
  auto peak_of = [&](const DenseKernel& k) {
    switch (k.isa) {
      case Isa::X86Avx512:
        return peaks.fma512;
      case Isa::X86Avx512Vnni:
        return peaks.vnni512;
      case Isa::X86Amx:
        return peaks.amx;
      case Isa::X86AvxVnni:
        return peaks.vnni256;
      // int8 on AVX2: the vpmaddwd + vpaddd pair of its inner loop.
      case Isa::X86Avx2:
        return k.dtype == DType::I8 ? peaks.madd256 : peaks.fma256;
      case Isa::WasmSimd128:
        return k.dtype == DType::I8 ? peaks.dot_add : peaks.mul_add;
      default:
        return 0.0;
    }
  };
  const Shape shapes[] = {
      {"S q/out", 256, 256, DenseActivation::None, true},    {"S ff1", 256, 1024, DenseActivation::GeluErf, false},
      {"S ff2", 1024, 256, DenseActivation::None, true},     {"M q/out", 768, 768, DenseActivation::None, true},
      {"M ff1", 768, 3072, DenseActivation::GeluErf, false}, {"M ff2", 3072, 768, DenseActivation::None, true},
  };
  std::printf("%-22s %-26s %-10s %10s %8s\n", "kernel", "shape (rows x in x out)", "epilogue", "GFLOP/s", "of peak");
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (DType dtype : {DType::F32, DType::F16, DType::I8}) {
    size_t count = 0;
    const DenseKernel* const* list = linfer::kernels::dense_kernels(dtype, &count);
    for (size_t ki = 0; ki < count; ++ki) {
      const DenseKernel& k = *list[ki];
      if (!linfer::kernels::cpu_has(k.isa) || (!only.empty() && only != k.name)) continue;
      if (only.empty() && k.isa == Isa::Generic) continue;
      for (const Shape& s : shapes) {
        // Weights in the panel layout, as a model holds them.
        std::vector<uint8_t> raw(s.in * s.out * linfer::dtype_size(dtype));
        for (size_t i = 0; i < s.in * s.out; ++i) {
          const float v = nd(rng) * 0.05f;
          if (dtype == DType::F32)
            std::memcpy(&raw[i * 4], &v, 4);
          else if (dtype == DType::F16) {
            const uint16_t h = linfer::float_to_half(v);
            std::memcpy(&raw[i * 2], &h, 2);
          } else
            raw[i] = uint8_t(int8_t(std::lround(std::max(-127.0f, std::min(127.0f, v * 2000)))));
        }
        const size_t bytes = linfer::panel_matrix_bytes(dtype, uint32_t(s.out), uint32_t(s.in), 1);
        const size_t copies = cold ? std::max<size_t>(1, (size_t(64) << 20) / bytes) : 1;
        std::vector<void*> panels(copies, nullptr);
        for (void*& p : panels) {
          if (posix_memalign(&p, 64, bytes) != 0) {
            std::fprintf(stderr, "linfer-kernel-bench: out of memory\n");
            return 1;
          }
          linfer::pack_panels(dtype, raw.data(), uint32_t(s.out), uint32_t(s.in), 1, p);
        }
        std::vector<float> scales(s.out, 0.01f), x(rows * s.in), y(rows * s.out);
        std::vector<int32_t> sums(s.out);
        if (dtype == DType::I8)
          linfer::int8_row_sums(reinterpret_cast<const int8_t*>(raw.data()), uint32_t(s.out), uint32_t(s.in),
                                sums.data());
        for (float& v : x) v = nd(rng);
        linfer::kernels::DenseWeights w{dtype, s.in, s.out, panels[0], scales.data(), sums.data(), nullptr};
        const size_t q_stride = linfer::int8_padded_inputs(uint32_t(s.in)) * std::max<size_t>(k.q_bytes, 1);
        std::vector<int8_t> q(rows * q_stride);
        std::vector<float> qs(rows);
        const linfer::kernels::DenseInput input{x.data(), s.in, q.data(), q_stride, qs.data()};
        const double macs = double(rows) * s.in * s.out;
        size_t call = 0;
        const double t = best_time(cold ? 15 : 5, [&] {
          w.panels = panels[call++ % copies];
          if (k.quantize) k.quantize(x.data(), s.in, rows, s.in, q.data(), q_stride, qs.data());
          k.run(w, input, rows, y.data(), s.out, 0, s.out, {s.act, s.accumulate});
        });
        for (void* p : panels) free(p);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%s %zux%zux%zu", s.what, rows, s.in, s.out);
        const char* epi = s.act == DenseActivation::GeluErf ? "gelu" : s.accumulate ? "accumulate" : "-";
        const double gflops = 2 * macs / t / 1e9, p = peak_of(k);
        if (p > 0)
          std::printf("%-22s %-26s %-10s %10.1f %7.0f%%\n", k.name, shape, epi, gflops, 100 * gflops / p);
        else
          std::printf("%-22s %-26s %-10s %10.1f %8s\n", k.name, shape, epi, gflops, "-");
      }
    }
  }
  return 0;
}
