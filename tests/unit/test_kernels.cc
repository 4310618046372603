// SPDX-License-Identifier: Apache-2.0
// Every fast kernel against its scalar reference, over odd sizes that exercise vector remainders.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if LINFER_THREADS
#include <thread>
#endif

#include "kernels.h"
#include "kernels/kernel_tests.h"
#include "linfer/format/panel.h"
#include "linfer/types/half.h"

using namespace linfer::kernels;
using namespace linfer::testing;
using linfer::DType;

namespace {
// `count` elements of storage starting at a multiple of 64 bytes: the kernels read panels 64-byte
// aligned (aligned vector loads), as the model and the arena place them.
template <class T>
T* aligned64(std::vector<T>& storage, size_t count) {
  storage = std::vector<T>(count + 64 / sizeof(T));  // value-initialized
  const size_t skip = (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  return reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(storage.data()) + skip);
}

#if defined(__arm__) || defined(__x86_64__)
// Highway's portable target: SCALAR, or EMU128 where the compiler builds it (clang; GCC's is
// marked broken).
bool portable_hwy_target(const std::string& name) { return name == "SCALAR" || name == "EMU128"; }
#endif
}  // namespace

TEST_CASE("Highway kernels follow the thread's cap, and report it") {
  const std::string best = hwy_kernel_target();
  MESSAGE("Highway kernels use " << best);
#if defined(__arm__)
  // 32-bit Arm: Highway's NEON target wherever the dense kernels have theirs (NEON and VFPv4).
  if (cpu_has(Isa::ArmNeon)) CHECK(best == "NEON");
  CHECK(portable_hwy_target(hwy_kernel_target(Isa::Generic)));
#endif
#if defined(__x86_64__)
  set_hwy_cap(Isa::X86Sse4);
  CHECK(std::string(hwy_kernel_target()) == "SSE4");
  set_hwy_cap(Isa::Generic);
  CHECK(portable_hwy_target(hwy_kernel_target()));
  CHECK(std::string(hwy_kernel_target(Isa::X86Sse4)) == "SSE4");  // asked, then put back
  CHECK(portable_hwy_target(hwy_kernel_target()));
#if LINFER_THREADS
  std::string other;  // the cap is the thread's: another one starts with the CPU's best
  std::thread([&] { other = hwy_kernel_target(); }).join();
  CHECK(other == best);
#endif
  set_hwy_cap(best_isa());
#endif
  CHECK(std::string(hwy_kernel_target()) == best);
}

TEST_CASE("layernorm_f32: fast matches reference") {
  for (size_t dim : kOddSizes)
    for (size_t rows : {1, 3, 5}) {
      const size_t stride = dim + 3;  // strided rows
      auto x = random_vec(rows * stride, uint32_t(dim * 7 + rows), 2.0f);
      for (float& v : x) v += 3.0f;  // non-zero mean
      auto g = random_vec(dim, 11), b = random_vec(dim, 12);
      std::vector<float> ref(rows * stride, 0.0f), fast(rows * stride, 0.0f);
      layernorm_f32_ref(x.data(), stride, ref.data(), stride, rows, dim, g.data(), b.data(), 1e-5f);
      layernorm_f32_hwy(x.data(), stride, fast.data(), stride, rows, dim, g.data(), b.data(), 1e-5f);
      CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "dim " << dim << " rows " << rows);
    }
}

TEST_CASE("elementwise kernels: fast matches reference") {
  for (size_t n : kOddSizes) {
    const auto x = random_vec(n, uint32_t(n), 3.0f);
    auto check = [&](void (*ref)(float*, size_t), void (*fast)(float*, size_t), const char* name, double tol) {
      auto a = x, b = x;
      ref(a.data(), n);
      fast(b.data(), n);
      CHECK_MESSAGE(rel_err(b, a) <= tol, name << " n=" << n);
    };
    check(gelu_erf_f32_ref, gelu_erf_f32_hwy, "gelu_erf", 1e-6);
    check(gelu_tanh_f32_ref, gelu_tanh_f32_hwy, "gelu_tanh", 1e-6);
    check(relu_f32_ref, relu_f32_hwy, "relu", 0.0);
    auto y1 = random_vec(n, 99), y2 = y1;
    add_f32_ref(y1.data(), x.data(), n);
    add_f32_hwy(y2.data(), x.data(), n);
    CHECK(rel_err(y2, y1) == 0.0);
  }
}

TEST_CASE("mul_channels: each row times the per-channel factors, bit for bit the reference's") {
  for (size_t cols : {1, 3, 16, 17, 31, 384, 385}) {
    const size_t rows = 5, x_stride = cols + 3, y_stride = cols + 7;
    auto x = random_vec(rows * x_stride, 11), s = random_vec(cols, 12);
    std::vector<float> y1(rows * y_stride, -1.0f), y2 = y1;
    mul_channels_f32_ref(x.data(), x_stride, rows, cols, s.data(), y1.data(), y_stride);
    mul_channels_f32_hwy(x.data(), x_stride, rows, cols, s.data(), y2.data(), y_stride);
    CHECK_MESSAGE(y2 == y1, "cols=" << cols);
    for (size_t r = 0; r < rows; ++r) {
      CHECK(y1[r * y_stride + cols - 1] == x[r * x_stride + cols - 1] * s[cols - 1]);
      for (size_t c = cols; c < y_stride; ++c) CHECK(y2[r * y_stride + c] == -1.0f);  // (the gap untouched)
    }
  }
}

TEST_CASE("transpose_f32: fast equals reference on every Highway target") {
  // Shapes within one 16 x 16 block and across several, with tiles of 4 and the edges beside and
  // below them; strides wider than the rows, and the gaps left untouched.
  const size_t shapes[][2] = {{1, 1}, {3, 5}, {4, 4}, {7, 9}, {16, 64}, {17, 33}, {64, 256}, {130, 64}, {257, 7}};
  for (Isa cap : kHwyCaps) {
    set_hwy_cap(cap);
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols = shape[1], src_stride = cols + 3, dst_stride = rows + 5;
      const auto src = random_vec(rows * src_stride, uint32_t(rows * 31 + cols));
      std::vector<float> ref(cols * dst_stride, -1.0f), fast = ref;
      transpose_f32_ref(src.data(), src_stride, rows, cols, ref.data(), dst_stride);
      transpose_f32_hwy(src.data(), src_stride, rows, cols, fast.data(), dst_stride);
      CHECK_MESSAGE(fast == ref, hwy_kernel_target() << " rows " << rows << " cols " << cols);
      CHECK(ref[(cols - 1) * dst_stride + rows - 1] == src[(rows - 1) * src_stride + cols - 1]);
      CHECK(ref[rows] == -1.0f);  // (the gap after the first output row)
    }
  }
  set_hwy_cap(best_isa());
}

TEST_CASE("gelu: extreme inputs stay finite and saturate") {
  std::vector<float> x = {-100.0f, -20.0f, -5.0f, 0.0f, 5.0f, 20.0f, 100.0f, 1e30f, -1e30f};
  for (auto fast : {gelu_erf_f32_hwy, gelu_tanh_f32_hwy}) {
    auto y = x;
    fast(y.data(), y.size());
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::isfinite(y[i]));
    CHECK(y[0] == doctest::Approx(0.0f));
    CHECK(y[6] == doctest::Approx(100.0f));
  }
  // GELU-erf saturates exactly: 0 far left, x far right.
  std::vector<float> far = {-1e30f, -100.0f, -20.0f, 20.0f, 100.0f};
  auto g = far;
  gelu_erf_f32_hwy(g.data(), g.size());
  CHECK(g == std::vector<float>{-0.0f, -0.0f, -0.0f, 20.0f, 100.0f});
}

TEST_CASE("gelu_erf: fast kernel within 1e-6 of the exact GELU on a fine grid") {
  // The rational erf is fitted on |z| <= 3.92 (tools/python/tables/fit_erf.py); the grid covers that
  // range, its edge and beyond, with vector-sized and scalar-tail pieces.
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 1.0 / 1024) x.push_back(float(v));
  auto y = x;
  gelu_erf_f32_hwy(y.data(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    worst = std::max(worst, std::fabs(y[i] - want));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("sum_f32: fast matches reference") {
  for (size_t n : kOddSizes) {
    const auto x = random_vec(n, uint32_t(n));
    const float ref = sum_f32_ref(x.data(), n);
    CHECK_MESSAGE(std::fabs(sum_f32_hwy(x.data(), n) - ref) < 1e-5 * (1.0 + std::sqrt(double(n))), "n " << n);
  }
  CHECK(sum_f32_hwy(nullptr, 0) == 0.0f);
}

TEST_CASE("gemm_f32: fast matches reference") {
  for (size_t M : {1, 3, 4, 9, 17})
    for (size_t N : {1, 5, 16, 33, 70})
      for (size_t K : {1, 7, 64, 300}) {  // 300 crosses the K panel
        const size_t lda = K + 2, ldb = N + 1, ldc = N + 3;
        auto A = random_vec(M * lda, uint32_t(M * 1000 + K)), B = random_vec(K * ldb, uint32_t(N + K));
        std::vector<float> ref(M * ldc, 7.0f), fast(M * ldc, 7.0f);
        gemm_f32_ref(M, N, K, A.data(), lda, B.data(), ldb, ref.data(), ldc);
        gemm_f32_hwy(M, N, K, A.data(), lda, B.data(), ldb, fast.data(), ldc);
        CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "M " << M << " N " << N << " K " << K);
        gemm_f32_ref(M, N, K, A.data(), lda, B.data(), ldb, ref.data(), ldc, /*accumulate=*/true);
        gemm_f32_hwy(M, N, K, A.data(), lda, B.data(), ldb, fast.data(), ldc, /*accumulate=*/true);
        CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "accumulate: M " << M << " N " << N << " K " << K);
      }
}

