//===- CheckTest.cpp - LoomCheck: inputs, page tables, metrics, harness ---===//
//
// The parts of tools/check that need no compiler: the generator, storage
// tensors and poison, the page tables (distinct ids, about half consecutive,
// NaN tails, crowded pools, too-small pools), the metrics (each one must
// fail on NaN, on a perturbation and on drift), and runAndCheck itself on a
// hand-written mla_decode program (CheckTestProgram.cpp) built once right
// and once per kind of wrong: each wrong variant must fail the check it
// breaks, and only that one.
//
//===----------------------------------------------------------------------===//
#include "tools/check/Check.h"
#include "tools/check/CheckInternal.h"
#include "tools/check/CheckUtil.h"

#include "kernels/common/ProgramAbi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace loom::check;
using namespace loom::check::detail;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Rng, tensors, poison
//===----------------------------------------------------------------------===//

TEST(CheckRng, DeterministicAndRoughlyNormal) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(Rng(42).next(), c.next());
  Rng r(7);
  double sum = 0, sumSq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = r.normal(1.0, 2.0);
    sum += x;
    sumSq += x * x;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);
  for (int i = 0; i < 1000; ++i) {
    int64_t k = r.index(5);
    EXPECT_GE(k, 0);
    EXPECT_LT(k, 5);
    double u = r.uniform(-1, 3);
    EXPECT_GE(u, -1);
    EXPECT_LT(u, 3);
  }
  EXPECT_NE(randomSeed(), 0u);
}

TEST(CheckTensor, StorageRoundingAndPoison) {
  HostTensor t(LOOM_ELEM_BF16, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.sizeBytes(), 12u);
  t.set(0, 1.0 + 1.0 / 512); // halfway: rounds to even (1.0)
  EXPECT_EQ(t.get(0), 1.0);
  t.set(1, 3.140625);
  EXPECT_EQ(t.get(1), 3.140625);
  t.set(2, kNaN);
  EXPECT_TRUE(std::isnan(t.get(2)));

  for (int32_t elem : {LOOM_ELEM_BF16, LOOM_ELEM_F16, LOOM_ELEM_F32}) {
    HostTensor p = poisonTensor(elem, 4);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(std::isnan(p.get(i))) << elemName(elem);
      EXPECT_TRUE(isPoison(p, i));
    }
    p.set(1, 0.5);
    EXPECT_FALSE(isPoison(p, 1));
  }
  HostTensor ints = poisonTensor(LOOM_ELEM_I32, 2);
  EXPECT_EQ(ints.get(0), -1);
  HostTensor wide = poisonTensor(LOOM_ELEM_I64, 2);
  EXPECT_EQ(wide.get(1), -1);

  HostTensor f(LOOM_ELEM_F16, {3});
  f.set(0, 0.1);
  EXPECT_NEAR(f.get(0), 0.1, 1e-4);
  EXPECT_NE(f.get(0), 0.1); // rounded to f16

  HostTensor nz(LOOM_ELEM_BF16, {1000});
  Rng r(1);
  int calls = 0;
  fillNonZero(nz, [&] { return ++calls % 3 == 0 ? 1e-30 * 0 : r.normal(); });
  for (int64_t i = 0; i < nz.numel(); ++i)
    EXPECT_NE(nz.get(i), 0.0);
}

//===----------------------------------------------------------------------===//
// Page tables
//===----------------------------------------------------------------------===//

void expectValidTable(const PageTable &t, const std::vector<int64_t> &lens,
                      int64_t P, int64_t maxPages) {
  ASSERT_EQ(t.batch(), int64_t(lens.size()));
  ASSERT_EQ(t.indptr.size(), lens.size() + 1);
  EXPECT_EQ(t.indptr[0], 0);
  std::set<int32_t> seen;
  for (size_t b = 0; b < lens.size(); ++b) {
    EXPECT_EQ(t.lens[b], lens[b]);
    EXPECT_EQ(t.indptr[b + 1] - t.indptr[b], (lens[b] + P - 1) / P);
  }
  for (int32_t id : t.indices) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, maxPages);
    EXPECT_TRUE(seen.insert(id).second) << "page " << id << " used twice";
  }
}

