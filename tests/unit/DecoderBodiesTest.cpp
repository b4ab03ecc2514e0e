//===- DecoderBodiesTest.cpp - Host decoder bodies vs the fp64 oracle -----===//
//
// Two halves. Per op: every body of kernels/host/DecoderBodies.h, driven
// task by task the way a scheduler runs a phase (in order, shuffled, and on
// several threads), against the op's fp64 definition in
// tools/oracle/DecoderOracle.h. Per model: tiny Llama and Qwen3 stacks run by
// chaining the bodies in layer order with bf16 intermediates, against the
// oracle's fp32-activation layer.
//
// Inputs are random and never zero; the seed is fresh each run, printed, and
// fixed by LOOM_SEED=<n>. Outputs are poisoned (NaN) first, so a task that is
// skipped shows up. Metrics and bounds:
//  * per op, max over elements of |got - ref| <= atol + rtol * |ref|, with
//    bounds from what storing the fp32 result costs: bf16 rtol 2^-7 (one
//    bf16 ulp: half an ulp of rounding, plus fp32 noise that may tip the
//    rounding), f16 rtol 2^-10, float rtol 1e-5; atol 1e-4 (1e-5 for float)
//    for values near zero. All are tighter than DESIGN.md's attention bound
//    (rtol = atol = 1e-2).
//  * per model, relative error ||got - ref|| / ||ref|| <= 1e-2 (DESIGN.md's
//    decoder bound, stated there for 32 layers) on the final hidden state of
//    2-layer stacks and the logits of the head variant; for 8 layers on each
//    layer fed the bodies' own input, plus <= 1e-5 end to end with f32
//    activations (see Stacks8Layers for why not bf16 end to end).
//
//===----------------------------------------------------------------------===//
#include "kernels/host/DecoderBodies.h"
#include "tools/oracle/DecoderOracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace loom;
using oracle::IVec;
using oracle::Vec;

namespace {

//===----------------------------------------------------------------------===//
// Seeds and random inputs
//===----------------------------------------------------------------------===//

/// A fresh seed per test, or LOOM_SEED; recorded in the XML report and
/// printed so a failure can be replayed.
uint64_t testSeed() {
  uint64_t seed;
  if (const char *env = std::getenv("LOOM_SEED")) {
    seed = std::strtoull(env, nullptr, 0);
  } else {
    std::random_device dev;
    seed = (uint64_t(dev()) << 32) ^ dev();
  }
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::cout << "[   seed   ] LOOM_SEED=" << seed << "\n";
  return seed;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen);
  }
  /// Magnitude in [lo, hi], random sign: never zero.
  double nonZero(double lo, double hi) {
    double v = uniform(lo, hi);
    return (gen() & 1) ? v : -v;
  }
  int64_t index(int64_t n) {
    return std::uniform_int_distribution<int64_t>(0, n - 1)(gen);
  }
};

//===----------------------------------------------------------------------===//
// Storage types: poison, tolerance, conversion
//===----------------------------------------------------------------------===//

template <typename T> T poison();
template <> bf16 poison<bf16>() { return bf16{0x7fc0}; }
template <> f16 poison<f16>() { return f16{0x7e00}; }
template <> float poison<float>() {
  return std::numeric_limits<float>::quiet_NaN();
}

template <typename T> bool isPoison(T v) {
  T p = poison<T>();
  return std::memcmp(&v, &p, sizeof(T)) == 0;
}

/// Per-op bounds for a result stored as T (see the file comment).
struct Tol {
  double atol, rtol;
};
template <typename T> Tol tolFor();
template <> Tol tolFor<bf16>() { return {1e-4, 1.0 / 128}; }
template <> Tol tolFor<f16>() { return {1e-4, 1.0 / 1024}; }
template <> Tol tolFor<float>() { return {1e-5, 1e-5}; }

template <typename T> const char *typeName();
template <> const char *typeName<bf16>() { return "bf16"; }
template <> const char *typeName<f16>() { return "f16"; }
template <> const char *typeName<float>() { return "f32"; }

/// A buffer of type T holding random non-zero values, and the same values
/// (after rounding to T) as doubles for the oracle.
template <typename T> struct Buf {
  std::vector<T> data;
  Vec ref;
};

template <typename T>
Buf<T> randomBuf(Rng &rng, int64_t n, double lo, double hi) {
  Buf<T> b;
  b.data.resize(n);
  b.ref.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    store(b.data.data(), i, float(rng.nonZero(lo, hi)));
    b.ref[i] = load(b.data.data(), i);
  }
  return b;
}

template <typename T> std::vector<T> poisoned(int64_t n) {
  return std::vector<T>(n, poison<T>());
}

template <typename T> Vec toVec(const T *p, int64_t n) {
  Vec v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = load(p, i);
  return v;
}
template <typename T> Vec toVec(const std::vector<T> &v) {
  return toVec(v.data(), int64_t(v.size()));
}

//===----------------------------------------------------------------------===//
// Comparison (returns a result instead of asserting, so it can be tested)
//===----------------------------------------------------------------------===//

struct Compare {
  bool ok = true;
  int64_t count = 0, bad = 0, nans = 0, worst = -1;
  double worstExcess = 0, worstGot = 0, worstRef = 0, rel = 0;
  std::string describe() const {
    std::ostringstream os;
    os << (ok ? "ok" : "MISMATCH") << ": " << bad << "/" << count
       << " out of bound, " << nans << " NaN";
    if (worst >= 0)
      os << ", worst at " << worst << " got " << worstGot << " ref "
         << worstRef;
    os << ", rel " << rel;
    return os.str();
  }
};

/// max |got - ref| <= atol + rtol |ref| elementwise; NaN in got fails (the
/// reference itself never holds NaN where it is compared).
Compare compareClose(const Vec &got, const Vec &ref, Tol tol) {
  Compare c;
  c.count = int64_t(ref.size());
  if (got.size() != ref.size()) {
    c.ok = false;
    return c;
  }
  double num = 0, den = 0, worst = -1;
  for (size_t i = 0; i < ref.size(); ++i) {
    double err = std::fabs(got[i] - ref[i]);
    double excess = err - (tol.atol + tol.rtol * std::fabs(ref[i]));
    bool nan = std::isnan(got[i]);
    c.nans += nan;
    if (nan || excess > 0)
      ++c.bad;
    if (nan || excess > worst) {
      worst = nan ? std::numeric_limits<double>::infinity() : excess;
      c.worst = int64_t(i);
      c.worstGot = got[i];
      c.worstRef = ref[i];
    }
    num += err * err;
    den += ref[i] * ref[i];
  }
  c.worstExcess = worst;
  c.rel = std::sqrt(num / den);
  c.ok = c.bad == 0;
  return c;
}

/// ||got - ref|| / ||ref|| <= bound; any NaN fails.
Compare compareRel(const Vec &got, const Vec &ref, double bound) {
  Compare c;
  c.count = int64_t(ref.size());
  if (got.size() != ref.size()) {
    c.ok = false;
    return c;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    c.nans += std::isnan(got[i]);
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  c.rel = std::sqrt(num / den);
  c.ok = c.nans == 0 && c.rel <= bound;
  c.bad = c.ok ? 0 : 1;
  return c;
}

//===----------------------------------------------------------------------===//
// Driving tasks like a scheduler
//===----------------------------------------------------------------------===//

enum class Order { InOrder, Shuffled, Threads };
const Order kOrders[] = {Order::InOrder, Order::Shuffled, Order::Threads};

const char *orderName(Order o) {
  return o == Order::InOrder    ? "in order"
         : o == Order::Shuffled ? "shuffled"
                                : "threads";
}

/// Runs tasks 0..n-1 of one phase: in index order, in a random order, or
/// claimed from a shuffled list by three threads at once. `skip` (if >= 0)
/// is left out, for the negative tests.
void runPhase(int64_t n, Order order, Rng &rng,
              const std::function<void(int64_t)> &task, int64_t skip = -1) {
  std::vector<int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  if (order != Order::InOrder)
    std::shuffle(ids.begin(), ids.end(), rng.gen);
  if (order != Order::Threads) {
    for (int64_t id : ids)
      if (id != skip)
        task(id);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;)
      if (ids[i] != skip)
        task(ids[i]);
  };
  std::thread a(worker), b(worker);
  worker();
  a.join();
  b.join();
}

/// Tile i of [0, n) cut into pieces of `tile` (the last may be short).
struct Range {
  int64_t begin, end;
};
int64_t numTiles(int64_t n, int64_t tile) { return (n + tile - 1) / tile; }
Range tileOf(int64_t i, int64_t n, int64_t tile) {
  return {i * tile, std::min(n, (i + 1) * tile)};
}

