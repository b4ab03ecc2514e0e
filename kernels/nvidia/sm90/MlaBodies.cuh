//===- MlaBodies.cuh - Device task bodies for MLA paged decode ---*- CUDA
//-*-===//
//
// Block-cooperative versions of kernels/host/MlaBodies.h: the same two phases
// (split over W token slots, merge per request), the same slot arithmetic,
// piece indices and workspace layout (partial_o [pieces][H][Dc] then
// partial_lse [pieces][H], natural log), the same MlaParams.
//
// Split, tensor-core path (bf16/f16, Dc = 512, Dp = 64, 256 threads): a
// piece's KV rows stream through shared memory in tiles of 64 tokens,
// double-buffered with cp.async (zero-filled past the piece, so the unused
// tail of a page is never read). All heads of the slot (a 16-row m-tile per
// pass) share each KV row, which is MLA's point:
//   S = Q K^T   warp w scores tokens [8w, 8w+8) of the tile over 576 dims
//               (mma.m16n8k16, A = Q from shared memory, B = K rows);
//   softmax     online, base 2, one half-warp per head; P rounded to T;
//   O += P V    warp w owns latent dims [64w, 64w+64) (B = V rows via
//               ldmatrix.trans), fp32 accumulators in registers.
// Other shapes, types or thread counts take a plain path (a KV row at a time
// in shared memory, FFMA), as does a launch with too little shared memory.
//
// Shared memory: mlaSplitSmemBytes() = 174784 B for the tensor-core path
// (Q 16 x 584 + 2 KV tiles of 64 x 584 bf16, S/P/stats), else
// 4 * (Dc + Dp + 4H) B; mlaMergeSmemBytes(H) = 260 H B.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH

#include "kernels/host/MlaBodies.h"
#include "kernels/nvidia/Numerics.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

namespace nv = ::loom::nvidia;
using nv::ceilDiv;
using nv::imax;
using nv::imin;
using nv::roundUp;

/// The host's operand struct: the emitted code fills it the same way.
template <typename T> using MlaParams = host::MlaParams<T>;

//===----------------------------------------------------------------------===//
// Workspace and slot arithmetic (device copies of the host formulas)
//===----------------------------------------------------------------------===//

__host__ __device__ inline int64_t mlaNumPieces(int64_t numSlots,
                                                int64_t maxBatch) {
  return numSlots + maxBatch;
}
__host__ __device__ inline int64_t mlaPartialOFloats(int64_t numSlots,
                                                     int64_t maxBatch,
                                                     int64_t numHeads,
                                                     int64_t dimCkv) {
  return mlaNumPieces(numSlots, maxBatch) * numHeads * dimCkv;
}
__host__ __device__ inline int64_t mlaWorkspaceFloats(int64_t numSlots,
                                                      int64_t maxBatch,
                                                      int64_t numHeads,
                                                      int64_t dimCkv) {
  return mlaNumPieces(numSlots, maxBatch) * numHeads * (dimCkv + 1);
}

__host__ __device__ inline int64_t mlaTotalTokens(const int32_t *kvLens,
                                                  int64_t batch) {
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b)
    total += kvLens[b];
  return total;
}

/// First / end token of `slot`: [slot*total/numSlots, (slot+1)*total/numSlots).
__host__ __device__ inline int64_t mlaSlotBegin(int64_t slot, int64_t total,
                                                int64_t numSlots) {
  return slot * total / numSlots;
}

/// The (non-empty) slot owning token t.
__host__ __device__ inline int64_t mlaSlotOfToken(int64_t t, int64_t total,
                                                  int64_t numSlots) {
  return ((t + 1) * numSlots - 1) / total;
}