TEST(CheckPages, DistinctHalfConsecutiveAndTails) {
  Rng rng(123);
  const int64_t P = 16, pool = 1 << 20;
  std::vector<int64_t> lens = {0, 1, 16, 17, 37, 300, 5000, 20000};
  PageTable t = makePageTable(lens, P, pool, rng);
  expectValidTable(t, lens, P, pool);
  double frac = consecutiveFraction(t);
  EXPECT_GT(frac, 0.4);
  EXPECT_LT(frac, 0.6);
  // Scattered: the non-consecutive neighbours are spread over the pool.
  int64_t far = 0;
  for (size_t k = 1; k < t.indices.size(); ++k)
    far += std::abs(int64_t(t.indices[k]) - t.indices[k - 1]) > pool / 16;
  EXPECT_GT(far, int64_t(t.indices.size()) / 4);

  // Valid slots: full pages, then the partial last one.
  for (int64_t k = 0; k < t.numPages(); ++k) {
    int64_t b = t.requestOf(k);
    int64_t last = t.indptr[b + 1] - 1;
    int64_t want = k < last ? P : lens[size_t(b)] - (last - t.indptr[b]) * P;
    EXPECT_EQ(t.validSlots(k), want) << "page " << k << " of request " << b;
  }
  EXPECT_EQ(t.validSlots(t.indptr[3] + 1), 1); // 17 tokens: 16 + 1

  // Page size 1: every page full.
  PageTable one = makePageTable({0, 5, 3}, 1, 100, rng);
  expectValidTable(one, {0, 5, 3}, 1, 100);
  for (int64_t k = 0; k < one.numPages(); ++k)
    EXPECT_EQ(one.validSlots(k), 1);
}

TEST(CheckPages, CrowdedAndTooSmallPools) {
  Rng rng(5);
  // Exactly full pool: every page used once.
  PageTable t = makePageTable({64, 64, 1}, 8, 17, rng);
  expectValidTable(t, {64, 64, 1}, 8, 17);
  EXPECT_EQ(t.numPages(), 17);
  EXPECT_THROW(makePageTable({64, 64, 2}, 8, 16, rng), std::runtime_error);
  EXPECT_THROW(makePageTable({-1}, 8, 16, rng), std::runtime_error);
  // All requests empty: no pages.
  PageTable none = makePageTable({0, 0}, 4, 4, rng);
  EXPECT_EQ(none.numPages(), 0);
  EXPECT_EQ(consecutiveFraction(none), 0.0);
}

TEST(CheckPages, UnusedPagesNeighboursFirst) {
  Rng rng(9);
  PageTable t = makePageTable({40, 7, 0, 33}, 4, 1000, rng);
  std::set<int64_t> used(t.indices.begin(), t.indices.end());
  std::vector<int64_t> picked = pickUnusedPages(t, 1000, 8, rng);
  EXPECT_EQ(picked.size(), 8u);
  std::set<int64_t> distinct(picked.begin(), picked.end());
  EXPECT_EQ(distinct.size(), picked.size());
  for (int64_t p : picked) {
    EXPECT_FALSE(used.count(p));
    EXPECT_GE(p, 0);
    EXPECT_LT(p, 1000);
  }
  // The page after request 0's last page is picked first when it is free.
  int64_t after = int64_t(t.indices[size_t(t.indptr[1] - 1)]) + 1;
  if (!used.count(after) && after < 1000) {
    EXPECT_EQ(picked[0], after);
  }
  // A full pool has nothing to give.
  PageTable full = makePageTable({8}, 4, 2, rng);
  EXPECT_TRUE(pickUnusedPages(full, 2, 8, rng).empty());
}

//===----------------------------------------------------------------------===//
// Metrics: each must fail on what it is for.
//===----------------------------------------------------------------------===//