/// Runs a whole linear op: column tiles of nTile, and split-K with `splits`
/// K ranges (phase 0 partials into a poisoned workspace, phase 1 reduce)
/// when splits > 1. `skip` drops one phase-0 task.
template <typename TIn, typename TW, typename TOut>
void runLinear(const TIn *x, const TW *w, const TOut *residual, TOut *y,
               int64_t M, int64_t maxM, int64_t K, int64_t N, int64_t nTile,
               int64_t splits, Order order, Rng &rng, int64_t skip = -1) {
  int64_t tiles = numTiles(N, nTile);
  if (splits <= 1) {
    runPhase(
        tiles, order, rng,
        [&](int64_t i) {
          Range r = tileOf(i, N, nTile);
          host::linearTile(x, w, residual, y, M, K, N, r.begin, r.end);
        },
        skip);
    return;
  }
  std::vector<float> ws(host::linearSplitKWorkspaceFloats(maxM, N, splits),
                        poison<float>());
  int64_t stride = maxM * N;
  runPhase(
      tiles * splits, order, rng,
      [&](int64_t id) {
        Range r = tileOf(id / splits, N, nTile);
        int64_t s = id % splits;
        host::linearPartial(x, w, ws.data() + s * stride, M, K, N, r.begin,
                            r.end, s * K / splits, (s + 1) * K / splits);
      },
      skip);
  runPhase(tiles, order, rng, [&](int64_t i) {
    Range r = tileOf(i, N, nTile);
    host::linearReduce(ws.data(), splits, stride, residual, y, M, N, r.begin,
                       r.end);
  });
}

/// The paged layout of a batch: each request's pages drawn from a shuffled
/// pool (scattered ids), with `spare` pages no request owns.
struct Paging {
  int64_t pages = 0, P = 0;
  IVec indptr, indices, lens;
};

Paging makePaging(Rng &rng, const IVec &lens, int64_t P, int64_t spare) {
  Paging pg;
  pg.P = P;
  pg.lens = lens;
  int64_t needed = 0;
  for (int64_t len : lens)
    needed += (len + P - 1) / P;
  pg.pages = needed + spare;
  IVec pool(pg.pages);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng.gen);
  pg.indptr.push_back(0);
  for (int64_t len : lens) {
    for (int64_t p = 0; p < (len + P - 1) / P; ++p)
      pg.indices.push_back(pool[pg.indices.size()]);
    pg.indptr.push_back(int64_t(pg.indices.size()));
  }
  return pg;
}

/// Cache slot of request b's token t.
int64_t slotOf(const Paging &pg, int64_t b, int64_t t) {
  return pg.indices[pg.indptr[b] + t / pg.P] * pg.P + t % pg.P;
}

template <typename TI> std::vector<TI> cast(const IVec &v) {
  return std::vector<TI>(v.begin(), v.end());
}

//===----------------------------------------------------------------------===//
// Compare helper tests (the checks themselves can fail)
//===----------------------------------------------------------------------===//

TEST(DecoderCompare, DetectsPerturbationNanAndDrift) {
  Vec ref = {1.0, -2.0, 0.5, 4.0};
  EXPECT_TRUE(compareClose(ref, ref, tolFor<bf16>()).ok);
  Vec got = ref;
  got[2] *= 1.02; // 2% > one bf16 ulp
  Compare c = compareClose(got, ref, tolFor<bf16>());
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.bad, 1);
  EXPECT_EQ(c.worst, 2);
  got = ref;
  got[1] = std::nan("");
  EXPECT_FALSE(compareClose(got, ref, tolFor<bf16>()).ok);
  EXPECT_FALSE(compareRel(got, ref, 1e-2).ok);
  got = ref;
  for (double &v : got)
    v *= 1.02;
  EXPECT_FALSE(compareRel(got, ref, 1e-2).ok);
  for (double &v : got)
    v = v / 1.02 * 1.005;
  EXPECT_TRUE(compareRel(got, ref, 1e-2).ok);
}

//===----------------------------------------------------------------------===//
// Per-op tests, typed over the activation storage
//===----------------------------------------------------------------------===//

template <typename T> class DecoderOpTest : public ::testing::Test {};
using ActTypes = ::testing::Types<bf16, f16, float>;
TYPED_TEST_SUITE(DecoderOpTest, ActTypes);

TYPED_TEST(DecoderOpTest, RmsNormRowsAndHeads) {
  using T = TypeParam;
  Rng rng(testSeed());
  struct Case {
    int64_t rows, D;
    bool inPlace;
  };
  // Hidden-state rows, and Qwen3's per-head form [T=5, H=6, D=16] in place.
  for (Case cs : {Case{7, 96, false}, Case{30, 16, true}, Case{1, 40, false}})
    for (Order order : kOrders) {
      float eps = order == Order::InOrder ? 1e-5f : 1e-6f;
      auto x = randomBuf<T>(rng, cs.rows * cs.D, 0.05, 2.0);
      auto w = randomBuf<T>(rng, cs.D, 0.5, 1.5);
      std::vector<T> yBuf = poisoned<T>(cs.rows * cs.D);
      T *y = cs.inPlace ? x.data.data() : yBuf.data();
      int64_t tile = 1 + rng.index(cs.rows); // random, rarely divides evenly
      runPhase(numTiles(cs.rows, tile), order, rng, [&](int64_t i) {
        Range r = tileOf(i, cs.rows, tile);
        host::rmsnormRows(x.data.data(), w.data.data(), y, cs.D, eps, r.begin,
                          r.end);
      });
      Vec ref = oracle::rmsnorm(x.ref, w.ref, cs.D, eps);
      Compare c = compareClose(toVec(y, cs.rows * cs.D), ref, tolFor<T>());
      EXPECT_TRUE(c.ok) << typeName<T>() << " rows " << cs.rows << " tile "
                        << tile << " " << orderName(order) << ": "
                        << c.describe();
    }
}

TYPED_TEST(DecoderOpTest, LinearTiles) {
  using T = TypeParam;
  Rng rng(testSeed());
  struct Case {
    int64_t M, K, N;
  };
  // M = 5 and 1 leave a short row block; N never divides by the tile.
  for (Case cs : {Case{5, 72, 50}, Case{1, 33, 17}, Case{9, 64, 40}})
    for (int residualMode = 0; residualMode < 3; ++residualMode)
      for (Order order : kOrders) {
        auto x = randomBuf<T>(rng, cs.M * cs.K, 0.1, 1.0);
        auto w = randomBuf<T>(rng, cs.N * cs.K, 0.1, 1.0 / std::sqrt(cs.K));
        auto res = randomBuf<T>(rng, cs.M * cs.N, 0.1, 2.0);
        // 0: no residual; 1: separate residual; 2: y is the residual.
        std::vector<T> yBuf = poisoned<T>(cs.M * cs.N);
        T *y = residualMode == 2 ? res.data.data() : yBuf.data();
        const T *residual = residualMode == 0 ? nullptr : res.data.data();
        int64_t nTile = 1 + rng.index(cs.N);
        runLinear(x.data.data(), w.data.data(), residual, y, cs.M, cs.M, cs.K,
                  cs.N, nTile, 1, order, rng);
        Vec ref = oracle::linear(x.ref, w.ref, cs.M, cs.K, cs.N,
                                 residualMode ? &res.ref : nullptr);
        Compare c = compareClose(toVec(y, cs.M * cs.N), ref, tolFor<T>());
        EXPECT_TRUE(c.ok) << typeName<T>() << " M " << cs.M << " N " << cs.N
                          << " tile " << nTile << " residual " << residualMode
                          << " " << orderName(order) << ": " << c.describe();
      }
}

TYPED_TEST(DecoderOpTest, LinearSplitK) {
  using T = TypeParam;
  Rng rng(testSeed());
  const int64_t maxM = 4, M = 3, K = 77, N = 37;
  for (int64_t splits : {2, 5})
    for (bool withResidual : {false, true})
      for (Order order : kOrders) {
        auto x = randomBuf<T>(rng, maxM * K, 0.1, 1.0);
        auto w = randomBuf<T>(rng, N * K, 0.1, 1.0 / std::sqrt(K));
        auto res = randomBuf<T>(rng, maxM * N, 0.1, 2.0);
        std::vector<T> yBuf = poisoned<T>(maxM * N);
        // With a residual, update it in place as the graph's o/down do.
        T *y = withResidual ? res.data.data() : yBuf.data();
        Vec resRef(res.ref.begin(), res.ref.begin() + M * N);
        int64_t nTile = 1 + rng.index(N);
        runLinear(x.data.data(), w.data.data(),
                  withResidual ? res.data.data() : nullptr, y, M, maxM, K, N,
                  nTile, splits, order, rng);
        Vec ref =
            oracle::linear(Vec(x.ref.begin(), x.ref.begin() + M * K), w.ref, M,
                           K, N, withResidual ? &resRef : nullptr);
        Compare c = compareClose(toVec(y, M * N), ref, tolFor<T>());
        EXPECT_TRUE(c.ok) << typeName<T>() << " splits " << splits << " tile "
                          << nTile << " " << orderName(order) << ": "
                          << c.describe();
        // Rows past the runtime M are not the op's to write.
        if (!withResidual) {
          for (int64_t i = M * N; i < maxM * N; ++i)
            ASSERT_TRUE(isPoison(yBuf[i])) << "row past M written at " << i;
        }
      }
}

