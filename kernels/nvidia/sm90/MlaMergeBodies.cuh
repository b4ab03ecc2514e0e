//===- MlaMergeBodies.cuh - The sm90 MLA merge of pieces -------*- CUDA -*-===//
//
// mlaMerge and the weighted sums mlaDecode's merges also run, of
// MlaBodies.cuh (which includes this file; its header describes the
// merge and its shared memory).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_MLAMERGEBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_MLAMERGEBODIES_CUH

#include "kernels/nvidia/sm90/MlaCommon.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

/// Shared memory of the merge: the natural-log lse per head plus the weights
/// of every piece of a request per head. A request has at most E <= numSlots
/// pieces, so with this much they are computed once per request; with less
/// (but at least mlaMergeMinSmemBytes) they are recomputed in chunks.
__host__ __device__ constexpr int64_t mlaMergeSmemBytes(int64_t numHeads,
                                                        int64_t numSlots) {
  return 4 * numHeads * (1 + numSlots);
}
/// The least the merge runs with: lse plus one piece's weights per head.
__host__ __device__ constexpr int64_t mlaMergeMinSmemBytes(int64_t numHeads) {
  return 4 * numHeads * 2;
}

namespace detail {

/// acc[0 .. kVec) += w * src[0 .. kVec): one 16-byte load when kVec = 4.
template <int kVec> struct MlaVec;
template <> struct MlaVec<4> {
  static __device__ __forceinline__ void fma(float (&acc)[4], float w,
                                             const float *src) {
    // Plain (coherent) loads: other blocks wrote the pieces in this launch.
    const float4 v = *reinterpret_cast<const float4 *>(src);
    acc[0] = fmaf(w, v.x, acc[0]);
    acc[1] = fmaf(w, v.y, acc[1]);
    acc[2] = fmaf(w, v.z, acc[2]);
    acc[3] = fmaf(w, v.w, acc[3]);
  }
  /// o[4 v .. 4 v + 4) = acc: one 8-byte store for 16-bit T.
  template <typename T>
  static __device__ __forceinline__ void store(T *o, int64_t v,
                                               const float (&acc)[4]) {
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      *reinterpret_cast<uint2 *>(o + 4 * v) =
          make_uint2(packPair<T>(acc[0], acc[1]), packPair<T>(acc[2], acc[3]));
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        nv::stF(o, 4 * v + k, acc[k]);
    }
  }
};
template <> struct MlaVec<1> {
  static __device__ __forceinline__ void fma(float (&acc)[1], float w,
                                             const float *src) {
    acc[0] = fmaf(w, *src, acc[0]);
  }
  template <typename T>
  static __device__ __forceinline__ void store(T *o, int64_t v,
                                               const float (&acc)[1]) {
    nv::stF(o, v, acc[0]);
  }
};

