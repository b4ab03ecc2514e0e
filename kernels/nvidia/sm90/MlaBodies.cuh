//===- MlaBodies.cuh - Device task bodies for MLA paged decode ---*- CUDA
//-*-===//
//
// Block-cooperative versions of kernels/host/MlaBodies.h: the same slot
// arithmetic, piece indices and workspace layout (partial_o [pieces][H][Dc]
// then partial_lse [pieces][H], natural log), the same MlaParams. What the
// emitted kernels call is mlaDecode, one phase: each of the W slots splits
// its share of the tokens and then merges its own slice of every request
// it shares with other slots, once their pieces are in (per-request
// arrival counters among the launch's events), so there is no merge phase
// and no whole-phase event; a request that one slot covers is written
// straight to o. Its slots cut a line on which every request's tokens
// follow a gap of one piece's fixed cost (kMlaPieceTokens), so a short
// request lands in one slot. mlaSplit and mlaMerge are the two-phase form
// the host and gfx950 bodies keep (and the device self-check tests).
//
// mlaDecode lives here; the split (both paths) in MlaSplitBodies.cuh, the
// merge in MlaMergeBodies.cuh, and what they share in MlaCommon.cuh, all
// included here.
//
// Split, tensor-core path (bf16/f16, Dc = 512, Dp = 64, 256 threads): a
// piece's KV rows stream through shared memory in tiles of 64 tokens,
// double-buffered with cp.async (zero-filled past the piece, so the unused
// tail of a page is never read); a thread copies whole 128-byte runs of two
// rows whose page ids it loaded a tile earlier (a power-of-two page size
// costs a shift, no division). All heads of the slot (a 16-row m-tile per
// pass) share each KV row, which is MLA's point:
//   S = Q K^T   warp w scores tokens [8w, 8w+8) of the tile over 576 dims
//               (mma.m16n8k16, A = Q from shared memory, B = K rows; each
//               step's fragments load while the previous step multiplies);
//   softmax     online, base 2, one half-warp per head; P rounded to T;
//   O += P V    warp w owns latent dims [64w, 64w+64) (B = V rows via
//               ldmatrix.trans), fp32 accumulators in registers.
// Other shapes, types or thread counts take a plain path (a KV row at a time
// in shared memory, FFMA), as does a launch with too little shared memory.
//
// Shared memory: mlaSplitSmemBytes() = 174784 B for the tensor-core path
// (Q 16 x 584 + 2 KV tiles of 64 x 584 bf16, S/P/stats), else
// 4 * (Dc + Dp + 4H) B; mlaMergeSmemBytes(H, W) = 4 H (1 + W) B (8512 B at
// H = 16, W = 132), at least mlaMergeMinSmemBytes(H) = 8 H B.
//
// Merge: the block reads a request's piece LSEs at once into shared memory,
// a warp per head reduces them to the merged LSE and every piece's weight;
// then each thread sums 4 consecutive dims of a head over the pieces with
// 16-byte loads and FMAs (no division or exp per element), 4 units and 4
// pieces in flight, or, for a narrow slice of many pieces, lanes over the
// pieces reduced with shuffles.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH

#include "kernels/common/ArrivalCounters.h"
#include "kernels/nvidia/Atomics.cuh"
#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/sm90/MlaCommon.cuh"
#include "kernels/nvidia/sm90/MlaMergeBodies.cuh"
#include "kernels/nvidia/sm90/MlaSplitBodies.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

//===----------------------------------------------------------------------===//
// One phase: the slots merge their own requests
//===----------------------------------------------------------------------===//

/// Clock cycles a slot waits for the other pieces of a request before it
/// reports kBodyWaitTimedOut (~1 s): far past any split, short of a silent
/// hang when a worker failed.
constexpr long long kMlaMergeWaitCycles = 2ll << 30;