/// A linear with `norm` (what loom-fuse-rmsnorm makes of an rmsnorm read
/// only by linears) against the fp64 rmsnorm then linear, with the op's one
/// rounding (x * g to T): whole-K tiles and split K (each split's 1/rms over
/// all of K), with and without a residual.
TYPED_TEST(DecoderOpTest, LinearNormTilesAndSplitK) {
  using T = TypeParam;
  Rng rng(testSeed());
  const float eps = 1e-5f;
  struct Case {
    int64_t M, K, N, splits;
  };
  for (Case cs : {Case{5, 72, 50, 1}, Case{1, 33, 17, 1}, Case{9, 64, 40, 3},
                  Case{3, 77, 37, 2}})
    for (bool withResidual : {false, true})
      for (Order order : kOrders) {
        auto x = randomBuf<T>(rng, cs.M * cs.K, 0.05, 2.0);
        auto g = randomBuf<T>(rng, cs.K, 0.5, 1.5);
        auto w = randomBuf<T>(rng, cs.N * cs.K, 0.1, 1.0 / std::sqrt(cs.K));
        auto res = randomBuf<T>(rng, cs.M * cs.N, 0.1, 2.0);
        std::vector<T> y = poisoned<T>(cs.M * cs.N);
        const T *residual = withResidual ? res.data.data() : nullptr;
        const int64_t nTile = 1 + rng.index(cs.N), tiles = numTiles(cs.N, nTile);
        if (cs.splits == 1) {
          runPhase(tiles, order, rng, [&](int64_t i) {
            Range r = tileOf(i, cs.N, nTile);
            host::linearNormTile(x.data.data(), g.data.data(), eps,
                                 w.data.data(), residual, y.data(), cs.M, cs.K,
                                 cs.N, r.begin, r.end);
          });
        } else {
          std::vector<float> ws(
              host::linearSplitKWorkspaceFloats(cs.M, cs.N, cs.splits),
              poison<float>());
          runPhase(tiles * cs.splits, order, rng, [&](int64_t id) {
            Range r = tileOf(id / cs.splits, cs.N, nTile);
            int64_t s = id % cs.splits;
            host::linearNormPartial(
                x.data.data(), g.data.data(), eps, w.data.data(),
                ws.data() + s * cs.M * cs.N, cs.M, cs.K, cs.N, r.begin, r.end,
                s * cs.K / cs.splits, (s + 1) * cs.K / cs.splits);
          });
          runPhase(tiles, order, rng, [&](int64_t i) {
            Range r = tileOf(i, cs.N, nTile);
            host::linearReduce(ws.data(), cs.splits, cs.M * cs.N, residual,
                               y.data(), cs.M, cs.N, r.begin, r.end);
          });
        }
        // The op rounds x * g to T (the precision stored normalised rows
        // had) and scales the sums by 1/rms: the same rounding here, the
        // rest in fp64.
        Vec xg(x.ref.size()), ones(cs.K, 1.0);
        for (size_t i = 0; i < xg.size(); ++i) {
          T v;
          store(&v, 0, float(x.ref[i] * g.ref[i % cs.K]));
          xg[i] = load(&v, 0);
        }
        Vec h = oracle::rmsnorm(x.ref, ones, cs.K, eps);
        for (size_t i = 0; i < h.size(); ++i)
          h[i] = xg[i] * (h[i] / x.ref[i]);
        Vec ref = oracle::linear(h, w.ref, cs.M, cs.K, cs.N,
                                 withResidual ? &res.ref : nullptr);
        Compare c = compareClose(toVec(y.data(), cs.M * cs.N), ref, tolFor<T>());
        EXPECT_TRUE(c.ok) << typeName<T>() << " M " << cs.M << " K " << cs.K
                          << " splits " << cs.splits << " tile " << nTile
                          << " residual " << withResidual << " "
                          << orderName(order) << ": " << c.describe();
      }
}

/// The generated code passes a literal `nullptr` for an absent residual; the
/// residual parameter is kept out of deduction so that compiles, and the
/// LM-head form (bf16 in, f32 out) works the same way.
TEST(DecoderOps, LinearNullptrResidualAndF32Out) {
  Rng rng(testSeed());
  const int64_t M = 2, K = 24, N = 11, splits = 3;
  auto x = randomBuf<bf16>(rng, M * K, 0.1, 1.0);
  auto w = randomBuf<bf16>(rng, N * K, 0.1, 0.2);
  Vec ref = oracle::linear(x.ref, w.ref, M, K, N);
  std::vector<float> y = poisoned<float>(M * N);
  host::linearTile(x.data.data(), w.data.data(), nullptr, y.data(), M, K, N, 0,
                   N);
  Compare c = compareClose(toVec(y), ref, tolFor<float>());
  EXPECT_TRUE(c.ok) << c.describe();
  std::vector<float> ws(host::linearSplitKWorkspaceFloats(M, N, splits),
                        poison<float>());
  for (int64_t s = 0; s < splits; ++s)
    host::linearPartial(x.data.data(), w.data.data(), ws.data() + s * M * N, M,
                        K, N, 0, N, s * K / splits, (s + 1) * K / splits);
  std::vector<bf16> yb = poisoned<bf16>(M * N);
  host::linearReduce(ws.data(), splits, M * N, nullptr, yb.data(), M, N, 0, N);
  c = compareClose(toVec(yb), ref, tolFor<bf16>());
  EXPECT_TRUE(c.ok) << c.describe();
}

TYPED_TEST(DecoderOpTest, Rope) {
  using T = TypeParam;
  Rng rng(testSeed());
  const int64_t Tn = 5, H = 6, D = 32;
  struct Case {
    int64_t rotaryDim;
    float theta;
    bool inPlace;
    bool llama31 = false; // Llama 3.1's frequency scaling (factor 8)
  };
  // The bodies' scaling (kernels/common/Rope.h) for the oracle's.
  auto scalingOf = [](const Case &cs) {
    return cs.llama31 ? RopeScaling{8, 1, 4, 8192} : RopeScaling{};
  };
  for (Case cs : {Case{32, 5e5f, true}, Case{16, 1e4f, false},
                  Case{8, 1e6f, true}, Case{32, 5e5f, false, true},
                  Case{16, 5e5f, true, true}})
    for (Order order : kOrders) {
      auto x = randomBuf<T>(rng, Tn * H * D, 0.1, 2.0);
      // Position 0 (identity), small ones, and a long-context one.
      IVec pos = {0, 1 + rng.index(16), 17, 4095, 100000 + rng.index(30000)};
      std::shuffle(pos.begin(), pos.end(), rng.gen);
      std::vector<T> yBuf = poisoned<T>(Tn * H * D);
      T *y = cs.inPlace ? x.data.data() : yBuf.data();
      int64_t tile = 1 + rng.index(Tn * H); // crosses token boundaries
      auto pos32 = cast<int32_t>(pos);
      auto pos64 = cast<int64_t>(pos);
      bool use64 = order == Order::Shuffled;
      runPhase(numTiles(Tn * H, tile), order, rng, [&](int64_t i) {
        Range r = tileOf(i, Tn * H, tile);
        if (use64)
          host::rope(x.data.data(), pos64.data(), y, H, D, cs.rotaryDim,
                     cs.theta, scalingOf(cs), r.begin, r.end);
        else
          host::rope(x.data.data(), pos32.data(), y, H, D, cs.rotaryDim,
                     cs.theta, scalingOf(cs), r.begin, r.end);
      });
      Vec ref = oracle::rope(x.ref, pos, H, D, cs.rotaryDim, cs.theta,
                             cs.llama31 ? oracle::RopeScaling{8, 1, 4, 8192}
                                        : oracle::RopeScaling{});
      Compare c = compareClose(toVec(y, Tn * H * D), ref, tolFor<T>());
      EXPECT_TRUE(c.ok) << typeName<T>() << " rotary " << cs.rotaryDim
                        << " tile " << tile << " " << orderName(order) << ": "
                        << c.describe();
    }
}

TYPED_TEST(DecoderOpTest, SiluMulAndAdd) {
  using T = TypeParam;
  Rng rng(testSeed());
  const int64_t n = 1000;
  for (Order order : kOrders)
    for (bool inPlace : {false, true}) {
      auto g = randomBuf<T>(rng, n, 0.05, 6.0);
      auto u = randomBuf<T>(rng, n, 0.05, 2.0);
      std::vector<T> yBuf = poisoned<T>(n);
      T *y = inPlace ? g.data.data() : yBuf.data();
      int64_t tile = 1 + rng.index(200);
      runPhase(numTiles(n, tile), order, rng, [&](int64_t i) {
        Range r = tileOf(i, n, tile);
        host::siluMul(g.data.data(), u.data.data(), y, r.begin, r.end);
      });
      Compare c =
          compareClose(toVec(y, n), oracle::siluMul(g.ref, u.ref), tolFor<T>());
      EXPECT_TRUE(c.ok) << "silu_mul " << typeName<T>() << " "
                        << orderName(order) << ": " << c.describe();

      auto a = randomBuf<T>(rng, n, 0.05, 4.0);
      auto b = randomBuf<T>(rng, n, 0.05, 4.0);
      std::vector<T> zBuf = poisoned<T>(n);
      T *z = inPlace ? b.data.data() : zBuf.data();
      Vec ref = oracle::add(a.ref, b.ref);
      runPhase(numTiles(n, tile), order, rng, [&](int64_t i) {
        Range r = tileOf(i, n, tile);
        host::add(a.data.data(), b.data.data(), z, r.begin, r.end);
      });
      c = compareClose(toVec(z, n), ref, tolFor<T>());
      EXPECT_TRUE(c.ok) << "add " << typeName<T>() << " " << orderName(order)
                        << ": " << c.describe();
    }
}

