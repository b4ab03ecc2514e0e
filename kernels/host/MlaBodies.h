//===- MlaBodies.h - Host task bodies for MLA paged decode ------*- C++ -*-===//
//
// DeepSeek-style absorbed MLA decode over a paged cache, cut into two phases
// so that a persistent kernel with W workers stays busy whatever the mix of
// request lengths:
//
//  * Phase 0 ("split"), W tasks. The tokens of all requests, laid end to end,
//    are cut into E = clamp(ceil(Ttot / kMlaMinSlotTokens), 1, W) nearly
//    equal, non-empty ranges (the active slots: kernels/common/MlaSlots.h);
//    slots w >= E do nothing. For every request piece in its range a slot
//    writes, per head, the normalised partial o = acc/l and lse = m + ln l
//    (natural log) to workspace piece p = w + b. A slot reads each KV row
//    once and scores all H heads against it: the KV is shared by the heads,
//    which is MLA's point.
//  * Phase 1 ("merge"), M tasks. Task i merges requests i, i+M, ... by a
//    log-sum-exp weighted average of their pieces and writes o (T) and the
//    base-2 lse (float). Every slot from the one owning a request's first
//    token to the one owning its last wrote a piece of it (active slots are
//    never empty), so the merge needs no per-piece test.
//
// Both phases derive E from the run-time kv_lens and the same `numSlots` and
// `minSlotTokens`, so they agree on every range. Piece indices are unique
// and < E + B <= W + B (see MlaSlots.h).
//
// Bodies take pre-offset pointers and run-time counts (batch, kv_lens, page
// table) read from meta buffers; they allocate nothing (fixed stack scratch
// bounded by the kMla* limits below) and tasks of one phase write disjoint
// memory, so they may run concurrently on different threads.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_HOST_MLABODIES_H
#define LOOM_KERNELS_HOST_MLABODIES_H

#include "kernels/common/BodyLimits.h"
#include "kernels/common/MlaSlots.h"
#include "kernels/common/Numerics.h"
#include "kernels/host/MetaFault.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>