namespace {
// A dense layer's weights in panel layout, made from row-major random values of dtype.
struct PackedDense {
  std::vector<float> w;      // the row-major values as f32 (int8: q * scale)
  std::vector<uint8_t> raw;  // row-major in dtype
  std::vector<float> scales, bias;
  std::vector<int32_t> sums;
  std::vector<uint8_t, std::allocator<uint8_t>> panels_storage;
  uint8_t* panels = nullptr;
  // One group's view.
  DenseWeights view(DType dtype, size_t out, size_t in, size_t groups, size_t g, bool with_bias) const {
    const size_t go = out / groups;
    DenseWeights v;
    v.dtype = dtype;
    v.in = in;
    v.out = go;
    v.panels = panels + g * linfer::panel_count(uint32_t(go)) * linfer::panel_bytes(dtype, uint32_t(in));
    if (dtype == DType::I8) {
      v.scales = scales.data() + g * go;
      v.sums = sums.data() + g * go;
    }
    v.bias = with_bias ? bias.data() + g * go : nullptr;
    return v;
  }
};

PackedDense make_dense(DType dtype, size_t out, size_t in, size_t groups, uint32_t seed) {
  PackedDense p;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> qi(-127, 127);
  p.w.resize(out * in);
  p.raw.resize(out * in * linfer::dtype_size(dtype));
  p.bias = random_vec(out, seed + 1);
  if (dtype == DType::I8) {
    p.scales.resize(out);
    for (float& s : p.scales) s = 0.005f + std::fabs(nd(rng)) * 0.01f;
  }
  for (size_t n = 0; n < out; ++n)
    for (size_t k = 0; k < in; ++k) {
      const size_t i = n * in + k;
      if (dtype == DType::F32) {
        p.w[i] = nd(rng) / std::sqrt(float(in));
        std::memcpy(&p.raw[i * 4], &p.w[i], 4);
      } else if (dtype == DType::F16) {
        const uint16_t h = linfer::float_to_half(nd(rng) / std::sqrt(float(in)));
        std::memcpy(&p.raw[i * 2], &h, 2);
        p.w[i] = linfer::half_to_float(h);
      } else {
        const int8_t q = int8_t(qi(rng));
        p.raw[i] = uint8_t(q);
        p.w[i] = q * p.scales[n];
      }
    }
  p.panels =
      aligned64(p.panels_storage, linfer::panel_matrix_bytes(dtype, uint32_t(out), uint32_t(in), uint32_t(groups)));
  linfer::pack_panels(dtype, p.raw.data(), uint32_t(out), uint32_t(in), uint32_t(groups), p.panels);
  if (dtype == DType::I8) {
    p.sums.resize(out);
    linfer::int8_row_sums(reinterpret_cast<const int8_t*>(p.raw.data()), uint32_t(out), uint32_t(in), p.sums.data());
  }
  return p;
}

// Where input k of a row is in Int8Form::S16Pairs (q0 q2 q1 q3 per group of four).
size_t s16_pairs_position(size_t k) { return k % 4 == 1 ? k + 1 : k % 4 == 2 ? k - 1 : k; }

// The value a kernel's quantizer stored for input k of a row, as q.
int stored_q(const DenseKernel& kernel, const int8_t* row, size_t k) {
  if (kernel.q_split) {  // Int8Form::SplitU7: q+ and q- bytes per group of four, each within 7 bits
    const uint8_t* g = reinterpret_cast<const uint8_t*>(row) + 8 * (k / 4);
    const int pos = g[k % 4], neg = g[4 + k % 4];
    return pos <= 127 && neg <= 127 && (pos == 0 || neg == 0) ? pos - neg : 1000;  // 1000: malformed
  }
  if (kernel.q_bytes == 2) {
    int16_t v;
    std::memcpy(&v, row + 2 * (kernel.q_pairs ? s16_pairs_position(k) : k), 2);
    return v;
  }
  return kernel.q_unsigned ? int(uint8_t(row[k])) - 128 : int(row[k]);
}

const DenseEpilogue kEpilogues[] = {{DenseActivation::None, false},    {DenseActivation::Relu, false},
                                    {DenseActivation::GeluErf, false}, {DenseActivation::GeluTanh, false},
                                    {DenseActivation::None, true},     {DenseActivation::Relu, true}};
}  // namespace

// Every dense kernel of this build that the CPU runs, for f32, f16 and int8 weights, against the
// scalar reference: rows reach the register tiles and their remainders (6-row tiles on x86),
// output channels the panels and the partial last panel, inputs the int8 groups of 4 (and, for
// the i8mm kernel's 16-input steps, every remainder of 0-3 groups: 28 inputs leave 3), more than
// one block of rows (1030) and the K blocks of the x86 f32 and f16 kernels (1030, 2060); every
// epilogue; a channel sub-range; a group of a grouped matrix. f32/f16 within 1e-5 (float against
// double accumulation), int8 bit for bit (exact integer sums, the same dequantization) except
// after GELU (the fast GELU is a 3.5e-7 approximation).
namespace {
// The reference's output over channels [n_begin, n_end) with epilogue e, from its output without
// one (`sums`, bias included; the other channels as in y0): dense_ref.cc's store, activation
// then the accumulate, on the same float. Exact: on cases of up to 9 x 33 x 64 multiply-adds
// (`in` inputs) it is checked against the reference run with e.
std::vector<float> with_epilogue(const DenseKernel& ref, const DenseWeights& w, const DenseInput& input, size_t in,
                                 const std::vector<float>& sums, const std::vector<float>& y0, size_t rows,
                                 size_t y_stride, size_t n_begin, size_t n_end, DenseEpilogue e) {
  std::vector<float> y = y0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = n_begin; o < n_end; ++o) {
      float v = sums[r * y_stride + o];
      activation_f32_ref(&v, 1, e.activation);
      y[r * y_stride + o] = e.accumulate ? y0[r * y_stride + o] + v : v;
    }
  if (rows * n_end * in <= 9 * 33 * 64) {
    std::vector<float> full = y0;
    ref.run(w, input, rows, full.data(), y_stride, n_begin, n_end, e);
    CHECK(full == y);
  }
  return y;
}