TEST(CheckMetrics, ScaledErrorFailsOnNanPerturbationAndInf) {
  std::vector<double> ref = {1.0, -2.0, 0.0, 100.0};
  std::vector<double> got = ref;
  EXPECT_EQ(maxScaledError(got.data(), ref.data(), 4, 1e-2, 1e-2).worst, 0.0);
  got[3] = 100.5; // |d| = 0.5 <= 0.01 + 1 = 1.01
  EXPECT_LE(maxScaledError(got.data(), ref.data(), 4, 1e-2, 1e-2).worst, 1.0);
  got[3] = 102.0; // 2 > 1.01
  ScaledError e = maxScaledError(got.data(), ref.data(), 4, 1e-2, 1e-2);
  EXPECT_GT(e.worst, 1.0);
  EXPECT_EQ(e.worstIndex, 3);
  got = ref;
  got[2] = 0.02; // atol only: 0.02 > 0.01
  EXPECT_GT(maxScaledError(got.data(), ref.data(), 4, 1e-2, 1e-2).worst, 1.0);
  got = ref;
  got[1] = kNaN;
  e = maxScaledError(got.data(), ref.data(), 4, 1e-2, 1e-2);
  EXPECT_TRUE(std::isinf(e.worst));
  EXPECT_EQ(e.nonFinite, 1);
  EXPECT_EQ(e.worstIndex, 1);
  got[1] = kInf;
  EXPECT_TRUE(std::isinf(maxScaledError(got.data(), ref.data(), 4, 1, 1).worst));

  // An empty request's lse: -inf must be -inf exactly.
  std::vector<double> r2 = {-kInf, 3.0}, g2 = {-kInf, 3.0};
  EXPECT_EQ(maxScaledError(g2.data(), r2.data(), 2, 1e-3, 1e-4).worst, 0.0);
  g2[0] = -1e30;
  EXPECT_TRUE(std::isinf(maxScaledError(g2.data(), r2.data(), 2, 1e-3, 1e-4).worst));
  g2[0] = kNaN;
  EXPECT_TRUE(std::isinf(maxScaledError(g2.data(), r2.data(), 2, 1e-3, 1e-4).worst));
}

TEST(CheckMetrics, RelRmsFailsOnNanScaleAndDrift) {
  Rng rng(3);
  std::vector<double> ref(4096), got(4096);
  for (size_t i = 0; i < ref.size(); ++i)
    ref[i] = rng.normal();
  got = ref;
  EXPECT_EQ(relRmsError(got.data(), ref.data(), 4096), 0.0);
  for (size_t i = 0; i < got.size(); ++i)
    got[i] = ref[i] * (1 + 1e-3);
  EXPECT_NEAR(relRmsError(got.data(), ref.data(), 4096), 1e-3, 1e-9);
  for (size_t i = 0; i < got.size(); ++i)
    got[i] = ref[i] * 1.01; // 1e-2 > 5e-3
  EXPECT_GT(relRmsError(got.data(), ref.data(), 4096), 5e-3);
  got = ref;
  got[100] = kNaN;
  EXPECT_TRUE(std::isinf(relRmsError(got.data(), ref.data(), 4096)));
  got[100] = -kInf;
  EXPECT_TRUE(std::isinf(relRmsError(got.data(), ref.data(), 4096)));
  std::vector<double> zeros(8, 0.0), small(8, 0.0);
  EXPECT_EQ(relRmsError(zeros.data(), zeros.data(), 8), 0.0);
  small[3] = 1e-20;
  EXPECT_TRUE(std::isinf(relRmsError(small.data(), zeros.data(), 8)));
  EXPECT_EQ(relRmsError(nullptr, nullptr, 0), 0.0);

  // Drift confined to the last window: the whole-tensor error passes, the
  // window error does not.
  const int64_t rows = 2048, row = 4;
  std::vector<double> r(size_t(rows * row)), g;
  for (double &x : r)
    x = rng.normal();
  g = r;
  for (int64_t i = (rows - 512) * row; i < rows * row; ++i)
    g[size_t(i)] *= 1.008;
  EXPECT_LT(relRmsError(g.data(), r.data(), rows * row), 5e-3);
  int64_t at = -1;
  EXPECT_GT(worstRangeRelRms(g.data(), r.data(), row, windows(rows, 512), &at),
            5e-3);
  EXPECT_EQ(at, 3);
  auto w = windows(1000, 512);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].first, 512);
  EXPECT_EQ(w[1].second, 1000);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_EQ(median({}), 0);
}

