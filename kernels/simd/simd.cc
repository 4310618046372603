// Fast kernels, written once with Highway and compiled for every target Highway knows (AVX-512,
// AVX2, SSE4, NEON, SVE, scalar); HWY_DYNAMIC_DISPATCH picks the best one for the running CPU.
// Remainders that do not fill a vector run as scalar code with the same arithmetic order, or (where
// the scalar code would round differently) through the vector code on a padded copy.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>

#include "kernels.h"

HWY_BEFORE_NAMESPACE();
namespace linfer::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

void LayerNorm(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows,
               size_t dim, const float* gamma, const float* beta, float eps) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    auto acc = hn::Zero(d);
    size_t i = 0;
    for (; i + L <= dim; i += L) acc = hn::Add(acc, hn::LoadU(d, xr + i));
    float sum = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < dim; ++i) sum += xr[i];
    const float mean = sum / float(dim);
    const auto vmean = hn::Set(d, mean);
    auto acc2 = hn::Zero(d);
    for (i = 0; i + L <= dim; i += L) {
      const auto c = hn::Sub(hn::LoadU(d, xr + i), vmean);
      acc2 = hn::MulAdd(c, c, acc2);
    }
    float var = hn::GetLane(hn::SumOfLanes(d, acc2));
    for (; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.0f / std::sqrt(var / float(dim) + eps);
    const auto vinv = hn::Set(d, inv);
    for (i = 0; i + L <= dim; i += L) {
      const auto c = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), vmean), vinv);
      hn::StoreU(hn::MulAdd(c, hn::LoadU(d, gamma + i), hn::LoadU(d, beta + i)), d, yr + i);
    }
    for (; i < dim; ++i) yr[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
}

// erf(z) = z P(z^2) / Q(z^2) on |z| <= 3.92 (beyond, +-1: erf(3.92) = 1 - 5e-8), P and Q of
// degree 5, fitted for this kernel by iteratively reweighted least squares on the absolute error
// (tools/python/fit_erf.py): 1.6e-8 in exact arithmetic, 3.5e-7 evaluated in float. No exp and
// one division: about twice as fast as Abramowitz & Stegun 7.1.26 with its exp, which matters
// because GELU runs on every feed-forward activation.
constexpr float kErfZMax = 3.92f;
constexpr float kErfP[6] = {1.128378987312317f,    0.19274236261844635f,  0.05305701494216919f,
                            0.003867200342938304f, 0.00028742037829943f, 2.0344823496998288e-06f};
constexpr float kErfQ[5] = {0.5041451454162598f, 0.11507508903741837f, 0.015170113183557987f,
                            0.0011877762153744698f, 3.806488530244678e-05f};

template <class V>
V Erf(D d, V z) {
  const auto zc = hn::Min(hn::Max(z, hn::Set(d, -kErfZMax)), hn::Set(d, kErfZMax));
  const auto t = hn::Mul(zc, zc);
  auto p = hn::Set(d, kErfP[5]);
  for (int i = 4; i >= 0; --i) p = hn::MulAdd(p, t, hn::Set(d, kErfP[i]));
  auto q = hn::Set(d, kErfQ[4]);
  for (int i = 3; i >= 0; --i) q = hn::MulAdd(q, t, hn::Set(d, kErfQ[i]));
  q = hn::MulAdd(q, t, hn::Set(d, 1.0f));
  // Exactly +-1 beyond the fitted range, so that GELU is exactly 0 far left (not x * 3e-8).
  return hn::IfThenElse(hn::Gt(hn::Abs(z), hn::Set(d, kErfZMax)), hn::CopySign(hn::Set(d, 1.0f), z),
                        hn::Div(hn::Mul(zc, p), q));
}

// Applies op (vector -> vector) to x[0, n) in place. The remainder that does not fill a vector
// goes through the same vector code on a padded copy: an element's result must not depend on
// where a thread's range starts, or outputs would change with the thread count.
template <class Op>
void MapInPlace(float* x, size_t n, Op op) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(op(hn::LoadU(d, x + i)), d, x + i);
  if (i == n) return;
  HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
  std::copy(x + i, x + n, tail);
  hn::Store(op(hn::Load(d, tail)), d, tail);
  std::copy(tail, tail + (n - i), x + i);
}

