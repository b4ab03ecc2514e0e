//===- MetaGuardTest.cpp - Bodies refuse bad meta values ------------------===//
//
// The host bodies fed page ids, page pointers, lengths, slots and sequence
// offsets that break the rules (kernels/common/MetaGuard.h): each case must
// record the first refused value (its address, value and reason), read and
// write nothing outside the buffers (exact-size allocations: the asan build
// of these tests catches a stray access) and leave the caches' rows that a
// refused slot named untouched. Valid values next to them still work.
//
//===----------------------------------------------------------------------===//
#include "kernels/host/DecoderBodies.h"
#include "kernels/host/KdaBodies.h"
#include "kernels/host/MlaBodies.h"
#include "kernels/host/MetaFault.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace loom;

namespace {

const LoomMetaFault &fault() { return host::metaFaultRecord(); }
void clearFault() { host::metaFaultRecord() = LoomMetaFault{}; }

/// Runs `body` with a fresh record; the record must name `where`, `value`
/// and `reason`.
template <typename F>
void expectRefused(F &&body, const void *where, int64_t value, int32_t reason,
                   const std::string &what) {
  clearFault();
  body();
  EXPECT_EQ(fault().reason, reason) << what;
  EXPECT_EQ(fault().where, where) << what;
  EXPECT_EQ(fault().value, value) << what;
}

/// A paged cache of 8 pages of 4 tokens, 2 requests of 5 and 3 tokens on
/// pages {6, 1} and {3}.
struct Paged {
  static constexpr int64_t kPages = 8, kP = 4;
  std::vector<int32_t> indptr{0, 2, 3};
  std::vector<int32_t> indices{6, 1, 3};
  std::vector<int32_t> lens{5, 3};
};

//===----------------------------------------------------------------------===//
// kv_append
//===----------------------------------------------------------------------===//

TEST(MetaGuard, KvAppendWritesNothingThroughARefusedSlot) {
  const int64_t pages = 2, P = 4, Hkv = 1, D = 4, rows = pages * P;
  std::vector<float> k(4 * D, 1.f), v(4 * D, 2.f);
  for (int32_t bad : {int32_t(rows), INT32_MAX}) {
    std::vector<float> kc(rows * D, NAN), vc(rows * D, NAN);
    std::vector<int32_t> slots{3, bad, -1, 5};
    expectRefused(
        [&] {
          host::kvAppend(k.data(), v.data(), slots.data(), kc.data(), vc.data(),
                         Hkv, D, D, P, pages, 0, 4);
        },
        slots.data() + 1, bad, LOOM_META_SLOT, "slot " + std::to_string(bad));
    // The valid slots are written, nothing else (row 0 included).
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t d = 0; d < D; ++d)
        EXPECT_EQ(std::isnan(kc[r * D + d]), r != 3 && r != 5) << r;
  }
}

TEST(MetaGuard, KvAppendPaddingSlotsAreNotFaults) {
  std::vector<float> k(4, 1.f), v(4, 2.f), kc(8 * 4, NAN), vc(8 * 4, NAN);
  std::vector<int32_t> slots{-1};
  clearFault();
  host::kvAppend(k.data(), v.data(), slots.data(), kc.data(), vc.data(), 1, 4,
                 4, 4, 2, 0, 1);
  EXPECT_EQ(fault().reason, 0);
}

//===----------------------------------------------------------------------===//
// gqa_decode split
//===----------------------------------------------------------------------===//

/// Every split task of a 2-request batch (Hq = 2, Hkv = 1, D = 4, S = 2).
void runGqaSplits(const Paged &pg, std::vector<float> &ws) {
  const int64_t Hq = 2, Hkv = 1, D = 4, S = 2, maxBatch = 2;
  const int64_t rows = Paged::kPages * Paged::kP * Hkv * D;
  static std::vector<float> kc(rows, 0.5f), vc(rows, 0.25f), q(maxBatch * Hq * D, 1.f);
  ws.assign(host::gqaWorkspaceFloats(maxBatch, S, Hq, D), 0.f);
  for (int64_t n = 0; n < maxBatch * Hkv * S; ++n)
    host::gqaDecodeSplit(q.data(), kc.data(), vc.data(), pg.indptr.data(),
                         pg.indices.data(), pg.lens.data(), ws.data(), 2,
                         maxBatch, Hq, Hkv, D, D, Paged::kP, Paged::kPages,
                         int64_t(pg.indices.size()), S, 0.5f, n / (Hkv * S),
                         n / S % Hkv, n % S);
}