namespace detail {

constexpr int kMlaTile = 64;  // tokens per shared-memory tile
constexpr int kMlaHeads = 16; // heads per pass: one m16 tile
constexpr int kMlaDc = 512;   // latent dims (also V)
constexpr int kMlaDp = 64;    // rope dims
constexpr int kMlaRow = kMlaDc + kMlaDp;
/// Row stride in elements: +16 bytes so the 8 rows an ldmatrix reads start
/// in 8 different 4-bank groups (1168 B = 292 words = 4 mod 32).
constexpr int kMlaStride = kMlaRow + 8;
constexpr int kMlaPStride = kMlaTile + 8; // P rows, same reason
constexpr int kMlaMergeChunk = 64;        // pieces whose weights are cached

constexpr int64_t kMlaQBytes = int64_t(kMlaHeads) * kMlaStride * 2;
constexpr int64_t kMlaKvBytes = int64_t(kMlaTile) * kMlaStride * 2;
constexpr int64_t kMlaSBytes = int64_t(kMlaHeads) * kMlaTile * 4;
constexpr int64_t kMlaPBytes = int64_t(kMlaHeads) * kMlaPStride * 2;
constexpr int64_t kMlaStatBytes = 3 * kMlaHeads * 4;
constexpr int64_t kMlaSmemFast =
    kMlaQBytes + 2 * kMlaKvBytes + kMlaSBytes + kMlaPBytes + kMlaStatBytes;

template <typename T>
__device__ __forceinline__ uint32_t packPair(float lo, float hi) {
  return std::is_same_v<T, bf16> ? nv::packBf16x2(lo, hi)
                                 : nv::packF16x2(lo, hi);
}

/// Tensor-core split of one piece: request b's local tokens [tokBegin,
/// tokEnd), all heads, into the piece's partial_o rows and lse.
template <typename T>
__device__ void mlaSplitPieceFast(const MlaParams<T> &p, int64_t b,
                                  int64_t tokBegin, int64_t tokEnd,
                                  float *pieceO, float *pieceLse, char *smem) {
  constexpr int kThreads = 256;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  T *sQ = reinterpret_cast<T *>(smem);
  T *sKv = reinterpret_cast<T *>(smem + kMlaQBytes);
  float *sS = reinterpret_cast<float *>(smem + kMlaQBytes + 2 * kMlaKvBytes);
  T *sP = reinterpret_cast<T *>(reinterpret_cast<char *>(sS) + kMlaSBytes);
  float *sM =
      reinterpret_cast<float *>(reinterpret_cast<char *>(sP) + kMlaPBytes);
  float *sL = sM + kMlaHeads;
  float *sAlpha = sL + kMlaHeads;

  const int64_t H = p.numHeads, P = p.pageSize;
  const int32_t *pages = p.kvIndices + p.kvIndptr[b];
  const int64_t len = tokEnd - tokBegin;
  const int64_t nTiles = ceilDiv(len, kMlaTile);
  const float scale2 = p.smScale * nv::kLog2e;

  // Rows [r] of tile `it` into buffer `buf`; rows past the piece are zeros.
  auto issueTile = [&](int64_t it, int buf) {
    T *dst = sKv + buf * kMlaTile * kMlaStride;
    constexpr int kChunks = kMlaRow / 8; // 16-byte chunks per row
    for (int c = tid; c < kMlaTile * kChunks; c += kThreads) {
      const int r = c / kChunks, ch = c % kChunks;
      const int64_t t = it * kMlaTile + r;
      const bool valid = t < len;
      const T *src = p.ckvCache;
      if (valid) {
        const int64_t tok = tokBegin + t;
        const int64_t row = int64_t(pages[tok / P]) * P + tok % P;
        src = ch < kMlaDc / 8
                  ? p.ckvCache + row * kMlaDc + ch * 8
                  : p.kpeCache + row * kMlaDp + (ch - kMlaDc / 8) * 8;
      }
      nv::cpAsync16(dst + r * kMlaStride + ch * 8, src, valid);
    }
  };

  for (int64_t hg = 0; hg < H; hg += kMlaHeads) {
    const int64_t nh = imin(kMlaHeads, H - hg);
    // Q rows of this head group (zeros past H), in the first async group.
    for (int c = tid; c < kMlaHeads * (kMlaRow / 8); c += kThreads) {
      const int r = c / (kMlaRow / 8), ch = c % (kMlaRow / 8);
      T *dst = sQ + r * kMlaStride + ch * 8;
      if (r < nh) {
        const int64_t h = hg + r;
        const T *src = ch < kMlaDc / 8 ? p.qNope + (b * H + h) * kMlaDc + ch * 8
                                       : p.qPe + (b * H + h) * kMlaDp +
                                             (ch - kMlaDc / 8) * 8;
        nv::cpAsync16(dst, src);
      } else {
        *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
      }
    }
    if (tid < kMlaHeads) {
      sM[tid] = nv::kNegInf;
      sL[tid] = 0.f;
    }
    issueTile(0, 0);
    nv::cpAsyncCommit();

    float acc[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[nt][e] = 0.f;

    for (int64_t it = 0; it < nTiles; ++it) {
      if (it + 1 < nTiles) {
        issueTile(it + 1, int((it + 1) & 1));
        nv::cpAsyncCommit();
        nv::cpAsyncWait<1>();
      } else {
        nv::cpAsyncWait<0>();
      }
      __syncthreads(); // tile `it` (and Q) visible to all
      const T *kv = sKv + (it & 1) * kMlaTile * kMlaStride;
      const int64_t valid = imin(kMlaTile, len - it * kMlaTile);

      // S for tokens [8 warp, 8 warp + 8): 36 k16 steps, two per iteration.
      {
        float sc[4] = {0.f, 0.f, 0.f, 0.f};
        const T *aBase = sQ + (lane & 15) * kMlaStride + (lane >> 4) * 8;
        const T *bBase =
            kv + (8 * warp + (lane & 7)) * kMlaStride + (lane >> 3) * 8;
#pragma unroll 2
        for (int k = 0; k < kMlaRow; k += 32) {
          uint32_t a0[4], a1[4], bb[4];
          nv::ldmatrixX4(bb, bBase + k);
          nv::ldmatrixX4(a0, aBase + k);
          nv::ldmatrixX4(a1, aBase + k + 16);
          nv::mma16816<T>(sc, a0, bb[0], bb[1]);
          nv::mma16816<T>(sc, a1, bb[2], bb[3]);
        }
        const int tok = 8 * warp + 2 * q;
        const float s0 = tok < valid ? sc[0] * scale2 : nv::kNegInf;
        const float s1 = tok + 1 < valid ? sc[1] * scale2 : nv::kNegInf;
        const float s2 = tok < valid ? sc[2] * scale2 : nv::kNegInf;
        const float s3 = tok + 1 < valid ? sc[3] * scale2 : nv::kNegInf;
        *reinterpret_cast<float2 *>(sS + g * kMlaTile + tok) =
            make_float2(s0, s1);
        *reinterpret_cast<float2 *>(sS + (g + 8) * kMlaTile + tok) =
            make_float2(s2, s3);
      }
      __syncthreads();

      // Online softmax: head h = tid / 16, tokens 4j..4j+3 with j = tid % 16.
      {
        const int h = tid >> 4, j = tid & 15;
        const float4 s4 =
            *reinterpret_cast<const float4 *>(sS + h * kMlaTile + 4 * j);
        float mx = fmaxf(fmaxf(s4.x, s4.y), fmaxf(s4.z, s4.w));
#pragma unroll
        for (int off = 8; off > 0; off /= 2)
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        const float mOld = sM[h], lOld = sL[h];
        const float mNew = fmaxf(mOld, mx); // finite: a tile has a valid token
        const float alpha = nv::rescale2(mOld, mNew);
        const float p0 = nv::fastExp2(s4.x - mNew),
                    p1 = nv::fastExp2(s4.y - mNew);
        const float p2 = nv::fastExp2(s4.z - mNew),
                    p3 = nv::fastExp2(s4.w - mNew);
        float sum = (p0 + p1) + (p2 + p3);
#pragma unroll
        for (int off = 8; off > 0; off /= 2)
          sum += __shfl_xor_sync(0xffffffffu, sum, off);
        *reinterpret_cast<uint2 *>(sP + h * kMlaPStride + 4 * j) =
            make_uint2(packPair<T>(p0, p1), packPair<T>(p2, p3));
        __syncwarp(); // every lane has read sM/sL before lane 0 writes
        if (j == 0) {
          sM[h] = mNew;
          sL[h] = lOld * alpha + sum;
          sAlpha[h] = alpha;
        }
      }
      __syncthreads();

      // O = alpha O + P V over latent dims [64 warp, 64 warp + 64).
      {
        const float aLo = sAlpha[g], aHi = sAlpha[g + 8];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          acc[nt][0] *= aLo;
          acc[nt][1] *= aLo;
          acc[nt][2] *= aHi;
          acc[nt][3] *= aHi;
        }
        const T *pBase = sP + (lane & 15) * kMlaPStride + (lane >> 4) * 8;
        const T *vBase = kv +
                         ((lane & 7) + ((lane >> 3) & 1) * 8) * kMlaStride +
                         64 * warp + (lane >> 4) * 8;
#pragma unroll
        for (int kt = 0; kt < kMlaTile; kt += 16) {
          uint32_t pa[4];
          nv::ldmatrixX4(pa, pBase + kt);
#pragma unroll
          for (int np = 0; np < 4; ++np) {
            uint32_t vb[4];
            nv::ldmatrixX4Trans(vb, vBase + kt * kMlaStride + 16 * np);
            nv::mma16816<T>(acc[2 * np], pa, vb[0], vb[1]);
            nv::mma16816<T>(acc[2 * np + 1], pa, vb[2], vb[3]);
          }
        }
      }
      __syncthreads(); // the tile buffer and P are free again
    }

    // Normalise and store this head group's rows of the piece.
    const float invLo = g < nh ? 1.f / sL[g] : 0.f;
    const float invHi = g + 8 < nh ? 1.f / sL[g + 8] : 0.f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int d = 64 * warp + 8 * nt + 2 * q;
      if (g < nh)
        *reinterpret_cast<float2 *>(pieceO + (hg + g) * kMlaDc + d) =
            make_float2(acc[nt][0] * invLo, acc[nt][1] * invLo);
      if (g + 8 < nh)
        *reinterpret_cast<float2 *>(pieceO + (hg + g + 8) * kMlaDc + d) =
            make_float2(acc[nt][2] * invHi, acc[nt][3] * invHi);
    }
    if (tid < nh)
      pieceLse[hg + tid] = (sM[tid] + log2f(sL[tid])) * nv::kLn2;
    __syncthreads(); // Q and the stats are rewritten by the next group
  }
}