TEST(CheckMetrics, CheckSetKeepsWorstAndFailsOnNan) {
  CheckSet set;
  set.add("a", "m", 1.0, 0.5);
  set.add("a", "m", 1.0, 0.7);
  set.add("b", "m", 0.0, 0.0);
  EXPECT_TRUE(set.ok());
  auto checks = set.checks();
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].error, 0.7);
  set.add("a", "m", 1.0, kNaN);
  set.add("a", "m", 1.0, 0.1);
  EXPECT_FALSE(set.ok());
  EXPECT_TRUE(std::isnan(set.checks()[0].error));
  CheckSet over;
  over.add("x", "m", 1.0, 1.5);
  over.add("x", "m", 1.0, 0.5);
  EXPECT_FALSE(over.ok());
  EXPECT_NE(over.table().find("FAIL"), std::string::npos);
  CheckSet failed;
  failed.add("x", "m", 1.0, 0.5);
  failed.fail("launch", "boom");
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.table().find("boom"), std::string::npos);
  EXPECT_FALSE(CheckSet().ok()); // nothing checked is not a pass
  EXPECT_EQ(formatNumber(kInf), "inf");
  EXPECT_EQ(formatNumber(kNaN), "nan");
  EXPECT_EQ(joinInts({1, 2, 3}), "1,2,3");
}

//===----------------------------------------------------------------------===//
// runAndCheck on hand-written programs (CheckTestProgram.cpp)
//===----------------------------------------------------------------------===//

loom::spec::Spec smallMlaSpec() {
  loom::spec::Spec spec;
  spec.name = "check_mla";
  loom::spec::MlaDecodeSpec m;
  m.numHeads = 2;
  m.headDimCkv = 16;
  m.headDimKpe = 8;
  m.pageSize = 4;
  m.smScale = 0.3;
  m.maxBatch = 8;
  m.maxPages = 64;
  spec.family = m;
  return spec;
}

RunReport runSmall(const char *program, uint64_t seed = 0) {
  RunOptions options;
  options.seed = seed;
  options.launches = 3;
  options.kvLens = {0, 1, 5, 9, 30};
  RunReport r = runAndCheck(smallMlaSpec(), program, options);
  std::cout << r.text;
  return r;
}

const Check *find(const RunReport &r, const std::string &name) {
  for (const Check &c : r.checks)
    if (c.name == name)
      return &c;
  return nullptr;
}

