// linfer-kernel-bench: single-thread speed of the dense kernels against this CPU's peak.
//
//   linfer-kernel-bench [--rows N] [--seconds S]
//
// Measures the FMA peak (vfmadd231ps) and the VNNI peak (vpdpbusd) with 12 independent
// accumulator chains, then times dense_f32_avx512 and dense_int8_f32_avx512vnni (activation
// quantization included) on the dense shapes of the benchmark models S and M, and prints
// GFLOP/s (int8: GOP/s, the same multiply-adds counted) and the fraction of the matching peak.
// The figures in docs/performance.md come from here. x86-64 with AVX-512 only.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "f32/dense_f32.h"
#include "int8/dense_int8.h"

#include "dense_tiles.h"  // immintrin.h, with GCC 12's false warnings silenced

#if defined(__x86_64__)

namespace {
using Clock = std::chrono::steady_clock;
using linfer::kernels::DenseActivation;
using linfer::kernels::DenseEpilogue;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Peaks: 12 independent accumulator chains of one instruction (its latency times its
// throughput needs at most 12 in flight on current x86 cores), run for `seconds`.
constexpr long kChunk = 1 << 20;

__attribute__((target("avx512f"))) double fma_peak_gflops(double seconds) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(float(i));
  __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(1e-9f);
  long steps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    for (long i = 0; i < kChunk; ++i) {
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], x, y);
      __asm__ volatile("" : "+v"(x));  // keeps the loop from being folded
    }
    steps += kChunk;
  }
  const double rate = double(steps) * 12 / seconds_since(t0);
  for (int i = 1; i < 12; ++i) a[0] = _mm512_add_ps(a[0], a[i]);
  volatile float sink = _mm512_reduce_add_ps(a[0]);
  (void)sink;
  return rate * 32 / 1e9;  // 16 lanes x 2 FLOP
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) double vnni_peak_gops(double seconds) {
  __m512i a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_epi32(i);
  __m512i x = _mm512_set1_epi32(0x01010101), y = _mm512_set1_epi32(0x02020202);
  long steps = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    for (long i = 0; i < kChunk; ++i) {
#pragma GCC unroll 12
      for (int j = 0; j < 12; ++j) a[j] = _mm512_dpbusd_epi32(a[j], x, y);
      __asm__ volatile("" : "+v"(x));
    }
    steps += kChunk;
  }
  const double rate = double(steps) * 12 / seconds_since(t0);
  for (int i = 1; i < 12; ++i) a[0] = _mm512_add_epi32(a[0], a[i]);
  volatile int sink = _mm512_reduce_add_epi32(a[0]);
  (void)sink;
  return rate * 128 / 1e9;  // 64 u8 x s8 products, 2 ops each
}

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
}  // namespace

int main(int argc, char** argv) {
  size_t rows = 1024;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--rows" || a == "--seconds") && i + 1 < argc) {
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(v > 0) || v > 1e6) {
        std::fprintf(stderr, "linfer-kernel-bench: %s needs a positive number\n", a.c_str());
        return 2;
      }
      if (a == "--rows") rows = size_t(v);
      else seconds = v;
    } else {
      std::fprintf(stderr, "usage: linfer-kernel-bench [--rows N] [--seconds S]\n");
      return 2;
    }
  }
  if (!linfer::kernels::f32_dense_fast_path_available() ||
      !linfer::kernels::int8_fast_path_available()) {
    std::fprintf(stderr, "linfer-kernel-bench: this CPU has no AVX-512 VNNI; nothing to measure\n");
    return 1;
  }
  const double fma_peak = fma_peak_gflops(seconds), vnni_peak = vnni_peak_gops(seconds);
  std::printf("one thread; peaks: f32 FMA %.1f GFLOP/s, int8 VNNI %.1f GOP/s\n", fma_peak,
              vnni_peak);
  std::printf("%-24s %-10s %12s %8s %12s %8s\n", "shape (rows x in x out)", "epilogue",
              "f32 GFLOP/s", "of peak", "int8 GOP/s", "of peak");
  struct Shape {
    const char* what;
    size_t in, out;
    DenseActivation act;
    bool accumulate;
  };
  const Shape shapes[] = {
      {"S q/out", 256, 256, DenseActivation::None, true},
      {"S ff1", 256, 1024, DenseActivation::GeluErf, false},
      {"S ff2", 1024, 256, DenseActivation::None, true},
      {"M q/out", 768, 768, DenseActivation::None, true},
      {"M ff1", 768, 3072, DenseActivation::GeluErf, false},
      {"M ff2", 3072, 768, DenseActivation::None, true},
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Shape& s : shapes) {
    std::vector<float> w(s.in * s.out), x(rows * s.in), y(rows * s.out), scales(s.out, 0.01f);
    for (float& v : w) v = nd(rng) * 0.05f;
    for (float& v : x) v = nd(rng);
    std::vector<int8_t> w8(s.in * s.out);
    for (size_t i = 0; i < w8.size(); ++i) w8[i] = int8_t(std::lround(std::max(-127.0f, std::min(127.0f, w[i] * 2000))));
    linfer::kernels::F32Weights pf;
    linfer::kernels::Int8Weights pi;
    if (!linfer::kernels::pack_f32_weights(w.data(), nullptr, s.in, s.out, &pf).empty() ||
        !linfer::kernels::pack_int8_weights(w8.data(), scales.data(), nullptr, s.in, s.out, &pi).empty()) {
      std::fprintf(stderr, "linfer-kernel-bench: out of memory\n");
      return 1;
    }
    std::vector<uint8_t> qx(rows * pi.in_padded);
    std::vector<float> qs(rows);
    const DenseEpilogue e{s.act, s.accumulate};
    const double macs = double(rows) * s.in * s.out;
    const int reps = 5;
    const double tf = best_time(reps, [&] {
      linfer::kernels::dense_f32_avx512(pf, x.data(), s.in, rows, y.data(), s.out, 0, s.out, e);
    });
    const double ti = best_time(reps, [&] {
      linfer::kernels::quantize_rows_u8_avx512(x.data(), s.in, rows, s.in, pi.in_padded, qx.data(), qs.data());
      linfer::kernels::dense_int8_f32_avx512vnni(pi, qx.data(), qs.data(), rows, y.data(), s.out, 0, s.out, e);
    });
    char shape[64];
    std::snprintf(shape, sizeof shape, "%s %zux%zux%zu", s.what, rows, s.in, s.out);
    const char* epi = s.act == DenseActivation::GeluErf ? "gelu" : s.accumulate ? "accumulate" : "-";
    std::printf("%-24s %-10s %12.1f %7.0f%% %12.1f %7.0f%%\n", shape, epi, 2 * macs / tf / 1e9,
                100 * 2 * macs / tf / 1e9 / fma_peak, 2 * macs / ti / 1e9,
                100 * 2 * macs / ti / 1e9 / vnni_peak);
  }
  return 0;
}
#else
int main() {
  std::fprintf(stderr, "linfer-kernel-bench: x86-64 only (the AVX-512 dense kernels)\n");
  return 1;
}
#endif