TEST(MetaGuard, GqaSplitRefusesPageIdsOutsideTheCache) {
  for (int32_t bad : {-1, int32_t(Paged::kPages), INT32_MAX}) {
    Paged pg;
    pg.indices[1] = bad;
    std::vector<float> ws;
    expectRefused([&] { runGqaSplits(pg, ws); }, pg.indices.data() + 1, bad,
                  LOOM_META_PAGE_ID, "page id " + std::to_string(bad));
  }
}

TEST(MetaGuard, GqaSplitRefusesBadPointersAndLengths) {
  struct Case {
    const char *what;
    int which; // 0: indptr, 1: lens
    int index;
    int32_t value;
    int32_t reason;
  };
  const Case cases[] = {
      {"indptr past kv_indices", 0, 2, 4, LOOM_META_INDPTR},
      {"indptr decreasing", 0, 2, 1, LOOM_META_INDPTR},
      {"indptr negative", 0, 0, -1, LOOM_META_INDPTR},
      {"length above its pages", 1, 0, 9, LOOM_META_KV_LEN},
      {"length negative", 1, 1, -4, LOOM_META_KV_LEN},
  };
  for (const Case &c : cases) {
    Paged pg;
    std::vector<int32_t> &buf = c.which == 0 ? pg.indptr : pg.lens;
    buf[c.index] = c.value;
    std::vector<float> ws;
    clearFault();
    runGqaSplits(pg, ws);
    EXPECT_EQ(fault().reason, c.reason) << c.what;
    // The refused entry, or (indptr) the neighbour it contradicts.
    EXPECT_TRUE(fault().where >= static_cast<const void *>(buf.data()) &&
                fault().where < static_cast<const void *>(buf.data() + buf.size()))
        << c.what;
  }
}

//===----------------------------------------------------------------------===//
// mla_decode split and merge
//===----------------------------------------------------------------------===//

struct MlaRig {
  static constexpr int64_t H = 2, Dc = 8, Dp = 4, kSlots = 3, kMerges = 2;
  Paged pg;
  std::vector<float> qNope = std::vector<float>(2 * H * Dc, 0.5f);
  std::vector<float> qPe = std::vector<float>(2 * H * Dp, 0.5f);
  std::vector<float> ckv =
      std::vector<float>(Paged::kPages * Paged::kP * Dc, 0.25f);
  std::vector<float> kpe =
      std::vector<float>(Paged::kPages * Paged::kP * Dp, 0.25f);
  std::vector<float> o = std::vector<float>(2 * H * Dc, NAN);
  std::vector<float> lse = std::vector<float>(2 * H, NAN);
  std::vector<float> ws =
      std::vector<float>(mlaWorkspaceFloats(kSlots, 2, H, Dc), 0.f);

  void run() {
    host::MlaParams<float> p;
    p.qNope = qNope.data();
    p.qPe = qPe.data();
    p.ckvCache = ckv.data();
    p.kpeCache = kpe.data();
    p.kvIndptr = pg.indptr.data();
    p.kvIndices = pg.indices.data();
    p.kvLens = pg.lens.data();
    p.o = o.data();
    p.lse = lse.data();
    p.batch = 2;
    p.numHeads = H;
    p.dimCkv = Dc;
    p.dimKpe = Dp;
    p.pageSize = Paged::kP;
    p.numPages = Paged::kPages;
    p.numIndices = int64_t(pg.indices.size());
    p.smScale = 0.5f;
    float *partialO = ws.data();
    float *partialLse = ws.data() + mlaPartialOFloats(kSlots, 2, H, Dc);
    for (int64_t s = 0; s < kSlots; ++s)
      host::mlaSplit(p, s, kSlots, partialO, partialLse, 1);
    for (int64_t m = 0; m < kMerges; ++m)
      host::mlaMerge(p, m, kMerges, kSlots, partialO, partialLse, 1);
  }
};