/// Plain split of one piece (any shape / type): a KV row at a time in
/// shared memory, a warp per head for the scores, the accumulators in the
/// piece's own partial_o rows (each element owned by one thread).
template <int kThreads, typename T>
__device__ void mlaSplitPieceGeneric(const MlaParams<T> &p, int64_t b,
                                     int64_t tokBegin, int64_t tokEnd,
                                     float *acc, float *pieceLse, char *smem) {
  constexpr int kWarps = kThreads / 32;
  const int64_t H = p.numHeads, Dc = p.dimCkv, Dp = p.dimKpe, P = p.pageSize;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float *kc = reinterpret_cast<float *>(smem);
  float *kp = kc + Dc;
  float *sM = kp + Dp, *sL = sM + H, *sScale = sL + H, *sP = sScale + H;
  const T *qNope = p.qNope + b * H * Dc;
  const T *qPe = p.qPe + b * H * Dp;
  const int32_t *pages = p.kvIndices + p.kvIndptr[b];

  for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads)
    acc[i] = 0.f;
  for (int64_t h = threadIdx.x; h < H; h += kThreads) {
    sM[h] = nv::kNegInf;
    sL[h] = 0.f;
  }
  for (int64_t t = tokBegin; t < tokEnd; ++t) {
    const int64_t row = int64_t(pages[t / P]) * P + t % P;
    __syncthreads(); // the previous row's readers are done
    for (int64_t d = threadIdx.x; d < Dc; d += kThreads)
      kc[d] = nv::ldF(p.ckvCache, row * Dc + d);
    for (int64_t d = threadIdx.x; d < Dp; d += kThreads)
      kp[d] = nv::ldF(p.kpeCache, row * Dp + d);
    __syncthreads();
    for (int64_t h = warp; h < H; h += kWarps) {
      float dot = 0.f;
      for (int64_t d = lane; d < Dc; d += 32)
        dot += nv::ldF(qNope, h * Dc + d) * kc[d];
      for (int64_t d = lane; d < Dp; d += 32)
        dot += nv::ldF(qPe, h * Dp + d) * kp[d];
      const float s = p.smScale * nv::warpSum(dot);
      if (lane == 0) {
        float m = sM[h], c = 1.f;
        if (s > m) {
          c = m == nv::kNegInf ? 0.f : expf(m - s);
          sL[h] *= c;
          sM[h] = m = s;
        }
        const float e = expf(s - m);
        sL[h] += e;
        sScale[h] = c;
        sP[h] = e;
      }
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads) {
      const int64_t h = i / Dc;
      acc[i] = acc[i] * sScale[h] + sP[h] * kc[i % Dc];
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads)
    acc[i] *= 1.f / sL[i / Dc];
  for (int64_t h = threadIdx.x; h < H; h += kThreads)
    pieceLse[h] = sM[h] + logf(sL[h]);
  __syncthreads(); // the stats are rewritten by the next piece
}