namespace detail {

/// Merges slice `j` of `k` of request b (global tokens [reqBegin, reqEnd)):
/// its o elements [j E / k, (j + 1) E / k) of E = H Dc, and the lse of the
/// heads they touch (slices that share a head write the same value). The
/// pieces are those of slots slotOf(reqBegin) .. slotOf(reqEnd - 1), all
/// written. `smemFloats` floats of shared memory hold the merged LSEs and
/// the pieces' weights.
template <int kThreads, typename T>
__device__ void mlaMergeSlice(const MlaParams<T> &p, int64_t b,
                              int64_t reqBegin, int64_t reqEnd,
                              const MlaSlots &slots, int64_t j, int64_t k,
                              const float *partialO, const float *partialLse,
                              float *smem, int64_t smemFloats) {
  const int64_t H = p.numHeads, Dc = p.dimCkv;
  const int kVec = Dc % 4 == 0 && nv::isAligned16(partialO) &&
                           nv::isAligned16(p.o)
                       ? 4
                       : 1;
  const int64_t units = H * Dc / kVec, perHead = Dc / kVec;
  const int64_t u0 = j * units / k, u1 = (j + 1) * units / k;
  if (u0 >= u1)
    return;
  const int64_t h0 = u0 / perHead, h1 = (u1 - 1) / perHead + 1, nh = h1 - h0;
  const int64_t first = MlaSlots::piece(slots.slotOf(reqBegin), b);
  const int64_t span =
      MlaSlots::piece(slots.slotOf(reqEnd - 1), b) - first + 1;
  float *sLseNat = smem, *sWeight = smem + nh;
  const int64_t cap = (smemFloats - nh) / nh; // >= 1: checked by the caller
  __syncthreads(); // earlier readers of this shared memory are done
  mlaMergeLse<kThreads>(nh, first, span, partialLse + h0, H,
                        p.lse + b * H + h0, sLseNat, sWeight, span <= cap);
  T *o = p.o + b * H * Dc;
  if (kVec == 4)
    mlaMergeSum<kThreads, 4>(o, Dc, u0, u1, h0, nh, first, span, cap,
                             partialO, partialLse, sLseNat, sWeight, H);
  else
    mlaMergeSum<kThreads, 1>(o, Dc, u0, u1, h0, nh, first, span, cap,
                             partialO, partialLse, sLseNat, sWeight, H);
}

/// The online merge's loads in flight per thread: kMlaMergeUnits units,
/// kMlaMergePieces pieces of each at a time.
constexpr int kMlaMergeUnits = 4, kMlaMergePieces = 4;

/// One slot's share of a split request's merge: units [u0, u1) of the
/// request's H Dc / 4 units of four floats (slice j of k, k the request's
/// pieces, j counted from its first slot), pieces [first, first + span),
/// `lanes` lanes per unit.
struct MlaMergeJob {
  int64_t first;
  int32_t span, u0, u1, lanes;
};

/// The job of slot `slot` for the request on line positions [reqBegin,
/// reqEnd): 32-bit arithmetic (units <= 2^24, checked by the caller), no
/// division call, worked out before the wait for the other pieces. The
/// lanes per unit: the power of two with the fewest rounds of loads
/// (passes over the units times chunks of a lane's pieces), so lanes go
/// over units for a wide slice of few pieces, over pieces for a narrow
/// slice of many.
template <int kThreads>
__device__ __forceinline__ MlaMergeJob mlaMergeJobOf(const MlaSlots &slots,
                                                     int64_t b, int64_t slot,
                                                     int64_t reqBegin,
                                                     int64_t reqEnd,
                                                     int32_t units) {
  const int64_t s0 = slots.slotOf(reqBegin), s1 = slots.slotOf(reqEnd - 1);
  const uint32_t k = uint32_t(s1 - s0 + 1), j = uint32_t(slot - s0);
  MlaMergeJob job{MlaSlots::piece(s0, b), int32_t(k),
                  int32_t(j * uint32_t(units) / k),
                  int32_t((j + 1) * uint32_t(units) / k), 1};
  constexpr int32_t kPerPass = kThreads * kMlaMergeUnits;
  int32_t rounds = INT32_MAX;
  for (int32_t c = 1; c <= 32; c *= 2) {
    const int32_t passes = ((job.u1 - job.u0) * c + kPerPass - 1) / kPerPass;
    const int32_t chunks =
        (job.span + c * kMlaMergePieces - 1) / (c * kMlaMergePieces);
    if (passes * chunks < rounds) {
      rounds = passes * chunks;
      job.lanes = c;
    }
  }
  return job;
}

/// The merge of one job in a single pass: o's units, and the base-2 lse of
/// each head whose first unit the job holds (so exactly one slice writes
/// it). Each unit's pieces are split over G = job.lanes lanes (every G-th
/// piece, kP loads at a time for each of a thread's kU units), each lane
/// keeps a running max, sum of weights and weighted sum, and the G lanes
/// combine theirs with shuffles: no shared memory, no barrier.
template <int kThreads, typename T>
__device__ __forceinline__ void
mlaMergeOnline(const MlaMergeJob &job, T *o, float *lse, const float *partialO,
               const float *partialLse, int32_t unitsPerHead, int64_t H,
               int64_t Dc) {
  constexpr int kU = kMlaMergeUnits, kP = kMlaMergePieces;
  const int32_t G = job.lanes;
  const int32_t g = int32_t(threadIdx.x) & (G - 1);
  const int32_t unitLanes = kThreads / G; // units a pass covers per kU
  const int64_t pieceFloats = H * Dc;
  const float *lseOf = partialLse + job.first * H;
  const float *rowOf = partialO + job.first * pieceFloats;
  // Uniform trip counts: the shuffles below need every lane of a warp.
  for (int32_t base = job.u0; base < job.u1; base += unitLanes * kU) {
    int32_t v[kU], h[kU];
    float m[kU], d[kU], acc[kU][4];
#pragma unroll
    for (int i = 0; i < kU; ++i) {
      v[i] = base + int32_t(threadIdx.x) / G + i * unitLanes;
      h[i] = v[i] < job.u1 ? v[i] / unitsPerHead : -1;
      m[i] = nv::kNegInf;
      d[i] = 0.f;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[i][e] = 0.f;
    }
    for (int32_t j0 = g; j0 < job.span; j0 += G * kP) {
      float l[kU][kP];
      float4 x[kU][kP];
#pragma unroll
      for (int i = 0; i < kU; ++i)
#pragma unroll
        for (int q = 0; q < kP; ++q) {
          const int32_t j = j0 + q * G;
          const bool in = h[i] >= 0 && j < job.span;
          // Plain (coherent) loads: other blocks wrote the pieces.
          l[i][q] = in ? lseOf[int64_t(j) * H + h[i]] * nv::kLog2e
                       : nv::kNegInf;
          x[i][q] = in ? *reinterpret_cast<const float4 *>(
                             rowOf + int64_t(j) * pieceFloats +
                             int64_t(v[i]) * 4)
                       : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
      for (int i = 0; i < kU; ++i) {
        float mx = m[i];
#pragma unroll
        for (int q = 0; q < kP; ++q)
          mx = fmaxf(mx, l[i][q]);
        if (mx == nv::kNegInf)
          continue; // no piece here yet
        const float a = nv::rescale2(m[i], mx);
        d[i] *= a;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[i][e] *= a;
#pragma unroll
        for (int q = 0; q < kP; ++q) {
          const float w = nv::rescale2(l[i][q], mx);
          d[i] += w;
          acc[i][0] = fmaf(w, x[i][q].x, acc[i][0]);
          acc[i][1] = fmaf(w, x[i][q].y, acc[i][1]);
          acc[i][2] = fmaf(w, x[i][q].z, acc[i][2]);
          acc[i][3] = fmaf(w, x[i][q].w, acc[i][3]);
        }
        m[i] = mx;
      }
    }
    for (int32_t off = G / 2; off > 0; off /= 2)
#pragma unroll
      for (int i = 0; i < kU; ++i)
        nv::combineSoftmaxWithLane(m[i], d[i], acc[i], off);
#pragma unroll
    for (int i = 0; i < kU; ++i) {
      if (g != 0 || h[i] < 0)
        continue;
      // d >= 1: the largest weight is 2^0.
      const float inv = nv::rcpAtLeastOne(d[i]);
      const float out[4] = {acc[i][0] * inv, acc[i][1] * inv,
                            acc[i][2] * inv, acc[i][3] * inv};
      MlaVec<4>::store(o, int64_t(v[i]), out);
      if (v[i] % unitsPerHead == 0)
        lse[h[i]] = m[i] + nv::fastLog2(d[i]);
    }
  }
}

/// Thread 0 waits until request b's counter reaches the launch's target,
/// from the value its own arrival saw; the block follows. False: timed out.
__device__ __forceinline__ bool mlaAwaitPieces(unsigned long long *counter,
                                               unsigned long long seen) {
  bool ok = true;
  if (threadIdx.x == 0) {
    const unsigned long long target = launchTarget(seen);
    const long long start = clock64();
    while (nv::loadAcquireGpu(counter) < target)
      if (clock64() - start > kMlaMergeWaitCycles) {
        ok = false;
        break;
      }
  }
  return !__syncthreads_or(!ok);
}

} // namespace detail

/// MLA decode in one phase, task `slot` of `numSlots` (the split's slots,
/// the same arithmetic): a request that one slot covers whole is written
/// straight to o and lse; the pieces of a split request go to the
/// workspace, each slot then adds its share to the request's counter
/// `arrivals[b]` and, once all have arrived, merges its own slice of the
/// request (so k pieces merge k slices at once). Empty requests are zeroed
/// by slot b % numSlots. `arrivals` holds max_batch counters that only grow
/// (kLaunchArrivals per request and launch, ArrivalCounters.h); all
/// numSlots tasks must be resident together (the persistent launch
/// guarantees it). Inlined: a program calls it from its one tile function,
/// and a call costs a cold launch its stack copy of the operands and a jump
/// to far code.
template <int kThreads, typename T>
__device__ __forceinline__ int32_t
mlaDecode(const MlaParams<T> &p, int64_t slot, int64_t numSlots,
          float *partialO, float *partialLse, unsigned long long *arrivals,
          char *smem, int64_t minSlotTokens = kMlaPieceTokens) {
  const bool fast = detail::mlaUseFastSplit<kThreads>(p);
  const int64_t have = nv::dynamicSmemBytes();
  const int64_t used =
      fast ? detail::kMlaSmemFast
           : mlaSplitGenericSmemBytes(p.numHeads, p.dimCkv, p.dimKpe);
  // The merge needs each head's lse and at least one weight per head.
  if (have < imax(used, mlaMergeMinSmemBytes(p.numHeads)))
    return nv::kBodySmemTooSmall;
  const detail::MlaOffsets offsets = detail::mlaOffsets<kThreads>(p, smem, used);
  const int64_t *off = offsets.off;
  // The slots' line: each request's tokens after a gap of its fixed cost.
  constexpr int64_t kGap = kMlaPieceTokens;
  const MlaSlots slots =
      mlaSlots(offsets.total + p.batch * kGap, numSlots, minSlotTokens);
  const int64_t H = p.numHeads, Dc = p.dimCkv;
  // Shared memory the merges may use: all below the offsets.
  const int64_t mergeFloats = offsets.free / 4;

  // Empty requests: o = 0, lse = -inf.
  for (int64_t b = slot; b < p.batch; b += numSlots) {
    const int64_t len = off ? off[b + 1] - off[b] : mlaCheckedLen(p, b);
    if (len > 0)
      continue;
    for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads)
      nv::stF(p.o + b * H * Dc, i, 0.f);
    for (int64_t h = threadIdx.x; h < H; h += kThreads)
      p.lse[b * H + h] = nv::kNegInf;
  }
  if (slot >= slots.active)
    return nv::kBodyOk;
  const int64_t mineBegin = slots.begin(slot), mineEnd = slots.end(slot);
  if (mineBegin >= mineEnd)
    return nv::kBodyOk;