/// The weighted sum over pieces [first, first + span) of a request's o
/// elements [kVec uBegin, kVec uEnd) (row-major [H][Dc], `o` and `partialO`
/// at head 0), kVec elements per thread and step (16-byte loads when
/// kVec = 4). The units cover heads [hBase, hBase + nh); the weight of piece
/// j and head h is sWeight[j * nh + h - hBase]: when span <= cap,
/// mlaMergeLse has filled them; else they are filled here for chunks of
/// `cap` pieces, one fill per chunk and element batch. A piece holds
/// headStride heads.
template <int kThreads, int kVec, typename T>
__device__ void mlaMergeSum(T *o, int64_t Dc, int64_t uBegin, int64_t uEnd,
                            int64_t hBase, int64_t nh, int64_t first,
                            int64_t span, int64_t cap, const float *partialO,
                            const float *partialLse, const float *sLseNat,
                            float *sWeight, int64_t headStride) {
  auto fill = [&](int64_t c0, int64_t n) {
    __syncthreads(); // the previous chunk's readers are done
    for (int64_t i = threadIdx.x; i < n * nh; i += kThreads) {
      const int64_t j = i / nh, h = i - j * nh; // once per (piece, head)
      sWeight[i] = expf(partialLse[(first + c0 + j) * headStride + hBase + h] -
                        sLseNat[h]);
    }
    __syncthreads();
  };
  const bool once = span <= cap;
  if (once)
    __syncthreads(); // mlaMergeLse's weights are visible
  const int32_t dcVec = int32_t(Dc / kVec);
  const int32_t u0 = int32_t(uBegin), u1 = int32_t(uEnd);
  const int64_t pieceStride = headStride * Dc;
  // A narrow slice of many pieces (a long request over many slots): G
  // consecutive lanes share a unit, each summing every G-th piece, then
  // reduce with shuffles, so all threads load at once.
  int32_t G = 1;
  while (once && G < 32 && int64_t(G) * 2 * (u1 - u0) <= kThreads &&
         G * 2 <= span)
    G *= 2;
  if (G > 1) {
    const int32_t g = int32_t(threadIdx.x) % G, perPass = kThreads / G;
    for (int32_t v0 = u0; v0 < u1; v0 += perPass) {
      const int32_t v = v0 + int32_t(threadIdx.x) / G;
      const bool ok = v < u1;
      const int32_t h = ok ? v / dcVec - int32_t(hBase) : 0;
      const float *src = partialO + first * pieceStride + int64_t(v) * kVec;
      float acc[kVec];
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        acc[k] = 0.f;
      if (ok) {
#pragma unroll 4
        for (int64_t j = g; j < span; j += G)
          MlaVec<kVec>::fma(acc, sWeight[j * nh + h], src + j * pieceStride);
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        for (int off = G / 2; off > 0; off /= 2)
          acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], off);
      if (ok && g == 0)
        MlaVec<kVec>::store(o, int64_t(v), acc);
    }
    return;
  }
  // Otherwise kU units per thread and pass, and the piece loop unrolled, so
  // that many independent loads are in flight: a merge is a few L2 round
  // trips, not one per (unit batch, piece).
  constexpr int kU = 4;
  for (int32_t v0 = u0; v0 < u1; v0 += kThreads * kU) {
    int32_t h[kU];
    const float *src[kU];
    float acc[kU][kVec];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int32_t v = v0 + int32_t(threadIdx.x) + u * kThreads;
      // One 32-bit division per unit: its head, relative to hBase.
      h[u] = v < u1 ? v / dcVec - int32_t(hBase) : -1;
      src[u] = partialO + first * pieceStride + int64_t(v) * kVec;
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        acc[u][k] = 0.f;
    }
    for (int64_t c0 = 0; c0 < span; c0 += cap) {
      const int64_t n = imin(cap, span - c0);
      if (!once)
        fill(c0, n); // block-uniform: every thread runs every v0 and c0
#pragma unroll 4
      for (int64_t j = 0; j < n; ++j)
#pragma unroll
        for (int u = 0; u < kU; ++u)
          if (h[u] >= 0)
            MlaVec<kVec>::fma(acc[u], sWeight[j * nh + h[u]],
                              src[u] + (c0 + j) * pieceStride);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (h[u] >= 0)
        MlaVec<kVec>::store(o, int64_t(v0 + int32_t(threadIdx.x) + u * kThreads),
                            acc[u]);
  }
}

/// The merged natural-log LSE of heads [0, nh) over pieces [first,
/// first + span) into sLseNat (and lse, base 2), and with `fill` every
/// piece's weight exp(lse_j - lse) into sWeight[j * nh + h]. With `fill`
/// the block first brings all the pieces' LSEs into sWeight at once (one
/// round of loads whatever the span), then a warp per head reduces them
/// there; without, a warp per head reads them itself. A piece holds
/// headStride heads.
template <int kThreads>
__device__ void mlaMergeLse(int64_t nh, int64_t first, int64_t span,
                            const float *partialLse, int64_t headStride,
                            float *lse, float *sLseNat, float *sWeight,
                            bool fill) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int32_t n = int32_t(span * nh);
  if (fill) {
#pragma unroll 4
    for (int32_t i = threadIdx.x; i < n; i += kThreads) {
      const int32_t j = i / int32_t(nh), h = i - j * int32_t(nh);
      sWeight[i] = partialLse[(first + j) * headStride + h];
    }
    __syncthreads();
  }
  // Piece j's LSE of head h: from shared memory when filled.
  auto lseOf = [&](int64_t j, int64_t h) {
    return fill ? sWeight[j * nh + h]
                : partialLse[(first + j) * headStride + h];
  };
  for (int64_t h = warp; h < nh; h += kWarps) {
    float m = nv::kNegInf;
    for (int64_t j = lane; j < span; j += 32)
      m = fmaxf(m, lseOf(j, h));
    m = nv::warpMax(m); // finite: every piece holds a token
    float sum = 0.f;
    for (int64_t j = lane; j < span; j += 32)
      sum += expf(lseOf(j, h) - m);
    const float lseNat = m + logf(nv::warpSum(sum));
    if (lane == 0) {
      sLseNat[h] = lseNat;
      lse[h] = lseNat / host::kMlaLn2;
    }
  }
  if (fill) {
    __syncthreads(); // every head's sLseNat, and its reads of sWeight
    for (int32_t i = threadIdx.x; i < n; i += kThreads)
      sWeight[i] = expf(sWeight[i] - sLseNat[i % int32_t(nh)]);
  }
}

