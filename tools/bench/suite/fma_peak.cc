// SPDX-License-Identifier: Apache-2.0
// fma_peak [--threads T] [--seconds S]: measures the machine's single-precision FMA peak.
//
// Each thread runs a dense loop of vector FMAs on 16 independent accumulators (more than FMA
// latency x FMA ports on current x86 cores), all in registers, no loads or stores. Prints one line:
//   fma_peak: threads T, isa avx512|avx2, lanes L, gflops G
// G = 2 * lanes * FMAs summed over threads / wall time of the slowest thread, best of 3 repetitions.
//
// Build (run_suite.sh does this): g++ -O2 -mavx512f -mfma -pthread fma_peak.cc   (AVX-512 CPUs)
//                                 g++ -O2 -mavx2 -mfma -pthread fma_peak.cc      (otherwise)
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#if defined(__AVX512F__)
using vec = __m512;
constexpr int kLanes = 16;
constexpr const char* kIsa = "avx512";
inline vec vset(float x) { return _mm512_set1_ps(x); }
inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm512_add_ps(a, b); }
inline float vsum(vec a) { return _mm512_reduce_add_ps(a); }
#else
using vec = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "avx2";
inline vec vset(float x) { return _mm256_set1_ps(x); }
inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
inline vec vadd(vec a, vec b) { return _mm256_add_ps(a, b); }
inline float vsum(vec a) {
  alignas(32) float t[8];
  _mm256_store_ps(t, a);
  float s = 0;
  for (float v : t) s += v;
  return s;
}
#endif

// Accumulators: 16 with AVX-512 (32 vector registers), 12 with AVX2 (16 registers, two of which
// hold the constants). Either is at least FMA latency (4) x FMA ports (2).
#if defined(__AVX512F__)
constexpr int kAcc = 16;
#else
constexpr int kAcc = 12;
#endif

// iters iterations of kAcc independent FMAs (x = x * a + b, which stays finite). Returns a value
// derived from every accumulator so that the loop cannot be removed.
__attribute__((noinline)) float fma_loop(long iters, float seed) {
  const vec a = vset(0.9999999f), b = vset(1e-7f * seed);
  vec x0 = vset(seed + 0), x1 = vset(seed + 1), x2 = vset(seed + 2), x3 = vset(seed + 3);
  vec x4 = vset(seed + 4), x5 = vset(seed + 5), x6 = vset(seed + 6), x7 = vset(seed + 7);
  vec x8 = vset(seed + 8), x9 = vset(seed + 9), x10 = vset(seed + 10), x11 = vset(seed + 11);
#if defined(__AVX512F__)
  vec x12 = vset(seed + 12), x13 = vset(seed + 13), x14 = vset(seed + 14), x15 = vset(seed + 15);
#endif
  for (long it = 0; it < iters; ++it) {
    x0 = vfma(x0, a, b);
    x1 = vfma(x1, a, b);
    x2 = vfma(x2, a, b);
    x3 = vfma(x3, a, b);
    x4 = vfma(x4, a, b);
    x5 = vfma(x5, a, b);
    x6 = vfma(x6, a, b);
    x7 = vfma(x7, a, b);
    x8 = vfma(x8, a, b);
    x9 = vfma(x9, a, b);
    x10 = vfma(x10, a, b);
    x11 = vfma(x11, a, b);
#if defined(__AVX512F__)
    x12 = vfma(x12, a, b);
    x13 = vfma(x13, a, b);
    x14 = vfma(x14, a, b);
    x15 = vfma(x15, a, b);
#endif
    __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3));  // keep the loop as written
  }
  vec s = vadd(vadd(vadd(x0, x1), vadd(x2, x3)), vadd(vadd(x4, x5), vadd(x6, x7)));
  s = vadd(s, vadd(vadd(x8, x9), vadd(x10, x11)));
#if defined(__AVX512F__)
  s = vadd(s, vadd(vadd(x12, x13), vadd(x14, x15)));
#endif
  return vsum(s);
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// GFLOP/s of `threads` threads each running `iters` iterations; wall time of the whole batch.
double measure(int threads, long iters, float* sink) {
  std::vector<std::thread> pool;
  std::vector<float> out(threads);
  const double t0 = now_s();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { out[t] = fma_loop(iters, 1.0f + t); });
  for (auto& th : pool) th.join();
  const double dt = now_s() - t0;
  for (float v : out) *sink += v;
  return 2.0 * kLanes * kAcc * double(iters) * threads / dt / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: fma_peak [--threads T] [--seconds S]\n");
      return 2;
    }
  }
  if (threads < 1 || seconds <= 0) {
    std::fprintf(stderr, "fma_peak: bad --threads or --seconds\n");
    return 2;
  }
  float sink = 0;
  // Calibrate the iteration count so that one repetition takes about `seconds`.
  long iters = 1 << 20;
  for (;;) {
    const double t0 = now_s();
    fma_loop(iters, 1.0f);
    const double dt = now_s() - t0;
    if (dt > 0.05) {
      iters = long(double(iters) * seconds / dt);
      break;
    }
    iters *= 2;
  }
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) best = std::max(best, measure(threads, iters, &sink));
  std::printf("fma_peak: threads %d, isa %s, lanes %d, gflops %.1f\n", threads, kIsa, kLanes, best);
  if (sink == 12345.678f) std::printf("(sink)\n");
  return 0;
}