  // Request b's tokens are [reqBegin, reqEnd) on the line.
  const int64_t b0 = detail::mlaFirstRequest(off, p.batch, mineBegin, kGap);
  int64_t reqBegin = mlaLineStart(off ? off[b0] : 0, b0, kGap);
  // Split requests this slot holds a piece of: only its first and last
  // pieces can be partial. Thread 0 keeps what its arrival saw.
  int64_t pendB[2], pendBegin[2], pendEnd[2];
  unsigned long long pendSeen[2] = {0, 0};
  int pending = 0;
  for (int64_t b = b0; b < p.batch && reqBegin < mineEnd; ++b) {
    const int64_t reqEnd =
        reqBegin + (off ? off[b + 1] - off[b] : mlaCheckedLen(p, b));
    const int64_t begin = imax(mineBegin, reqBegin);
    const int64_t end = imin(mineEnd, reqEnd);
    if (begin < end) {
      const bool whole = begin == reqBegin && end == reqEnd;
      const int64_t piece = MlaSlots::piece(slot, b);
      float *pieceO = partialO + piece * H * Dc;
      float *pieceLse = partialLse + piece * H;
      bool direct = false;
      if constexpr (kThreads == 256 &&
                    (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)) {
        if (fast) {
          direct = whole;
          detail::mlaSplitPieceFast(p, b, offsets.pages(p, b),
                                    begin - reqBegin, end - reqBegin,
                                    pieceO, pieceLse, smem,
                                    whole ? p.o + b * H * Dc : nullptr,
                                    whole ? p.lse + b * H : nullptr);
        }
      }
      if (!fast)
        detail::mlaSplitPieceGeneric<kThreads>(p, b, begin - reqBegin,
                                               end - reqBegin, pieceO,
                                               pieceLse, smem);
      if (whole && !direct) {
        // The plain path's whole request: its one piece, merged here.
        detail::mlaMergeSlice<kThreads>(
            p, b, reqBegin, reqEnd, slots, 0, 1, partialO, partialLse,
            reinterpret_cast<float *>(smem), mergeFloats);
      } else if (!whole) {
        __syncthreads(); // every thread's stores of the piece are issued
        if (threadIdx.x == 0) {
          const unsigned long long share =
              arrivalShare(end - begin, begin == reqBegin, reqEnd - reqBegin);
          pendSeen[pending] = nv::fetchAddReleaseGpu(arrivals + b, share);
        }
        pendB[pending] = b;
        pendBegin[pending] = reqBegin;
        pendEnd[pending] = reqEnd;
        ++pending;
      }
    }
    reqBegin = reqEnd + kGap;
  }