template <int kThreads, typename T>
__device__ bool mlaUseFastSplit(const MlaParams<T> &p) {
  return kThreads == 256 &&
         (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)&&p.dimCkv ==
             kMlaDc &&
         p.dimKpe == kMlaDp && nv::isAligned16(p.qNope) &&
         nv::isAligned16(p.qPe) && nv::isAligned16(p.ckvCache) &&
         nv::isAligned16(p.kpeCache) && nv::dynamicSmemBytes() >= kMlaSmemFast;
}

} // namespace detail

/// Shared memory the split needs for its tensor-core path.
template <int kThreads>
__host__ __device__ constexpr int64_t mlaSplitSmemBytes() {
  return detail::kMlaSmemFast;
}

/// Shared memory of the plain split path.
__host__ __device__ constexpr int64_t
mlaSplitGenericSmemBytes(int64_t numHeads, int64_t dimCkv, int64_t dimKpe) {
  return 4 * (dimCkv + dimKpe + 4 * numHeads);
}

/// Phase 0 task `slot` of `numSlots`: partial_o / partial_lse of every
/// non-empty piece (slot, b) at piece index slot + b, nothing else.
template <int kThreads, typename T>
__device__ __noinline__ int32_t mlaSplit(const MlaParams<T> &p, int64_t slot,
                            int64_t numSlots, float *partialO,
                            float *partialLse, char *smem) {
  const int64_t total = mlaTotalTokens(p.kvLens, p.batch);
  const int64_t mineBegin = mlaSlotBegin(slot, total, numSlots);
  const int64_t mineEnd = mlaSlotBegin(slot + 1, total, numSlots);
  if (mineBegin >= mineEnd)
    return nv::kBodyOk;
  const bool fast = detail::mlaUseFastSplit<kThreads>(p);
  if (!fast && nv::dynamicSmemBytes() <
                   mlaSplitGenericSmemBytes(p.numHeads, p.dimCkv, p.dimKpe))
    return nv::kBodySmemTooSmall;
  int64_t reqBegin = 0;
  for (int64_t b = 0; b < p.batch && reqBegin < mineEnd; ++b) {
    const int64_t reqEnd = reqBegin + p.kvLens[b];
    const int64_t begin = imax(mineBegin, reqBegin);
    const int64_t end = imin(mineEnd, reqEnd);
    if (begin < end) {
      const int64_t piece = slot + b;
      float *pieceO = partialO + piece * p.numHeads * p.dimCkv;
      float *pieceLse = partialLse + piece * p.numHeads;
      if constexpr (kThreads == 256 &&
                    (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)) {
        if (fast) {
          detail::mlaSplitPieceFast(p, b, begin - reqBegin, end - reqBegin,
                                    pieceO, pieceLse, smem);
          reqBegin = reqEnd;
          continue;
        }
      }
      detail::mlaSplitPieceGeneric<kThreads>(
          p, b, begin - reqBegin, end - reqBegin, pieceO, pieceLse, smem);
    }
    reqBegin = reqEnd;
  }
  return nv::kBodyOk;
}

