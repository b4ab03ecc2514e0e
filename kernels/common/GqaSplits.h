//===- GqaSplits.h - Run-time split-KV mapping of GQA decode -*- C++ -*-===//
//
// The one copy of gqa_decode's task -> work mapping, shared by the host
// bodies (kernels/host/DecoderBodies.h) and the NVIDIA and AMD device bodies:
// split and merge must agree on it exactly, so it lives here once.
//
// The task model gives gqa_decode N = maxBatch * Hkv * S static split tasks
// (the emitted code hands task n to the body as (n / S / Hkv, n / S % Hkv,
// n % S)). A fixed (request, kv head, split) per task would leave most of
// them idle when the run-time batch is smaller than maxBatch, and give every
// pair the same number of splits whatever its length. Instead, at run time:
//
//  * chunk c = the smallest length per split (from max(kGqaMinSplitTokens,
//    ceil(Hkv * total / N)) up, growing by 1/4) whose split count fits N,
//    where request b's Hkv pairs each get splits(b) = max(1, ceil(len_b / c))
//    splits; the count falls to Hkv * batch <= N once c >= every length, so
//    the search ends;
//  * request b owns tasks [first(b), first(b) + Hkv * splits(b)), first(b)
//    the prefix sum over earlier requests; pair (b, hk) owns the splits(b)
//    tasks from first(b) + hk * splits(b); split i of the pair covers tokens
//    [i * len / splits, (i + 1) * len / splits);
//  * tasks past the last request's do nothing; the merge of pair (b, hk)
//    reads exactly that pair's tasks.
//
// Workspace: task n writes the partial o of its pair's heads at rows
// n * group .. n * group + group - 1 of o partials [N * group][Dv], and their
// lse at the same rows of lse partials [N * group] that follow
// (N * group = maxBatch * S * Hq: the size the workspace always had).
//
// Free of any toolkit: plain C++ here, __host__ __device__ under nvcc/hipcc.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_GQASPLITS_H
#define LOOM_KERNELS_COMMON_GQASPLITS_H

#include "kernels/common/ArrivalCounters.h"
#include "kernels/common/HostDevice.h"
#include "kernels/common/MetaGuard.h"

#include <cstdint>

namespace loom {

/// Fewest tokens worth a split of their own. A split has fixed costs next
/// to its K/V rows (512 B a token at D = Dv = 128, 16-bit): its group's Q
/// rows (1 KB at group 4), its normalised partials written and read back by
/// the merge (2 x 2 KB) and the task's dispatch (~0.5 us, ~18 KB of one
/// SM's share of HBM bandwidth), about 45 tokens' worth. At 128 tokens that
/// is about a third of the K/V traffic, and the device split's loop (32
/// tokens in flight per block) runs full four times.
constexpr int64_t kGqaMinSplitTokens = 128;

/// Splits of each of a request's Hkv pairs for `len` tokens, chunk c.
LOOM_HOST_DEVICE inline int64_t gqaPairSplits(int64_t len, int64_t chunk) {
  const int64_t n = ceilDivFast(len, chunk);
  return n < 1 ? 1 : n;
}

/// The chunk c of the run-time mapping (see the file comment); the same
/// arguments give the same c in split and merge.
template <typename TLen>
LOOM_HOST_DEVICE inline int64_t gqaChunkTokens(const TLen *kvLens,
                                               int64_t batch, int64_t hkv,
                                               int64_t numTasks) {
  int64_t total = 0, longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = mappedLen(kvLens, b);
    total += len;
    longest = len > longest ? len : longest;
  }
  int64_t c = ceilDivFast(hkv * total, numTasks);
  c = c < kGqaMinSplitTokens ? kGqaMinSplitTokens : c;
  for (;;) {
    if (c >= longest) // one split per pair: Hkv * batch <= numTasks
      return c;
    int64_t used = 0;
    for (int64_t b = 0; b < batch; ++b)
      used += hkv * gqaPairSplits(mappedLen(kvLens, b), c);
    if (used <= numTasks)
      return c;
    c += (c + 3) / 4;
  }
}

/// The work of one split task (active == false: nothing to do).
struct GqaSplitTask {
  bool active = false;
  int64_t b = 0, hk = 0;          ///< request and kv head
  int64_t tBegin = 0, tEnd = 0;   ///< tokens of the request it attends to
  int64_t first = 0; ///< the request's first kv_indices entry (checked form)
  /// The pair's split tasks [pairFirst, pairFirst + pairCount): what its
  /// merge combines (gqaPairTasks), known here without another pass.
  int64_t pairFirst = 0, pairCount = 0;
  /// Its add to the pair's arrival counter (ArrivalCounters.h; from the
  /// unchecked mapping, so a pair's adds sum right even when refused).
  uint64_t arrival = 0;
};

/// The run-time work of split task n of numTasks (n < numTasks).
template <typename TLen>
LOOM_HOST_DEVICE inline GqaSplitTask gqaSplitTask(const TLen *kvLens,
                                                  int64_t batch, int64_t hkv,
                                                  int64_t numTasks, int64_t n) {
  GqaSplitTask t;
  const int64_t c = gqaChunkTokens(kvLens, batch, hkv, numTasks);
  int64_t first = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = mappedLen(kvLens, b);
    const int64_t splits = gqaPairSplits(len, c);
    if (n < first + hkv * splits) {
      const int64_t local = n - first;
      const int64_t hk = local / splits, i = local - hk * splits;
      t.active = true;
      t.b = b;
      t.hk = hk;
      t.tBegin = i * len / splits;
      t.tEnd = (i + 1) * len / splits;
      t.arrival = arrivalShare(t.tEnd - t.tBegin, i == 0, len);
      t.pairFirst = first + hk * splits;
      t.pairCount = splits;
      return t;
    }
    first += hkv * splits;
  }
  return t;
}

/// gqaSplitTask with its request's kv_indptr and kv_lens checked where the
/// split reads them (MetaGuard.h, pagedRequest): a refused request's split
/// attends to no token; `first` is where its page ids start.
template <typename TPtr, typename TLen>
LOOM_HOST_DEVICE inline GqaSplitTask
gqaCheckedSplitTask(const TPtr *kvIndptr, const TLen *kvLens, int64_t batch,
                    int64_t hkv, int64_t numTasks, int64_t n,
                    int64_t numIndices, int64_t pageSize) {
  GqaSplitTask t = gqaSplitTask(kvLens, batch, hkv, numTasks, n);
  if (!t.active)
    return t;
  const PagedRequest req =
      pagedRequest(kvIndptr, kvLens, t.b, numIndices, pageSize);
  if (t.tEnd > req.len)
    t.tBegin = t.tEnd = 0;
  t.first = req.first;
  return t;
}

/// The split tasks of pair (b, hk), b < batch: [first, first + count).
struct GqaPairTasks {
  int64_t first = 0, count = 0;
};

template <typename TLen>
LOOM_HOST_DEVICE inline GqaPairTasks gqaPairTasks(const TLen *kvLens,
                                                  int64_t batch, int64_t hkv,
                                                  int64_t numTasks, int64_t b,
                                                  int64_t hk) {
  const int64_t c = gqaChunkTokens(kvLens, batch, hkv, numTasks);
  int64_t first = 0;
  for (int64_t r = 0; r < b; ++r)
    first += hkv * gqaPairSplits(mappedLen(kvLens, r), c);
  GqaPairTasks p;
  p.count = gqaPairSplits(mappedLen(kvLens, b), c);
  p.first = first + hk * p.count;
  return p;
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_GQASPLITS_H
