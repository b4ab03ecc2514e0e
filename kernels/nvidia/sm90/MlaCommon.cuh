//===- MlaCommon.cuh - What the sm90 MLA bodies share ----------*- CUDA -*-===//
//
// The names the MLA headers (MlaSplitBodies.cuh, MlaMergeBodies.cuh,
// MlaBodies.cuh) share: the host's operand struct and checked lengths, the
// slot arithmetic of kernels/common/MlaSlots.h, the 16-bit pair store, and
// the requests' token offsets every task walks, in shared memory.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_MLACOMMON_CUH
#define LOOM_KERNELS_NVIDIA_SM90_MLACOMMON_CUH

#include "kernels/host/MlaBodies.h"
#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/Numerics.cuh"
#include "kernels/nvidia/sm90/Aliases.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

/// The host's operand struct: the emitted code fills it the same way.
template <typename T> using MlaParams = host::MlaParams<T>;
// The checked lengths every task's mapping of the slots counts.
using host::mlaCheckedLen;
using host::mlaCheckedTokens;

// Workspace layout and slot arithmetic: kernels/common/MlaSlots.h, the one
// copy host and devices share (re-exported for the emitted code and tests).
using ::loom::kMlaMinSlotTokens;
using ::loom::mlaNumPieces;
using ::loom::mlaPartialOFloats;
using ::loom::MlaSlots;
using ::loom::mlaSlots;
using ::loom::mlaWorkspaceFloats;

namespace detail {

template <typename T>
__device__ __forceinline__ uint32_t packPair(float lo, float hi) {
  return std::is_same_v<T, bf16> ? nv::packBf16x2(lo, hi)
                                 : nv::packF16x2(lo, hi);
}

/// The requests' token offsets, sPrefix[b] = kv_lens[0] + ... + kv_lens[b-1]
/// for b <= batch, computed by the whole block in shared memory, and their
/// first page ids' places sIndptr[b] = kv_indptr[b] for b < batch. Walking
/// the requests through global memory costs one dependent load (~0.5-1 us)
/// per request on every task, and kv_indptr[b] one more before a piece's
/// page ids; here each thread loads its share at once, with the same round
/// trip. `sScan` holds kThreads / 32 int64s. The requests' meta values are
/// checked here (mlaCheckedLen: a refused request has no tokens), so every task
/// checks them all.
template <int kThreads, typename T>
__device__ void mlaPrefixToSmem(const MlaParams<T> &p, int64_t *sPrefix,
                                int64_t *sScan, int32_t *sIndptr) {
  const int64_t batch = p.batch;
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t per = ceilDiv(batch, int64_t(kThreads));
  const int64_t lo = imin(int64_t(threadIdx.x) * per, batch);
  const int64_t hi = imin(lo + per, batch);
  int64_t mine = 0;
  for (int64_t b = lo; b < hi; ++b) {
    const PagedRequest r =
        pagedRequest(p.kvIndptr, p.kvLens, b, p.numIndices, p.pageSize);
    mine += r.len;
    sIndptr[b] = int32_t(r.first);
  }
  // Inclusive scan of `mine` over the block: warps, then warp totals.
  int64_t inc = mine;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const int64_t up = __shfl_up_sync(0xffffffffu, inc, off);
    if (lane >= off)
      inc += up;
  }
  __syncthreads(); // sScan / sPrefix may still be read by a previous walk
  if (lane == 31)
    sScan[warp] = inc;
  __syncthreads();
  int64_t before = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    before += w < warp ? sScan[w] : 0;
  int64_t run = before + inc - mine; // exclusive prefix of this chunk
  for (int64_t b = lo; b < hi; ++b) {
    sPrefix[b] = run;
    // The values above, again (L1 hits), already checked and recorded.
    run += mlaCheckedLen(p, b, /*record=*/false);
  }
  if (threadIdx.x == kThreads - 1)
    sPrefix[batch] = before + inc;
  __syncthreads();
}

/// Bytes mlaPrefixToSmem needs at the top of the dynamic shared memory:
/// the scan's scratch, the offsets, then kv_indptr's copy.
__device__ __forceinline__ int64_t mlaPrefixSmemBytes(int64_t batch,
                                                      int kThreads) {
  return roundUp((batch + 1) * 8 + int64_t(kThreads / 32) * 8 + batch * 4,
                 16);
}

/// Its place: the top of the dynamic shared memory, so the bodies' own
/// layouts from offset 0 are unchanged; nullptr if it does not fit above
/// `used` bytes.
__device__ __forceinline__ int64_t *mlaPrefixSlot(char *smem, int64_t used,
                                                  int64_t batch, int kThreads) {
  const int64_t have = nv::dynamicSmemBytes();
  const int64_t need = mlaPrefixSmemBytes(batch, kThreads);
  if (have - need < roundUp(used, 16))
    return nullptr;
  return reinterpret_cast<int64_t *>(smem + (have - need));
}

/// The launch's request offsets (off[b] = tokens before request b, b <=
/// batch) and kv_indptr's copy at the top of the shared memory above
/// `used` bytes, or nullptr where they do not fit (then the walks read
/// kv_lens and kv_indptr); `total` the sum of kv_lens either way; `free`
/// the bytes below them (all when none).
struct MlaOffsets {
  const int64_t *off;
  const int32_t *indptr;
  int64_t total;
  int64_t free;

  /// Request b's page ids.
  template <typename T>
  __device__ __forceinline__ const int32_t *pages(const MlaParams<T> &p,
                                                  int64_t b) const {
    return p.kvIndices + (indptr ? indptr[b] : p.kvIndptr[b]);
  }
};

template <int kThreads, typename T>
__device__ __forceinline__ MlaOffsets mlaOffsets(const MlaParams<T> &p, char *smem,
                                 int64_t used) {
  constexpr int kScan = kThreads / 32; // the scan's scratch, then offsets
  int64_t *slot = mlaPrefixSlot(smem, used, p.batch, kThreads);
  if (!slot)
    return {nullptr, nullptr, mlaCheckedTokens(p),
            nv::dynamicSmemBytes()};
  int32_t *indptr = reinterpret_cast<int32_t *>(slot + kScan + p.batch + 1);
  mlaPrefixToSmem<kThreads>(p, slot + kScan, slot, indptr);
  return {slot + kScan, indptr, slot[kScan + p.batch],
          reinterpret_cast<char *>(slot) - smem};
}

/// Where a slot starting at line position `pos` begins its walk: the last
/// request whose place on the line (off[b] + b gap: its gap, then its
/// tokens; mlaLineStart) starts at or before `pos`, by binary search; 0
/// without offsets.
__device__ __forceinline__ int64_t mlaFirstRequest(const int64_t *off,
                                                   int64_t batch, int64_t pos,
                                                   int64_t gap) {
  if (!off)
    return 0;
  int64_t lo = 0, hi = batch; // start(lo) <= pos, answer in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (off[mid] + mid * gap <= pos)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

} // namespace detail

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_MLACOMMON_CUH