/// Shared memory of the merge: lse per head plus cached piece weights.
__host__ __device__ constexpr int64_t mlaMergeSmemBytes(int64_t numHeads) {
  return 4 * numHeads * (1 + detail::kMlaMergeChunk);
}

namespace detail {

/// Merges request b (global tokens [reqBegin, reqEnd)) from its pieces.
template <int kThreads, typename T>
__device__ void mlaMergeRequest(const MlaParams<T> &p, int64_t b,
                                int64_t reqBegin, int64_t reqEnd, int64_t total,
                                int64_t numSlots, const float *partialO,
                                const float *partialLse, float *sLseNat,
                                float *sWeight, bool cacheWeights) {
  const int64_t H = p.numHeads, Dc = p.dimCkv;
  T *o = p.o + b * H * Dc;
  float *lse = p.lse + b * H;
  if (reqBegin >= reqEnd) {
    for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads)
      nv::stF(o, i, 0.f);
    for (int64_t h = threadIdx.x; h < H; h += kThreads)
      lse[h] = nv::kNegInf;
    return;
  }
  // Same integer ranges as phase 0: slot w wrote piece w + b exactly when
  // its token range meets the request's.
  const int64_t first = mlaSlotOfToken(reqBegin, total, numSlots);
  const int64_t last = mlaSlotOfToken(reqEnd - 1, total, numSlots);
  auto touches = [&](int64_t w) {
    const int64_t lo = mlaSlotBegin(w, total, numSlots);
    const int64_t hi = mlaSlotBegin(w + 1, total, numSlots);
    return imax(lo, reqBegin) < imin(hi, reqEnd);
  };
  for (int64_t h = threadIdx.x; h < H; h += kThreads) {
    float maxLse = nv::kNegInf;
    for (int64_t w = first; w <= last; ++w)
      if (touches(w))
        maxLse = fmaxf(maxLse, partialLse[(w + b) * H + h]);
    float sum = 0.f;
    for (int64_t w = first; w <= last; ++w)
      if (touches(w))
        sum += expf(partialLse[(w + b) * H + h] - maxLse);
    const float lseNat = maxLse + logf(sum);
    sLseNat[h] = lseNat;
    lse[h] = lseNat / host::kMlaLn2;
  }
  __syncthreads();
  // A weight < 0 marks a slot that did not touch the request (its piece
  // was never written: do not read it).
  const int64_t span = last - first + 1;
  auto weightOf = [&](int64_t j, int64_t h) {
    const int64_t w = first + j;
    return touches(w) ? expf(partialLse[(w + b) * H + h] - sLseNat[h]) : -1.f;
  };
  cacheWeights = cacheWeights && span <= kMlaMergeChunk;
  if (cacheWeights)
    for (int64_t i = threadIdx.x; i < span * H; i += kThreads)
      sWeight[i] = weightOf(i / H, i % H);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads) {
    const int64_t h = i / Dc, d = i % Dc;
    float acc = 0.f;
    for (int64_t j = 0; j < span; ++j) {
      const float wgt = cacheWeights ? sWeight[j * H + h] : weightOf(j, h);
      if (wgt >= 0.f)
        acc += wgt * partialO[((first + j + b) * H + h) * Dc + d];
    }
    nv::stF(o, i, acc);
  }
  __syncthreads(); // sLseNat / sWeight are rewritten by the next request
}

} // namespace detail

/// Phase 1 task `task` of `numMergeTasks`: merges requests task,
/// task + numMergeTasks, ... < batch; `numSlots` is phase 0's W.
template <int kThreads, typename T>
__device__ __noinline__ int32_t mlaMerge(const MlaParams<T> &p, int64_t task,
                            int64_t numMergeTasks, int64_t numSlots,
                            const float *partialO, const float *partialLse,
                            char *smem) {
  const int64_t total = mlaTotalTokens(p.kvLens, p.batch);
  if (nv::dynamicSmemBytes() < 4 * p.numHeads)
    return nv::kBodySmemTooSmall;
  float *sLseNat = reinterpret_cast<float *>(smem);
  float *sWeight = sLseNat + p.numHeads;
  const bool cacheWeights =
      nv::dynamicSmemBytes() >= mlaMergeSmemBytes(p.numHeads);
  int64_t reqBegin = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t reqEnd = reqBegin + p.kvLens[b];
    if (b >= task && (b - task) % numMergeTasks == 0)
      detail::mlaMergeRequest<kThreads>(p, b, reqBegin, reqEnd, total, numSlots,
                                        partialO, partialLse, sLseNat, sWeight,
                                        cacheWeights);
    reqBegin = reqEnd;
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_MLABODIES_CUH