void GeluErf(float* x, size_t n) {
  const D d;
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), rsqrt2 = hn::Set(d, 0.70710678f);
  MapInPlace(x, n, [&](auto v) {
    return hn::Mul(hn::Mul(half, v), hn::Add(one, Erf(d, hn::Mul(v, rsqrt2))));
  });
}

void GeluTanh(float* x, size_t n) {
  const D d;
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), c = hn::Set(d, 0.7978845608f),
             k = hn::Set(d, 0.044715f);  // c = sqrt(2 / pi)
  MapInPlace(x, n, [&](auto v) {
    const auto inner = hn::Mul(c, hn::MulAdd(hn::Mul(k, v), hn::Mul(v, v), v));
    return hn::Mul(hn::Mul(half, v), hn::Add(one, hn::Tanh(d, inner)));
  });
}

void Relu(float* x, size_t n) {
  const D d;
  MapInPlace(x, n, [&](auto v) { return hn::Max(v, hn::Zero(d)); });
}

void Add(float* y, const float* x, size_t n) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= n; i += L)
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  for (; i < n; ++i) y[i] += x[i];  // a single rounding either way
}

float Sum(const float* x, size_t n) {
  const D d;
  const size_t L = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);  // two chains: the adds' latency
  size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = hn::Add(s0, hn::LoadU(d, x + i));
    s1 = hn::Add(s1, hn::LoadU(d, x + i + L));
  }
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) s += x[i];
  return s;
}

// C = A B. Register block: 4 rows of A by 4 vectors of B's columns; the K loop streams rows of B
// and broadcasts elements of A. K is split into panels so the B panel stays in L2.
void Gemm(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B, size_t ldb,
          float* C, size_t ldc) {
  const D d;
  const size_t L = hn::Lanes(d);
  constexpr size_t kPanel = 256;
  for (size_t k0 = 0; k0 < K; k0 += kPanel) {
    const size_t k1 = K - k0 < kPanel ? K : k0 + kPanel;
    const bool first = k0 == 0;
    size_t i = 0;
    for (; i + 4 <= M; i += 4) {
      const float* a0 = A + i * lda;
      size_t j = 0;
      for (; j + 4 * L <= N; j += 4 * L) {
        decltype(hn::Zero(d)) acc[4][4];
        for (size_t r = 0; r < 4; ++r)
          for (size_t c = 0; c < 4; ++c)
            acc[r][c] = first ? hn::Zero(d) : hn::LoadU(d, C + (i + r) * ldc + j + c * L);
        for (size_t t = k0; t < k1; ++t) {
          const float* b = B + t * ldb + j;
          const auto b0 = hn::LoadU(d, b), b1 = hn::LoadU(d, b + L), b2 = hn::LoadU(d, b + 2 * L),
                     b3 = hn::LoadU(d, b + 3 * L);
          for (size_t r = 0; r < 4; ++r) {
            const auto av = hn::Set(d, a0[r * lda + t]);
            acc[r][0] = hn::MulAdd(av, b0, acc[r][0]);
            acc[r][1] = hn::MulAdd(av, b1, acc[r][1]);
            acc[r][2] = hn::MulAdd(av, b2, acc[r][2]);
            acc[r][3] = hn::MulAdd(av, b3, acc[r][3]);
          }
        }
        for (size_t r = 0; r < 4; ++r)
          for (size_t c = 0; c < 4; ++c) hn::StoreU(acc[r][c], d, C + (i + r) * ldc + j + c * L);
      }
      for (; j + L <= N; j += L) {
        decltype(hn::Zero(d)) acc[4];
        for (size_t r = 0; r < 4; ++r)
          acc[r] = first ? hn::Zero(d) : hn::LoadU(d, C + (i + r) * ldc + j);
        for (size_t t = k0; t < k1; ++t) {
          const auto b0 = hn::LoadU(d, B + t * ldb + j);
          for (size_t r = 0; r < 4; ++r) acc[r] = hn::MulAdd(hn::Set(d, a0[r * lda + t]), b0, acc[r]);
        }
        for (size_t r = 0; r < 4; ++r) hn::StoreU(acc[r], d, C + (i + r) * ldc + j);
      }
      for (; j < N; ++j)
        for (size_t r = 0; r < 4; ++r) {
          float s = first ? 0.0f : C[(i + r) * ldc + j];
          for (size_t t = k0; t < k1; ++t) s += a0[r * lda + t] * B[t * ldb + j];
          C[(i + r) * ldc + j] = s;
        }
    }
    for (; i < M; ++i) {
      const float* a = A + i * lda;
      size_t j = 0;
      for (; j + L <= N; j += L) {
        auto acc = first ? hn::Zero(d) : hn::LoadU(d, C + i * ldc + j);
        for (size_t t = k0; t < k1; ++t)
          acc = hn::MulAdd(hn::Set(d, a[t]), hn::LoadU(d, B + t * ldb + j), acc);
        hn::StoreU(acc, d, C + i * ldc + j);
      }
      for (; j < N; ++j) {
        float s = first ? 0.0f : C[i * ldc + j];
        for (size_t t = k0; t < k1; ++t) s += a[t] * B[t * ldb + j];
        C[i * ldc + j] = s;
      }
    }
  }
  if (K == 0)
    for (size_t i = 0; i < M; ++i)
      for (size_t j = 0; j < N; ++j) C[i * ldc + j] = 0.0f;
}

