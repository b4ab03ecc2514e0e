//===- MlaBodiesTest.cpp - MLA decode host bodies vs the fp64 oracle ------===//
//
// Drives the split/merge task bodies the way a scheduler would (every phase 0
// slot, then every phase 1 merge task; also shuffled and on several threads)
// and compares with the independent fp64 oracle.
//
// Metrics (max abs error against atol + rtol * |ref|, elementwise):
//  * o: atol = rtol = 1e-2 (DESIGN.md "MLA paged decode"), o rounded to T
//    against the fp64 oracle. For T = float there is no storage rounding, so
//    o is also held to atol = rtol = 1e-4 (tighter, not wider).
//  * lse (fp32, base 2): atol = 1e-3, rtol = 1e-4.
//  * Empty requests: o exactly 0 and lse exactly -inf.
//  * Rows b >= run-time batch of o and lse keep their poison bit pattern.
//
// Inputs are fresh random non-zero values each run; the seed is printed and
// recorded, and LOOM_SEED=<n> fixes it. Outputs and the workspace are
// poisoned with NaN before every launch; unused cache slots hold NaN.
//
//===----------------------------------------------------------------------===//

#include "kernels/host/MlaBodies.h"
#include "tools/oracle/MlaOracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace loom;
using loom::host::MlaParams;

