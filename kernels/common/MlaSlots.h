//===- MlaSlots.h - Token slots of MLA decode, for host and device -*- C++ -*-===//
//
// The one copy of MLA decode's slot arithmetic and workspace layout, shared
// by the host bodies (kernels/host/MlaBodies.h) and the NVIDIA and AMD device
// bodies: split and merge must agree on it exactly, so it lives here once.
//
// The tokens of all requests, laid end to end (request b owns
// [cum[b], cum[b+1]) with cum the prefix sum of the run-time kv_lens), are
// cut into E nearly equal, non-empty ranges, E = the number of *active*
// slots (mlaActiveSlots): slot w < E owns [begin(w), begin(w+1)); slots
// w >= E (of the W phase-0 tasks) do nothing. Slot w writes the piece of
// request b it covers at piece index w + b. Slots advance monotonically
// through the requests, so if slot w touches request b and slot w' touches a
// later request b', then w' >= w and w' + b' > w + b: piece indices are
// unique and < E + B <= W + B.
//
// Free of any toolkit: plain C++ here, __host__ __device__ under nvcc/hipcc.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_MLASLOTS_H
#define LOOM_KERNELS_COMMON_MLASLOTS_H

#include "kernels/common/HostDevice.h"
#include "kernels/common/MetaGuard.h"

#include <cstdint>

namespace loom {

/// Fewest tokens worth a slot of their own. A piece has a fixed cost next to
/// its KV rows (1152 B a token at Dc + Dp = 576, 16-bit): its Q rows
/// (H x 576 x 2 = 18 KB at H = 16), its normalised partial o written
/// (H x Dc x 4 = 32 KB) and read back by the merge (32 KB), about 72 tokens'
/// worth of KV. Yet one worker streams its rows far below the chip's share
/// of bandwidth, so a short batch finishes sooner spread over more workers
/// than packed into few: E = ceil(Ttot / 32) slots of 16..32 tokens each
/// (until all W are busy), from W x 32 tokens on all W slots work. A
/// request then spans at most about len / 16 + 2 pieces, which bounds its
/// merge. (The H200 figures behind the choice: bench/results/h200.)
constexpr int64_t kMlaMinSlotTokens = 32;

/// The fixed cost of a piece, in tokens, for the one-phase bodies that
/// place it on the slots' line: there request b's tokens are preceded by a
/// gap of this many positions (mlaLineStart), so a slot whose share is
/// mostly fixed cost takes fewer pieces, and a short request lands in one
/// slot instead of sharing two with its neighbours. A piece's fixed cost
/// (its page ids, Q rows and first tile in flight, one after the other;
/// its output or partial written) is about one tile of 64 tokens.
constexpr int64_t kMlaPieceTokens = 64;

/// Where request b's tokens start on the slots' line: `tokensBefore` tokens
/// of the earlier requests and a gap of `gap` positions before each request
/// (gap = 0: the line is the tokens laid end to end). The line holds
/// total + batch x gap positions; a slot's positions that fall in a gap are
/// no work.
LOOM_HOST_DEVICE inline int64_t mlaLineStart(int64_t tokensBefore, int64_t b,
                                             int64_t gap) {
  return tokensBefore + (b + 1) * gap;
}

//===----------------------------------------------------------------------===//
// Workspace: partial_o [pieces][H][Dc] then partial_lse [pieces][H]
//===----------------------------------------------------------------------===//

/// Pieces the workspace holds: every piece index w + b is < W + maxBatch.
LOOM_HOST_DEVICE inline int64_t mlaNumPieces(int64_t numSlots,
                                             int64_t maxBatch) {
  return numSlots + maxBatch;
}

/// Floats of partial_o [pieces][H][Dc]; partial_lse [pieces][H] follows it.
LOOM_HOST_DEVICE inline int64_t mlaPartialOFloats(int64_t numSlots,
                                                  int64_t maxBatch,
                                                  int64_t numHeads,
                                                  int64_t dimCkv) {
  return mlaNumPieces(numSlots, maxBatch) * numHeads * dimCkv;
}

/// Floats of partial_o + partial_lse. Lay them out as
/// partialO = ws, partialLse = ws + mlaPartialOFloats(...).
LOOM_HOST_DEVICE inline int64_t mlaWorkspaceFloats(int64_t numSlots,
                                                   int64_t maxBatch,
                                                   int64_t numHeads,
                                                   int64_t dimCkv) {
  return mlaNumPieces(numSlots, maxBatch) * numHeads * (dimCkv + 1);
}

//===----------------------------------------------------------------------===//
// Slots
//===----------------------------------------------------------------------===//

/// Ttot: the sum of the run-time kv_lens (mappedLen: a negative length
/// counts as none; the request's reader refuses it).
LOOM_HOST_DEVICE inline int64_t mlaTotalTokens(const int32_t *kvLens,
                                               int64_t batch) {
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b)
    total += mappedLen(kvLens, b);
  return total;
}