// Attention for R (1..4) rows at a time, over the keys in blocks of kKeyBlock with an online
// softmax (running max and sum per row), so any number of keys works in O(block) scratch: the
// Linformer's k compressed keys are one block, full attention's T keys are many. Each K'^T or V'
// vector loaded feeds R rows, and 4 vectors per row keep 4R accumulators in flight.
template <size_t R, size_t NV>
void AttentionRows(const AttentionHeadArgs& a, size_t r0, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d);
  using V = decltype(hn::Zero(d));
  const size_t block = std::min(a.keys, kAttentionKeyBlock);
  const size_t ks = block + 16, dh = a.head_dim;
  const float* q[R];
  float* s[R];
  float* acc_row[R];
  float* o[R];
  float m[R], l[R];
  for (size_t r = 0; r < R; ++r) {
    q[r] = a.q + (r0 + r) * a.q_stride;
    s[r] = scratch + r * ks;
    acc_row[r] = scratch + R * ks + r * (dh + 16);
    o[r] = a.o + (r0 + r) * a.o_stride;
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (size_t c = 0; c < dh; ++c) acc_row[r][c] = 0.0f;
  }
  const auto vscale = hn::Set(d, a.scale);
  for (size_t j0 = 0; j0 < a.keys; j0 += block) {
    const size_t nb = std::min(block, a.keys - j0);
    const float* kt = a.kt + j0;
    // Scores: s[r][j] = scale * sum_t q[r][t] * kt[t][j0 + j].
    size_t j = 0;
    for (; j + NV * L <= nb; j += NV * L) {
      V acc[R][NV];
      for (size_t r = 0; r < R; ++r)
        for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::Zero(d);
      for (size_t t = 0; t < dh; ++t) {
        const float* k = kt + t * a.kt_stride + j;
        V kv[NV];
        for (size_t i = 0; i < NV; ++i) kv[i] = hn::LoadU(d, k + i * L);
        for (size_t r = 0; r < R; ++r) {
          const V bq = hn::Set(d, q[r][t]);
          for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::MulAdd(bq, kv[i], acc[r][i]);
        }
      }
      for (size_t r = 0; r < R; ++r)
        for (size_t i = 0; i < NV; ++i) hn::StoreU(hn::Mul(acc[r][i], vscale), d, s[r] + j + i * L);
    }
    for (; j + L <= nb; j += L) {
      V acc[R];
      for (size_t r = 0; r < R; ++r) acc[r] = hn::Zero(d);
      for (size_t t = 0; t < dh; ++t) {
        const V k0 = hn::LoadU(d, kt + t * a.kt_stride + j);
        for (size_t r = 0; r < R; ++r) acc[r] = hn::MulAdd(hn::Set(d, q[r][t]), k0, acc[r]);
      }
      for (size_t r = 0; r < R; ++r) hn::StoreU(hn::Mul(acc[r], vscale), d, s[r] + j);
    }
    for (; j < nb; ++j)
      for (size_t r = 0; r < R; ++r) {
        float acc = 0.0f;
        for (size_t t = 0; t < dh; ++t) acc += q[r][t] * kt[t * a.kt_stride + j];
        s[r][j] = acc * a.scale;
      }
    // Online softmax: rescale what was accumulated to the new running max.
    float correction[R];
    for (size_t r = 0; r < R; ++r) {
      float* sr = s[r];
      auto vmax = hn::Set(d, -INFINITY);
      for (j = 0; j + L <= nb; j += L) vmax = hn::Max(vmax, hn::LoadU(d, sr + j));
      float block_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
      for (; j < nb; ++j) block_max = sr[j] > block_max ? sr[j] : block_max;
      const float m_new = block_max > m[r] ? block_max : m[r];
      correction[r] = std::exp(m[r] - m_new);  // 0 on the first block (m = -inf)
      m[r] = m_new;
      const auto vm = hn::Set(d, m_new);
      auto vsum = hn::Zero(d);
      for (j = 0; j + L <= nb; j += L) {
        const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, sr + j), vm));
        vsum = hn::Add(vsum, e);
        hn::StoreU(e, d, sr + j);
      }
      float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
      for (; j < nb; ++j) {
        sr[j] = std::exp(sr[j] - m_new);
        sum += sr[j];
      }
      l[r] = l[r] * correction[r] + sum;
    }
    // acc[r] = acc[r] * correction + p[r] @ v[j0 : j0 + nb], vectorised over head_dim.
    const float* vb = a.v + j0 * a.v_stride;
    size_t c = 0;
    for (; c + NV * L <= dh; c += NV * L) {
      V acc[R][NV];
      for (size_t r = 0; r < R; ++r)
        for (size_t i = 0; i < NV; ++i)
          acc[r][i] = hn::Mul(hn::LoadU(d, acc_row[r] + c + i * L), hn::Set(d, correction[r]));
      for (size_t t = 0; t < nb; ++t) {
        const float* v = vb + t * a.v_stride + c;
        V vv[NV];
        for (size_t i = 0; i < NV; ++i) vv[i] = hn::LoadU(d, v + i * L);
        for (size_t r = 0; r < R; ++r) {
          const V bp = hn::Set(d, s[r][t]);
          for (size_t i = 0; i < NV; ++i) acc[r][i] = hn::MulAdd(bp, vv[i], acc[r][i]);
        }
      }
      for (size_t r = 0; r < R; ++r)
        for (size_t i = 0; i < NV; ++i) hn::StoreU(acc[r][i], d, acc_row[r] + c + i * L);
    }
    for (; c + L <= dh; c += L) {
      V acc[R];
      for (size_t r = 0; r < R; ++r)
        acc[r] = hn::Mul(hn::LoadU(d, acc_row[r] + c), hn::Set(d, correction[r]));
      for (size_t t = 0; t < nb; ++t) {
        const V v0 = hn::LoadU(d, vb + t * a.v_stride + c);
        for (size_t r = 0; r < R; ++r) acc[r] = hn::MulAdd(hn::Set(d, s[r][t]), v0, acc[r]);
      }
      for (size_t r = 0; r < R; ++r) hn::StoreU(acc[r], d, acc_row[r] + c);
    }
    for (; c < dh; ++c)
      for (size_t r = 0; r < R; ++r) {
        float acc = acc_row[r][c] * correction[r];
        for (size_t t = 0; t < nb; ++t) acc += s[r][t] * vb[t * a.v_stride + c];
        acc_row[r][c] = acc;
      }
  }
  for (size_t r = 0; r < R; ++r) {
    const float inv = 1.0f / l[r];
    for (size_t c = 0; c < dh; ++c) o[r][c] = acc_row[r][c] * inv;
  }
}

// Rows at a time and vectors per row: 8 x 2 keeps 16 accumulators and halves the loads of K'^T
// and V' per score against 4 x 4 (those loads, from L2, limited the kernel); targets with 16
// vector registers take 4 x 2.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr size_t kAttnRows = 4;
#else
constexpr size_t kAttnRows = 8;
#endif
static_assert(kAttnRows <= kAttentionMaxRows, "scratch is sized for kAttentionMaxRows");
constexpr size_t kAttnVectors = 2;

void Attention(const AttentionHeadArgs& a, size_t row_begin, size_t row_end, float* scratch) {
  size_t r = row_begin;
  for (; r + kAttnRows <= row_end; r += kAttnRows) AttentionRows<kAttnRows, kAttnVectors>(a, r, scratch);
  for (; r < row_end; ++r) AttentionRows<1, kAttnVectors>(a, r, scratch);
}

// phi(x) = elu(x) + 1 = x + 1 for x > 0, exp(x) otherwise; into dst[0, d).
void Phi(const float* x, size_t d_len, float* dst) {
  const D d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  for (; i + L <= d_len; i += L) {
    const auto v = hn::LoadU(d, x + i);
    const auto pos = hn::Add(v, hn::Set(d, 1.0f));
    const auto neg = hn::Exp(d, hn::Min(v, hn::Zero(d)));
    hn::StoreU(hn::IfThenElse(hn::Gt(v, hn::Zero(d)), pos, neg), d, dst + i);
  }
  for (; i < d_len; ++i) dst[i] = x[i] > 0.0f ? x[i] + 1.0f : std::exp(x[i]);
}

