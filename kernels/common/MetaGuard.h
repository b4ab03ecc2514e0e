//===- MetaGuard.h - Meta values checked where the bodies read them -*- C++ -*-===//
//
// Page ids, page pointers, lengths, cache slots and sequence offsets come
// from the caller at run time. The bodies of every target read them through
// these checks, at the point where they read them anyway: a value out of
// range is recorded (recordMetaFault: the first of a task counts) and
// replaced by one in range, or its work is skipped, so nothing is read or
// written through it; the task then fails with LOOM_BODY_BAD_INDEX and the
// runtime names the buffer, the index and the value (ProgramAbi.h,
// LoomMetaFault). Checking here costs a compare per value the body loads,
// where a separate pass over the meta buffers before the bodies would cost
// a grid-wide barrier per launch.
//
// A program compiled with LOOM_TRUST_META (loomc --trust-meta) leaves the
// checks out, for callers that validate the values themselves.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_METAGUARD_H
#define LOOM_KERNELS_COMMON_METAGUARD_H

#include "kernels/common/HostDevice.h"
#include "kernels/common/ProgramAbi.h"

#include <cstdint>

namespace loom {

/// Records that the value at `where` (`value`) was refused for `reason`
/// (LoomMetaReason). Defined by each target's bodies: in the block's shared
/// memory on a GPU (the worker loop reads it after the body), per thread on
/// the host (the runtime reads it through LOOM_HOST_META_FAULT_SYMBOL).
LOOM_HOST_DEVICE inline void recordMetaFault(const void *where, int64_t value,
                                             int32_t reason);

/// A GPU block's record of its task's first refused value, which each
/// vendor keeps in static shared memory (kernels/<vendor>/MetaFault*).
struct MetaFaultSlot {
  LoomMetaFault fault;
  int32_t taken; ///< non-zero once a thread has recorded a fault
};

/// Whether the checks are compiled in.
#ifdef LOOM_TRUST_META
constexpr bool kCheckMeta = false;
#else
constexpr bool kCheckMeta = true;
#endif

/// Whether a write through `*p` may go ahead: 0 <= *p < limit; otherwise
/// records the fault (a negative value is the caller's to handle first,
/// e.g. a padding slot). Writes are skipped, not redirected.
template <typename T>
LOOM_HOST_DEVICE inline bool writableIndex(const T *p, int64_t limit,
                                           int32_t reason) {
  const int64_t v = int64_t(*p);
  if (kCheckMeta && uint64_t(v) >= uint64_t(limit)) {
    recordMetaFault(p, v, reason);
    return false;
  }
  return true;
}

/// *p when 0 <= *p < limit; otherwise records the fault and returns 0 (a
/// value in range whenever limit >= 1).
template <typename T>
LOOM_HOST_DEVICE inline int64_t checkedIndex(const T *p, int64_t limit,
                                             int32_t reason) {
  return writableIndex(p, limit, reason) ? int64_t(*p) : 0;
}

/// Cold: records the first page id of ids[from, to) outside [0, numPages).
template <typename TInd>
LOOM_HOST_DEVICE LOOM_NOINLINE void reportBadPage(const TInd *ids, int64_t from, int64_t to,
                                    int64_t numPages) {
  for (int64_t i = from; i < to; ++i)
    if (uint64_t(int64_t(ids[i])) >= uint64_t(numPages)) {
      recordMetaFault(ids + i, int64_t(ids[i]), LOOM_META_PAGE_ID);
      return;
    }
}

/// A request's page ids for a hot loop: a refused id reads as page 0 (a
/// select, no branch) and sets `bad`, and the loop's owner calls report()
/// once at its end, which finds and records the id (reportBadPage), so the
/// loop carries no call.
template <typename TInd> struct CheckedPages {
  const TInd *ids;
  int64_t numPages;
  mutable bool bad = false;
  LOOM_HOST_DEVICE int64_t operator[](int64_t i) const {
    return checked(int64_t(ids[i]));
  }
  /// operator[]'s check of an id loaded earlier (a loop that loads the ids
  /// of its next step ahead checks them where it uses them).
  LOOM_HOST_DEVICE int64_t checked(int64_t v) const {
    if (!kCheckMeta)
      return v;
    const bool ok = uint64_t(v) < uint64_t(numPages);
    bad = bad || !ok;
    return ok ? v : 0;
  }
  /// Entries [from, to) are all the loop may have read.
  LOOM_HOST_DEVICE void report(int64_t from, int64_t to) const {
    if (kCheckMeta && bad)
      reportBadPage(ids, from, to, numPages);
  }
};

/// A paged request's page ids, kv_indices[first, first + ceil(len / P)),
/// and its tokens.
struct PagedRequest {
  int64_t first = 0;
  int64_t len = 0;
};

/// pagedRequest's rules for a request whose page ids are kv_indices[first,
/// end) and which holds `len` tokens: branch-free, so a loop over a batch
/// can test them all with its loads issued together.
LOOM_HOST_DEVICE inline bool pagedRequestOk(int64_t first, int64_t end,
                                            int64_t len, int64_t numIndices,
                                            int64_t pageSize) {
  return (uint64_t(first) <= uint64_t(numIndices)) & (end >= first) &
         (end <= numIndices) & (len >= 0) & (len <= (end - first) * pageSize);
}

/// Cold: records which rule request b breaks (pagedRequest's).
template <typename TPtr, typename TLen>
LOOM_HOST_DEVICE LOOM_NOINLINE void
reportBadRequest(const TPtr *kvIndptr, const TLen *kvLens, int64_t b,
                 int64_t numIndices, int64_t pageSize) {
  const int64_t first = int64_t(kvIndptr[b]), end = int64_t(kvIndptr[b + 1]);
  const int64_t len = int64_t(kvLens[b]);
  if (uint64_t(first) > uint64_t(numIndices))
    recordMetaFault(kvIndptr + b, first, LOOM_META_INDPTR);
  else if (end < first || end > numIndices)
    recordMetaFault(kvIndptr + b + 1, end, LOOM_META_INDPTR);
  else
    recordMetaFault(kvLens + b, len, LOOM_META_KV_LEN);
}

/// Request b of a paged cache: kv_indptr[b] <= kv_indptr[b + 1] within the
/// `numIndices` page ids, 0 <= kv_lens[b] <= its pages x `pageSize`.
/// A request that breaks one of them has no tokens (and, with `record`, the
/// fault is recorded), so its reads stay within kv_indices.
template <typename TPtr, typename TLen>
LOOM_HOST_DEVICE inline PagedRequest
pagedRequest(const TPtr *kvIndptr, const TLen *kvLens, int64_t b,
             int64_t numIndices, int64_t pageSize, bool record = true) {
  PagedRequest r;
  r.first = int64_t(kvIndptr[b]);
  r.len = int64_t(kvLens[b]);
  if (!kCheckMeta)
    return r;
  if (pagedRequestOk(r.first, int64_t(kvIndptr[b + 1]), r.len, numIndices,
                     pageSize))
    return r;
  if (record)
    reportBadRequest(kvIndptr, kvLens, b, numIndices, pageSize);
  r.first = 0;
  r.len = 0;
  return r;
}

/// The tokens of request b for the run-time mappings of the splits (the
/// same for every task that reads the same value): negative is none. A
/// length the request's pages cannot hold is refused where the request's
/// tokens are read (pagedRequest).
template <typename TLen>
LOOM_HOST_DEVICE inline int64_t mappedLen(const TLen *kvLens, int64_t b) {
  const int64_t len = int64_t(kvLens[b]);
  return len > 0 ? len : 0;
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_METAGUARD_H