// Every dense kernel of one weight dtype that this CPU runs against the dtype's reference. One test
// case per dtype: ctest runs the int8 one apart from the others (tests/CMakeLists.txt), so the
// longest test of the qemu runs is split across both cores.
void check_dense_kernels(DType dtype) {
  size_t checked = 0;
  size_t count = 0;
  const DenseKernel* const* all = dense_kernels(dtype, &count);
  const DenseKernel& ref = dense_kernel_ref(dtype);
  std::vector<const DenseKernel*> kernels;
  for (size_t ki = 0; ki < count; ++ki) {
    if (cpu_has(all[ki]->isa))
      kernels.push_back(all[ki]);
    else
      MESSAGE("skipped " << std::string(all[ki]->name) << ": this CPU lacks " << std::string(to_string(all[ki]->isa)));
  }
  std::vector<size_t> kernel_checks(kernels.size());
  // Rows: every remainder of the 6-row (x86), 4-row, 8-row (Arm f16, i8mm) and 2-row (Arm int8)
  // tiles, and 70 rows with 1030 inputs cross every kernel's row blocks; 150 rows cross AMX's
  // groups of 128 rows, so only where an AMX kernel runs (elsewhere 28% of the test's time for
  // nothing, in every qemu run too). Channels: every partial last panel size class (1, 2-14 as 9,
  // 15) and several panels. The reference runs once per case and bias for every kernel and
  // epilogue (with_epilogue: half the test's time natively, 15-30% of it under qemu-aarch64).
  const bool amx =
      std::any_of(kernels.begin(), kernels.end(), [](const DenseKernel* k) { return k->isa == Isa::X86Amx; });
  for (size_t rows : {1, 2, 3, 4, 5, 6, 7, 9, 13, 25, 70, 150})
    for (size_t out : {1, 9, 15, 16, 17, 24, 33, 64, 65, 130})
      for (size_t in : {1, 3, 4, 7, 28, 64, 130, 1030, 2060}) {
        if (rows == 150 && !amx) continue;
        if (rows * out * in > 25 * 130 * 130 && !(rows >= 70 && out <= 17)) continue;  // the reference's time
        if (in == 2060 && rows != 7 && rows != 70) continue;
        CAPTURE(rows);
        CAPTURE(out);
        CAPTURE(in);
        const size_t groups = out % 2 == 0 && out >= 32 ? 2 : 1;
        const PackedDense p = make_dense(dtype, out, in, groups, uint32_t(out * 131 + in));
        const size_t x_stride = in + 3, y_stride = out + 5;
        const auto x = random_vec(rows * x_stride, uint32_t(rows * 17 + in), 2.0f);
        const size_t kp = linfer::int8_padded_inputs(uint32_t(in));
        std::vector<int8_t> q_ref(rows * kp, 99);
        std::vector<float> qs_ref(rows);
        DenseInput input_ref{x.data(), x_stride, nullptr, 0, nullptr};
        if (dtype == DType::I8) {
          ref.quantize(x.data(), x_stride, rows, in, q_ref.data(), kp, qs_ref.data());
          input_ref = {x.data(), x_stride, q_ref.data(), kp, qs_ref.data()};
        }
        const size_t g = groups - 1, go = out / groups;
        const auto y0 = random_vec(rows * y_stride, 11);
        std::vector<std::vector<float>> wants;  // per (bias, epilogue), in the loops' order below
        for (bool with_bias : {true, false}) {
          const DenseWeights w_ref = p.view(dtype, out, in, groups, g, with_bias);
          std::vector<float> sums = y0;
          ref.run(w_ref, input_ref, rows, sums.data(), y_stride, 0, go, DenseEpilogue{DenseActivation::None, false});
          for (const DenseEpilogue e : kEpilogues) {
            wants.push_back(with_epilogue(ref, w_ref, input_ref, in, sums, y0, rows, y_stride, 0, go, e));
          }
        }
        for (size_t ki = 0; ki < kernels.size(); ++ki) {
          const DenseKernel& kernel = *kernels[ki];
          CAPTURE(std::string(kernel.name));
          // Quantized rows in the kernel's own form, equal to the reference's.
          const size_t q_stride = kp * std::max<size_t>(kernel.q_bytes, 1) + 8;
          std::vector<int8_t> q(rows * q_stride, 99);
          std::vector<float> qs(rows);
          DenseInput input{x.data(), x_stride, nullptr, 0, nullptr};
          if (dtype == DType::I8) {
            kernel.quantize(x.data(), x_stride, rows, in, q.data(), q_stride, qs.data());
            CHECK(qs == qs_ref);
            size_t mismatches = 0;
            for (size_t r = 0; r < rows; ++r)
              for (size_t k = 0; k < kp; ++k)
                mismatches += stored_q(kernel, q.data() + r * q_stride, k) != q_ref[r * kp + k];
            CHECK(mismatches == 0);
            input = {x.data(), x_stride, q.data(), q_stride, qs.data()};
          }
          const std::vector<float>* want = wants.data();
          for (bool with_bias : {true, false})
            for (const DenseEpilogue e : kEpilogues) {
              CAPTURE(int(e.activation));
              CAPTURE(e.accumulate);
              CAPTURE(with_bias);
              const DenseWeights w = p.view(dtype, out, in, groups, g, with_bias);
              std::vector<float> got = y0;
              kernel.run(w, input, rows, got.data(), y_stride, 0, go, e);
              const bool exact = dtype == DType::I8 && e.activation != DenseActivation::GeluErf &&
                                 e.activation != DenseActivation::GeluTanh;
              if (exact) {
                size_t differ = 0;
                for (size_t i = 0; i < got.size(); ++i) differ += got[i] != (*want)[i];
                CHECK_MESSAGE(differ == 0, differ << " values differ");
              } else {
                CHECK(rel_err(got, *want) < 1e-5);
              }
              ++want;
              // Output channels [16, go) only (the split when rows are few): the rest untouched.
              if (go > 16) {
                std::vector<float> part = y0;
                kernel.run(w, input, rows, part.data(), y_stride, 16, go, e);
                size_t wrong = 0;
                for (size_t r = 0; r < rows; ++r)
                  for (size_t o = 0; o < y_stride; ++o)
                    wrong +=
                        part[r * y_stride + o] != (o >= 16 && o < go ? got[r * y_stride + o] : y0[r * y_stride + o]);
                CHECK(wrong == 0);
              }
              ++checked;
              ++kernel_checks[ki];
            }
        }
      }
  for (size_t ki = 0; ki < kernels.size(); ++ki)
    MESSAGE(std::string(kernels[ki]->name) << ": " << kernel_checks[ki] << " shape x epilogue cases");
  CHECK(checked > 0);
}
}  // namespace

TEST_CASE("dense kernels: every f32 kernel matches the reference") { check_dense_kernels(DType::F32); }
TEST_CASE("dense kernels: every f16 kernel matches the reference") { check_dense_kernels(DType::F16); }
TEST_CASE("dense kernels: every int8 kernel matches the reference") { check_dense_kernels(DType::I8); }

namespace {
// The f16 dense kernel with fp16 arithmetic (dense_f16_neonfp16, the session option
// fp16_arithmetic) where this build and CPU have it, else null with the reason in a message.
const DenseKernel* fp16_arithmetic_kernel_or_note() {
  const DenseKernel* k = select_dense_f16_fp16_arithmetic(best_isa());
  if (!k) {
    const std::string why =
        cpu_has_fp16_arithmetic() ? "this build has none" : "this CPU has no fp16 arithmetic (ASIMDHP)";
    MESSAGE("fp16 arithmetic kernel not tested: " << why);
  }
#if defined(__aarch64__)
  CHECK(cpu_has_fp16_arithmetic() == (k != nullptr));  // an Arm CPU with ASIMDHP must get it
#endif
  return k;
}

// The bound on |fp16 kernel - exact| for one output before its bias and activation, from the
// kernel's arithmetic: each input is rounded to f16 (relative error <= u = 2^-11, or an absolute
// 2^-25 where it lands among the subnormals), then K fused multiply-adds each round the running
// sum t_k = s_{k-1} + x^_k w_k once (error <= u |t_k|, or 2^-25 among subnormals). With S_k the
// exact prefix sums of x^_j w_j, |t_k| <= |S_k| + E_{k-1}, which gives
//   E_K <= u sum_k |x_k w_k| + 2^-25 sum_k |w_k| + (1 + u)^K (u sum_k |S_k| + K 2^-25).
// A worst case (every rounding the same way), not a statistical estimate: for random data the
// real error is far smaller, but a bug that drops, repeats or misplaces a product is larger for
// the short sums, and the "really f16" check below keeps the kernel from being f32 in disguise.
double fp16_sum_bound(const float* x, const float* w, size_t K) {
  const double u = std::ldexp(1.0, -11), tiny = std::ldexp(1.0, -25);
  double input = 0, prefix = 0, prefix_abs_sum = 0;
  for (size_t k = 0; k < K; ++k) {
    const double xh = linfer::half_to_float(linfer::float_to_half(x[k]));
    input += u * std::fabs(double(x[k]) * w[k]) + tiny * std::fabs(w[k]);
    prefix += xh * w[k];
    prefix_abs_sum += std::fabs(prefix);
  }
  return input + std::pow(1.0 + u, double(K)) * (u * prefix_abs_sum + double(K) * tiny);
}
}  // namespace

// The fp16 kernel changes results, so only an explicit choice gives it: never in the list that
// select_dense_kernel walks, never under a cap below ArmNeonDot (ARMv8.0 code has no fp16
// arithmetic), and on aarch64 exactly where the CPU reports it.
TEST_CASE("dense_f16_neonfp16: chosen only explicitly, on CPUs with fp16 arithmetic, within the cap") {
  size_t count = 0;
  const DenseKernel* const* all = dense_kernels(DType::F16, &count);
  for (size_t i = 0; i < count; ++i) CHECK(std::string(all[i]->name) != "dense_f16_neonfp16");
  CHECK(select_dense_f16_fp16_arithmetic(Isa::ArmNeon) == nullptr);
  CHECK(select_dense_f16_fp16_arithmetic(Isa::Generic) == nullptr);
  const DenseKernel* k = select_dense_f16_fp16_arithmetic(Isa::ArmNeonDot);
#if defined(__aarch64__)
  CHECK((k != nullptr) == cpu_has_fp16_arithmetic());
  if (k) CHECK(std::string(k->name) == "dense_f16_neonfp16");
#else
  CHECK(k == nullptr);
  CHECK(!cpu_has_fp16_arithmetic());
#endif
}

// dense_f16_neonfp16 against the f16 reference (double sums of the f32 inputs) within the f16
// bound above: rows through every remainder of the 8-row tile, every partial panel, inputs
// through every remainder of the 8-input step and across row blocks (1030), every epilogue, a
// channel sub-range. After the activation the bound grows by GELU's steepest slope (1.13; ReLU:
// 1), plus the f32 kernels' 1e-5 for the f32 epilogue (bias, widening, fast GELU).
TEST_CASE("dense_f16_neonfp16: fp16 arithmetic within the f16 rounding bound of the reference") {
  const DenseKernel* kernel = fp16_arithmetic_kernel_or_note();
  if (!kernel) return;
  const DenseKernel& ref = dense_kernel_ref(DType::F16);
  size_t checked = 0, beyond_f32 = 0, values = 0;
  for (size_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 25, 70})
    for (size_t out : {1, 9, 15, 16, 17, 33, 130})
      for (size_t in : {1, 3, 7, 8, 9, 15, 17, 64, 130, 1030}) {
        if (rows * out * in > 25 * 130 * 130 && !(rows == 70 && out <= 17)) continue;  // the reference's time
        CAPTURE(rows);
        CAPTURE(out);
        CAPTURE(in);
        const PackedDense p = make_dense(DType::F16, out, in, 1, uint32_t(out * 131 + in));
        const size_t x_stride = in + 3, y_stride = out + 5;
        const auto x = random_vec(rows * x_stride, uint32_t(rows * 17 + in), 2.0f);
        const DenseInput input{x.data(), x_stride, nullptr, 0, nullptr};
        std::vector<double> bound(rows * y_stride, 0.0);
        for (size_t r = 0; r < rows; ++r)
          for (size_t o = 0; o < out; ++o)
            bound[r * y_stride + o] = fp16_sum_bound(x.data() + r * x_stride, p.w.data() + o * in, in);
        const auto y0 = random_vec(rows * y_stride, 11);
        for (bool with_bias : {true, false}) {
          const DenseWeights w = p.view(DType::F16, out, in, 1, 0, with_bias);
          std::vector<float> sums = y0;  // the reference once per case and bias (with_epilogue)
          ref.run(w, input, rows, sums.data(), y_stride, 0, out, DenseEpilogue{DenseActivation::None, false});
          for (const DenseEpilogue e : kEpilogues) {
            CAPTURE(int(e.activation));
            CAPTURE(e.accumulate);
            CAPTURE(with_bias);
            const double slope =
                e.activation == DenseActivation::GeluErf || e.activation == DenseActivation::GeluTanh ? 1.13 : 1.0;
            for (size_t n_begin : {size_t(0), size_t(16)}) {
              if (n_begin >= out) continue;
              const std::vector<float> want =
                  with_epilogue(ref, w, input, in, sums, y0, rows, y_stride, n_begin, out, e);
              std::vector<float> got = y0;
              kernel->run(w, input, rows, got.data(), y_stride, n_begin, out, e);
              double scale = 1;
              for (float v : want) scale = std::max(scale, double(std::fabs(v)));
              size_t outside = 0;
              for (size_t r = 0; r < rows; ++r)
                for (size_t o = 0; o < y_stride; ++o) {
                  const size_t i = r * y_stride + o;
                  if (o < n_begin || o >= out) {
                    outside += got[i] != y0[i];  // channels outside the range stay untouched
                    continue;
                  }
                  const double err = std::fabs(double(got[i]) - want[i]);
                  outside += !(err <= slope * bound[i] + 1e-5 * scale);
                  beyond_f32 += err > 1e-5 * scale;
                  ++values;
                }
              CHECK_MESSAGE(outside == 0, outside << " values outside the bound");
              ++checked;
            }
          }
        }
      }
  MESSAGE(std::string(kernel->name) << ": " << checked << " cases, " << beyond_f32 << " of " << values
                                    << " values beyond the f32 kernels' 1e-5");
  CHECK(checked > 0);
  // Really f16 sums: a good share of the outputs differ from the reference by more than an f32
  // kernel may (f16 keeps 11 bits: a sum of about 2 carries an error near 1e-3).
  CHECK(beyond_f32 * 4 > values);
}

// The overflow guard: f16 ends at 65504. A row with inputs beyond it (1e5 converts to inf) and
// a row whose inputs fit but whose sums do not (300 x 1030 inputs of weight 1) must come out as
// the f32 kernels give them, finite, with each epilogue applied once (channel 1 has zero weights:
// its output is act(bias), where a second GELU would show). 20 rows: tiles of 8, 8 and 4 rows, the
// middle one without overflow; with 3 rows all in one tile. inf x 0 (the huge input times channel
// 1's weights) is NaN, which the guard catches as well.
TEST_CASE("dense_f16_neonfp16: tiles beyond the f16 range are computed again in f32") {
  const DenseKernel* kernel = fp16_arithmetic_kernel_or_note();
  if (!kernel) return;
  const DenseKernel& ref = dense_kernel_ref(DType::F16);
  for (size_t in : {size_t(1030), size_t(13)})
    for (size_t rows : {size_t(3), size_t(20)}) {
      CAPTURE(in);
      CAPTURE(rows);
      const size_t out = 20;
      PackedDense p = make_dense(DType::F16, out, in, 1, 7);
      // Channel 0: weights 1, so that its sum over a row of 300s is 300 K; channel 1: weights 0.
      const uint16_t one = linfer::float_to_half(1.0f), zero = 0;
      for (size_t k = 0; k < in; ++k) {
        std::memcpy(&p.raw[k * 2], &one, 2);
        std::memcpy(&p.raw[(in + k) * 2], &zero, 2);
        p.w[k] = 1.0f;
        p.w[in + k] = 0.0f;
      }
      linfer::pack_panels(DType::F16, p.raw.data(), uint32_t(out), uint32_t(in), 1, p.panels);
      const size_t x_stride = in;
      auto x = random_vec(rows * x_stride, 5, 1.0f);
      const size_t big_row = 1, huge_row = rows - 1;  // first tile; and the last tile when rows > 8
      for (size_t k = 0; k < in; ++k) x[big_row * x_stride + k] = in > 300 ? 300.0f : 6000.0f;
      x[huge_row * x_stride + in / 2] = 1.0e5f;  // beyond f16: inf after the conversion
      for (const DenseEpilogue e : kEpilogues) {
        CAPTURE(int(e.activation));
        CAPTURE(e.accumulate);
        const DenseWeights w = p.view(DType::F16, out, in, 1, 0, true);
        std::vector<float> want(rows * out, 0.5f), got = want;
        ref.run(w, DenseInput{x.data(), x_stride, nullptr, 0, nullptr}, rows, want.data(), out, 0, out, e);
        kernel->run(w, DenseInput{x.data(), x_stride, nullptr, 0, nullptr}, rows, got.data(), out, 0, out, e);
        REQUIRE(want[big_row * out] > 65504.0f);  // the case is what it claims
        size_t not_finite = 0;
        for (float v : got) not_finite += !std::isfinite(v);
        CHECK(not_finite == 0);
        // The overflowing tiles as the f32 kernels give them (float against double sums): the huge
        // input's row in both panels (inf times any weight), the big row in panel 0 (channel 0's
        // sum; panel 1's fit f16).
        for (size_t r : {big_row, huge_row}) {
          double scale = 1, diff = 0;
          for (size_t o = 0; o < (r == huge_row ? out : 16); ++o) {
            scale = std::max(scale, double(std::fabs(want[r * out + o])));
            diff = std::max(diff, double(std::fabs(got[r * out + o] - want[r * out + o])));
          }
          CHECK_MESSAGE(diff <= 1e-5 * scale, "row " << r << ": " << diff << " against scale " << scale);
          // Channel 1 (act(bias + 0.5 if accumulating)): GELU applied once, not twice.
          CHECK(std::fabs(got[r * out + 1] - want[r * out + 1]) <= 1e-5 * std::max(1.0f, std::fabs(want[r * out + 1])));
        }
      }
    }
}

// A compression of the sequence, E X, in int8 models (on the int8 dense kernels): X's columns packed as
// int8 weights (fast packer = reference, byte for byte, in one call or panel by panel), E's int8
// rows copied into each kernel's input form, and each kernel's product equal to the reference's
// bit for bit, and to E X in f32 within the quantization's error.
TEST_CASE("int8 compression: packed columns, E's rows in each kernel's form, products") {
  const DenseKernel& ref = dense_kernel_ref(DType::I8);
  size_t count = 0;
  const DenseKernel* const* list = dense_kernels(DType::I8, &count);
  size_t checked = 0;
  for (size_t T : {1, 3, 4, 7, 33, 130, 1030})
    for (size_t D : {1, 15, 16, 17, 40, 64})
      for (size_t k : {1, 5, 8, 30}) {
        CAPTURE(T);
        CAPTURE(D);
        CAPTURE(k);
        const size_t x_stride = D + 3, n = T + 5;  // E's rows are longer than T: only T are read
        auto x = random_vec(T * x_stride, uint32_t(T * 7 + D), 1.5f);
        if (D >= 17 && T >= 7) {  // a zero column, NaN and infinity in others
          for (size_t t = 0; t < T; ++t) x[t * x_stride + 16] = 0.0f;
          x[2 * x_stride + 3] = NAN;
          x[5 * x_stride + D - 1] = INFINITY;
          // Subnormal columns (32-bit Arm NEON flushes subnormals to zero): all subnormal; under a
          // maximum of 2^-120 (q = 1 for most of them); under 2^-117 with 2^-118 (a tie, 63.5),
          // in another panel when D > 17.
          const float tiny = std::ldexp(1.0f, -126);
          const size_t edge = D - 2;
          for (size_t t = 0; t < T; ++t) {
            const float sign = t % 2 ? -1.0f : 1.0f;
            x[t * x_stride + 9] = sign * tiny * float(t % 7 + 1) / 8.0f;
            x[t * x_stride + 10] = sign * tiny * float(t % 4 + 1) / 8.0f;
            x[t * x_stride + edge] = sign * tiny * float(t % 3) / 4.0f;
          }
          x[1 * x_stride + 10] = std::ldexp(1.0f, -120);
          x[3 * x_stride + edge] = -std::ldexp(1.0f, -117);
          x[4 * x_stride + edge] = std::ldexp(1.0f, -118);
        }
        const size_t bytes = linfer::panel_count(uint32_t(D)) * linfer::panel_bytes(DType::I8, uint32_t(T));
        std::vector<int8_t> panels_ref(bytes, 0x5a), panels(bytes, 0x3c), panels_split(bytes, 0x11);
        std::vector<int8_t> aligned_storage;
        int8_t* aligned = aligned64(aligned_storage, bytes);
        std::vector<float> scales_ref(D, -1), scales(D, -2), scales_split(D, -3);
        std::vector<int32_t> sums_ref(D, -1), sums(D, -2), sums_split(D, -3);
        pack_columns_int8_ref(x.data(), x_stride, T, D, 0, D, panels_ref.data(), scales_ref.data(), sums_ref.data());
        for (Isa cap : kHwyCaps) {  // the packer on every Highway target of the CPU
          set_hwy_cap(cap);
          CAPTURE(std::string(hwy_kernel_target()));
          pack_columns_int8_hwy(x.data(), x_stride, T, D, 0, D, panels.data(), scales.data(), sums.data());
          for (size_t c0 = 0; c0 < D; c0 += 16)
            pack_columns_int8_hwy(x.data(), x_stride, T, D, c0, std::min(D, c0 + 16), panels_split.data(),
                                  scales_split.data(), sums_split.data());
          CHECK(panels == panels_ref);
          CHECK(panels_split == panels_ref);
          CHECK(std::memcmp(scales.data(), scales_ref.data(), D * 4) == 0);
          CHECK(std::memcmp(scales_split.data(), scales_ref.data(), D * 4) == 0);
          CHECK(sums == sums_ref);
          CHECK(sums_split == sums_ref);
        }
        set_hwy_cap(best_isa());  // back to what the CPU has

        std::mt19937 rng(uint32_t(k * 31 + T));
        std::uniform_int_distribution<int> qi(-127, 127);
        std::vector<int8_t> e(k * n);
        for (int8_t& v : e) v = int8_t(qi(rng));
        std::vector<float> e_scales(k);
        for (size_t r = 0; r < k; ++r) e_scales[r] = 0.01f + 0.001f * float(r);
        const size_t kp = linfer::int8_padded_inputs(uint32_t(T));
        std::vector<int8_t> q_ref(k * kp, 99);
        std::vector<int32_t> row_sums(k, -1);
        int8_rows_to_input(ref, e.data(), n, k, T, q_ref.data(), kp, row_sums.data());
        std::memcpy(aligned, panels_ref.data(), bytes);
        const DenseWeights w{DType::I8, T, D, aligned, scales_ref.data(), sums_ref.data(), nullptr};
        std::vector<float> want(k * D, 7.0f);
        ref.run(w, {nullptr, 0, q_ref.data(), kp, e_scales.data()}, k, want.data(), D, 0, D, {});
        // The reference's product against E X in f32 (on columns without NaN or infinity).
        for (size_t r = 0; r < k; ++r) {
          int32_t sum = 0;
          for (size_t t = 0; t < T; ++t) sum += e[r * n + t];
          CHECK(row_sums[r] == sum);
          for (size_t c = 0; c < D; ++c) {
            if (!std::isfinite(scales_ref[c]) || (D >= 17 && T >= 7 && c == 3)) continue;
            double exact = 0, bound = 0;
            for (size_t t = 0; t < T; ++t) {
              exact += double(e[r * n + t]) * e_scales[r] * x[t * x_stride + c];
              bound += std::fabs(double(e[r * n + t]) * e_scales[r]) * scales_ref[c] * 0.5;  // half a step each
            }
            CHECK(std::fabs(want[r * D + c] - exact) <= bound * 1.001 + 1e-5);
          }
        }
        for (size_t ki = 0; ki < count; ++ki) {
          const DenseKernel& kernel = *list[ki];
          if (!cpu_has(kernel.isa)) continue;
          CAPTURE(std::string(kernel.name));
          const size_t q_stride = kp * kernel.q_bytes + 8;
          std::vector<int8_t> q(k * q_stride, 99);
          int8_rows_to_input(kernel, e.data(), n, k, T, q.data(), q_stride, nullptr);
          size_t wrong = 0;
          for (size_t r = 0; r < k; ++r)
            for (size_t t = 0; t < kp; ++t) wrong += stored_q(kernel, q.data() + r * q_stride, t) != q_ref[r * kp + t];
          CHECK(wrong == 0);
          std::vector<float> got(k * D, 7.0f);
          kernel.run(w, {nullptr, 0, q.data(), q_stride, e_scales.data()}, k, got.data(), D, 0, D, {});
          CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
          ++checked;
        }
      }
  CHECK(checked > 0);
}

TEST_CASE("dense references equal the plain formula on the row-major weights") {
  for (DType dtype : {DType::F32, DType::F16, DType::I8}) {
    CAPTURE(linfer::to_string(dtype));
    const size_t rows = 3, out = 35, in = 21;
    const PackedDense p = make_dense(dtype, out, in, 1, 5);
    const auto x = random_vec(rows * in, 7);
    const DenseKernel& ref = dense_kernel_ref(dtype);
    const DenseWeights w = p.view(dtype, out, in, 1, 0, true);
    std::vector<int8_t> q(rows * linfer::int8_padded_inputs(in));
    std::vector<float> qs(rows), xq = x;  // int8: the dequantized inputs the kernel sees
    DenseInput input{x.data(), in, nullptr, 0, nullptr};
    if (dtype == DType::I8) {
      const size_t kp = linfer::int8_padded_inputs(in);
      ref.quantize(x.data(), in, rows, in, q.data(), kp, qs.data());
      for (size_t r = 0; r < rows; ++r)
        for (size_t k = 0; k < in; ++k) xq[r * in + k] = q[r * kp + k] * qs[r];
      input = {x.data(), in, q.data(), kp, qs.data()};
    }
    std::vector<float> y(rows * out), want(rows * out);
    ref.run(w, input, rows, y.data(), out, 0, out, {});
    for (size_t r = 0; r < rows; ++r)
      for (size_t o = 0; o < out; ++o) {
        double acc = p.bias[o];
        for (size_t k = 0; k < in; ++k) acc += double(xq[r * in + k]) * p.w[o * in + k];
        want[r * out + o] = float(acc);
      }
    CHECK(rel_err(y, want) < 1e-5);
  }
}

TEST_CASE("dense kernel selection: the cap is obeyed, the portable kernel runs everywhere") {
  for (DType dtype : {DType::F32, DType::F16, DType::I8}) {
    const DenseKernel& best = select_dense_kernel(dtype, best_isa());
    MESSAGE(std::string(linfer::to_string(dtype)) << ": " << std::string(best.name));
    CHECK(cpu_has(best.isa));
    CHECK(std::string(select_dense_kernel(dtype, Isa::Generic).name).find("generic") != std::string::npos);
    for (Isa cap : {Isa::X86Avx2, Isa::X86AvxVnni, Isa::X86Avx512, Isa::X86Avx512Vnni, Isa::X86Amx, Isa::ArmDsp,
                    Isa::ArmNeon, Isa::ArmNeonDot, Isa::ArmNeonI8mm}) {
      const DenseKernel& k = select_dense_kernel(dtype, cap);
      CHECK(cpu_has(k.isa));
      CHECK(isa_within(k.isa, cap));
    }
  }
  // On x86 with AMX the int8 kernel is AMX's, and VNNI's under that cap.
  if (cpu_has(Isa::X86Amx)) {
    CHECK(std::string(select_dense_kernel(DType::I8, best_isa()).name) == "dense_int8_amx");
    CHECK(std::string(select_dense_kernel(DType::I8, Isa::X86Avx512Vnni).name) == "dense_int8_avx512vnni");
  }
  // On Arm the int8 kernel follows the cap down the chain i8mm > dot product > NEON (each CPU
  // model of scripts/test-arm64.sh checks the steps it has).
  if (cpu_has(Isa::ArmNeonI8mm))
    CHECK(std::string(select_dense_kernel(DType::I8, best_isa()).name) == "dense_int8_i8mm");
  if (cpu_has(Isa::ArmNeonDot))
    CHECK(std::string(select_dense_kernel(DType::I8, Isa::ArmNeonDot).name) == "dense_int8_neondot");
}

TEST_CASE("attention_f32: fast matches reference") {
  // Up to 700 keys: full attention crosses several key blocks of the online softmax.
  for (size_t keys : {1, 5, 16, 33, 128, 257, 700})
    for (size_t dh : {1, 7, 16, 33}) {
      const size_t rows = 11, q_stride = dh * 2 + 1, kt_stride = keys + 2, v_stride = dh + 5, o_stride = dh * 2 + 1;
      auto q = random_vec(rows * q_stride, uint32_t(keys + dh), 2.0f);
      auto kt = random_vec(dh * kt_stride, uint32_t(keys * dh), 2.0f);
      auto v = random_vec(keys * v_stride, 5);
      std::vector<float> ref(rows * o_stride, 0.0f), fast(rows * o_stride, 0.0f);
      std::vector<float> scratch(attention_f32_scratch_floats(keys, dh));
      AttentionHeadArgs a{q.data(),
                          q_stride,
                          kt.data(),
                          kt_stride,
                          v.data(),
                          v_stride,
                          nullptr,
                          o_stride,
                          dh,
                          keys,
                          1.0f / std::sqrt(float(dh))};
      a.o = ref.data();
      attention_f32_ref(a, 0, rows, scratch.data());
      a.o = fast.data();
      attention_f32_hwy(a, 2, rows, scratch.data());  // a sub-range, rows 0-1 untouched
      attention_f32_hwy(a, 0, 2, scratch.data());
      CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "keys " << keys << " dh " << dh);
    }
}

TEST_CASE("attention_bf16: packed values, fast equals reference, and within bf16's rounding of f32") {
#if defined(__x86_64__)
  if (!cpu_has(Isa::X86Avx512Bf16)) {
    MESSAGE("no AVX-512 BF16 on this CPU: the bf16 values' kernel is not tested here");
    return;
  }
  auto bf16_bits = [](float x) {  // to nearest even
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
  };
  // Up to 300 keys: two key blocks of the online softmax; keys not a multiple of 32 (padding).
  for (size_t keys : {1, 2, 5, 31, 32, 33, 100, 256, 300})
    for (size_t dh : {32, 64}) {
      const size_t rows = 13, q_stride = dh + 3, v_stride = dh + 16, o_stride = dh + 5;
      const size_t padded = attention_bf16_padded_keys(keys);
      auto q = random_vec(rows * q_stride, uint32_t(keys + dh), 2.0f);
      auto kt = random_vec(dh * padded, uint32_t(keys * dh), 2.0f);
      for (size_t t = 0; t < dh; ++t) std::fill(kt.begin() + t * padded + keys, kt.begin() + (t + 1) * padded, 0.0f);
      auto v = random_vec(keys * v_stride, 5);
      for (size_t j = 0; j < keys; ++j)
        for (size_t c = 0; c < dh; ++c) v[j * v_stride + c] += 3.0f + 0.1f * float(c);  // an offset to center
      std::vector<uint32_t> vp(attention_bf16_value_words(keys, dh), 0xdeadbeefu);
      std::vector<float> mean(dh);
      attention_bf16_pack_values(v.data(), v_stride, keys, dh, vp.data(), mean.data());
      double spread = 0;
      for (size_t c = 0; c < dh; ++c) {
        double m = 0;
        for (size_t j = 0; j < keys; ++j) m += v[j * v_stride + c];
        m /= double(keys);
        CHECK_MESSAGE(std::fabs(mean[c] - m) <= 1e-5 * (std::fabs(m) + 1), "keys " << keys << " channel " << c);
        for (size_t j = 0; j < padded; ++j) {
          const uint32_t want = j < keys ? bf16_bits(v[j * v_stride + c] - mean[c]) : 0u;
          const uint32_t got = (vp[(j / 2) * dh + c] >> (16 * (j % 2))) & 0xffffu;
          if (got != want) FAIL_CHECK("packed value of key " << j << " channel " << c << " keys " << keys);
          if (j < keys) spread = std::max(spread, double(std::fabs(v[j * v_stride + c] - mean[c])));
        }
      }
      std::vector<float> ref(rows * o_stride, 0.0f), fast(rows * o_stride, 0.0f), exact(rows * o_stride, 0.0f);
      std::vector<float> scratch(
          std::max(attention_bf16_scratch_floats(keys, dh), attention_f32_scratch_floats(keys, dh)));
      AttentionBf16Args a{q.data(),
                          q_stride,
                          kt.data(),
                          padded,
                          vp.data(),
                          mean.data(),
                          nullptr,
                          o_stride,
                          dh,
                          keys,
                          1.0f / std::sqrt(float(dh))};
      a.o = ref.data();
      attention_bf16_ref(a, 0, rows, scratch.data());
      a.o = fast.data();
      attention_bf16_avx512(a, 2, rows, scratch.data());  // a sub-range, rows 0-1 untouched
      attention_bf16_avx512(a, 0, 2, scratch.data());
      // Within one block of keys the two differ by the sums' rounding (and the kernel's exponent,
      // within 1e-7 of exp, rounding a probability to the neighbouring bf16, rarely); over
      // several blocks each block's probabilities are rounded before the rescaling, which moves
      // an output by at most 2^-8 of the values' spread. (Measured: 7e-7 and 4e-4 of it.)
      double diff = 0, off = 0;
      AttentionHeadArgs f{q.data(),
                          q_stride,
                          kt.data(),
                          padded,
                          v.data(),
                          v_stride,
                          exact.data(),
                          o_stride,
                          dh,
                          keys,
                          1.0f / std::sqrt(float(dh))};
      attention_f32_ref(f, 0, rows, scratch.data());
      for (size_t i = 0; i < fast.size(); ++i) {
        diff = std::max(diff, double(std::fabs(fast[i] - ref[i])));
        off = std::max(off, double(std::fabs(fast[i] - exact[i])));
      }
      CHECK_MESSAGE(diff <= spread * (keys <= kAttentionKeyBlock ? 1e-5 : 1.0 / 256),
                    "keys " << keys << " dh " << dh << ": " << diff << " of " << spread);
      // Against exact f32 attention: the probabilities' and the values' bf16 rounding, each
      // within 2^-9 of what it rounds.
      CHECK_MESSAGE(off <= spread / 128, "keys " << keys << " dh " << dh << ": " << off << " of " << spread);
    }
#endif
}

TEST_CASE("attention_f32 windowed: fast matches reference on every Highway target") {
  // Windows within one key block and across several, global keys inside and outside the rows'
  // windows, row blocks starting mid-sequence (first_row), and the window clipped at both ends.
  struct Case {
    size_t keys, radius, global, first_row, rows;
  };
  const Case cases[] = {{1, 1, 0, 0, 1},         {9, 1, 0, 0, 9},      {40, 3, 2, 0, 40},      {40, 3, 2, 17, 11},
                        {300, 2, 1, 250, 50},    {700, 200, 3, 0, 40}, {700, 200, 3, 300, 27}, {700, 5, 0, 680, 20},
                        {1100, 300, 5, 400, 19}, {64, 100, 64, 0, 64}};
  for (Isa cap : kHwyCaps)
    for (const Case& c : cases)
      for (size_t dh : {7, 32}) {
        set_hwy_cap(cap);
        CAPTURE(to_string(cap));
        CAPTURE(c.keys);
        CAPTURE(c.radius);
        CAPTURE(c.global);
        CAPTURE(c.first_row);
        CAPTURE(dh);
        const size_t q_stride = dh + 3, kt_stride = c.keys + 1, v_stride = dh + 2, o_stride = dh + 1;
        auto q = random_vec(c.rows * q_stride, uint32_t(c.keys + dh + c.first_row), 2.0f);
        auto kt = random_vec(dh * kt_stride, uint32_t(c.keys * dh + c.radius), 2.0f);
        auto v = random_vec(c.keys * v_stride, uint32_t(c.global + 7));
        std::vector<float> ref(c.rows * o_stride, 0.0f), fast(c.rows * o_stride, 0.0f);
        std::vector<float> scratch(attention_f32_scratch_floats(c.keys, dh));
        AttentionHeadArgs a{q.data(),
                            q_stride,
                            kt.data(),
                            kt_stride,
                            v.data(),
                            v_stride,
                            nullptr,
                            o_stride,
                            dh,
                            c.keys,
                            1.0f / std::sqrt(float(dh))};
        a.windowed = true;
        a.window_radius = c.radius;
        a.global_keys = c.global;
        a.first_row = c.first_row;
        a.o = ref.data();
        attention_f32_ref(a, 0, c.rows, scratch.data());
        a.o = fast.data();
        attention_f32_hwy(a, 0, c.rows, scratch.data());
        CHECK(rel_err(fast, ref) < 1e-5);
        // The window is honoured: with keys beyond it (and not global) changed, nothing changes.
        if (c.keys > c.first_row + c.rows + c.radius) {
          for (size_t j = c.first_row + c.rows + c.radius; j < c.keys; ++j)
            if (j >= c.global)
              for (size_t t = 0; t < dh; ++t) kt[t * kt_stride + j] = 50.0f;
          std::vector<float> again(c.rows * o_stride, 0.0f);
          a.o = again.data();
          attention_f32_hwy(a, 0, c.rows, scratch.data());
          CHECK(again == fast);
        }
      }
  set_hwy_cap(best_isa());
}

TEST_CASE("attention_f32 key spans: fast matches reference on every Highway target") {
  // Spans of one key, spans crossing key blocks of the online softmax, spans out of order, and
  // spans listed twice (their keys count twice in the softmax, as in the reference).
  struct Case {
    size_t keys, rows;
    std::vector<uint32_t> spans;
  };
  const Case cases[] = {{1, 3, {0, 1}},
                        {40, 9, {0, 4, 8, 20, 36, 40}},
                        {40, 5, {12, 16, 0, 4, 0, 4, 0, 4}},
                        {700, 17, {0, 64, 192, 384, 640, 700, 64, 128}},
                        {700, 8, {699, 700, 0, 1, 300, 301, 699, 700}},
                        {1100, 11, {0, 1100, 256, 512}}};
  for (Isa cap : kHwyCaps)
    for (const Case& c : cases)
      for (size_t dh : {5, 32}) {
        set_hwy_cap(cap);
        CAPTURE(to_string(cap));
        CAPTURE(c.keys);
        CAPTURE(dh);
        const size_t q_stride = dh + 3, kt_stride = c.keys + 1, v_stride = dh + 2, o_stride = dh + 1;
        auto q = random_vec(c.rows * q_stride, uint32_t(c.keys + dh), 2.0f);
        auto kt = random_vec(dh * kt_stride, uint32_t(c.keys * dh + 1), 2.0f);
        auto v = random_vec(c.keys * v_stride, uint32_t(c.rows + 7));
        std::vector<float> ref(c.rows * o_stride, 0.0f), fast(c.rows * o_stride, 0.0f);
        std::vector<float> scratch(attention_f32_scratch_floats(c.keys, dh));
        AttentionHeadArgs a{q.data(),
                            q_stride,
                            kt.data(),
                            kt_stride,
                            v.data(),
                            v_stride,
                            nullptr,
                            o_stride,
                            dh,
                            c.keys,
                            1.0f / std::sqrt(float(dh))};
        a.key_spans = c.spans.data();
        a.key_span_count = c.spans.size() / 2;
        a.o = ref.data();
        attention_f32_ref(a, 0, c.rows, scratch.data());
        a.o = fast.data();
        attention_f32_hwy(a, 0, c.rows, scratch.data());
        CHECK(rel_err(fast, ref) < 1e-5);
        // Keys outside every span are not read: changing them changes nothing.
        std::vector<bool> listed(c.keys, false);
        for (size_t s = 0; s < c.spans.size(); s += 2)
          for (size_t j = c.spans[s]; j < c.spans[s + 1]; ++j) listed[j] = true;
        for (size_t j = 0; j < c.keys; ++j)
          if (!listed[j])
            for (size_t t = 0; t < dh; ++t) kt[t * kt_stride + j] = 50.0f;
        std::vector<float> again(c.rows * o_stride, 0.0f);
        a.o = again.data();
        attention_f32_hwy(a, 0, c.rows, scratch.data());
        CHECK(again == fast);
        // One span over every key walks what the plain call walks: the same bits.
        const uint32_t all[2] = {0, uint32_t(c.keys)};
        a.key_spans = all;
        a.key_span_count = 1;
        attention_f32_hwy(a, 0, c.rows, scratch.data());
        std::vector<float> plain(c.rows * o_stride, 0.0f);
        a.key_span_count = 0;
        a.o = plain.data();
        attention_f32_hwy(a, 0, c.rows, scratch.data());
        CHECK(again == plain);
      }
  set_hwy_cap(best_isa());
}

TEST_CASE("softmax_quantize_rows: fast matches reference in every form, within half a step of the softmax") {
  const Int8Form forms[] = {Int8Form::S8, Int8Form::U8Offset, Int8Form::S16, Int8Form::S16Pairs, Int8Form::SplitU7};
  for (Isa cap : kHwyCaps)
    for (Int8Form form : forms)
      for (size_t n : kOddSizes)
        for (float scale : {0.125f, 1.0f}) {
          set_hwy_cap(cap);
          CAPTURE(to_string(cap));
          CAPTURE(int(form));
          CAPTURE(n);
          CAPTURE(scale);
          const size_t rows = 6, stride = n + 3, bytes = int8_form_two_bytes(form) ? 2 : 1;
          const size_t padded = linfer::int8_padded_inputs(uint32_t(n)), q_stride = padded * bytes + 8;
          auto x = random_vec(rows * stride, uint32_t(n * 3 + 1), 4.0f);
          x[1 * stride + n / 2] = 60.0f;                             // one dominant score
          for (size_t j = 0; j < n; ++j) x[2 * stride + j] = -3.0f;  // all equal: every q is 127
          std::vector<int8_t> q_ref(rows * q_stride, 0x5a), q_fast(rows * q_stride, 0x5a);
          std::vector<float> s_ref(rows), s_fast(rows);
          softmax_quantize_rows_ref(x.data(), stride, rows, n, scale, form, q_ref.data(), q_stride, s_ref.data());
          softmax_quantize_rows_hwy(x.data(), stride, rows, n, scale, form, q_fast.data(), q_stride, s_fast.data());
          auto value = [&](const std::vector<int8_t>& q, size_t r, size_t j) {
            const int8_t* row = q.data() + r * q_stride;
            switch (form) {
              case Int8Form::S8:
                return int(row[j]);
              case Int8Form::U8Offset:
                return int(reinterpret_cast<const uint8_t*>(row)[j]) - 128;
              case Int8Form::S16:
                return int(reinterpret_cast<const int16_t*>(row)[j]);
              case Int8Form::S16Pairs:
                return int(reinterpret_cast<const int16_t*>(row)[s16_pairs_position(j)]);
              case Int8Form::SplitU7: {
                const uint8_t* g = reinterpret_cast<const uint8_t*>(row) + 8 * (j / 4);
                return int(g[j % 4]) - int(g[4 + j % 4]);
              }
            }
            return 0;
          };
          for (size_t r = 0; r < rows; ++r) {
            CAPTURE(r);
            CHECK(std::fabs(s_fast[r] - s_ref[r]) <= 1e-5f * s_ref[r]);
            const float* xr = x.data() + r * stride;
            const double m = *std::max_element(xr, xr + n);
            double sum = 0;
            for (size_t j = 0; j < n; ++j) sum += std::exp(double(scale) * (xr[j] - m));
            int largest = 0;
            for (size_t j = 0; j < n; ++j) {
              const int qf = value(q_fast, r, j);
              CHECK(std::abs(qf - value(q_ref, r, j)) <= 1);  // exp's last bits may round it apart
              CHECK((qf >= 0 && qf <= 127));
              largest = std::max(largest, qf);
              const double p = std::exp(double(scale) * (xr[j] - m)) / sum;
              CHECK(std::fabs(qf * double(s_fast[r]) - p) <= 0.501 / (127 * sum) + 1e-5 * p);
            }
            CHECK(largest == 127);
            if (r == 2) CHECK(value(q_fast, r, n - 1) == 127);
            for (size_t j = n; j < padded; ++j) CHECK(value(q_fast, r, j) == 0);  // padding: value 0
            for (size_t b = padded * bytes; b < q_stride; ++b) CHECK(q_fast[r * q_stride + b] == 0x5a);  // untouched
          }
        }
  set_hwy_cap(best_isa());
}

TEST_CASE("conv_depthwise_add_f32: fast matches reference, including the edges") {
  for (size_t T : {1, 2, 5, 33})
    for (size_t ch : {1, 7, 16, 40})
      for (size_t K : {1, 3, 5, 9}) {
        CAPTURE(T);
        CAPTURE(ch);
        CAPTURE(K);
        auto x = random_vec(T * ch, uint32_t(T * 100 + ch), 1.0f);
        auto w = random_vec(K * ch, uint32_t(K + ch), 0.5f);
        auto b = random_vec(ch, 3, 0.1f);
        auto y1 = random_vec(T * ch, 4, 1.0f), y2 = y1;
        conv_depthwise_add_f32_ref(x.data(), T, ch, w.data(), K, b.data(), y1.data(), 0, T);
        conv_depthwise_add_f32_hwy(x.data(), T, ch, w.data(), K, b.data(), y2.data(), 0, T / 2);
        conv_depthwise_add_f32_hwy(x.data(), T, ch, w.data(), K, b.data(), y2.data(), T / 2, T);
        CHECK(rel_err(y2, y1) < 1e-5);
      }
}

TEST_CASE("every f16 kernel's widening (the portable one's branch-free) equals half_to_float for every half") {
  // Through each kernel itself: one input, 16 output channels, every one of the 65536 halves
  // (subnormal halves too: 32-bit Arm NEON flushes subnormal floats to zero, but every half is a
  // normal float).
  size_t count = 0;
  const DenseKernel* const* list = dense_kernels(DType::F16, &count);
  for (size_t ki = 0; ki < count; ++ki) {
    const DenseKernel& kernel = *list[ki];
    if (!cpu_has(kernel.isa)) continue;
    CAPTURE(std::string(kernel.name));
    size_t wrong = 0;
    std::vector<uint16_t> panel_storage;
    uint16_t* panel = aligned64(panel_storage, 16);
    float x = 1.0f;
    for (uint32_t h0 = 0; h0 < 65536; h0 += 16) {
      for (uint32_t j = 0; j < 16; ++j) panel[j] = uint16_t(h0 + j);
      DenseWeights w{DType::F16, 1, 16, panel, nullptr, nullptr, nullptr};
      float y[16];
      kernel.run(w, DenseInput{&x, 1, nullptr, 0, nullptr}, 1, y, 16, 0, 16, {});
      for (uint32_t j = 0; j < 16; ++j) {
        const float want = linfer::half_to_float(uint16_t(h0 + j));
        // y = 0 + 1 * w: a negative zero comes out positive, every other value unchanged.
        wrong += std::isnan(want) ? !std::isnan(y[j]) : y[j] != want;
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("int8 dense kernels dequantize as the reference's fma where rounding twice differs") {
  // Channel 0's integer sum is 2^23 + 1 (520 inputs of 127 x 127, then 127 x 12 and 5 x 1), its
  // scale times the row's is 1.5, its bias -2^-31: the exact value lies just below the midpoint
  // 12582913.5 of two floats, so one rounding (fma) gives 12582913, while the product and sum
  // rounded to double first land on the midpoint and round to even, 12582914. Kernels that
  // dequantize in double (wasm SIMD128) must notice the midpoint and defer to std::fma.
  const size_t K = 522, kp = linfer::int8_padded_inputs(uint32_t(K)), out = 3;
  std::vector<int8_t> panel_storage, q(kp, 0);
  int8_t* panel = aligned64(panel_storage, linfer::panel_bytes(DType::I8, uint32_t(K)));
  auto set = [&](size_t k, int8_t w, int8_t x) {
    panel[(k / 4) * 16 * 4 + k % 4] = w;  // channel 0: lane 0 of each group of the panel
    q[k] = x;
  };
  for (size_t k = 0; k < 520; ++k) set(k, 127, 127);
  set(520, 12, 127);
  set(521, 1, 5);
  const float scales[out] = {1.0f, 1.0f, 1.0f}, bias[out] = {-std::ldexp(1.0f, -31), 0.0f, 0.0f};
  const int32_t sums[out] = {520 * 127 + 12 + 1, 0, 0};  // of each channel's weights (x86 VNNI's q + 128)
  const float q_scale = 1.5f;
  const DenseWeights w{DType::I8, K, out, panel, scales, sums, bias};
  std::vector<float> want(out);
  dense_kernel_ref(DType::I8).run(w, {nullptr, 0, q.data(), kp, &q_scale}, 1, want.data(), out, 0, out, {});
  // Emscripten 3.1.6's fmaf rounds twice (docs/web.md): there the reference gives 12582914 too.
  volatile float a = 8388609.0f;
  if (std::fma(a, 1.5f, bias[0]) == 12582913.0f)
    CHECK(want[0] == 12582913.0f);
  else
    MESSAGE("this C library's fmaf rounds twice: " << want[0]);
  size_t count = 0;
  const DenseKernel* const* list = dense_kernels(DType::I8, &count);
  for (size_t ki = 0; ki < count; ++ki) {
    const DenseKernel& kernel = *list[ki];
    if (!cpu_has(kernel.isa)) continue;
    CAPTURE(std::string(kernel.name));
    const size_t q_stride = kp * kernel.q_bytes;
    std::vector<int8_t> qk(q_stride);
    int8_rows_to_input(kernel, q.data(), kp, 1, K, qk.data(), q_stride, nullptr);
    std::vector<float> got(out, 7.0f);
    kernel.run(w, {nullptr, 0, qk.data(), q_stride, &q_scale}, 1, got.data(), out, 0, out, {});
    CHECK(std::memcmp(got.data(), want.data(), out * 4) == 0);
  }
}

TEST_CASE("every int8 quantizer gives int8.h's bytes on special values") {
  // Rows mixing NaN, infinities, signed zeros, exact ties (2.5 steps), huge and subnormal values;
  // a row of zeros; a row whose maximum is infinite; lengths across vector remainders; rows of
  // subnormals, and of subnormals under a small normal maximum (q up to 127 for a subnormal),
  // which 32-bit Arm NEON would flush to zero.
  const float inf = INFINITY, nan = NAN, tiny = 1.17549435e-38f /* 2^-126 */;
  std::vector<float> subnormal(19), small(21);
  for (size_t i = 0; i < subnormal.size(); ++i) subnormal[i] = (i % 2 ? -1.0f : 1.0f) * tiny * float(i + 1) / 32.0f;
  for (size_t i = 0; i < small.size(); ++i) small[i] = (i % 3 ? 1.0f : -1.0f) * tiny * float(i) / 16.0f;
  small[7] = 2.0f * tiny;
  // At 2^-117, where quantize_s8_neonv7 stops deferring to the reference: subnormals give 0,
  // 2^-118 a tie (63.5 -> 64).
  const std::vector<float> boundary = {std::ldexp(1.0f, -117),  tiny,           -tiny / 4.0f, std::ldexp(1.0f, -118),
                                       -std::ldexp(1.0f, -118), tiny / 1024.0f, 0.0f,         3.0f * tiny};
  const std::vector<std::vector<float>> rows = {
      subnormal,
      small,
      boundary,
      {1.0f, -1.0f, nan, 0.5f, -0.0f, 127.0f, 2.5f / 127.0f * 127.0f, 3e38f, 1e-45f, -3e38f, 7.0f},
      {0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},
      {1.0f, inf, -2.0f, nan, -inf, 5.0f, 1.0f, 2.0f, 3.0f},
      // The maximum after a NaN in the same vector lane (4 and 8 apart): a maximum that
      // propagates NaN (wasm's f32x4.max) would lose it.
      {nan, 0.0f, 0.0f, 0.0f, 5.0f, 0.0f, 0.0f, 0.0f, -6.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f, 1.0f},
      {-127.0f, 126.5f, -126.5f, 125.5f, 0.5f,  -0.5f, 1.5f,  -1.5f, 2.5f, -2.5f, 63.5f,
       -63.5f,  127.0f, 1.0f,    2.0f,   3.0f,  4.0f,  5.0f,  6.0f,  7.0f, 8.0f,  9.0f,
       10.0f,   11.0f,  12.0f,   13.0f,  14.0f, 15.0f, 16.0f, 17.0f, 18.0f}};
  const DenseKernel& ref = dense_kernel_ref(DType::I8);
  size_t count = 0;
  const DenseKernel* const* list = dense_kernels(DType::I8, &count);
  for (size_t ki = 0; ki < count; ++ki) {
    const DenseKernel& kernel = *list[ki];
    if (!cpu_has(kernel.isa)) continue;
    CAPTURE(std::string(kernel.name));
    for (const auto& x : rows) {
      CAPTURE(x.size());
      const size_t kp = linfer::int8_padded_inputs(uint32_t(x.size())), stride = kp * kernel.q_bytes;
      std::vector<int8_t> q(stride), q_ref(kp);
      float s = -1.0f, s_ref = -2.0f;
      kernel.quantize(x.data(), x.size(), 1, x.size(), q.data(), stride, &s);
      ref.quantize(x.data(), x.size(), 1, x.size(), q_ref.data(), kp, &s_ref);
      CHECK(std::memcmp(&s, &s_ref, 4) == 0);
      for (size_t k = 0; k < kp; ++k) CHECK(stored_q(kernel, q.data(), k) == q_ref[k]);
    }
  }
}