TEST(MetaGuard, MlaRefusesPageIdsOutsideTheCache) {
  for (int32_t bad : {-1, int32_t(Paged::kPages), INT32_MAX}) {
    MlaRig rig;
    rig.pg.indices[2] = bad;
    expectRefused([&] { rig.run(); }, rig.pg.indices.data() + 2, bad,
                  LOOM_META_PAGE_ID, "page id " + std::to_string(bad));
  }
}

TEST(MetaGuard, MlaRefusesBadLengthsEvenWhenNoSlotReadsThem) {
  // A negative length has no tokens for any slot to read: the merge, which
  // writes the request, still checks it.
  MlaRig rig;
  rig.pg.lens[1] = -3;
  expectRefused([&] { rig.run(); }, rig.pg.lens.data() + 1, -3,
                LOOM_META_KV_LEN, "negative length");
  MlaRig big;
  big.pg.lens[0] = INT32_MAX;
  clearFault();
  big.run();
  EXPECT_EQ(fault().reason, LOOM_META_KV_LEN);
}

TEST(MetaGuard, ValidMetaRecordsNothing) {
  MlaRig rig;
  clearFault();
  rig.run();
  EXPECT_EQ(fault().reason, 0);
  for (float v : rig.o)
    EXPECT_FALSE(std::isnan(v));
  std::vector<float> ws;
  Paged pg;
  clearFault();
  runGqaSplits(pg, ws);
  EXPECT_EQ(fault().reason, 0);
}

TEST(MetaGuard, EmbeddingRefusesTokenIdsOutsideTheVocabulary) {
  const int64_t vocab = 5, D = 3;
  std::vector<float> table(vocab * D, 1.f), y(2 * D, NAN);
  for (int32_t bad : {-1, int32_t(vocab), INT32_MAX}) {
    std::vector<int32_t> ids{2, bad};
    bool ok = true;
    expectRefused(
        [&] {
          ok = host::embedding(table.data(), ids.data(), y.data(), vocab, D,
                               0, 2);
        },
        ids.data() + 1, bad, LOOM_META_TOKEN_ID, "id " + std::to_string(bad));
    EXPECT_FALSE(ok);
  }
}

//===----------------------------------------------------------------------===//
// kda_prefill's cu_seqlens
//===----------------------------------------------------------------------===//

TEST(MetaGuard, KdaRefusesBadSequenceOffsets) {
  const int64_t C = 16, T = 100, maxChunks = 8;
  struct Case {
    const char *what;
    std::vector<int32_t> cu;
    int index;
    int32_t reason;
  };
  const Case cases[] = {
      {"negative start", {-1, 10, 20}, 0, LOOM_META_CU_SEQLENS},
      {"decreasing", {0, 30, 20}, 2, LOOM_META_CU_SEQLENS},
      {"past the tokens", {0, 30, 101}, 2, LOOM_META_CU_SEQLENS},
      {"more chunks than the workspace", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 9,
       LOOM_META_CHUNKS},
  };
  for (const Case &c : cases) {
    clearFault();
    const int64_t n = int64_t(c.cu.size()) - 1;
    EXPECT_EQ(kda::kdaCheckedChunks(c.cu.data(), n, C, T, maxChunks), -1)
        << c.what;
    EXPECT_EQ(fault().reason, c.reason) << c.what;
    EXPECT_EQ(fault().where, c.cu.data() + c.index) << c.what;
    EXPECT_EQ(fault().value, c.cu[c.index]) << c.what;
  }
  const std::vector<int32_t> good{0, 17, 17, 100};
  clearFault();
  EXPECT_EQ(kda::kdaCheckedChunks(good.data(), 3, C, T, maxChunks), 2 + 0 + 6);
  EXPECT_EQ(fault().reason, 0);
}

} // namespace