/// Merges heads [h0, h1) of request b (global tokens [reqBegin, reqEnd))
/// from its pieces: those of slots slotOf(reqBegin) .. slotOf(reqEnd - 1),
/// all written.
template <int kThreads, typename T>
__device__ void mlaMergeRequest(const MlaParams<T> &p, int64_t b, int64_t h0,
                                int64_t h1, int64_t reqBegin, int64_t reqEnd,
                                const MlaSlots &slots, const float *partialO,
                                const float *partialLse, float *sLseNat,
                                float *sWeight, int64_t cap) {
  const int64_t H = p.numHeads, Dc = p.dimCkv, nh = h1 - h0;
  T *o = p.o + (b * H + h0) * Dc;
  float *lse = p.lse + b * H + h0;
  if (reqBegin >= reqEnd) {
    for (int64_t i = threadIdx.x; i < nh * Dc; i += kThreads)
      nv::stF(o, i, 0.f);
    for (int64_t h = threadIdx.x; h < nh; h += kThreads)
      lse[h] = nv::kNegInf;
    return;
  }
  const int64_t first = MlaSlots::piece(slots.slotOf(reqBegin), b);
  const int64_t last = MlaSlots::piece(slots.slotOf(reqEnd - 1), b);
  const int64_t span = last - first + 1;
  const float *lseIn = partialLse + h0;
  __syncthreads(); // the previous request's readers of sLseNat are done
  mlaMergeLse<kThreads>(nh, first, span, lseIn, H, lse, sLseNat, sWeight,
                        span <= cap);
  // (mlaMergeSum syncs before reading sLseNat and sWeight.)
  T *oReq = p.o + b * H * Dc;
  if (Dc % 4 == 0 && nv::isAligned16(partialO) && nv::isAligned16(p.o))
    mlaMergeSum<kThreads, 4>(oReq, Dc, h0 * Dc / 4, h1 * Dc / 4, h0, nh, first,
                             span, cap, partialO, partialLse, sLseNat, sWeight,
                             H);
  else
    mlaMergeSum<kThreads, 1>(oReq, Dc, h0 * Dc, h1 * Dc, h0, nh, first, span,
                             cap, partialO, partialLse, sLseNat, sWeight, H);
}

} // namespace detail

/// Phase 1 task `task` of `numMergeTasks`: merges the (request, head group)
/// units it owns (MlaMergeSplit); `numSlots` and `minSlotTokens` are
/// phase 0's.
template <int kThreads, typename T>
__device__ __noinline__ int32_t
mlaMerge(const MlaParams<T> &p, int64_t task, int64_t numMergeTasks,
         int64_t numSlots, const float *partialO, const float *partialLse,
         char *smem, int64_t minSlotTokens = kMlaMinSlotTokens) {
  if (nv::dynamicSmemBytes() < mlaMergeMinSmemBytes(p.numHeads))
    return nv::kBodySmemTooSmall;
  // The offsets go on top when the minimum for the weights stays below.
  const detail::MlaOffsets offsets = detail::mlaOffsets<kThreads>(
      p, smem, mlaMergeMinSmemBytes(p.numHeads));
  const int64_t *off = offsets.off;
  const int64_t have = offsets.free;
  const MlaSlots slots = mlaSlots(offsets.total, numSlots, minSlotTokens);
  float *sLseNat = reinterpret_cast<float *>(smem);
  float *sWeight = sLseNat + p.numHeads;
  // Pieces whose weights fit at once (>= 1 by the checks above).
  const int64_t cap = have / (4 * p.numHeads) - 1;
  // Units (request, head group), MlaMergeSplit: a short batch still spreads
  // over the merge tasks.
  const MlaMergeSplit split = mlaMergeSplit(p.batch, p.numHeads, numMergeTasks);
  if (off) {
    for (int64_t u = task; u < split.units(p.batch); u += numMergeTasks) {
      const int64_t b = u / split.chunks, c = u - b * split.chunks;
      const int64_t h0 = c * split.headsPer;
      detail::mlaMergeRequest<kThreads>(
          p, b, h0, imin(p.numHeads, h0 + split.headsPer), off[b], off[b + 1],
          slots, partialO, partialLse, sLseNat, sWeight, cap);
    }
    return nv::kBodyOk;
  }
  int64_t reqBegin = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t reqEnd = reqBegin + mlaCheckedLen(p, b);
    for (int64_t c = 0; c < split.chunks; ++c)
      if (MlaMergeSplit::owns(b * split.chunks + c, task, numMergeTasks)) {
        const int64_t h0 = c * split.headsPer;
        detail::mlaMergeRequest<kThreads>(
            p, b, h0, imin(p.numHeads, h0 + split.headsPer), reqBegin, reqEnd,
            slots, partialO, partialLse, sLseNat, sWeight, cap);
      }
    reqBegin = reqEnd;
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_MLAMERGEBODIES_CUH