  // Merge this slot's slice of each split request once all its pieces are
  // in: slice j of k, j counted from the request's first slot. Units of
  // four floats when a head's row holds whole ones (a single pass, its
  // arithmetic done while the other pieces are still on their way).
  const bool online = Dc % 4 == 0 && H * Dc / 4 <= (int64_t(1) << 24) &&
                      nv::isAligned16(p.o);
  for (int i = 0; i < pending; ++i) {
    const int64_t b = pendB[i];
    const detail::MlaMergeJob job = detail::mlaMergeJobOf<kThreads>(
        slots, b, slot, pendBegin[i], pendEnd[i], int32_t(H * Dc / 4));
    if (!detail::mlaAwaitPieces(arrivals + b, pendSeen[i]))
      return nv::kBodyWaitTimedOut;
    if (online) {
      detail::mlaMergeOnline<kThreads>(job, p.o + b * H * Dc, p.lse + b * H,
                                       partialO, partialLse,
                                       int32_t(Dc / 4), H, Dc);
      continue;
    }
    const int64_t s0 = slots.slotOf(pendBegin[i]);
    detail::mlaMergeSlice<kThreads>(p, b, pendBegin[i], pendEnd[i], slots,
                                    slot - s0, job.span, partialO, partialLse,
                                    reinterpret_cast<float *>(smem),
                                    mergeFloats);
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH
