// Every fast kernel against its scalar reference, over odd sizes that exercise vector remainders.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "f32/dense_f32.h"
#include "kernels.h"

using namespace linfer::kernels;

namespace {
std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}
// max |a-b| / max(1, max |b|)
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}
const size_t kOddSizes[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 100, 257};
}  // namespace

TEST_CASE("fast kernels dispatch to a named target") {
  MESSAGE("fast kernels use " << fast_kernel_target());
  CHECK(std::string(fast_kernel_target()).size() > 0);
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
      layernorm_f32_fast(x.data(), stride, fast.data(), stride, rows, dim, g.data(), b.data(), 1e-5f);
      CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "dim " << dim << " rows " << rows);
    }
}

TEST_CASE("elementwise kernels: fast matches reference") {
  for (size_t n : kOddSizes) {
    const auto x = random_vec(n, uint32_t(n), 3.0f);
    auto check = [&](void (*ref)(float*, size_t), void (*fast)(float*, size_t), const char* name,
                     double tol) {
      auto a = x, b = x;
      ref(a.data(), n);
      fast(b.data(), n);
      CHECK_MESSAGE(rel_err(b, a) <= tol, name << " n=" << n);
    };
    check(gelu_erf_f32_ref, gelu_erf_f32_fast, "gelu_erf", 1e-6);
    check(gelu_tanh_f32_ref, gelu_tanh_f32_fast, "gelu_tanh", 1e-6);
    check(relu_f32_ref, relu_f32_fast, "relu", 0.0);
    auto y1 = random_vec(n, 99), y2 = y1;
    add_f32_ref(y1.data(), x.data(), n);
    add_f32_fast(y2.data(), x.data(), n);
    CHECK(rel_err(y2, y1) == 0.0);
  }
}

TEST_CASE("gelu: extreme inputs stay finite and saturate") {
  std::vector<float> x = {-100.0f, -20.0f, -5.0f, 0.0f, 5.0f, 20.0f, 100.0f, 1e30f, -1e30f};
  for (auto fast : {gelu_erf_f32_fast, gelu_tanh_f32_fast}) {
    auto y = x;
    fast(y.data(), y.size());
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::isfinite(y[i]));
    CHECK(y[0] == doctest::Approx(0.0f));
    CHECK(y[6] == doctest::Approx(100.0f));
  }
  // GELU-erf saturates exactly: 0 far left, x far right.
  std::vector<float> far = {-1e30f, -100.0f, -20.0f, 20.0f, 100.0f};
  auto g = far;
  gelu_erf_f32_fast(g.data(), g.size());
  CHECK(g == std::vector<float>{-0.0f, -0.0f, -0.0f, 20.0f, 100.0f});
}

TEST_CASE("gelu_erf: fast kernel within 1e-6 of the exact GELU on a fine grid") {
  // The rational erf is fitted on |z| <= 3.92 (tools/python/fit_erf.py); the grid covers that
  // range, its edge and beyond, with vector-sized and scalar-tail pieces.
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 1.0 / 1024) x.push_back(float(v));
  auto y = x;
  gelu_erf_f32_fast(y.data(), y.size());
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
    CHECK_MESSAGE(std::fabs(sum_f32_fast(x.data(), n) - ref) < 1e-5 * (1.0 + std::sqrt(double(n))),
                  "n " << n);
  }
  CHECK(sum_f32_fast(nullptr, 0) == 0.0f);
}

TEST_CASE("gemm_f32: fast matches reference") {
  for (size_t M : {1, 3, 4, 9, 17})
    for (size_t N : {1, 5, 16, 33, 70})
      for (size_t K : {1, 7, 64, 300}) {  // 300 crosses the K panel
        const size_t lda = K + 2, ldb = N + 1, ldc = N + 3;
        auto A = random_vec(M * lda, uint32_t(M * 1000 + K)), B = random_vec(K * ldb, uint32_t(N + K));
        std::vector<float> ref(M * ldc, 7.0f), fast(M * ldc, 7.0f);
        gemm_f32_ref(M, N, K, A.data(), lda, B.data(), ldb, ref.data(), ldc);
        gemm_f32_fast(M, N, K, A.data(), lda, B.data(), ldb, fast.data(), ldc);
        CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "M " << M << " N " << N << " K " << K);
      }
}