namespace loom {
namespace host {

/// Limits of the fixed stack scratch (kernels/common/BodyLimits.h, which
/// loomc checks every spec and op against).
using ::loom::kMlaMaxDimCkv;
using ::loom::kMlaMaxDimKpe;
using ::loom::kMlaMaxHeads;

/// ln 2, to turn the natural-log lse into FlashInfer's base-2 lse.
constexpr float kMlaLn2 = 0.693147180559945309f;

/// Operands of one mla_decode op, already offset to their buffer bases.
/// Activations are row-major: q_nope/o [B,H,Dc], q_pe [B,H,Dp],
/// ckv_cache [pages,P,Dc], kpe_cache [pages,P,Dp], lse [B,H] (base 2).
/// `batch` is the run-time B (<= the compile-time max batch the buffers are
/// sized for); rows b >= batch of o and lse are left untouched.
/// The meta values are checked where they are read (MetaGuard.h): a request
/// whose kv_indptr or kv_lens break the rules, or a page id past
/// `numPages`, is refused and the task fails with LOOM_BODY_BAD_INDEX.
template <typename T> struct MlaParams {
  const T *qNope = nullptr;
  const T *qPe = nullptr;
  const T *ckvCache = nullptr;
  const T *kpeCache = nullptr;
  const int32_t *kvIndptr = nullptr;  ///< [B + 1]
  const int32_t *kvIndices = nullptr; ///< [nnz] page ids
  const int32_t *kvLens = nullptr;    ///< [B] tokens per request
  T *o = nullptr;
  float *lse = nullptr;
  int64_t batch = 0;
  int64_t numHeads = 0; ///< H
  int64_t dimCkv = 0;   ///< Dc (also the V width)
  int64_t dimKpe = 0;   ///< Dp
  int64_t pageSize = 0; ///< P
  int64_t numPages = 0;   ///< pages of the caches
  int64_t numIndices = 0; ///< entries of kv_indices
  float smScale = 0.f;  ///< applied to q.k before the softmax
};

/// Request b's tokens as a device task's mapping of the slots counts them:
/// kv_lens[b] when its meta values pass pagedRequest's rules, else none
/// (the fault recorded unless `record` is false).
template <typename T>
LOOM_HOST_DEVICE inline int64_t mlaCheckedLen(const MlaParams<T> &p, int64_t b,
                                              bool record = true) {
  return pagedRequest(p.kvIndptr, p.kvLens, b, p.numIndices, p.pageSize,
                      record)
      .len;
}

/// The sum of mlaCheckedLen over the batch: one branch-free pass that tests
/// the rules (pagedRequestOk) with its loads issued together; only a batch
/// that breaks one takes the exact sum, which records the fault.
template <typename T>
LOOM_HOST_DEVICE inline int64_t mlaCheckedTokens(const MlaParams<T> &p) {
  int64_t total = 0;
  bool ok = true;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t len = p.kvLens[b];
    ok &= pagedRequestOk(p.kvIndptr[b], p.kvIndptr[b + 1], len, p.numIndices,
                         p.pageSize);
    total += len;
  }
  if (!kCheckMeta || ok)
    return total;
  total = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    total += mlaCheckedLen(p, b);
  return total;
}

// Workspace and slots: kernels/common/MlaSlots.h (shared with the device
// bodies), re-exported here for the host's callers.
using ::loom::kMlaMinSlotTokens;
using ::loom::MlaSlots;
using ::loom::mlaActiveSlots;
using ::loom::mlaNumPieces;
using ::loom::mlaPartialOFloats;
using ::loom::mlaSlots;
using ::loom::mlaTotalTokens;
using ::loom::mlaWorkspaceFloats;

//===----------------------------------------------------------------------===//
// Phase 0: split
//===----------------------------------------------------------------------===//

namespace detail {

/// Folds score `s` of one head into its running (m, l, acc) with the
/// token's latent row `kc`. A new maximum rescales what came before; on the
/// first token m = -inf makes that factor 0, and acc starts zeroed.
inline void mlaOnlineUpdate(float s, const float *kc, int64_t dimCkv, float &m,
                            float &l, float *acc) {
  if (s > m) {
    float rescale = std::exp(m - s);
    l *= rescale;
    for (int64_t d = 0; d < dimCkv; ++d)
      acc[d] *= rescale;
    m = s;
  }
  float e = std::exp(s - m);
  l += e;
  for (int64_t d = 0; d < dimCkv; ++d)
    acc[d] += e * kc[d];
}

/// One request piece: request `b`'s local tokens [tokBegin, tokEnd), all
/// heads. Accumulates straight into the piece's partial_o rows (owned by this
/// slot alone), then normalises them.
template <typename T>
void mlaSplitPiece(const MlaParams<T> &p, int64_t b, int64_t tokBegin,
                   int64_t tokEnd, float *acc, float *pieceLse) {
  const int64_t numHeads = p.numHeads, dimCkv = p.dimCkv, dimKpe = p.dimKpe;
  const T *qNope = p.qNope + b * numHeads * dimCkv;
  const T *qPe = p.qPe + b * numHeads * dimKpe;
  const PagedRequest req =
      pagedRequest(p.kvIndptr, p.kvLens, b, p.numIndices, p.pageSize);
  if (tokEnd > req.len) // refused, or a length the slots did not see
    tokBegin = tokEnd = 0;
  const int32_t *pages = p.kvIndices + req.first;

  float m[kMlaMaxHeads], l[kMlaMaxHeads];
  float kc[kMlaMaxDimCkv], kp[kMlaMaxDimKpe];
  for (int64_t h = 0; h < numHeads; ++h) {
    m[h] = -std::numeric_limits<float>::infinity();
    l[h] = 0.f;
  }
  std::fill(acc, acc + numHeads * dimCkv, 0.f);

  for (int64_t t = tokBegin; t < tokEnd; ++t) {
    // Only slots below kv_lens are ever addressed, so a partial last page's
    // tail (which may hold garbage) is never read.
    int64_t row =
        checkedIndex(pages + t / p.pageSize, p.numPages, LOOM_META_PAGE_ID) *
            p.pageSize +
        t % p.pageSize;
    // The KV row is converted once and reused by all heads.
    for (int64_t d = 0; d < dimCkv; ++d)
      kc[d] = load(p.ckvCache, row * dimCkv + d);
    for (int64_t d = 0; d < dimKpe; ++d)
      kp[d] = load(p.kpeCache, row * dimKpe + d);

    for (int64_t h = 0; h < numHeads; ++h) {
      const T *qn = qNope + h * dimCkv;
      const T *qp = qPe + h * dimKpe;
      float dot = 0.f;
      for (int64_t d = 0; d < dimCkv; ++d)
        dot += load(qn, d) * kc[d];
      for (int64_t d = 0; d < dimKpe; ++d)
        dot += load(qp, d) * kp[d];
      mlaOnlineUpdate(p.smScale * dot, kc, dimCkv, m[h], l[h],
                      acc + h * dimCkv);
    }
  }

  for (int64_t h = 0; h < numHeads; ++h) {
    float inv = 1.f / l[h];
    float *row = acc + h * dimCkv;
    for (int64_t d = 0; d < dimCkv; ++d)
      row[d] *= inv;
    pieceLse[h] = m[h] + std::log(l[h]);
  }
}

} // namespace detail

/// Phase 0 task `slot` of `numSlots`. Writes partial_o / partial_lse for
/// every piece (slot, b) at piece index slot + b; writes nothing else (and
/// nothing at all when slot >= E). partialO: [pieces][H][Dc], partialLse:
/// [pieces][H] (natural log). `minSlotTokens` must match the merge's.
template <typename T>
void mlaSplit(const MlaParams<T> &p, int64_t slot, int64_t numSlots,
              float *partialO, float *partialLse,
              int64_t minSlotTokens = kMlaMinSlotTokens) {
  assert(p.numHeads <= kMlaMaxHeads && p.dimCkv <= kMlaMaxDimCkv &&
         p.dimKpe <= kMlaMaxDimKpe);
  const MlaSlots slots =
      mlaSlots(mlaTotalTokens(p.kvLens, p.batch), numSlots, minSlotTokens);
  if (slot >= slots.active)
    return;
  const int64_t mineBegin = slots.begin(slot), mineEnd = slots.end(slot);
  if (mineBegin >= mineEnd) // only when there are no tokens at all
    return;
  // Walk the prefix sum cum[b] until past this slot. A binary search would
  // need cum stored somewhere; the O(B) walk is what computing Ttot costs
  // anyway and is negligible next to one KV row times H heads.
  int64_t reqBegin = 0;
  for (int64_t b = 0; b < p.batch && reqBegin < mineEnd; ++b) {
    int64_t reqEnd = reqBegin + mappedLen(p.kvLens, b);
    int64_t begin = std::max(mineBegin, reqBegin);
    int64_t end = std::min(mineEnd, reqEnd);
    if (begin < end) {
      int64_t piece = MlaSlots::piece(slot, b);
      detail::mlaSplitPiece(p, b, begin - reqBegin, end - reqBegin,
                            partialO + piece * p.numHeads * p.dimCkv,
                            partialLse + piece * p.numHeads);
    }
    reqBegin = reqEnd;
  }
}

//===----------------------------------------------------------------------===//
// Phase 1: merge
//===----------------------------------------------------------------------===//

namespace detail {

/// Merges request `b` (global tokens [reqBegin, reqEnd)) from its pieces:
/// slots slotOf(reqBegin) .. slotOf(reqEnd - 1), all of which wrote one.
template <typename T>
void mlaMergeRequest(const MlaParams<T> &p, int64_t b, int64_t reqBegin,
                     int64_t reqEnd, const MlaSlots &slots,
                     const float *partialO, const float *partialLse) {
  const int64_t numHeads = p.numHeads, dimCkv = p.dimCkv;
  T *o = p.o + b * numHeads * dimCkv;
  float *lse = p.lse + b * numHeads;
  if (reqBegin >= reqEnd) {
    for (int64_t i = 0; i < numHeads * dimCkv; ++i)
      store(o, i, 0.f);
    for (int64_t h = 0; h < numHeads; ++h)
      lse[h] = -std::numeric_limits<float>::infinity();
    return;
  }

  const int64_t first = MlaSlots::piece(slots.slotOf(reqBegin), b);
  const int64_t last = MlaSlots::piece(slots.slotOf(reqEnd - 1), b);
  float acc[kMlaMaxDimCkv];
  for (int64_t h = 0; h < numHeads; ++h) {
    float maxLse = -std::numeric_limits<float>::infinity();
    for (int64_t piece = first; piece <= last; ++piece)
      maxLse = std::max(maxLse, partialLse[piece * numHeads + h]);
    float sum = 0.f;
    for (int64_t piece = first; piece <= last; ++piece)
      sum += std::exp(partialLse[piece * numHeads + h] - maxLse);
    const float lseNat = maxLse + std::log(sum);

    std::fill(acc, acc + dimCkv, 0.f);
    for (int64_t piece = first; piece <= last; ++piece) {
      // One exp per (head, piece), not per element.
      float weight = std::exp(partialLse[piece * numHeads + h] - lseNat);
      const float *part = partialO + (piece * numHeads + h) * dimCkv;
      for (int64_t d = 0; d < dimCkv; ++d)
        acc[d] += weight * part[d];
    }
    for (int64_t d = 0; d < dimCkv; ++d)
      store(o, h * dimCkv + d, acc[d]);
    lse[h] = lseNat / kMlaLn2;
  }
}

} // namespace detail

/// Phase 1 task `task` of `numMergeTasks`: merges the requests whose first
/// merge unit it owns (MlaMergeSplit) and writes their o rows and lse.
/// `numSlots` and `minSlotTokens` must be phase 0's.
template <typename T>
void mlaMerge(const MlaParams<T> &p, int64_t task, int64_t numMergeTasks,
              int64_t numSlots, const float *partialO, const float *partialLse,
              int64_t minSlotTokens = kMlaMinSlotTokens) {
  assert(p.dimCkv <= kMlaMaxDimCkv);
  const MlaSlots slots =
      mlaSlots(mlaTotalTokens(p.kvLens, p.batch), numSlots, minSlotTokens);
  // Whole requests, in the task of each request's first head group.
  const MlaMergeSplit split =
      mlaMergeSplit(p.batch, p.numHeads, numMergeTasks);
  int64_t reqBegin = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t reqEnd = reqBegin + mappedLen(p.kvLens, b);
    if (MlaMergeSplit::owns(b * split.chunks, task, numMergeTasks)) {
      // The request's writer checks its meta values, so every request is
      // checked even when no slot reads it.
      (void)pagedRequest(p.kvIndptr, p.kvLens, b, p.numIndices, p.pageSize);
      detail::mlaMergeRequest(p, b, reqBegin, reqEnd, slots, partialO,
                              partialLse);
    }
    reqBegin = reqEnd;
  }
}

} // namespace host
} // namespace loom

#endif // LOOM_KERNELS_HOST_MLABODIES_H