TEST(CheckRun, GoodProgramPasses) {
  RunReport r = runSmall(LOOM_CHECK_PROG_GOOD);
  EXPECT_TRUE(r.ok);
  EXPECT_NE(r.seed, 0u);
  for (const char *name : {"o", "lse", "empty requests", "guards past outputs",
                           "read-only buffers kept"}) {
    const Check *c = find(r, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_TRUE(c->ok) << name;
  }
  EXPECT_GT(r.launchMs, 0);
  EXPECT_NE(r.text.find("seed " + std::to_string(r.seed)), std::string::npos);
  // The same seed draws the same inputs: the same errors.
  RunReport again = runSmall(LOOM_CHECK_PROG_GOOD, r.seed);
  EXPECT_EQ(find(again, "o")->error, find(r, "o")->error);
}

TEST(CheckRun, WrongOutputFailsO) {
  RunReport r = runSmall(LOOM_CHECK_PROG_WRONG);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(find(r, "o")->ok);
  EXPECT_TRUE(find(r, "lse")->ok);
}

TEST(CheckRun, UnwrittenLseFails) {
  RunReport r = runSmall(LOOM_CHECK_PROG_NOLSE);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(find(r, "lse")->ok);
  EXPECT_TRUE(find(r, "o")->ok);
}

TEST(CheckRun, WritePastBoundFailsGuard) {
  RunReport r = runSmall(LOOM_CHECK_PROG_OVERRUN);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(find(r, "guards past outputs")->ok);
  EXPECT_TRUE(find(r, "o")->ok);
}

TEST(CheckRun, WritingAnInputFails) {
  RunReport r = runSmall(LOOM_CHECK_PROG_CLOBBER);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(find(r, "read-only buffers kept")->ok);
  EXPECT_TRUE(find(r, "o")->ok);
}

TEST(CheckRun, ReadingNanTailsFails) {
  RunReport r = runSmall(LOOM_CHECK_PROG_READTAIL);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(find(r, "o")->ok);
}

TEST(CheckRun, FailedLaunchIsReported) {
  RunReport r = runSmall(LOOM_CHECK_PROG_FAILTASK);
  EXPECT_FALSE(r.ok);
  const Check *c = find(r, "launch");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->ok);
  EXPECT_NE(r.text.find("LOOMRT_ERROR_TASK_FAILED"), std::string::npos);
}

RunReport runUnchecked(const char *program) {
  RunOptions options;
  options.launches = 2;
  options.kvLens = {0, 1, 5, 9, 30};
  options.oracle = false;
  RunReport r = runAndCheck(smallMlaSpec(), program, options);
  std::cout << r.text;
  return r;
}

TEST(CheckRun, WithoutTheOracleTheCheapChecksStillFail) {
  RunReport good = runUnchecked(LOOM_CHECK_PROG_GOOD);
  EXPECT_TRUE(good.ok);
  EXPECT_FALSE(good.oracleChecked);
  EXPECT_EQ(find(good, "o"), nullptr); // nothing compared with the oracle
  EXPECT_NE(good.text.find("NOT CHECKED against the oracle"), std::string::npos);
  EXPECT_NE(good.text.find("\nUNCHECKED check_mla"), std::string::npos);
  EXPECT_EQ(good.text.find("\nPASS"), std::string::npos);
  EXPECT_NE(good.resultJson.find("\"check\":\"none\""), std::string::npos);
  // Unwritten lse stays NaN: found without the oracle.
  RunReport nolse = runUnchecked(LOOM_CHECK_PROG_NOLSE);
  EXPECT_FALSE(nolse.ok);
  ASSERT_NE(find(nolse, "outputs written (no NaN)"), nullptr);
  EXPECT_FALSE(find(nolse, "outputs written (no NaN)")->ok);
  EXPECT_NE(nolse.text.find("\nFAIL check_mla"), std::string::npos);
  // So are writes past the bound rows and into inputs.
  EXPECT_FALSE(find(runUnchecked(LOOM_CHECK_PROG_OVERRUN),
                    "guards past outputs")->ok);
  EXPECT_FALSE(find(runUnchecked(LOOM_CHECK_PROG_CLOBBER),
                    "read-only buffers kept")->ok);
  // A wrong value is not something these checks can see: that is what
  // "not checked" means.
  EXPECT_TRUE(runUnchecked(LOOM_CHECK_PROG_WRONG).ok);
}