namespace {

//===----------------------------------------------------------------------===//
// Seeds, poison
//===----------------------------------------------------------------------===//

uint64_t baseSeed() {
  static const uint64_t seed = [] {
    if (const char *env = std::getenv("LOOM_SEED"))
      return uint64_t(std::strtoull(env, nullptr, 0));
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  return seed;
}

/// A per-test generator: the run's seed mixed with the test name, so one
/// LOOM_SEED reproduces every test and tests do not share streams.
std::mt19937_64 testRng() {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (char c : name)
    h = (h ^ uint8_t(c)) * 1099511628211ull;
  ::testing::Test::RecordProperty("seed", std::to_string(baseSeed()));
  std::cout << "[   seed   ] LOOM_SEED=" << baseSeed() << " (" << name << ")\n";
  return std::mt19937_64(baseSeed() ^ h);
}

template <typename T> T poisonValue();
template <> bf16 poisonValue<bf16>() { return bf16{0x7fc0}; }
template <> f16 poisonValue<f16>() { return f16{0x7e00}; }
template <> float poisonValue<float>() {
  return std::numeric_limits<float>::quiet_NaN();
}

template <typename T> bool isPoison(T v) {
  T p = poisonValue<T>();
  return std::memcmp(&v, &p, sizeof(T)) == 0;
}

//===----------------------------------------------------------------------===//
// Comparison (returns a result so the negative tests can inspect it)
//===----------------------------------------------------------------------===//

struct CompareResult {
  int64_t mismatches = 0;
  int64_t firstBad = -1;
  double firstGot = 0, firstRef = 0;
  double maxAbsErr = 0; ///< over finite reference entries

  bool ok() const { return mismatches == 0; }
  std::string describe(const char *what) const {
    std::ostringstream os;
    os << what << ": " << mismatches << " mismatches, max |err| " << maxAbsErr;
    if (firstBad >= 0)
      os << "; first at " << firstBad << ": got " << firstGot << ", ref "
         << firstRef;
    return os.str();
  }
};

/// |got - ref| <= atol + rtol * |ref|, NaN failing; an infinite reference
/// must be matched exactly.
CompareResult compareClose(const std::vector<double> &got,
                           const std::vector<double> &ref, double atol,
                           double rtol) {
  CompareResult r;
  for (size_t i = 0; i < ref.size(); ++i) {
    bool good;
    if (std::isinf(ref[i])) {
      good = got[i] == ref[i];
    } else {
      double err = std::fabs(got[i] - ref[i]);
      good = err <= atol + rtol * std::fabs(ref[i]); // false for NaN
      if (std::isfinite(err))
        r.maxAbsErr = std::max(r.maxAbsErr, err);
    }
    if (!good) {
      if (r.firstBad < 0) {
        r.firstBad = int64_t(i);
        r.firstGot = got[i];
        r.firstRef = ref[i];
      }
      ++r.mismatches;
    }
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Test rig: buffers sized for a max batch and a page pool, refilled per launch
//===----------------------------------------------------------------------===//

struct MlaDims {
  int64_t numHeads, dimCkv, dimKpe, pageSize;
  float smScale;
};

constexpr double kOAtol = 1e-2, kORtol = 1e-2;
constexpr double kOAtolF32 = 1e-4, kORtolF32 = 1e-4;
constexpr double kLseAtol = 1e-3, kLseRtol = 1e-4;

template <typename T> class MlaRig {
public:
  MlaRig(const MlaDims &dims, int64_t maxBatch, int64_t numPages)
      : d(dims), maxBatch(maxBatch), numPages(numPages) {
    const int64_t H = d.numHeads, Dc = d.dimCkv, Dp = d.dimKpe, P = d.pageSize;
    qNope.resize(maxBatch * H * Dc);
    qPe.resize(maxBatch * H * Dp);
    ckv.resize(numPages * P * Dc);
    kpe.resize(numPages * P * Dp);
    o.resize(maxBatch * H * Dc);
    lse.resize(maxBatch * H);
    indptr.resize(maxBatch + 1);
    indices.resize(numPages);
    lens.resize(maxBatch);
  }

  /// Fresh inputs for one launch: random queries, a page table drawn from a
  /// shuffled pool (some requests get a spare page they do not use), random
  /// rows for every used token and NaN everywhere else in the cache.
  void fill(std::mt19937_64 &rng, const std::vector<int32_t> &reqLens) {
    const int64_t P = d.pageSize;
    batch = int64_t(reqLens.size());
    ASSERT_LE(batch, maxBatch);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    for (auto &v : qNope)
      store(&v, 0, uni(rng));
    for (auto &v : qPe)
      store(&v, 0, uni(rng));

    std::vector<int32_t> pool(numPages);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    std::fill(ckv.begin(), ckv.end(), poisonValue<T>());
    std::fill(kpe.begin(), kpe.end(), poisonValue<T>());
    // Entries the page table does not use: ids far outside the cache.
    std::fill(indptr.begin(), indptr.end(), -1);
    std::fill(indices.begin(), indices.end(), 0x3fffffff);
    std::fill(lens.begin(), lens.end(), -1);

    int64_t next = 0;
    indptr[0] = 0;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t len = reqLens[b];
      int64_t pages = (len + P - 1) / P + int64_t(rng() % 2); // maybe a spare
      ASSERT_LE(next + pages, numPages) << "pool too small for the test";
      for (int64_t k = 0; k < pages; ++k)
        indices[next + k] = pool[next + k];
      for (int64_t t = 0; t < len; ++t) {
        int64_t row = int64_t(indices[next + t / P]) * P + t % P;
        for (int64_t i = 0; i < d.dimCkv; ++i)
          store(ckv.data(), row * d.dimCkv + i, uni(rng));
        for (int64_t i = 0; i < d.dimKpe; ++i)
          store(kpe.data(), row * d.dimKpe + i, uni(rng));
      }
      next += pages;
      indptr[b + 1] = int32_t(next);
      lens[b] = int32_t(len);
    }
  }

  MlaParams<T> params() {
    MlaParams<T> p;
    p.qNope = qNope.data();
    p.qPe = qPe.data();
    p.ckvCache = ckv.data();
    p.kpeCache = kpe.data();
    p.kvIndptr = indptr.data();
    p.kvIndices = indices.data();
    p.kvLens = lens.data();
    p.o = o.data();
    p.lse = lse.data();
    p.batch = batch;
    p.numHeads = d.numHeads;
    p.dimCkv = d.dimCkv;
    p.dimKpe = d.dimKpe;
    p.pageSize = d.pageSize;
    p.numPages = numPages;
    p.numIndices = int64_t(indices.size());
    p.smScale = d.smScale;
    return p;
  }

  oracle::MlaOracleResult oracle() const {
    auto toF = [](const std::vector<T> &v) {
      std::vector<float> out(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        out[i] = toFloat(v[i]);
      return out;
    };
    oracle::MlaShape s;
    s.batch = batch;
    s.numHeads = d.numHeads;
    s.dimCkv = d.dimCkv;
    s.dimKpe = d.dimKpe;
    s.pageSize = d.pageSize;
    s.smScale = d.smScale;
    return oracle::mlaDecodeOracle(toF(qNope), toF(qPe), toF(ckv), toF(kpe),
                                   indptr, indices, lens, s);
  }

  void poisonOutputs() {
    std::fill(o.begin(), o.end(), poisonValue<T>());
    std::fill(lse.begin(), lse.end(), poisonValue<float>());
  }

  MlaDims d;
  int64_t maxBatch, numPages, batch = 0;
  std::vector<T> qNope, qPe, ckv, kpe, o;
  std::vector<float> lse, workspace;
  std::vector<int32_t> indptr, indices, lens;
};

//===----------------------------------------------------------------------===//
// Scheduler stand-in
//===----------------------------------------------------------------------===//

enum class Order { InOrder, Shuffled, Threads };

/// Runs each task index through `body`: in order, shuffled, or pulled from a
/// shared counter by four threads (joined before returning: the phase
/// barrier).
template <typename Body>
void runPhase(int64_t numTasks, Order order, std::mt19937_64 &rng, Body body) {
  std::vector<int64_t> ids(numTasks);
  std::iota(ids.begin(), ids.end(), 0);
  if (order != Order::InOrder)
    std::shuffle(ids.begin(), ids.end(), rng);
  if (order != Order::Threads) {
    for (int64_t id : ids)
      body(id);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int64_t k; (k = next.fetch_add(1)) < numTasks;)
        body(ids[k]);
    });
  for (auto &t : threads)
    t.join();
}

struct LaunchOptions {
  Order order = Order::InOrder;
  int64_t skipSlot = -1;  ///< negative tests: a phase 0 task not run
  int64_t skipMerge = -1; ///< negative tests: a phase 1 task not run
  /// The bodies' minSlotTokens: 1 makes every slot with a token active (the
  /// most pieces per request); the default is what emitted code uses.
  int64_t minSlotTokens = host::kMlaMinSlotTokens;
};

/// One launch: poison outputs and workspace, phase 0 over W slots, phase 1
/// over M merge tasks.
template <typename T>
void launch(MlaRig<T> &rig, int64_t numSlots, int64_t numMerge,
            std::mt19937_64 &rng, LaunchOptions opts = {}) {
  const int64_t H = rig.d.numHeads, Dc = rig.d.dimCkv;
  rig.poisonOutputs();
  rig.workspace.assign(host::mlaWorkspaceFloats(numSlots, rig.maxBatch, H, Dc),
                       std::numeric_limits<float>::quiet_NaN());
  float *partialO = rig.workspace.data();
  float *partialLse =
      partialO + host::mlaPartialOFloats(numSlots, rig.maxBatch, H, Dc);
  const MlaParams<T> p = rig.params();

  runPhase(numSlots, opts.order, rng, [&](int64_t w) {
    if (w != opts.skipSlot)
      host::mlaSplit(p, w, numSlots, partialO, partialLse, opts.minSlotTokens);
  });
  runPhase(numMerge, opts.order, rng, [&](int64_t i) {
    if (i != opts.skipMerge)
      host::mlaMerge(p, i, numMerge, numSlots, partialO, partialLse,
                     opts.minSlotTokens);
  });
}

struct CheckResult {
  CompareResult o, oTight, lse; ///< oTight: the fp32 bound, T = float only
  bool hasTight = false;
  int64_t emptyNotZero = 0; ///< empty requests whose o is not exactly 0
  int64_t clobbered = 0;    ///< rows b >= batch that lost their poison

  bool ok() const {
    return o.ok() && oTight.ok() && lse.ok() && emptyNotZero == 0 &&
           clobbered == 0;
  }
  std::string describe() const {
    return o.describe("o") + "\n" +
           (hasTight ? oTight.describe("o (fp32 bound)") + "\n" : "") +
           lse.describe("lse") +
           "\nempty requests with o != 0: " + std::to_string(emptyNotZero) +
           "\nrows past batch written: " + std::to_string(clobbered);
  }
};

template <typename T>
CheckResult check(const MlaRig<T> &rig, const oracle::MlaOracleResult &ref) {
  const int64_t H = rig.d.numHeads, Dc = rig.d.dimCkv, B = rig.batch;
  CheckResult r;
  std::vector<double> o(B * H * Dc), lse(B * H);
  for (int64_t i = 0; i < B * H * Dc; ++i)
    o[i] = toFloat(rig.o[i]);
  for (int64_t i = 0; i < B * H; ++i)
    lse[i] = rig.lse[i];
  r.o = compareClose(o, ref.o, kOAtol, kORtol);
  r.hasTight = std::is_same<T, float>::value;
  if (r.hasTight)
    r.oTight = compareClose(o, ref.o, kOAtolF32, kORtolF32);
  r.lse = compareClose(lse, ref.lse, kLseAtol, kLseRtol);
  for (int64_t b = 0; b < B; ++b)
    if (rig.lens[b] == 0)
      for (int64_t i = 0; i < H * Dc; ++i)
        r.emptyNotZero += o[b * H * Dc + i] != 0.0;
  for (int64_t i = B * H * Dc; i < int64_t(rig.o.size()); ++i)
    r.clobbered += !isPoison(rig.o[i]);
  for (int64_t i = B * H; i < int64_t(rig.lse.size()); ++i)
    r.clobbered += !isPoison(rig.lse[i]);
  return r;
}

int64_t pagesFor(const std::vector<int32_t> &lens, int64_t pageSize) {
  int64_t n = 0;
  for (int32_t l : lens)
    n += (l + pageSize - 1) / pageSize + 1; // room for a spare page each
  return n;
}

/// Fills a rig once and checks every (W, M) combination on it.
template <typename T>
void checkAllCounts(std::mt19937_64 &rng, const MlaDims &dims,
                    const std::vector<int32_t> &lens,
                    const std::vector<int64_t> &slotCounts,
                    const std::vector<int64_t> &mergeCounts,
                    Order order = Order::InOrder) {
  // A pool larger than needed, so the page ids are scattered.
  MlaRig<T> rig(dims, int64_t(lens.size()) + 2,
                pagesFor(lens, dims.pageSize) * 3 / 2 + 3);
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
  oracle::MlaOracleResult ref = rig.oracle();
  // Dense slots (every slot with a token active) stress the piece
  // bookkeeping; the default is what the emitted kernels run.
  for (int64_t minTok : {int64_t(1), host::kMlaMinSlotTokens}) {
    for (int64_t w : slotCounts) {
      for (int64_t m : mergeCounts) {
        LaunchOptions opts;
        opts.order = order;
        opts.minSlotTokens = minTok;
        launch(rig, w, m, rng, opts);
        CheckResult r = check(rig, ref);
        EXPECT_TRUE(r.ok()) << "W=" << w << " M=" << m << " min=" << minTok
                            << "\n"
                            << r.describe();
        if (std::getenv("LOOM_VERBOSE"))
          std::cout << "W=" << w << " M=" << m << " min=" << minTok << "\n"
                    << r.describe() << "\n";
      }
    }
  }
}

template <typename T>
void checkAllCounts(const MlaDims &dims, const std::vector<int32_t> &lens,
                    const std::vector<int64_t> &slotCounts,
                    const std::vector<int64_t> &mergeCounts,
                    Order order = Order::InOrder) {
  std::mt19937_64 rng = testRng();
  checkAllCounts<T>(rng, dims, lens, slotCounts, mergeCounts, order);
}

// The real DeepSeek-V3 scale and two sharper ones (more peaked softmax,
// more rescaling in the online update).
constexpr float kDeepSeekScale = 0.1352337747812271f;

//===----------------------------------------------------------------------===//
// Slot arithmetic
//===----------------------------------------------------------------------===//

// Active slots tile the tokens in order, none empty, each between
// minSlotTokens / 2 and minSlotTokens tokens unless all W are active, and
// slotOf inverts begin/end.
TEST(MlaSlots, ActiveSlotsTileTheTokens) {
  for (int64_t total = 0; total <= 700; total += (total < 80 ? 1 : 37)) {
    for (int64_t numSlots : {1, 2, 3, 5, 7, 64, 132, 200}) {
      for (int64_t minTok : {int64_t(1), int64_t(7), host::kMlaMinSlotTokens}) {
        const host::MlaSlots s = host::mlaSlots(total, numSlots, minTok);
        const int64_t want =
            std::clamp<int64_t>((total + minTok - 1) / minTok, 1, numSlots);
        ASSERT_EQ(s.active, want) << total << " W=" << numSlots;
        int64_t covered = 0;
        for (int64_t w = 0; w < s.active; ++w) {
          ASSERT_EQ(s.begin(w), covered) << "slots must tile the tokens";
          const int64_t len = s.end(w) - s.begin(w);
          if (total > 0) {
            ASSERT_GE(len, 1) << "an active slot is never empty";
            if (s.active < numSlots && total >= minTok) {
              ASSERT_LE(len, minTok);
              ASSERT_GE(2 * len, minTok);
            }
          }
          for (int64_t t = s.begin(w); t < s.end(w); ++t)
            ASSERT_EQ(s.slotOf(t), w)
                << "t=" << t << " total=" << total << " W=" << numSlots;
          covered = s.end(w);
        }
        ASSERT_EQ(covered, total);
      }
    }
  }
}

// The merge reads slots slotOf(lo) .. slotOf(hi - 1) of a request [lo, hi):
// exactly the slots whose ranges meet it.
TEST(MlaSlots, FirstToLastSlotAreExactlyTheTouchingSlots) {
  for (int64_t total = 1; total <= 40; ++total) {
    for (int64_t numSlots : {1, 3, 7, 50, 132}) {
      for (int64_t minTok : {1, 4}) {
        const host::MlaSlots s = host::mlaSlots(total, numSlots, minTok);
        for (int64_t lo = 0; lo < total; ++lo) {
          for (int64_t hi = lo + 1; hi <= total; ++hi) {
            int64_t first = -1, last = -1, touching = 0;
            for (int64_t w = 0; w < numSlots; ++w) {
              const int64_t b = w < s.active ? s.begin(w) : total;
              const int64_t e = w < s.active ? s.end(w) : total;
              if (std::max(b, lo) < std::min(e, hi)) {
                if (first < 0)
                  first = w;
                last = w;
                ++touching;
              }
            }
            ASSERT_EQ(s.slotOf(lo), first) << lo << ".." << hi;
            ASSERT_EQ(s.slotOf(hi - 1), last) << lo << ".." << hi;
            ASSERT_EQ(touching, last - first + 1) << "no gap in the span";
          }
        }
      }
    }
  }
}

// Large token counts: the arithmetic holds past 32 bits.
TEST(MlaSlots, LargeTotals) {
  for (int64_t total : {int64_t(1) << 31, (int64_t(1) << 33) + 12345}) {
    const host::MlaSlots s = host::mlaSlots(total, 132, 128);
    ASSERT_EQ(s.active, 132);
    ASSERT_EQ(s.begin(132), total);
    for (int64_t w : {0, 1, 77, 131}) {
      ASSERT_EQ(s.slotOf(s.begin(w)), w);
      ASSERT_EQ(s.slotOf(s.end(w) - 1), w);
    }
  }
}

TEST(MlaSlots, PieceIndicesAreUniqueAndBounded) {
  std::mt19937_64 rng = testRng();
  for (int trial = 0; trial < 200; ++trial) {
    int64_t batch = 1 + rng() % 12;
    std::vector<int64_t> cum{0};
    for (int64_t b = 0; b < batch; ++b)
      cum.push_back(cum.back() + int64_t(rng() % 4 == 0 ? 0 : rng() % 20));
    int64_t total = cum.back();
    if (total == 0)
      continue;
    for (int64_t numSlots : {1, 3, 7, 132}) {
      for (int64_t minTok : {1, 5, 128}) {
        const host::MlaSlots s = host::mlaSlots(total, numSlots, minTok);
        std::vector<int> used(numSlots + batch, 0);
        for (int64_t w = 0; w < s.active; ++w) {
          for (int64_t b = 0; b < batch; ++b) {
            if (std::max(s.begin(w), cum[b]) < std::min(s.end(w), cum[b + 1])) {
              const int64_t piece = host::MlaSlots::piece(w, b);
              ASSERT_LT(piece, numSlots + batch);
              ASSERT_EQ(used.at(piece)++, 0) << "piece " << piece << " twice";
            }
          }
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Bodies against the oracle
//===----------------------------------------------------------------------===//

// Empty, single-token, partial and exactly full last pages, a long request
// over many slots; every W and M from the brief.
TEST(MlaBodies, MixedBatchBf16AllCounts) {
  checkAllCounts<bf16>({16, 512, 64, 16, kDeepSeekScale},
                       {0, 1, 37, 16, 300, 0, 5, 129, 2}, {1, 3, 7, 132},
                       {1, 5, 64});
}

TEST(MlaBodies, MixedBatchFloatShuffled) {
  checkAllCounts<float>({4, 64, 16, 16, 0.5f}, {33, 0, 1, 250, 16, 7},
                        {1, 3, 7, 132}, {1, 5, 64}, Order::Shuffled);
}

TEST(MlaBodies, PageSize1Float) {
  checkAllCounts<float>({4, 64, 16, 1, 0.5f},
                        {3, 0, 1, 41, 400, 2, 0, 17, 9, 1, 64, 5},
                        {1, 3, 7, 132}, {1, 5, 64});
}

TEST(MlaBodies, PageSize1Bf16RealDims) {
  checkAllCounts<bf16>({16, 512, 64, 1, kDeepSeekScale}, {150, 0, 1, 77},
                       {3, 132}, {5});
}

TEST(MlaBodies, PageSize64LongRequestsBf16) {
  checkAllCounts<bf16>({16, 512, 64, 64, 0.3f}, {700, 130, 64, 0, 1},
                       {1, 7, 132}, {1, 64});
}

// The batch measured on the H200 (a 1000-token request among short ones),
// at the real dims: the default slots (E = 11 of 132) and dense ones (a
// request over ~98 pieces).
TEST(MlaBodies, MeasuredBatchRealDims) {
  checkAllCounts<bf16>({16, 512, 64, 1, kDeepSeekScale},
                       {0, 1, 37, 7, 300, 1000}, {132}, {6});
}

TEST(MlaBodies, Heads128Bf16) {
  checkAllCounts<bf16>({128, 512, 64, 64, kDeepSeekScale}, {70, 0, 3, 130}, {7},
                       {5});
}

TEST(MlaBodies, Heads8F16) {
  checkAllCounts<f16>({8, 512, 64, 64, kDeepSeekScale}, {90, 1, 0, 64},
                      {3, 132}, {1, 5});
}

// Dozens of short requests inside one slot's range.
TEST(MlaBodies, ManyShortRequestsPerSlot) {
  std::mt19937_64 rng = testRng();
  std::vector<int32_t> lens(48);
  for (auto &l : lens)
    l = int32_t(rng() % 4);
  lens[5] = 0;
  lens[6] = 3;
  checkAllCounts<float>(rng, {4, 64, 16, 16, 0.5f}, lens, {1, 3}, {1, 5, 64});
}

TEST(MlaBodies, MoreSlotsThanTokens) {
  checkAllCounts<bf16>({4, 64, 16, 4, 1.0f}, {0, 2, 0, 1, 3, 0}, {7, 132},
                       {1, 5, 64});
}

TEST(MlaBodies, AllRequestsEmpty) {
  checkAllCounts<bf16>({4, 64, 16, 16, 0.5f}, {0, 0, 0}, {1, 7}, {1, 5});
}

// Tasks within a phase are independent: shuffled and threaded runs must give
// bit-identical outputs to the in-order run.
TEST(MlaBodies, OrderAndThreadsGiveIdenticalBits) {
  std::mt19937_64 rng = testRng();
  std::vector<int32_t> lens{200, 3, 0, 65, 1, 120};
  MlaRig<bf16> rig({16, 512, 64, 16, kDeepSeekScale}, 8,
                   pagesFor(lens, 16) * 2);
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
  launch(rig, 7, 5, rng);
  ASSERT_TRUE(check(rig, rig.oracle()).ok());
  std::vector<bf16> o0 = rig.o;
  std::vector<float> lse0 = rig.lse;
  for (Order order : {Order::Shuffled, Order::Threads}) {
    launch(rig, 7, 5, rng, {order});
    EXPECT_EQ(std::memcmp(o0.data(), rig.o.data(), o0.size() * sizeof(bf16)),
              0);
    EXPECT_EQ(
        std::memcmp(lse0.data(), rig.lse.data(), lse0.size() * sizeof(float)),
        0);
  }
}

// Launches back to back on the same buffers with different run-time batches
// and fresh inputs; everything is re-poisoned before each, and rows past the
// run-time batch must stay untouched.
TEST(MlaBodies, RepeatedLaunchesOnSameBuffers) {
  std::mt19937_64 rng = testRng();
  const std::vector<std::vector<int32_t>> launches{
      {40, 0, 1, 17, 100, 3, 0, 64, 9, 2},
      {5, 130},
      {0, 1, 0, 33, 80, 2, 16},
      {1}};
  MlaRig<bf16> rig({16, 512, 64, 16, kDeepSeekScale}, 10, 40);
  for (const auto &lens : launches) {
    ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
    launch(rig, 7, 5, rng, {Order::Shuffled});
    CheckResult r = check(rig, rig.oracle());
    EXPECT_TRUE(r.ok()) << "batch " << lens.size() << "\n" << r.describe();
  }
}

//===----------------------------------------------------------------------===//
// Negative tests: the check must be able to fail
//===----------------------------------------------------------------------===//

TEST(MlaBodiesNegative, SkippedSplitTaskIsCaught) {
  std::mt19937_64 rng = testRng();
  std::vector<int32_t> lens{50, 0, 20, 31};
  MlaRig<bf16> rig({4, 64, 16, 16, 0.5f}, 4, pagesFor(lens, 16) * 2);
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
  oracle::MlaOracleResult ref = rig.oracle();
  launch(rig, 7, 5, rng);
  ASSERT_TRUE(check(rig, ref).ok());
  LaunchOptions dense;
  dense.minSlotTokens = 1; // 101 tokens: slot 3 of 7 is active
  launch(rig, 7, 5, rng, dense);
  ASSERT_TRUE(check(rig, ref).ok());
  dense.skipSlot = 3;
  launch(rig, 7, 5, rng, dense);
  CheckResult r = check(rig, ref);
  EXPECT_FALSE(r.ok());
  EXPECT_GT(r.o.mismatches, 0);
  EXPECT_GT(r.lse.mismatches, 0);
}

TEST(MlaBodiesNegative, SkippedMergeTaskIsCaught) {
  std::mt19937_64 rng = testRng();
  std::vector<int32_t> lens{50, 0, 20, 31};
  MlaRig<bf16> rig({4, 64, 16, 16, 0.5f}, 4, pagesFor(lens, 16) * 2);
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
  oracle::MlaOracleResult ref = rig.oracle();
  launch(rig, 7, 2, rng, {Order::InOrder, -1, /*skipMerge=*/1});
  CheckResult r = check(rig, ref);
  EXPECT_FALSE(r.ok());
  // Task 1 of 2 owns requests 1 and 3: every element of both is poison.
  EXPECT_EQ(r.o.mismatches, 2 * 4 * 64);
  EXPECT_EQ(r.lse.mismatches, 2 * 4);
}

TEST(MlaBodiesNegative, PerturbedOutputsAreCaught) {
  std::mt19937_64 rng = testRng();
  std::vector<int32_t> lens{50, 0, 20, 31};
  MlaRig<bf16> rig({4, 64, 16, 16, 0.5f}, 4, pagesFor(lens, 16) * 2);
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, lens));
  oracle::MlaOracleResult ref = rig.oracle();
  launch(rig, 3, 1, rng);
  ASSERT_TRUE(check(rig, ref).ok());

  // One o element moved by 0.05 + 2% of the reference, past the 1e-2 bound.
  const int64_t i = 2 * 4 * 64 + 77; // request 2, head 1, column 13
  bf16 saved = rig.o[i];
  rig.o[i] = toBf16(float(ref.o[i] + 0.05 + 0.02 * std::fabs(ref.o[i])));
  CheckResult r = check(rig, ref);
  EXPECT_EQ(r.o.mismatches, 1);
  EXPECT_EQ(r.o.firstBad, i);
  rig.o[i] = saved;

  // One lse moved by 2e-3 + 2e-4 * |ref|, past 1e-3 + 1e-4 * |ref|.
  float savedLse = rig.lse[3 * 4 + 2];
  rig.lse[3 * 4 + 2] += 2e-3f + 2e-4f * std::fabs(savedLse);
  EXPECT_EQ(check(rig, ref).lse.mismatches, 1);
  rig.lse[3 * 4 + 2] = savedLse;

  // An empty request must report exactly -inf and exactly zero o.
  rig.lse[1 * 4 + 0] = -1e30f;
  EXPECT_EQ(check(rig, ref).lse.mismatches, 1);
  rig.lse[1 * 4 + 0] = -std::numeric_limits<float>::infinity();
  rig.o[1 * 4 * 64 + 5] = toBf16(1e-3f);
  EXPECT_EQ(check(rig, ref).emptyNotZero, 1);
  rig.o[1 * 4 * 64 + 5] = toBf16(0.f);

  // A write past the run-time batch is reported.
  ASSERT_NO_FATAL_FAILURE(rig.fill(rng, {10, 4}));
  ref = rig.oracle();
  launch(rig, 3, 1, rng);
  ASSERT_TRUE(check(rig, ref).ok());
  rig.lse[3 * 4] = 0.f;
  EXPECT_EQ(check(rig, ref).clobbered, 1);
}

// The oracle must not silently read past a request's pages.
TEST(MlaOracle, RejectsShortPageTable) {
  oracle::MlaShape s{1, 1, 2, 1, 2, 1.0};
  std::vector<float> q(2, 1.f), qp(1, 1.f), ckv(8, 1.f), kpe(4, 1.f);
  EXPECT_THROW(oracle::mlaDecodeOracle(q, qp, ckv, kpe, {0, 1}, {0}, {3}, s),
               std::invalid_argument);
  EXPECT_THROW(oracle::mlaDecodeOracle(q, qp, ckv, kpe, {0, 1}, {7}, {1}, s),
               std::invalid_argument);
}

} // namespace
