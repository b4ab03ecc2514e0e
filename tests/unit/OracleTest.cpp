//===- OracleTest.cpp - The fp64 oracles themselves ------------------------===//
//
// The oracles are the reference every body and program is checked against,
// so their own speed-ups must not change what they compute:
//  * linear, gqaDecode, the KDA and MLA oracles and a decoder layer give
//    bit-identical results with 1 and with several threads;
//  * linear equals the plain triple loop, and the KDA oracle equals the
//    literal four-pass recurrence of DESIGN.md, bit for bit;
//  * roundTo (storage-faithful mode) agrees with the kernels' own bf16/f16
//    conversions on every float tried, and with hand-worked ties, subnormals
//    and overflow;
//  * decoderLayerKv appends exactly what decoderLayer appends, and the
//    storage-faithful layer only produces values its storage type can hold.
//
//===----------------------------------------------------------------------===//
#include "kernels/common/Numerics.h"
#include "tools/oracle/DecoderOracle.h"
#include "tools/oracle/KdaOracle.h"
#include "tools/oracle/MlaOracle.h"
#include "tools/oracle/Parallel.h"
#include "tools/oracle/Storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace loom;
using oracle::IVec;
using oracle::Storage;
using oracle::Vec;

namespace {

/// Runs f with LOOM_ORACLE_THREADS = n, restoring the variable after.
template <typename F> auto withThreads(int n, F f) {
  const char *old = std::getenv("LOOM_ORACLE_THREADS");
  std::string saved = old ? old : "";
  setenv("LOOM_ORACLE_THREADS", std::to_string(n).c_str(), 1);
  auto result = f();
  if (old)
    setenv("LOOM_ORACLE_THREADS", saved.c_str(), 1);
  else
    unsetenv("LOOM_ORACLE_THREADS");
  return result;
}

/// Bitwise equality (NaN-safe, tells -0 from +0).
bool sameBits(const Vec &a, const Vec &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

Vec randomVec(std::mt19937_64 &gen, size_t n, double scale = 1.0) {
  std::normal_distribution<double> nd(0.0, scale);
  Vec v(n);
  for (double &x : v)
    x = nd(gen);
  return v;
}

std::vector<float> randomFloats(std::mt19937_64 &gen, size_t n,
                                double scale = 1.0) {
  std::normal_distribution<double> nd(0.0, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(nd(gen));
  return v;
}

//===----------------------------------------------------------------------===//
// parallelFor
//===----------------------------------------------------------------------===//

TEST(OracleParallel, EveryIndexOnce) {
  for (int threads : {1, 2, 7}) {
    std::vector<std::atomic<int>> hits(1000);
    withThreads(threads, [&] {
      oracle::parallelFor(1000, [&](int64_t i) { ++hits[size_t(i)]; });
      return 0;
    });
    for (auto &h : hits)
      EXPECT_EQ(h.load(), 1) << threads << " threads";
  }
}

TEST(OracleParallel, RethrowsAfterJoining) {
  EXPECT_THROW(withThreads(4,
                           [] {
                             oracle::parallelFor(64, [](int64_t i) {
                               if (i == 17)
                                 throw std::invalid_argument("index 17");
                             });
                             return 0;
                           }),
               std::invalid_argument);
}

TEST(OracleParallel, ThreadsFromEnvironment) {
  EXPECT_EQ(withThreads(3, [] { return oracle::oracleThreads(); }), 3);
  EXPECT_GE(oracle::oracleThreads(), 1);
}

//===----------------------------------------------------------------------===//
// Storage rounding
//===----------------------------------------------------------------------===//

TEST(OracleStorage, HandWorkedValues) {
  const double inf = std::numeric_limits<double>::infinity();
  // bf16: 8 significant bits. 1 + 2^-8 is halfway between 1 and 1 + 2^-7:
  // ties go to the even significand.
  EXPECT_EQ(oracle::roundTo(1.0 + std::ldexp(1, -8), Storage::BF16), 1.0);
  EXPECT_EQ(oracle::roundTo(1.0 + 3 * std::ldexp(1, -8), Storage::BF16),
            1.0 + std::ldexp(1, -6));
  EXPECT_EQ(oracle::roundTo(1.0 + std::ldexp(1, -8) + 1e-12, Storage::BF16),
            1.0 + std::ldexp(1, -7));
  EXPECT_EQ(oracle::roundTo(-3.14159, Storage::BF16), -3.140625);
  // bf16 max is (2 - 2^-7) 2^127; half an ulp above rounds to inf.
  const double bfMax = std::ldexp(2.0 - std::ldexp(1, -7), 127);
  EXPECT_EQ(oracle::roundTo(bfMax, Storage::BF16), bfMax);
  EXPECT_EQ(oracle::roundTo(bfMax + std::ldexp(1, 119), Storage::BF16), inf);
  EXPECT_EQ(oracle::roundTo(bfMax + std::ldexp(0.99, 119), Storage::BF16),
            bfMax);
  // f16: max 65504, ties at 65520 go to inf; subnormals step 2^-24.
  EXPECT_EQ(oracle::roundTo(65519.0, Storage::F16), 65504.0);
  EXPECT_EQ(oracle::roundTo(-65520.0, Storage::F16), -inf);
  EXPECT_EQ(oracle::roundTo(std::ldexp(1, -25), Storage::F16), 0.0);
  EXPECT_EQ(oracle::roundTo(std::ldexp(3, -26), Storage::F16),
            std::ldexp(1, -24));
  EXPECT_EQ(oracle::roundTo(std::ldexp(3, -25), Storage::F16),
            std::ldexp(2, -24)); // 1.5 units: tie to even 2
  // f32 and the no-op mode.
  EXPECT_EQ(oracle::roundTo(0.1, Storage::F32), double(0.1f));
  EXPECT_EQ(oracle::roundTo(0.1, Storage::Exact), 0.1);
  EXPECT_TRUE(std::isnan(oracle::roundTo(std::nan(""), Storage::BF16)));
  EXPECT_EQ(oracle::roundTo(-inf, Storage::F16), -inf);
}

// The oracle's rounding is written apart from the kernels' bit tricks; on
// float inputs (no double rounding involved) the two must agree exactly.
TEST(OracleStorage, AgreesWithKernelConversions) {
  std::mt19937_64 gen(1234);
  std::uniform_int_distribution<uint32_t> bits;
  int64_t tried = 0;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = bits(gen);
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isfinite(f))
      continue;
    ++tried;
    double bf = oracle::roundTo(double(f), Storage::BF16);
    double fh = oracle::roundTo(double(f), Storage::F16);
    ASSERT_EQ(bf, double(toFloat(toBf16(f)))) << "bf16 of " << f;
    ASSERT_EQ(fh, double(toFloat(toF16(f)))) << "f16 of " << f;
    ASSERT_EQ(oracle::roundTo(double(f), Storage::F32), double(f));
  }
  EXPECT_GT(tried, 1000000);
}

//===----------------------------------------------------------------------===//
// linear and gqaDecode
//===----------------------------------------------------------------------===//

TEST(OracleLinear, EqualsPlainLoopForAnyThreads) {
  std::mt19937_64 gen(7);
  for (auto [M, K, N] : {std::array<int64_t, 3>{3, 257, 10},
                         std::array<int64_t, 3>{1, 64, 4},
                         std::array<int64_t, 3>{5, 33, 7}}) {
    Vec x = randomVec(gen, size_t(M * K)), w = randomVec(gen, size_t(N * K)),
        r = randomVec(gen, size_t(M * N));
    Vec plain(size_t(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double sum = 0.0;
        for (int64_t k = 0; k < K; ++k)
          sum += x[m * K + k] * w[n * K + k];
        plain[m * N + n] = r[m * N + n] + sum;
      }
    for (int threads : {1, 3})
      EXPECT_TRUE(sameBits(
          withThreads(threads,
                      [&] { return oracle::linear(x, w, M, K, N, &r); }),
          plain))
          << M << "x" << K << "x" << N << ", " << threads << " threads";
  }
}

TEST(OracleGqa, SameForAnyThreads) {
  std::mt19937_64 gen(8);
  const int64_t B = 3, Hq = 8, Hkv = 2, D = 16, P = 4;
  oracle::PageTable table{{0, 1, 4, 9}, {7, 2, 5, 0, 3, 8, 1, 4, 6}, {1, 10, 17}};
  Vec q = randomVec(gen, size_t(B * Hq * D));
  Vec kc = randomVec(gen, size_t(10 * P * Hkv * D)),
      vc = randomVec(gen, size_t(10 * P * Hkv * D));
  auto run = [&] {
    return oracle::gqaDecode(q, kc, vc, table, B, Hq, Hkv, D, D, P, 0.25);
  };
  EXPECT_TRUE(sameBits(withThreads(1, run), withThreads(4, run)));
  table.indices[3] = 10; // past the caches
  EXPECT_THROW(run(), std::out_of_range);
}

//===----------------------------------------------------------------------===//
// Decoder layer: modes, threads, the K/V-only path
//===----------------------------------------------------------------------===//

struct TinyLayer {
  oracle::DecoderShape shape;
  oracle::LayerWeights w;
  oracle::StepMeta meta;
  oracle::LayerCache cache;
  Vec x;
};

TinyLayer tinyLayer(bool qkNorm, Storage storage) {
  std::mt19937_64 gen(9);
  TinyLayer t;
  oracle::DecoderShape &s = t.shape;
  s.hidden = 64;
  s.qHeads = 4;
  s.kvHeads = 2;
  s.headDim = 16;
  s.ffn = 96;
  s.pageSize = 4;
  s.ropeTheta = 10000;
  s.qkNorm = qkNorm;
  s.storage = storage;
  auto bf = [&](size_t n, double scale) {
    Vec v = randomVec(gen, n, scale);
    oracle::roundAll(v, Storage::BF16);
    return v;
  };
  const size_t hid = 64, q = 64, kv = 32, ffn = 96;
  t.w.attnNorm = bf(hid, 0.1);
  t.w.ffnNorm = bf(hid, 0.1);
  for (double &e : t.w.attnNorm)
    e += 1;
  for (double &e : t.w.ffnNorm)
    e += 1;
  t.w.wq = bf(q * hid, 0.125);
  t.w.wk = bf(kv * hid, 0.125);
  t.w.wv = bf(kv * hid, 0.125);
  t.w.wo = bf(hid * q, 0.125);
  t.w.qNorm = bf(16, 1);
  t.w.kNorm = bf(16, 1);
  t.w.wGate = bf(ffn * hid, 0.125);
  t.w.wUp = bf(ffn * hid, 0.125);
  t.w.wDown = bf(hid * ffn, 0.1);
  t.meta.batch = 2;
  t.meta.positions = {2, 6};
  t.meta.slotMapping = {2, 3 * 4 + 2};
  t.meta.table = {{0, 1, 3}, {0, 1, 3}, {3, 7}};
  t.cache.k = bf(4 * 4 * kv, 1);
  t.cache.v = bf(4 * 4 * kv, 1);
  t.x = bf(2 * hid, 1);
  return t;
}

TEST(OracleDecoder, LayerSameForAnyThreads) {
  for (Storage st : {Storage::Exact, Storage::BF16}) {
    TinyLayer t = tinyLayer(true, st);
    auto run = [&] {
      oracle::LayerCache c = t.cache;
      Vec y = oracle::decoderLayer(t.shape, t.w, t.x, t.meta, c);
      y.insert(y.end(), c.k.begin(), c.k.end());
      return y;
    };
    EXPECT_TRUE(sameBits(withThreads(1, run), withThreads(3, run)))
        << oracle::storageName(st);
  }
}

TEST(OracleDecoder, KvPathAppendsWhatTheLayerAppends) {
  for (bool qkNorm : {false, true})
    for (Storage st : {Storage::Exact, Storage::BF16}) {
      TinyLayer t = tinyLayer(qkNorm, st);
      oracle::LayerCache full = t.cache, kvOnly = t.cache;
      oracle::decoderLayer(t.shape, t.w, t.x, t.meta, full);
      oracle::decoderLayerKv(t.shape, t.w, t.x, t.meta, kvOnly);
      EXPECT_TRUE(sameBits(full.k, kvOnly.k));
      EXPECT_TRUE(sameBits(full.v, kvOnly.v));
      EXPECT_FALSE(sameBits(full.k, t.cache.k)); // something was appended
    }
}

TEST(OracleDecoder, StorageFaithfulHoldsOnlyStorableValues) {
  TinyLayer exact = tinyLayer(true, Storage::Exact);
  TinyLayer faithful = tinyLayer(true, Storage::BF16);
  oracle::LayerCache ce = exact.cache, cf = faithful.cache;
  Vec ye = oracle::decoderLayer(exact.shape, exact.w, exact.x, exact.meta, ce);
  Vec yf = oracle::decoderLayer(faithful.shape, faithful.w, faithful.x,
                                faithful.meta, cf);
  for (const Vec *v : {&yf, &cf.k, &cf.v})
    for (double e : *v)
      ASSERT_EQ(oracle::roundTo(e, Storage::BF16), e);
  // The pure fp64 layer holds values bf16 cannot, and both agree to about
  // the bf16 roundings of one layer.
  int64_t notStorable = 0;
  double num = 0, den = 0;
  for (size_t i = 0; i < ye.size(); ++i) {
    notStorable += oracle::roundTo(ye[i], Storage::BF16) != ye[i];
    num += (yf[i] - ye[i]) * (yf[i] - ye[i]);
    den += ye[i] * ye[i];
  }
  EXPECT_GT(notStorable, int64_t(ye.size()) / 2);
  EXPECT_GT(std::sqrt(num / den), 1e-4);
  EXPECT_LT(std::sqrt(num / den), 2e-2);
}

// A zero w_o and w_down pass the residual stream through exactly in both
// modes (what DecoderCheck's inactive layers rely on).
TEST(OracleDecoder, ZeroBranchesPassTheStreamThrough) {
  for (Storage st : {Storage::Exact, Storage::BF16}) {
    TinyLayer t = tinyLayer(false, st);
    std::fill(t.w.wo.begin(), t.w.wo.end(), 0.0);
    std::fill(t.w.wDown.begin(), t.w.wDown.end(), 0.0);
    oracle::LayerCache c = t.cache;
    EXPECT_TRUE(sameBits(oracle::decoderLayer(t.shape, t.w, t.x, t.meta, c),
                         t.x));
  }
}

//===----------------------------------------------------------------------===//
// KDA and MLA
//===----------------------------------------------------------------------===//

/// DESIGN.md's recurrence as four literal passes per token (the oracle
/// before it fused them), for the bit-for-bit comparison.
oracle::KdaOracleResult literalKda(
    const std::vector<float> &q, const std::vector<float> &k,
    const std::vector<float> &v, const std::vector<float> &gRaw,
    const std::vector<float> &betaRaw, const std::vector<float> &aLog,
    const std::vector<float> &dtBias, const std::vector<int32_t> &cu,
    const std::vector<float> &init, const oracle::KdaShape &s) {
  const int64_t H = s.numHeads, K = s.dimK, V = s.dimV,
                N = int64_t(cu.size()) - 1;
  oracle::KdaOracleResult r;
  r.o.assign(size_t(cu[N]) * H * V, 0.0);
  r.finalState.assign(size_t(N * H * K * V), 0.0);
  auto norm = [&](const float *x) {
    Vec out(x, x + K);
    double ss = 0;
    for (double e : out)
      ss += e * e;
    for (double &e : out)
      e /= std::sqrt(ss + 1e-6);
    return out;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      Vec S(size_t(K * V));
      for (int64_t i = 0; i < K * V; ++i)
        S[i] = init.empty() ? 0.0 : init[(n * H + h) * K * V + i];
      const double a = std::exp(double(aLog[h]));
      for (int64_t t = cu[n]; t < cu[n + 1]; ++t) {
        const int64_t row = t * H + h;
        Vec qt = norm(&q[row * K]), kt = norm(&k[row * K]);
        const double beta = 1.0 / (1.0 + std::exp(-double(betaRaw[row])));
        for (int64_t c = 0; c < K; ++c) {
          double x = double(gRaw[row * K + c]) + double(dtBias[h * K + c]);
          double sp = x > 30.0 ? x : std::log1p(std::exp(x));
          double e = std::exp(-a * sp);
          for (int64_t j = 0; j < V; ++j)
            S[c * V + j] *= e;
        }
        Vec u(size_t(V), 0.0);
        for (int64_t c = 0; c < K; ++c)
          for (int64_t j = 0; j < V; ++j)
            u[j] += S[c * V + j] * kt[c];
        for (int64_t j = 0; j < V; ++j)
          u[j] = beta * (double(v[row * V + j]) - u[j]);
        for (int64_t c = 0; c < K; ++c)
          for (int64_t j = 0; j < V; ++j)
            S[c * V + j] += kt[c] * u[j];
        for (int64_t c = 0; c < K; ++c)
          for (int64_t j = 0; j < V; ++j)
            r.o[row * V + j] += S[c * V + j] * (s.scale * qt[c]);
      }
      for (int64_t i = 0; i < K * V; ++i)
        r.finalState[(n * H + h) * K * V + i] = S[i];
    }
  return r;
}

TEST(OracleKda, EqualsLiteralRecurrenceForAnyThreads) {
  std::mt19937_64 gen(10);
  const int64_t H = 3, K = 8, V = 6;
  const std::vector<int32_t> cu = {0, 5, 5, 17, 18};
  const size_t T = 18, N = 4;
  auto q = randomFloats(gen, T * H * K), k = randomFloats(gen, T * H * K),
       v = randomFloats(gen, T * H * V), g = randomFloats(gen, T * H * K),
       beta = randomFloats(gen, T * H, 2), aLog = randomFloats(gen, H),
       dt = randomFloats(gen, H * K), init = randomFloats(gen, N * H * K * V);
  oracle::KdaShape s;
  s.numHeads = H;
  s.dimK = K;
  s.dimV = V;
  s.scale = 1.0 / std::sqrt(double(K));
  oracle::KdaOracleResult want =
      literalKda(q, k, v, g, beta, aLog, dt, cu, init, s);
  for (int threads : {1, 4}) {
    oracle::KdaOracleResult got = withThreads(threads, [&] {
      return oracle::kdaPrefillOracle(q, k, v, g, beta, aLog, dt, cu, init, s);
    });
    EXPECT_TRUE(sameBits(got.o, want.o)) << threads << " threads";
    EXPECT_TRUE(sameBits(got.finalState, want.finalState))
        << threads << " threads";
  }
}

TEST(OracleMla, SameForAnyThreads) {
  std::mt19937_64 gen(11);
  oracle::MlaShape s;
  s.batch = 3;
  s.numHeads = 4;
  s.dimCkv = 32;
  s.dimKpe = 8;
  s.pageSize = 2;
  s.smScale = 0.1;
  const int64_t pages = 12;
  auto qn = randomFloats(gen, 3 * 4 * 32), qp = randomFloats(gen, 3 * 4 * 8),
       ckv = randomFloats(gen, pages * 2 * 32),
       kpe = randomFloats(gen, pages * 2 * 8);
  std::vector<int32_t> indptr = {0, 0, 3, 8}, indices = {4, 9, 1, 0, 2, 3, 11, 7},
                       lens = {0, 5, 10};
  auto run = [&] {
    return oracle::mlaDecodeOracle(qn, qp, ckv, kpe, indptr, indices, lens, s);
  };
  oracle::MlaOracleResult one = withThreads(1, run), many = withThreads(4, run);
  EXPECT_TRUE(sameBits(one.o, many.o));
  EXPECT_TRUE(sameBits(one.lse, many.lse));
  EXPECT_TRUE(std::isinf(one.lse[0]) && one.lse[0] < 0);
}

} // namespace