TEST(CheckRun, BenchTimesBackToBackLaunchesAndRotatesInputs) {
  RunOptions options;
  options.launches = 1;
  options.kvLens = {0, 1, 5, 9, 30};
  options.bench = 7;
  options.warmupLaunches = 3;
  options.warmupMs = 0;
  options.rotate = 3;
  RunReport r = runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options);
  std::cout << r.text;
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.warmupLaunches, 3);
  for (const TimeStats *t : {&r.benchDevice, &r.benchWall}) {
    EXPECT_EQ(t->count, 7);
    EXPECT_GT(t->min, 0);
    EXPECT_LE(t->min, t->median);
    EXPECT_LE(t->median, t->p90);
  }
  // The wall time of a launch includes its device time.
  EXPECT_GE(r.benchWall.median, r.benchDevice.min);
  EXPECT_NE(r.text.find("rotated over 3 copies"), std::string::npos);
  EXPECT_NE(r.resultJson.find("\"rotate\":3"), std::string::npos);
  EXPECT_NE(r.resultJson.find("\"timing\":\"issued\""), std::string::npos);
  // Timing does not hide a broken program: one that clobbers an input
  // still fails with --bench and --rotate.
  options.rotate = 2;
  RunReport clobber =
      runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_CLOBBER, options);
  EXPECT_FALSE(find(clobber, "read-only buffers kept")->ok);
}

// The host backend has no device queue: --timing=queued is refused at setup
// with the runtime's reason, not ignored.
TEST(CheckRun, QueuedTimingNeedsADeviceQueue) {
  RunOptions options;
  options.launches = 1;
  options.kvLens = {0, 1, 5};
  options.queued = true;
  try {
    (void)runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options);
    ADD_FAILURE() << "a queued host run was not refused";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--timing=queued: "), std::string::npos) << what;
    EXPECT_NE(what.find("the host device cannot queue launches"),
              std::string::npos)
        << what;
  }
}

TEST(CheckRun, TraceIsWrittenForHostPrograms) {
  RunOptions options;
  options.launches = 1;
  options.kvLens = {0, 1, 5, 9, 30};
  options.tracePath = ::testing::TempDir() + "check_mla_trace.json";
  RunReport r = runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options);
  std::cout << r.text;
  EXPECT_TRUE(r.ok);
  EXPECT_NE(r.text.find("trace of launch 1 written to"), std::string::npos);
  EXPECT_NE(r.text.find("critical path:"), std::string::npos);
  std::ifstream in(options.tracePath);
  std::string json((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"cat\":\"task\""), std::string::npos);
  options.tracePath = "/nonexistent/dir/trace.json";
  EXPECT_THROW(runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options),
               std::runtime_error);
}

TEST(CheckRun, TimeStatsUseNearestRank) {
  TimeStats s = loom::check::detail::timeStats({5, 1, 4, 2, 3, 10, 6, 7, 8, 9});
  EXPECT_EQ(s.count, 10);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.median, 5.5);
  EXPECT_EQ(s.p90, 9);
  EXPECT_EQ(s.mean, 5.5);
  EXPECT_EQ(loom::check::detail::timeStats({}).count, 0);
}

TEST(CheckRun, SetupErrorsThrow) {
  RunOptions options;
  options.kvLens = {1, 2};
  EXPECT_THROW(runAndCheck(smallMlaSpec(), "/nonexistent/x.host.so", options),
               std::runtime_error);
  // A spec the program was not compiled from: named mismatches.
  loom::spec::Spec other = smallMlaSpec();
  std::get<loom::spec::MlaDecodeSpec>(other.family).numHeads = 4;
  try {
    runAndCheck(other, LOOM_CHECK_PROG_GOOD, options);
    FAIL() << "expected a mismatch";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("q_nope"), std::string::npos) << e.what();
  }
  // Sizes past the program's bounds.
  options.kvLens = std::vector<int64_t>(9, 1); // max_batch 8
  EXPECT_THROW(runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options),
               std::runtime_error);
  options.kvLens = {200, 200}; // 100 pages > 64
  EXPECT_THROW(runAndCheck(smallMlaSpec(), LOOM_CHECK_PROG_GOOD, options),
               std::runtime_error);
  // Another family's spec against this program.
  loom::spec::Spec kda;
  kda.name = "check_mla";
  loom::spec::KdaPrefillSpec k;
  k.numHeads = 2;
  k.maxTokens = 64;
  k.maxSeqs = 4;
  kda.family = k;
  options.kvLens.clear();
  EXPECT_THROW(runAndCheck(kda, LOOM_CHECK_PROG_GOOD, options),
               std::runtime_error);
}

} // namespace