/// gqa_decode over a paged cache with mixed lengths (empty, 1, a full page,
/// partial last pages), scattered pages, NaN in every slot no request owns,
/// one request slot past the runtime batch, for S in {1, 3, 8}. Short
/// contexts get one split per (request, kv head); kLongLens (up to 700
/// tokens, > kGqaMinSplitTokens) get several, unevenly per request.
const IVec kShortLens = {1, 17, 40, 16, 0, 3};
const IVec kLongLens = {1, 300, 0, 129, 700, 3};

template <typename T, typename TI>
void checkGqa(Rng &rng, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
              int64_t P, int64_t S, Order order, const IVec &lens) {
  const int64_t batch = int64_t(lens.size()), maxBatch = batch + 1;
  Paging pg = makePaging(rng, lens, P, 3);
  const int64_t kRow = Hkv * D, vRow = Hkv * Dv;
  std::vector<T> kc = poisoned<T>(pg.pages * P * kRow);
  std::vector<T> vc = poisoned<T>(pg.pages * P * vRow);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lens[b]; ++t) {
      int64_t slot = slotOf(pg, b, t);
      for (int64_t i = 0; i < kRow; ++i)
        store(kc.data(), slot * kRow + i, float(rng.nonZero(0.1, 1.5)));
      for (int64_t i = 0; i < vRow; ++i)
        store(vc.data(), slot * vRow + i, float(rng.nonZero(0.1, 1.0)));
    }
  auto q = randomBuf<T>(rng, maxBatch * Hq * D, 0.1, 1.5);
  std::vector<T> o = poisoned<T>(maxBatch * Hq * Dv);
  std::vector<float> ws(host::gqaWorkspaceFloats(maxBatch, S, Hq, Dv),
                        poison<float>());
  auto indptr = cast<TI>(pg.indptr), indices = cast<TI>(pg.indices);
  auto lensI = cast<TI>(lens);
  float smScale = 1.0f / std::sqrt(float(D));

  // Tasks cover maxBatch requests; those past the runtime batch are no-ops.
  runPhase(maxBatch * Hkv * S, order, rng, [&](int64_t id) {
    host::gqaDecodeSplit(q.data.data(), kc.data(), vc.data(), indptr.data(),
                         indices.data(), lensI.data(), ws.data(), batch,
                         maxBatch, Hq, Hkv, D, Dv, P, pg.pages,
                         int64_t(indices.size()), S, smScale, id / (Hkv * S),
                         id / S % Hkv, id % S);
  });
  runPhase(maxBatch * Hkv, order, rng, [&](int64_t id) {
    host::gqaDecodeMerge(ws.data(), lensI.data(), o.data(), batch, maxBatch, Hq,
                         Hkv, Dv, S, id / Hkv, id % Hkv);
  });

  oracle::PageTable table{pg.indptr, pg.indices, lens};
  Vec ref = oracle::gqaDecode(
      Vec(q.ref.begin(), q.ref.begin() + batch * Hq * D), toVec(kc), toVec(vc),
      table, batch, Hq, Hkv, D, Dv, P, smScale);
  Compare c = compareClose(toVec(o.data(), batch * Hq * Dv), ref, tolFor<T>());
  EXPECT_TRUE(c.ok) << typeName<T>() << " Hq " << Hq << " Hkv " << Hkv << " P "
                    << P << " S " << S << " " << orderName(order) << ": "
                    << c.describe();
  for (int64_t i = batch * Hq * Dv; i < maxBatch * Hq * Dv; ++i)
    ASSERT_TRUE(isPoison(o[i])) << "request past the runtime batch written";
}

TYPED_TEST(DecoderOpTest, GqaDecodePaged) {
  using T = TypeParam;
  Rng rng(testSeed());
  for (int64_t S : {1, 3, 8})
    for (Order order : kOrders)
      for (const IVec *lens : {&kShortLens, &kLongLens}) {
        checkGqa<T, int32_t>(rng, 8, 2, 32, 32, 16, S, order, *lens); // group 4
        checkGqa<T, int64_t>(rng, 3, 3, 24, 16, 5, S, order, *lens); // MHA, Dv!=D
      }
}

/// The run-time split mapping (kernels/common/GqaSplits.h): the tasks with
/// work are at most N, every (request, kv head) pair's tokens are covered
/// exactly once by the tasks the merge will read, and a pair's splits
/// differ by at most one token; a small batch spreads over many tasks.
TEST(GqaSplits, CoverEveryTokenOnceWithinTheTasks) {
  Rng rng(testSeed());
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t hkv = 1 + rng.index(8), maxBatch = 1 + rng.index(12);
    const int64_t batch = 1 + rng.index(maxBatch), S = 1 + rng.index(16);
    const int64_t n = maxBatch * hkv * S;
    std::vector<int32_t> lens(batch);
    for (int32_t &len : lens)
      len = rng.index(4) == 0 ? int32_t(rng.index(3))
                              : int32_t(rng.index(rng.index(2) ? 5000 : 300));
    // Pair (b, hk) -> tokens seen, in task order.
    std::vector<std::vector<int64_t>> seen(batch * hkv);
    std::vector<int64_t> taskOf(n, -1);
    for (int64_t t = 0; t < n; ++t) {
      GqaSplitTask w = gqaSplitTask(lens.data(), batch, hkv, n, t);
      if (!w.active)
        continue;
      ASSERT_LT(w.b, batch);
      ASSERT_LT(w.hk, hkv);
      ASSERT_LE(0, w.tBegin);
      ASSERT_LE(w.tBegin, w.tEnd);
      ASSERT_LE(w.tEnd, int64_t(lens[w.b]));
      taskOf[t] = w.b * hkv + w.hk;
      for (int64_t tok = w.tBegin; tok < w.tEnd; ++tok)
        seen[w.b * hkv + w.hk].push_back(tok);
    }
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t hk = 0; hk < hkv; ++hk) {
        GqaPairTasks p = gqaPairTasks(lens.data(), batch, hkv, n, b, hk);
        ASSERT_GE(p.count, 1);
        ASSERT_LE(p.first + p.count, n);
        int64_t shortest = std::numeric_limits<int64_t>::max(), longest = 0;
        for (int64_t i = 0; i < p.count; ++i) {
          ASSERT_EQ(taskOf[p.first + i], b * hkv + hk) << "merge reads a task "
                                                          "of another pair";
          GqaSplitTask w =
              gqaSplitTask(lens.data(), batch, hkv, n, p.first + i);
          // What a split knows of its pair is what the merge maps.
          ASSERT_EQ(w.pairFirst, p.first);
          ASSERT_EQ(w.pairCount, p.count);
          shortest = std::min(shortest, w.tEnd - w.tBegin);
          longest = std::max(longest, w.tEnd - w.tBegin);
        }
        EXPECT_LE(longest - shortest, 1);
        const std::vector<int64_t> &got = seen[b * hkv + hk];
        ASSERT_EQ(int64_t(got.size()), int64_t(lens[b]));
        for (int64_t tok = 0; tok < int64_t(got.size()); ++tok)
          ASSERT_EQ(got[tok], tok) << "request " << b << " kv head " << hk;
      }
  }
  // Llama-3-8B on the H200: maxBatch 32, Hkv 8, S 1 -> N = 256. Batch 8 at
  // 2048 tokens used to keep 64 tasks busy with 2048 tokens each.
  std::vector<int32_t> lens(8, 2048);
  int64_t busy = 0, most = 0;
  for (int64_t t = 0; t < 256; ++t) {
    GqaSplitTask w = gqaSplitTask(lens.data(), 8, 8, 256, t);
    busy += w.active;
    most = std::max(most, w.tEnd - w.tBegin);
  }
  EXPECT_EQ(busy, 256);
  EXPECT_EQ(most, 512);
}

//===----------------------------------------------------------------------===//
// Per-op tests on integer and copy ops
//===----------------------------------------------------------------------===//