// S[a][:] += phi(k_j)[a] * v_j[:], z += phi(k_j); vectorised over the columns of S.
void LinearAttentionState(const float* k, size_t k_stride, const float* v, size_t v_stride,
                          size_t rows, size_t dd, float* S, float* z) {
  const D d;
  const size_t L = hn::Lanes(d);
  float pk[1024];
  for (size_t j = 0; j < rows; ++j) {
    const float* vj = v + j * v_stride;
    for (size_t a0 = 0; a0 < dd; a0 += 1024) {
      const size_t na = std::min<size_t>(1024, dd - a0);
      Phi(k + j * k_stride + a0, na, pk);
      for (size_t a = 0; a < na; ++a) {
        z[a0 + a] += pk[a];
        float* row = S + (a0 + a) * dd;
        const auto p = hn::Set(d, pk[a]);
        size_t b = 0;
        for (; b + L <= dd; b += L) hn::StoreU(hn::MulAdd(p, hn::LoadU(d, vj + b), hn::LoadU(d, row + b)), d, row + b);
        for (; b < dd; ++b) row[b] += pk[a] * vj[b];
      }
    }
  }
}

// o_i = phi(q_i)^T S / (phi(q_i) . z): rows of S weighted by phi(q_i), vectorised over columns.
void LinearAttentionApply(const float* q, size_t q_stride, size_t rows, size_t dd, const float* S,
                          const float* z, float* o, size_t o_stride, float* scratch) {
  const D d;
  const size_t L = hn::Lanes(d);
  for (size_t i = 0; i < rows; ++i) {
    float* pq = scratch;
    Phi(q + i * q_stride, dd, pq);
    float den = 0.0f;
    for (size_t a = 0; a < dd; ++a) den += pq[a] * z[a];
    const float inv = 1.0f / den;
    float* oi = o + i * o_stride;
    size_t b = 0;
    for (; b + L <= dd; b += L) {
      auto acc = hn::Zero(d);
      for (size_t a = 0; a < dd; ++a) acc = hn::MulAdd(hn::Set(d, pq[a]), hn::LoadU(d, S + a * dd + b), acc);
      hn::StoreU(hn::Mul(acc, hn::Set(d, inv)), d, oi + b);
    }
    for (; b < dd; ++b) {
      float acc = 0.0f;
      for (size_t a = 0; a < dd; ++a) acc += pq[a] * S[a * dd + b];
      oi[b] = acc * inv;
    }
  }
}