TEST_CASE("dense_f32: AVX-512 kernel matches reference, every tile shape and epilogue") {
#if defined(__x86_64__)
  if (!f32_dense_fast_path_available()) return;
  const DenseEpilogue epilogues[] = {{DenseActivation::None, false},
                                     {DenseActivation::Relu, false},
                                     {DenseActivation::GeluErf, false},
                                     {DenseActivation::GeluTanh, false},
                                     {DenseActivation::None, true},
                                     {DenseActivation::Relu, true}};
  // rows reach the 6-row tile and its remainders, out the 4-block tile and its remainders, and
  // in = 1030 more than one block of rows.
  for (size_t rows : {1, 5, 6, 13, 25})
    for (size_t out : {1, 15, 16, 33, 64, 130})
      for (size_t in : {1, 7, 64, 1030}) {
        const size_t x_stride = in + 3, y_stride = out + 5;
        auto W = random_vec(out * in, uint32_t(out * 7 + in)), bias = random_vec(out, 3);
        auto x = random_vec(rows * x_stride, uint32_t(rows + in));
        F32Weights packed;
        REQUIRE(pack_f32_weights(W.data(), bias.data(), in, out, &packed).empty());
        for (const DenseEpilogue e : epilogues) {
          const auto y0 = random_vec(rows * y_stride, 11);
          std::vector<float> ref = y0, fast = y0, part = y0;
          dense_f32_ref(packed, x.data(), x_stride, rows, ref.data(), y_stride, 0, out, e);
          dense_f32_avx512(packed, x.data(), x_stride, rows, fast.data(), y_stride, 0, out, e);
          CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "rows " << rows << " out " << out << " in "
                                                           << in << " act " << int(e.activation)
                                                           << " acc " << e.accumulate);
          // Output channels [16, out) only (the split for few rows): the rest stays untouched.
          if (out > 16) {
            dense_f32_avx512(packed, x.data(), x_stride, rows, part.data(), y_stride, 16, out, e);
            for (size_t r = 0; r < rows; ++r)
              for (size_t o = 0; o < y_stride; ++o)
                CHECK(part[r * y_stride + o] ==
                      (o >= 16 && o < out ? fast[r * y_stride + o] : y0[r * y_stride + o]));
          }
        }
      }
  // The reference itself against the plain formula on the unpacked weights.
  const size_t rows = 3, out = 19, in = 21;
  auto W = random_vec(out * in, 5), bias = random_vec(out, 6), x = random_vec(rows * in, 7);
  F32Weights packed;
  REQUIRE(pack_f32_weights(W.data(), bias.data(), in, out, &packed).empty());
  std::vector<float> y(rows * out), want(rows * out);
  dense_f32_ref(packed, x.data(), in, rows, y.data(), out, 0, out, {});
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double acc = bias[o];
      for (size_t k = 0; k < in; ++k) acc += double(x[r * in + k]) * W[o * in + k];
      want[r * out + o] = float(acc);
    }
  CHECK(rel_err(y, want) < 1e-6);
#endif
}

TEST_CASE("attention_f32: fast matches reference") {
  // Up to 700 keys: full attention crosses several key blocks of the online softmax.
  for (size_t keys : {1, 5, 16, 33, 128, 257, 700})
    for (size_t dh : {1, 7, 16, 33}) {
      const size_t rows = 11, q_stride = dh * 2 + 1, kt_stride = keys + 2, v_stride = dh + 5,
                   o_stride = dh * 2 + 1;
      auto q = random_vec(rows * q_stride, uint32_t(keys + dh), 2.0f);
      auto kt = random_vec(dh * kt_stride, uint32_t(keys * dh), 2.0f);
      auto v = random_vec(keys * v_stride, 5);
      std::vector<float> ref(rows * o_stride, 0.0f), fast(rows * o_stride, 0.0f);
      std::vector<float> scratch(attention_f32_scratch_floats(keys, dh));
      AttentionHeadArgs a{q.data(), q_stride, kt.data(), kt_stride, v.data(), v_stride, nullptr,
                          o_stride, dh, keys, 1.0f / std::sqrt(float(dh))};
      a.o = ref.data();
      attention_f32_ref(a, 0, rows, scratch.data());
      a.o = fast.data();
      attention_f32_fast(a, 2, rows, scratch.data());  // a sub-range, rows 0-1 untouched
      attention_f32_fast(a, 0, 2, scratch.data());
      CHECK_MESSAGE(rel_err(fast, ref) < 1e-5, "keys " << keys << " dh " << dh);
    }
}

TEST_CASE("linear attention (elu+1): fast state and apply match the reference") {
  for (size_t d : {1, 3, 16, 17, 64})
    for (size_t rows : {1, 5, 40}) {
      CAPTURE(d);
      CAPTURE(rows);
      const size_t ks = d + 3, vs = d + 1, qs = 2 * d, os = d + 2;
      auto k = random_vec(rows * ks, uint32_t(d * 31 + rows), 1.5f);
      auto v = random_vec(rows * vs, uint32_t(d + rows), 1.0f);
      auto q = random_vec(rows * qs, uint32_t(d * 7 + rows), 1.5f);
      std::vector<float> S1(d * d, 0.5f), z1(d, 0.25f), S2 = S1, z2 = z1;  // non-zero start: a carried state
      linear_attention_state_f32_ref(k.data(), ks, v.data(), vs, rows, d, S1.data(), z1.data());
      linear_attention_state_f32_fast(k.data(), ks, v.data(), vs, rows, d, S2.data(), z2.data());
      CHECK(rel_err(S2, S1) < 1e-5);
      CHECK(rel_err(z2, z1) < 1e-5);
      std::vector<float> o1(rows * os, 0.0f), o2(rows * os, 0.0f), scratch(d);
      linear_attention_apply_f32_ref(q.data(), qs, rows, d, S1.data(), z1.data(), o1.data(), os, scratch.data());
      linear_attention_apply_f32_fast(q.data(), qs, rows, d, S1.data(), z1.data(), o2.data(), os, scratch.data());
      CHECK(rel_err(o2, o1) < 1e-5);
    }
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
        conv_depthwise_add_f32_fast(x.data(), T, ch, w.data(), K, b.data(), y2.data(), 0, T / 2);
        conv_depthwise_add_f32_fast(x.data(), T, ch, w.data(), K, b.data(), y2.data(), T / 2, T);
        CHECK(rel_err(y2, y1) < 1e-5);
      }
}