template <typename TI> void checkKvAppend(Rng &rng, Order order) {
  using T = bf16;
  const int64_t Tn = 6, Hkv = 2, D = 16, Dv = 8, P = 4, pages = 8;
  auto k = randomBuf<T>(rng, Tn * Hkv * D, 0.1, 2.0);
  auto v = randomBuf<T>(rng, Tn * Hkv * Dv, 0.1, 2.0);
  // Distinct random slots; token 3 is padding (-1) and must be skipped.
  IVec all(pages * P);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.gen);
  IVec slots(all.begin(), all.begin() + Tn);
  slots[3] = -1;
  auto slotsI = cast<TI>(slots);
  std::vector<T> kc = poisoned<T>(pages * P * Hkv * D);
  std::vector<T> vc = poisoned<T>(pages * P * Hkv * Dv);
  int64_t tile = 1 + rng.index(Tn);
  runPhase(numTiles(Tn, tile), order, rng, [&](int64_t i) {
    Range r = tileOf(i, Tn, tile);
    host::kvAppend(k.data.data(), v.data.data(), slotsI.data(), kc.data(),
                   vc.data(), Hkv, D, Dv, P, pages, r.begin, r.end);
  });
  // Start the reference from the same poisoned cache: untouched slots must
  // stay NaN, written ones must equal the row exactly.
  Vec kRef = toVec(kc), vRef = toVec(vc);
  std::fill(kRef.begin(), kRef.end(), std::nan(""));
  std::fill(vRef.begin(), vRef.end(), std::nan(""));
  oracle::kvAppend(k.ref, v.ref, slots, Hkv, D, Dv, P, kRef, vRef);
  Vec kGot = toVec(kc), vGot = toVec(vc);
  for (size_t i = 0; i < kRef.size(); ++i) {
    if (std::isnan(kRef[i]))
      ASSERT_TRUE(isPoison(kc[i])) << "k slot written at " << i;
    else
      ASSERT_EQ(kGot[i], kRef[i]) << "k at " << i;
  }
  for (size_t i = 0; i < vRef.size(); ++i) {
    if (std::isnan(vRef[i]))
      ASSERT_TRUE(isPoison(vc[i])) << "v slot written at " << i;
    else
      ASSERT_EQ(vGot[i], vRef[i]) << "v at " << i;
  }
}

TEST(DecoderOps, KvAppendPaged) {
  Rng rng(testSeed());
  for (Order order : kOrders) {
    checkKvAppend<int32_t>(rng, order);
    checkKvAppend<int64_t>(rng, order);
  }
}

TEST(DecoderOps, Embedding) {
  Rng rng(testSeed());
  const int64_t vocab = 50, D = 24, B = 7;
  auto table = randomBuf<bf16>(rng, vocab * D, 0.1, 1.0);
  for (Order order : kOrders) {
    IVec ids(B);
    for (int64_t &id : ids)
      id = rng.index(vocab);
    ids[0] = 0;
    ids[B - 1] = vocab - 1;
    auto ids32 = cast<int32_t>(ids);
    std::vector<bf16> y = poisoned<bf16>(B * D);
    int64_t tile = 1 + rng.index(B);
    std::atomic<bool> ok{true};
    runPhase(numTiles(B, tile), order, rng, [&](int64_t i) {
      Range r = tileOf(i, B, tile);
      if (!host::embedding(table.data.data(), ids32.data(), y.data(), vocab, D,
                           r.begin, r.end))
        ok = false;
    });
    EXPECT_TRUE(ok);
    EXPECT_EQ(toVec(y), oracle::embedding(table.ref, ids, D));
  }
  // An out-of-range id is not read: its row is zeroed and the body says so.
  IVec bad = {3, vocab, -1, 7};
  auto bad64 = cast<int64_t>(bad);
  std::vector<float> y = poisoned<float>(4 * D);
  EXPECT_FALSE(host::embedding(table.data.data(), bad64.data(), y.data(), vocab,
                               D, 0, 4));
  for (int64_t i = 0; i < D; ++i) {
    EXPECT_EQ(y[0 * D + i], load(table.data.data(), 3 * D + i));
    EXPECT_EQ(y[1 * D + i], 0.0f);
    EXPECT_EQ(y[2 * D + i], 0.0f);
    EXPECT_EQ(y[3 * D + i], load(table.data.data(), 7 * D + i));
  }
  EXPECT_TRUE(host::embedding(table.data.data(), bad64.data(), y.data(), vocab,
                              D, 0, 1));
}

template <typename T> void checkArgmax(Rng &rng, Order order) {
  const int64_t B = 7, V = 300;
  auto x = randomBuf<T>(rng, B * V, 0.01, 10.0);
  T *d = x.data.data();
  auto set = [&](int64_t b, int64_t v, float val) { store(d, b * V + v, val); };
  // Row 1: a tie for the maximum; the lower index wins.
  set(1, 250, 20.0f);
  set(1, 40, 20.0f);
  // Row 2: two NaNs; the first counts as the largest.
  set(2, 100, std::nanf(""));
  set(2, 30, std::nanf(""));
  set(2, 5, 50.0f);
  // Row 3: all equal -> index 0.
  for (int64_t v = 0; v < V; ++v)
    set(3, v, -1.5f);
  // Row 4: -inf everywhere but the last entry.
  for (int64_t v = 0; v < V; ++v)
    set(4, v, -std::numeric_limits<float>::infinity());
  set(4, V - 1, -3.0f);
  // Row 5: NaN first.
  set(5, 0, std::nanf(""));
  Vec ref = toVec(x.data);
  IVec want = oracle::argmax(ref, V);
  EXPECT_EQ(want[1], 40);
  EXPECT_EQ(want[2], 30);
  EXPECT_EQ(want[3], 0);
  EXPECT_EQ(want[4], V - 1);
  EXPECT_EQ(want[5], 0);
  std::vector<int32_t> idx(B, -7);
  int64_t tile = 1 + rng.index(B);
  runPhase(numTiles(B, tile), order, rng, [&](int64_t i) {
    Range r = tileOf(i, B, tile);
    host::argmaxRows(x.data.data(), idx.data(), V, r.begin, r.end);
  });
  EXPECT_EQ(IVec(idx.begin(), idx.end()), want)
      << typeName<T>() << " " << orderName(order);
}

TEST(DecoderOps, Argmax) {
  Rng rng(testSeed());
  for (Order order : kOrders) {
    checkArgmax<float>(rng, order);
    checkArgmax<bf16>(rng, order);
  }
}

//===----------------------------------------------------------------------===//
// Per-op negative tests: a skipped task or a corrupted output is reported
//===----------------------------------------------------------------------===//

TEST(DecoderOpsNegative, SkippedTaskAndPerturbationAreCaught) {
  Rng rng(testSeed());
  const int64_t M = 3, K = 40, N = 30;
  auto x = randomBuf<bf16>(rng, M * K, 0.1, 1.0);
  auto w = randomBuf<bf16>(rng, N * K, 0.1, 0.2);
  Vec ref = oracle::linear(x.ref, w.ref, M, K, N);
  for (int64_t splits : {1, 5}) {
    // Skipping one task leaves poison (tiled) or a NaN partial (split-K).
    std::vector<bf16> y = poisoned<bf16>(M * N);
    runLinear<bf16, bf16, bf16>(x.data.data(), w.data.data(), nullptr, y.data(),
                                M, M, K, N, 7, splits, Order::Shuffled, rng,
                                rng.index(numTiles(N, 7) * splits));
    Compare c = compareClose(toVec(y), ref, tolFor<bf16>());
    EXPECT_FALSE(c.ok) << "splits " << splits;
    EXPECT_GT(c.nans, 0);
    // Complete run passes; then one element moved away from zero by
    // 3% + 0.003 (past rtol 2^-7 and atol 1e-4 even after bf16 rounding).
    y = poisoned<bf16>(M * N);
    runLinear<bf16, bf16, bf16>(x.data.data(), w.data.data(), nullptr, y.data(),
                                M, M, K, N, 7, splits, Order::Shuffled, rng);
    EXPECT_TRUE(compareClose(toVec(y), ref, tolFor<bf16>()).ok);
    int64_t victim = rng.index(M * N);
    float v = load(y.data(), victim);
    store(y.data(), victim,
          v + std::copysign(0.03f * std::fabs(v) + 0.003f, v));
    c = compareClose(toVec(y), ref, tolFor<bf16>());
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.worst, victim);
  }
  // gqa: one skipped split leaves a NaN partial that poisons the merge.
  // 300 tokens: 3 splits per KV head (kGqaMinSplitTokens = 128), so the
  // skipped task's NaN meets finite partials in its pair's merge.
  const int64_t Hq = 4, Hkv = 2, D = 16, P = 4, S = 3;
  IVec lens = {300};
  Paging pg = makePaging(rng, lens, P, 1);
  auto kc = randomBuf<bf16>(rng, pg.pages * P * Hkv * D, 0.1, 1.0);
  auto vc = randomBuf<bf16>(rng, pg.pages * P * Hkv * D, 0.1, 1.0);
  auto q = randomBuf<bf16>(rng, Hq * D, 0.1, 1.0);
  auto ip = cast<int32_t>(pg.indptr), ix = cast<int32_t>(pg.indices),
       ln = cast<int32_t>(lens);
  std::vector<float> ws(host::gqaWorkspaceFloats(1, S, Hq, D), poison<float>());
  std::vector<bf16> o = poisoned<bf16>(Hq * D);
  runPhase(
      Hkv * S, Order::InOrder, rng,
      [&](int64_t id) {
        host::gqaDecodeSplit(q.data.data(), kc.data.data(), vc.data.data(),
                             ip.data(), ix.data(), ln.data(), ws.data(), 1, 1,
                             Hq, Hkv, D, D, P, pg.pages, int64_t(ix.size()), S,
                             0.25f, 0, id / S, id % S);
      },
      /*skip=*/S + 1); // KV head 1's second split
  runPhase(Hkv, Order::InOrder, rng, [&](int64_t id) {
    host::gqaDecodeMerge(ws.data(), ln.data(), o.data(), 1, 1, Hq, Hkv, D, S, 0,
                         id);
  });
  Vec oRef =
      oracle::gqaDecode(q.ref, kc.ref, vc.ref, {pg.indptr, pg.indices, lens}, 1,
                        Hq, Hkv, D, D, P, 0.25);
  Compare c = compareClose(toVec(o), oRef, tolFor<bf16>());
  EXPECT_FALSE(c.ok);
  EXPECT_GT(c.nans, 0);
}