/// E = clamp(ceil(total / minSlotTokens), 1, numSlots). E <= total when
/// total >= 1, so every active slot owns at least one token.
LOOM_HOST_DEVICE inline int64_t mlaActiveSlots(int64_t total, int64_t numSlots,
                                               int64_t minSlotTokens) {
  const int64_t e = ceilDivFast(total, minSlotTokens);
  return e < 1 ? 1 : (e > numSlots ? numSlots : e);
}

/// The token ranges of the E active slots: the first `rem` slots own
/// base + 1 tokens, the others base (base = total / E, rem = total % E), so
/// a slot's bounds need no division.
struct MlaSlots {
  int64_t total = 0;  ///< Ttot
  int64_t active = 1; ///< E
  int64_t base = 0;   ///< total / E (>= 1 when total >= 1)
  int64_t rem = 0;    ///< total % E

  /// First token of slot w (0 <= w <= E; begin(E) = total).
  LOOM_HOST_DEVICE int64_t begin(int64_t w) const {
    return w * base + (w < rem ? w : rem);
  }
  /// One past the last token of slot w (w < E).
  LOOM_HOST_DEVICE int64_t end(int64_t w) const { return begin(w + 1); }
  /// The slot owning token t, 0 <= t < total.
  LOOM_HOST_DEVICE int64_t slotOf(int64_t t) const {
    const int64_t big = rem * (base + 1); // tokens of the longer slots
    return t < big ? divFloorFast(t, base + 1)
                   : rem + divFloorFast(t - big, base);
  }
  /// Workspace piece that slot w writes for request b.
  LOOM_HOST_DEVICE static int64_t piece(int64_t w, int64_t b) { return w + b; }
};

/// The slots of a launch with `total` tokens over `numSlots` phase-0 tasks.
/// Split and merge call it with the same arguments, so they agree.
LOOM_HOST_DEVICE inline MlaSlots mlaSlots(int64_t total, int64_t numSlots,
                                          int64_t minSlotTokens) {
  MlaSlots s;
  s.total = total;
  s.active = mlaActiveSlots(total, numSlots, minSlotTokens);
  s.base = divFloorFast(total, s.active);
  s.rem = total - s.base * s.active;
  return s;
}

/// How the merge phase spreads its work: request b's heads are cut into
/// `chunks` groups of `headsPer`, and unit u = b * chunks + c goes to merge
/// task u % numMergeTasks. A short batch would otherwise leave the merge of a
/// long request (every piece, all heads) to one task while the others idle.
/// A body may also merge a whole request in the task of its chunk 0 (the
/// host and gfx950 bodies do): every unit is still covered exactly once.
struct MlaMergeSplit {
  int64_t chunks = 1;   ///< head groups per request
  int64_t headsPer = 1; ///< heads per group (the last may have fewer)

  LOOM_HOST_DEVICE int64_t units(int64_t batch) const { return batch * chunks; }
  /// Whether `task` of `numMergeTasks` owns unit u.
  LOOM_HOST_DEVICE static bool owns(int64_t u, int64_t task,
                                    int64_t numMergeTasks) {
    return u >= task && (u - task) % numMergeTasks == 0;
  }
};

LOOM_HOST_DEVICE inline MlaMergeSplit
mlaMergeSplit(int64_t batch, int64_t numHeads, int64_t numMergeTasks) {
  MlaMergeSplit m;
  const int64_t b = batch < 1 ? 1 : batch;
  int64_t want = numMergeTasks / b; // groups per request that keep tasks busy
  want = want < 1 ? 1 : (want > numHeads ? numHeads : want);
  m.headsPer = (numHeads + want - 1) / want;
  m.chunks = (numHeads + m.headsPer - 1) / m.headsPer;
  return m;
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_MLASLOTS_H