void ConvDepthwiseAdd(const float* x, size_t T, size_t channels, const float* w, size_t K,
                      const float* bias, float* y, size_t row_begin, size_t row_end) {
  const D d;
  const size_t L = hn::Lanes(d);
  const long half = long(K - 1) / 2;
  for (size_t t = row_begin; t < row_end; ++t) {
    // Taps whose source row lies inside [0, T).
    const size_t j_begin = size_t(std::max(0L, half - long(t)));
    const size_t j_end = size_t(std::min(long(K), long(T) - long(t) + half));
    float* yt = y + t * channels;
    size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto acc = bias ? hn::LoadU(d, bias + c) : hn::Zero(d);
      for (size_t j = j_begin; j < j_end; ++j)
        acc = hn::MulAdd(hn::LoadU(d, w + j * channels + c),
                         hn::LoadU(d, x + (t + j - size_t(half)) * channels + c), acc);
      hn::StoreU(hn::Add(hn::LoadU(d, yt + c), acc), d, yt + c);
    }
    for (; c < channels; ++c) {
      float acc = bias ? bias[c] : 0.0f;
      for (size_t j = j_begin; j < j_end; ++j) acc += w[j * channels + c] * x[(t + j - size_t(half)) * channels + c];
      yt[c] += acc;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace linfer::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace linfer::kernels {
HWY_EXPORT(TargetNameImpl);
HWY_EXPORT(LayerNorm);
HWY_EXPORT(GeluErf);
HWY_EXPORT(GeluTanh);
HWY_EXPORT(Relu);
HWY_EXPORT(Add);
HWY_EXPORT(Sum);
HWY_EXPORT(Gemm);
HWY_EXPORT(Attention);
HWY_EXPORT(LinearAttentionState);
HWY_EXPORT(LinearAttentionApply);
HWY_EXPORT(ConvDepthwiseAdd);

const char* fast_kernel_target() { return HWY_DYNAMIC_DISPATCH(TargetNameImpl)(); }
void layernorm_f32_fast(const float* x, size_t x_stride, float* y, size_t y_stride, size_t rows,
                        size_t dim, const float* gamma, const float* beta, float eps) {
  HWY_DYNAMIC_DISPATCH(LayerNorm)(x, x_stride, y, y_stride, rows, dim, gamma, beta, eps);
}
void gelu_erf_f32_fast(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(GeluErf)(x, n); }
void gelu_tanh_f32_fast(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(GeluTanh)(x, n); }
void relu_f32_fast(float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Relu)(x, n); }
void activation_f32_fast(float* x, size_t n, DenseActivation act) {
  switch (act) {
    case DenseActivation::None: break;
    case DenseActivation::Relu: relu_f32_fast(x, n); break;
    case DenseActivation::GeluErf: gelu_erf_f32_fast(x, n); break;
    case DenseActivation::GeluTanh: gelu_tanh_f32_fast(x, n); break;
  }
}
float sum_f32_fast(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(Sum)(x, n); }
void add_f32_fast(float* y, const float* x, size_t n) { HWY_DYNAMIC_DISPATCH(Add)(y, x, n); }
void gemm_f32_fast(size_t M, size_t N, size_t K, const float* A, size_t lda, const float* B,
                   size_t ldb, float* C, size_t ldc) {
  HWY_DYNAMIC_DISPATCH(Gemm)(M, N, K, A, lda, B, ldb, C, ldc);
}
void attention_f32_fast(const AttentionHeadArgs& args, size_t row_begin, size_t row_end,
                        float* scratch) {
  HWY_DYNAMIC_DISPATCH(Attention)(args, row_begin, row_end, scratch);
}
void linear_attention_state_f32_fast(const float* k, size_t k_stride, const float* v,
                                     size_t v_stride, size_t rows, size_t d, float* S, float* z) {
  HWY_DYNAMIC_DISPATCH(LinearAttentionState)(k, k_stride, v, v_stride, rows, d, S, z);
}
void linear_attention_apply_f32_fast(const float* q, size_t q_stride, size_t rows, size_t d,
                                     const float* S, const float* z, float* o, size_t o_stride,
                                     float* scratch) {
  HWY_DYNAMIC_DISPATCH(LinearAttentionApply)(q, q_stride, rows, d, S, z, o, o_stride, scratch);
}
void conv_depthwise_add_f32_fast(const float* x, size_t T, size_t channels, const float* w,
                                 size_t K, const float* bias, float* y, size_t row_begin,
                                 size_t row_end) {
  HWY_DYNAMIC_DISPATCH(ConvDepthwiseAdd)(x, T, channels, w, K, bias, y, row_begin, row_end);
}
}  // namespace linfer::kernels
#endif