//===----------------------------------------------------------------------===//
// Tiny decoder stacks: bodies chained in layer order vs the oracle
//===----------------------------------------------------------------------===//

/// One layer's weights as the kernels store them (bf16).
struct BodyWeights {
  std::vector<bf16> attnNorm, wq, wk, wv, wo, qNorm, kNorm, ffnNorm, wGate, wUp,
      wDown;
};

/// A random model, its batch's paged caches and step metadata, held twice:
/// bf16 buffers for the bodies, doubles for the oracle.
struct TinyModel {
  oracle::DecoderShape shape;
  int64_t maxBatch = 0, vocab = 0;
  std::vector<BodyWeights> w;
  std::vector<oracle::LayerWeights> ow;
  std::vector<std::vector<bf16>> kc, vc;
  std::vector<oracle::LayerCache> oc;
  oracle::StepMeta meta;
  Paging paging;
  std::vector<bf16> embed, finalNorm, lmHead;
  oracle::HeadWeights head;
  IVec tokenIds;
  std::vector<bf16> x; // the input hidden state [maxBatch, hidden]
  Vec xRef;
};

/// Random values into a bf16 buffer and its double copy.
void fill(Rng &rng, int64_t n, double lo, double hi, std::vector<bf16> &dst,
          Vec &ref) {
  Buf<bf16> b = randomBuf<bf16>(rng, n, lo, hi);
  dst = std::move(b.data);
  ref = std::move(b.ref);
}

/// Scales: unit-RMS-ish activations throughout (projection entries about
/// 1/sqrt(K)), so q.k scores are O(1) and attention is far from uniform —
/// an attention bug must move the output.
TinyModel makeModel(Rng &rng, const oracle::DecoderShape &s, int64_t layers,
                    const IVec &contexts, int64_t vocab) {
  TinyModel m;
  m.shape = s;
  m.vocab = vocab;
  const int64_t B = int64_t(contexts.size());
  m.maxBatch = B + 1;
  const int64_t hid = s.hidden, hd = s.headDim, qDim = s.qHeads * hd,
                kvDim = s.kvHeads * hd;
  auto proj = [&](int64_t K) { return 1.7 / std::sqrt(double(K)); };
  m.w.resize(layers);
  m.ow.resize(layers);
  for (int64_t l = 0; l < layers; ++l) {
    BodyWeights &w = m.w[l];
    oracle::LayerWeights &o = m.ow[l];
    fill(rng, hid, 0.6, 1.4, w.attnNorm, o.attnNorm);
    fill(rng, qDim * hid, 0.02, proj(hid), w.wq, o.wq);
    fill(rng, kvDim * hid, 0.02, proj(hid), w.wk, o.wk);
    fill(rng, kvDim * hid, 0.02, proj(hid), w.wv, o.wv);
    fill(rng, hid * qDim, 0.02, proj(qDim), w.wo, o.wo);
    if (s.qkNorm) {
      fill(rng, hd, 0.6, 1.4, w.qNorm, o.qNorm);
      fill(rng, hd, 0.6, 1.4, w.kNorm, o.kNorm);
    }
    fill(rng, hid, 0.6, 1.4, w.ffnNorm, o.ffnNorm);
    fill(rng, s.ffn * hid, 0.02, proj(hid), w.wGate, o.wGate);
    fill(rng, s.ffn * hid, 0.02, proj(hid), w.wUp, o.wUp);
    fill(rng, hid * s.ffn, 0.02, proj(s.ffn), w.wDown, o.wDown);
  }

  // Each request's context counts the new token: it holds contexts[b] - 1
  // earlier tokens and this step writes token contexts[b] - 1.
  m.paging = makePaging(rng, contexts, s.pageSize, 4);
  const int64_t P = s.pageSize, pages = m.paging.pages;
  m.meta.batch = B;
  m.meta.table = {m.paging.indptr, m.paging.indices, contexts};
  for (int64_t b = 0; b < B; ++b) {
    m.meta.positions.push_back(contexts[b] - 1);
    m.meta.slotMapping.push_back(slotOf(m.paging, b, contexts[b] - 1));
  }
  m.kc.assign(layers, poisoned<bf16>(pages * P * kvDim));
  m.vc.assign(layers, poisoned<bf16>(pages * P * kvDim));
  m.oc.resize(layers);
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t + 1 < contexts[b]; ++t) {
        int64_t slot = slotOf(m.paging, b, t);
        for (int64_t i = 0; i < kvDim; ++i) {
          store(m.kc[l].data(), slot * kvDim + i, float(rng.nonZero(0.1, 1.5)));
          store(m.vc[l].data(), slot * kvDim + i, float(rng.nonZero(0.1, 1.0)));
        }
      }
    m.oc[l].k = toVec(m.kc[l]);
    m.oc[l].v = toVec(m.vc[l]);
  }

  Vec xAll;
  fill(rng, m.maxBatch * hid, 0.1, 1.0, m.x, xAll);
  m.xRef.assign(xAll.begin(), xAll.begin() + B * hid);

  fill(rng, vocab * hid, 0.1, 1.0, m.embed, m.head.embed);
  fill(rng, hid, 0.6, 1.4, m.finalNorm, m.head.finalNorm);
  fill(rng, vocab * hid, 0.02, proj(hid), m.lmHead, m.head.lmHead);
  m.head.vocab = vocab;
  for (int64_t b = 0; b < B; ++b)
    m.tokenIds.push_back(rng.index(vocab));
  return m;
}

/// How the chained run cuts each op into tasks, and what it gets wrong on
/// purpose (negative tests).
struct Plan {
  Order order = Order::InOrder;
  int64_t rowTile = 2, headRowTile = 5, nTile = 24, oSplits = 2, downSplits = 5,
          gqaSplits = 3, tokTile = 2, elemTile = 100;
  bool skipQkNorm = false;   // omit Qwen3's q/k norm
  int64_t skipGqaTask = -1;  // drop one gqa phase-0 task
  int64_t positionShift = 0; // rope at the wrong positions
};

/// Intermediates of one layer, of the activation type T and sized for
/// maxBatch like the graph's loom.alloc buffers; poisoned before every layer.
template <typename T> struct Scratch {
  std::vector<T> h, q, k, v, attn, x1, h2, gate, up, act;
};

/// The paged caches of every layer, stored as T (the initial contents are
/// bf16 values, so they are exact in either type).
template <typename T> struct Caches { std::vector<std::vector<T>> k, v; };

template <typename T> Caches<T> cachesAs(const TinyModel &m) {
  Caches<T> c;
  for (size_t l = 0; l < m.kc.size(); ++l) {
    c.k.emplace_back(m.kc[l].size());
    c.v.emplace_back(m.vc[l].size());
    for (size_t i = 0; i < m.kc[l].size(); ++i) {
      store(c.k[l].data(), int64_t(i), load(m.kc[l].data(), int64_t(i)));
      store(c.v[l].data(), int64_t(i), load(m.vc[l].data(), int64_t(i)));
    }
  }
  return c;
}

/// One layer through the bodies, in BuildGraph's op order: x -> xOut, with
/// activations stored as T and bf16 weights.
template <typename T>
void runLayer(const TinyModel &m, int64_t l, Caches<T> &cache, const T *x,
              T *xOut, const Plan &p, Rng &rng) {
  const oracle::DecoderShape &s = m.shape;
  const BodyWeights &w = m.w[l];
  const int64_t B = m.meta.batch, MB = m.maxBatch, hid = s.hidden,
                hd = s.headDim, Hq = s.qHeads, Hkv = s.kvHeads, qDim = Hq * hd,
                kvDim = Hkv * hd, ffn = s.ffn, P = s.pageSize, S = p.gqaSplits;
  const float eps = float(s.rmsEps);
  Scratch<T> t;
  t.h = t.x1 = t.h2 = poisoned<T>(MB * hid);
  t.q = t.attn = poisoned<T>(MB * qDim);
  t.k = t.v = poisoned<T>(MB * kvDim);
  t.gate = t.up = t.act = poisoned<T>(MB * ffn);
  T *kc = cache.k[l].data(), *vc = cache.v[l].data();
  const T *none = nullptr;
  auto rows = [&](int64_t n, int64_t tile, auto body) {
    runPhase(numTiles(n, tile), p.order, rng, [&](int64_t i) {
      Range r = tileOf(i, n, tile);
      body(r.begin, r.end);
    });
  };
  IVec shifted = m.meta.positions;
  for (int64_t &pos : shifted)
    pos += p.positionShift;
  auto pos = cast<int32_t>(shifted), slots = cast<int32_t>(m.meta.slotMapping);
  auto indptr = cast<int32_t>(m.paging.indptr),
       indices = cast<int32_t>(m.paging.indices),
       lens = cast<int32_t>(m.paging.lens);

  // Attention block.
  rows(B, p.rowTile, [&](int64_t r0, int64_t r1) {
    host::rmsnormRows(x, w.attnNorm.data(), t.h.data(), hid, eps, r0, r1);
  });
  runLinear(t.h.data(), w.wq.data(), none, t.q.data(), B, MB, hid, qDim,
            p.nTile, 1, p.order, rng);
  runLinear(t.h.data(), w.wk.data(), none, t.k.data(), B, MB, hid, kvDim,
            p.nTile, 1, p.order, rng);
  runLinear(t.h.data(), w.wv.data(), none, t.v.data(), B, MB, hid, kvDim,
            p.nTile, 1, p.order, rng);
  if (s.qkNorm && !p.skipQkNorm) {
    rows(B * Hq, p.headRowTile, [&](int64_t r0, int64_t r1) {
      host::rmsnormRows(t.q.data(), w.qNorm.data(), t.q.data(), hd, eps, r0,
                        r1);
    });
    rows(B * Hkv, p.headRowTile, [&](int64_t r0, int64_t r1) {
      host::rmsnormRows(t.k.data(), w.kNorm.data(), t.k.data(), hd, eps, r0,
                        r1);
    });
  }
  const RopeScaling scaling{s.ropeScaling.factor, s.ropeScaling.lowFreqFactor,
                            s.ropeScaling.highFreqFactor,
                            s.ropeScaling.originalMaxPosition};
  rows(B * Hq, p.headRowTile, [&](int64_t r0, int64_t r1) {
    host::rope(t.q.data(), pos.data(), t.q.data(), Hq, hd, hd,
               float(s.ropeTheta), scaling, r0, r1);
  });
  rows(B * Hkv, p.headRowTile, [&](int64_t r0, int64_t r1) {
    host::rope(t.k.data(), pos.data(), t.k.data(), Hkv, hd, hd,
               float(s.ropeTheta), scaling, r0, r1);
  });
  rows(B, p.tokTile, [&](int64_t t0, int64_t t1) {
    host::kvAppend(t.k.data(), t.v.data(), slots.data(), kc, vc, Hkv, hd, hd, P,
                   m.paging.pages, t0, t1);
  });
  std::vector<float> ws(host::gqaWorkspaceFloats(MB, S, Hq, hd),
                        poison<float>());
  const float smScale = float(1.0 / std::sqrt(double(hd)));
  runPhase(
      MB * Hkv * S, p.order, rng,
      [&](int64_t id) {
        host::gqaDecodeSplit(t.q.data(), kc, vc, indptr.data(), indices.data(),
                             lens.data(), ws.data(), B, MB, Hq, Hkv, hd, hd, P,
                             m.paging.pages, int64_t(indices.size()), S,
                             smScale, id / (Hkv * S), id / S % Hkv, id % S);
      },
      p.skipGqaTask);
  runPhase(MB * Hkv, p.order, rng, [&](int64_t id) {
    host::gqaDecodeMerge(ws.data(), lens.data(), t.attn.data(), B, MB, Hq, Hkv,
                         hd, S, id / Hkv, id % Hkv);
  });
  runLinear(t.attn.data(), w.wo.data(), x, t.x1.data(), B, MB, qDim, hid,
            p.nTile, p.oSplits, p.order, rng);

  // MLP block.
  rows(B, p.rowTile, [&](int64_t r0, int64_t r1) {
    host::rmsnormRows(t.x1.data(), w.ffnNorm.data(), t.h2.data(), hid, eps, r0,
                      r1);
  });
  runLinear(t.h2.data(), w.wGate.data(), none, t.gate.data(), B, MB, hid, ffn,
            p.nTile, 1, p.order, rng);
  runLinear(t.h2.data(), w.wUp.data(), none, t.up.data(), B, MB, hid, ffn,
            p.nTile, 1, p.order, rng);
  rows(B * ffn, p.elemTile, [&](int64_t e0, int64_t e1) {
    host::siluMul(t.gate.data(), t.up.data(), t.act.data(), e0, e1);
  });
  runLinear(t.act.data(), w.wDown.data(), t.x1.data(), xOut, B, MB, ffn, hid,
            p.nTile, p.downSplits, p.order, rng);
}

/// All layers on x0 (bf16 values, converted to T), on fresh copies of the
/// model's caches; returns each layer's output [batch, hidden].
template <typename T>
std::vector<Vec> runStack(const TinyModel &m, const std::vector<bf16> &x0,
                          const Plan &p, Rng &rng) {
  Caches<T> cache = cachesAs<T>(m);
  std::vector<T> cur = poisoned<T>(int64_t(x0.size()));
  for (size_t i = 0; i < x0.size(); ++i)
    store(cur.data(), int64_t(i), load(x0.data(), int64_t(i)));
  std::vector<Vec> outs;
  for (size_t l = 0; l < m.w.size(); ++l) {
    std::vector<T> next = poisoned<T>(m.maxBatch * m.shape.hidden);
    runLayer(m, int64_t(l), cache, cur.data(), next.data(), p, rng);
    cur = std::move(next);
    outs.push_back(toVec(cur.data(), m.meta.batch * m.shape.hidden));
  }
  return outs;
}

oracle::DecoderShape tinyShape(bool qwen3, int64_t hidden) {
  oracle::DecoderShape s;
  s.hidden = hidden;
  s.qHeads = 4;
  s.kvHeads = 2;
  s.headDim = 16;
  s.ffn = 2 * hidden;
  s.pageSize = 16;
  s.rmsEps = qwen3 ? 1e-6 : 1e-5;
  s.ropeTheta = qwen3 ? 1e6 : 5e5;
  if (!qwen3) // Llama 3.1's frequency scaling
    s.ropeScaling = {8, 1, 4, 8192};
  s.qkNorm = qwen3;
  return s;
}

const IVec kContexts = {1, 17, 40};
constexpr double kModelBound = 1e-2;    // DESIGN.md, decoder layer
constexpr double kF32ModelBound = 1e-5; // f32 activations (Stacks8Layers)

/// The oracle's output after each layer, on a copy of the model's caches.
std::vector<Vec> oracleLayers(const TinyModel &m) {
  std::vector<oracle::LayerCache> caches = m.oc;
  std::vector<Vec> outs;
  Vec cur = m.xRef;
  for (size_t l = 0; l < m.ow.size(); ++l) {
    cur = oracle::decoderLayer(m.shape, m.ow[l], cur, m.meta, caches[l]);
    outs.push_back(cur);
  }
  return outs;
}

/// A model run through the bodies (activations stored as T) and through the
/// oracle. `final`: the last layer's output against the free-running oracle.
/// `drift`: that relative error after every layer. `forced`: each layer on
/// its own, the oracle fed the bodies' (bf16) input to that layer, so the
/// error of one layer is measured without what earlier layers left behind.
/// `orderMismatches`: elements of the final output that differ bit for bit
/// between the in-order, shuffled and threaded runs of the same plan (every
/// task computes the same thing whatever the order, so this must be 0).
struct ModelRun {
  Compare final;
  std::vector<double> drift;
  std::vector<Compare> forced;
  int64_t orderMismatches = 0;
};

template <typename T>
ModelRun runModel(Rng &rng, bool qwen3, int64_t hidden, int64_t layers,
                  const Plan &plan, double bound,
                  const IVec &contexts = kContexts, bool allOrders = false) {
  TinyModel m = makeModel(rng, tinyShape(qwen3, hidden), layers, contexts, 1);
  std::vector<Vec> ref = oracleLayers(m);
  std::vector<Vec> got = runStack<T>(m, m.x, plan, rng);
  ModelRun r;
  for (Order order : kOrders) {
    if (!allOrders || order == plan.order)
      continue;
    Plan other = plan;
    other.order = order;
    Vec again = runStack<T>(m, m.x, other, rng).back();
    for (size_t i = 0; i < again.size(); ++i)
      r.orderMismatches += std::memcmp(&again[i], &got.back()[i], 8) != 0;
  }
  std::vector<oracle::LayerCache> caches = m.oc;
  for (int64_t l = 0; l < layers; ++l) {
    r.drift.push_back(compareRel(got[l], ref[l], bound).rel);
    Vec refL = oracle::decoderLayer(m.shape, m.ow[l], l ? got[l - 1] : m.xRef,
                                    m.meta, caches[l]);
    r.forced.push_back(compareRel(got[l], refL, bound));
  }
  r.final = compareRel(got.back(), ref.back(), bound);
  return r;
}

std::string driftString(const ModelRun &r) {
  std::ostringstream os;
  for (double e : r.drift)
    os << " " << e;
  return os.str();
}

/// Two layers end to end in bf16 against DESIGN.md's 1e-2 (seen over 2500
/// random models: mean 0.56%, sd 0.07%, max 0.92%). One model per test, run
/// in order, shuffled and threaded with bitwise-equal results.
void checkTwoLayers(bool qwen3, const Plan &plan) {
  Rng rng(testSeed());
  ModelRun r = runModel<bf16>(rng, qwen3, 64, 2, plan, kModelBound, kContexts,
                              /*allOrders=*/true);
  EXPECT_TRUE(r.final.ok) << r.final.describe();
  for (size_t l = 0; l < r.forced.size(); ++l)
    EXPECT_TRUE(r.forced[l].ok)
        << "layer " << l << ": " << r.forced[l].describe();
  EXPECT_EQ(r.orderMismatches, 0) << "results depend on the task order";
  std::cout << "  " << (qwen3 ? "qwen3" : "llama")
            << " 2 layers bf16: rel error per layer" << driftString(r) << "\n";
}

TEST(DecoderModel, Llama2Layers) { checkTwoLayers(false, Plan()); }

TEST(DecoderModel, Qwen3QkNorm2Layers) {
  Plan plan;
  plan.gqaSplits = 8; // more splits than the 1-token request has tokens
  plan.downSplits = 2;
  plan.nTile = 13;
  checkTwoLayers(true, plan);
}

/// Eight layers. bf16 storage costs about 0.4% relative error per layer on
/// these random stacks (every branch as large as the residual stream), and it
/// compounds like sqrt(layers): ~1.1-1.7% after 8, so the end-to-end drift is
/// printed, not held to DESIGN.md's 1e-2. What is checked instead:
///  * bf16: every layer on its own (oracle fed the bodies' input) <= 1e-2;
///  * f32 activations (no storage rounding): end to end <= 1e-5, the cost of
///    fp32 arithmetic over ~100 unit-scale ops (seen <= 1e-6), which proves
///    the chained decomposition computes the oracle's stack.
TEST(DecoderModel, Stacks8Layers) {
  Rng rng(testSeed());
  const IVec contexts = {1, 17, 40, 33};
  for (bool qwen3 : {false, true}) {
    const char *name = qwen3 ? "qwen3" : "llama";
    Plan plan;
    plan.order = Order::Shuffled;
    plan.gqaSplits = 1;
    plan.nTile = 20;
    ModelRun r = runModel<bf16>(rng, qwen3, 32, 8, plan, kModelBound, contexts);
    for (size_t l = 0; l < r.forced.size(); ++l)
      EXPECT_TRUE(r.forced[l].ok)
          << name << " bf16 layer " << l << ": " << r.forced[l].describe();
    std::cout << "  " << name << " 8 layers bf16: per layer on its own";
    for (const Compare &c : r.forced)
      std::cout << " " << c.rel;
    std::cout << "\n    end-to-end drift per layer" << driftString(r) << "\n";

    plan.gqaSplits = 3;
    ModelRun f =
        runModel<float>(rng, qwen3, 32, 8, plan, kF32ModelBound, contexts);
    EXPECT_TRUE(f.final.ok) << name << " f32: " << f.final.describe();
    std::cout << "  " << name << " 8 layers f32: end-to-end rel error "
              << f.final.rel << "\n";
  }
}

/// The `head: true` variant: embedding -> stack -> final norm -> LM head
/// (bf16 in, f32 logits) -> argmax.
TEST(DecoderModel, HeadVariant) {
  Rng rng(testSeed());
  const int64_t vocab = 97;
  TinyModel m = makeModel(rng, tinyShape(false, 64), 2, kContexts, vocab);
  const int64_t B = m.meta.batch, MB = m.maxBatch, hid = m.shape.hidden;
  oracle::HeadResult ref =
      oracle::decoderWithHead(m.shape, m.ow, m.head, m.tokenIds, m.meta, m.oc);

  Plan plan;
  plan.order = Order::Shuffled;
  auto ids = cast<int32_t>(m.tokenIds);
  std::vector<bf16> x0 = poisoned<bf16>(MB * hid);
  bool ok = true;
  runPhase(numTiles(B, 2), plan.order, rng, [&](int64_t i) {
    Range r = tileOf(i, B, 2);
    ok &= host::embedding(m.embed.data(), ids.data(), x0.data(), vocab, hid,
                          r.begin, r.end);
  });
  ASSERT_TRUE(ok);
  std::vector<bf16> hidden = poisoned<bf16>(MB * hid);
  {
    Vec got = runStack<bf16>(m, x0, plan, rng).back();
    for (int64_t i = 0; i < B * hid; ++i)
      store(hidden.data(), i, float(got[i])); // exact: got came from bf16
  }
  std::vector<bf16> hf = poisoned<bf16>(MB * hid);
  runPhase(numTiles(B, 2), plan.order, rng, [&](int64_t i) {
    Range r = tileOf(i, B, 2);
    host::rmsnormRows(hidden.data(), m.finalNorm.data(), hf.data(), hid,
                      float(m.shape.rmsEps), r.begin, r.end);
  });
  std::vector<float> logits = poisoned<float>(MB * vocab);
  runLinear(hf.data(), m.lmHead.data(), (const float *)nullptr, logits.data(),
            B, MB, hid, vocab, 13, 1, plan.order, rng);
  std::vector<int32_t> next(B, -1);
  runPhase(B, plan.order, rng, [&](int64_t b) {
    host::argmaxRows(logits.data(), next.data(), vocab, b, b + 1);
  });

  Vec gotLogits = toVec(logits.data(), B * vocab);
  Compare c = compareRel(gotLogits, ref.logits, kModelBound);
  EXPECT_TRUE(c.ok) << "logits: " << c.describe();
  std::cout << "  head variant: logits rel error " << c.rel << "\n";
  // Argmax is exact on the kernel's own logits; it must agree with the
  // oracle wherever the oracle's top-2 margin exceeds the logits' error.
  IVec own = oracle::argmax(gotLogits, vocab);
  double maxErr = 0;
  for (int64_t i = 0; i < B * vocab; ++i)
    maxErr = std::max(maxErr, std::fabs(gotLogits[i] - ref.logits[i]));
  for (int64_t b = 0; b < B; ++b) {
    EXPECT_EQ(next[b], own[b]) << "request " << b;
    Vec row(ref.logits.begin() + b * vocab,
            ref.logits.begin() + (b + 1) * vocab);
    std::sort(row.rbegin(), row.rend());
    if (row[0] - row[1] > 2 * maxErr) {
      EXPECT_EQ(next[b], ref.tokens[b]) << "request " << b;
    }
  }
}

//===----------------------------------------------------------------------===//
// Model-level negative tests: the comparison catches real mistakes
//===----------------------------------------------------------------------===//

TEST(DecoderModelNegative, MistakesAreCaught) {
  Rng rng(testSeed());
  {
    // A dropped attention split: its pair's output is wrong (zero, as its
    // only partial's lse is NaN at these short contexts). The first
    // batch x Hkv (>= 2) split tasks always have work.
    Plan plan;
    plan.skipGqaTask = rng.index(2);
    Compare c = runModel<bf16>(rng, false, 64, 2, plan, kModelBound).final;
    EXPECT_FALSE(c.ok) << "skipped gqa task: " << c.describe();
  }
  {
    Plan plan; // Qwen3 without its q/k norm
    plan.skipQkNorm = true;
    Compare c = runModel<bf16>(rng, true, 64, 2, plan, kModelBound).final;
    EXPECT_FALSE(c.ok) << "missing q/k norm: " << c.describe();
    std::cout << "  missing q/k norm: rel error " << c.rel << "\n";
  }
  {
    Plan plan; // RoPE one position off
    plan.positionShift = 1;
    Compare c = runModel<bf16>(rng, false, 64, 2, plan, kModelBound).final;
    EXPECT_FALSE(c.ok) << "rope position off by one: " << c.describe();
    std::cout << "  rope off by one: rel error " << c.rel << "\n";
  }
  {
    Plan plan; // a correct run, with one output element nudged by 5%
    TinyModel m = makeModel(rng, tinyShape(false, 64), 2, kContexts, 1);
    Vec ref = oracle::decoderStack(m.shape, m.ow, m.xRef, m.meta, m.oc);
    Vec got = runStack<bf16>(m, m.x, plan, rng).back();
    EXPECT_TRUE(compareRel(got, ref, kModelBound).ok);
    double norm = 0;
    for (double v : ref)
      norm += v * v;
    got[rng.index(int64_t(got.size()))] += 0.05 * std::sqrt(norm);
    EXPECT_FALSE(compareRel(got, ref, kModelBound).ok);
  }
}

} // namespace
