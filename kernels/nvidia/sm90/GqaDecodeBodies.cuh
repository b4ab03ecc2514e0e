//===- GqaDecodeBodies.cuh - The sm90 grouped-query decode -*- CUDA -*-===//
//
// gqa_decode's bodies (DecoderBodies.cuh includes this file; its header
// says what every decoder body shares): gqaDecode in one phase, with
// gqaDecodePreload, which issues a split's mapping and first K/V tiles
// before its wait; gqaDecodeSplit and gqaDecodeMerge, the two phases.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_GQADECODEBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_GQADECODEBODIES_CUH

#include "kernels/common/GqaSplits.h"
#include "kernels/nvidia/Atomics.cuh"
#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/sm90/DecoderCommon.cuh"
#include "kernels/nvidia/sm90/GqaSplitMma.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

//===----------------------------------------------------------------------===//
// gqa_decode (split-KV; the host body's run-time task mapping and workspace
// layout: o partials [N * group][Dv] floats, then lse [N * group],
// N = maxBatch * Hkv * S; see kernels/common/GqaSplits.h)
//===----------------------------------------------------------------------===//

namespace detail {
/// Query heads scored per pass over a split's tokens; larger groups take
/// several passes.
constexpr int kGqaMaxGroup = 8;
/// Tokens whose K/V loads a unit issues before using the first: 4 (64 per
/// block, 32 KB of K/V in flight per SM at D = 128), 2 with 8 heads a pass
/// (registers: the 8 heads' states and q take twice as many).
template <int kG> constexpr int kGqaUnroll = kG >= 8 ? 2 : 4;
} // namespace detail

/// Shared memory of gqaDecodeSplit's fast path for head dim D (<= 256).
template <int kThreads>
__host__ __device__ constexpr int64_t gqaSplitSmemBytes(int64_t D = 256) {
  return int64_t(kThreads / 32) * detail::kGqaMaxGroup * (D + 2) * 4;
}

namespace detail {
/// The staged path's chunk: K and V rows of 64 KB of tokens (128 at D = 128).
__host__ __device__ constexpr int64_t gqaStagedChunk(int64_t D) {
  return 16384 / D;
}
} // namespace detail

/// Shared memory of gqaDecodeSplit's staged path (K/V through shared memory
/// by cp.async, two chunks) for head dim D (64, 128 or 256).
template <int kThreads>
__host__ __device__ constexpr int64_t gqaStagedSmemBytes(int64_t D = 256) {
  return 2 * 2 * detail::gqaStagedChunk(D) * D * 2 +                // K, V x 2
         2 * detail::kGqaMaxGroup * detail::gqaStagedChunk(D) * 4 + // scores x 2
         2 * detail::kGqaMaxGroup * 4 + 2 * detail::kGqaMaxGroup * 4;
}

namespace detail {

/// A lane's 8 dims of the first nh <= kG query heads from `q` (head h at
/// q + h * D), scaled into log2 units (smScale * log2 e); zeros past nh.
template <int kG, typename TQ>
__device__ __forceinline__ void gqaLoadQ(const TQ *q, int64_t D, int64_t nh,
                                         float smScale, float (&qv)[kG][8]) {
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    if (h < nh) {
      nv::load8(q + h * D, qv[h]);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        qv[h][e] *= smScale * nv::kLog2e;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        qv[h][e] = 0.f;
    }
  }
}

/// Staged path: D == Dv == 8 * kLpr, 16-bit caches. The split's tokens go
/// by chunks of gqaStagedChunk(D) through two shared-memory buffers
/// (cp.async, the next chunk in flight while this one is scored). A unit
/// of kLpr lanes owns tokens u, u + kUnits, ... of a chunk, and copies and
/// reads only its own lanes' 16 bytes of their K and V rows. Per chunk,
/// unlike the fast path's token-by-token online softmax, every score is
/// independent (dot products and their shuffles overlap), then warp h
/// takes head h's chunk max and sum and the rescale of the running state,
/// then each unit adds its tokens' p * V; the units' sums share the block's
/// running max, so they merge by plain addition at the end.
template <int kThreads, int kLpr, int kG, typename TQ, typename TK,
          typename TV, typename TInd>
__device__ void gqaSplitStaged(const TQ *q, const TK *kCache, const TV *vCache,
                               const CheckedPages<TInd> &pages, float *oPart, float *lsePart,
                               int64_t Hq, int64_t Hkv, int64_t D, int64_t P,
                               float smScale, int64_t b, int64_t hk, int64_t h0,
                               int64_t nh, int64_t slotRow, int64_t tBegin,
                               int64_t tEnd, char *smem) {
  constexpr int kWarps = kThreads / 32, kUnitsPerWarp = 32 / kLpr;
  constexpr int kUnits = kWarps * kUnitsPerWarp;
  constexpr int kDim = 8 * kLpr;
  constexpr int kChunk = int(gqaStagedChunk(kDim));
  constexpr int kPerUnit = kChunk / kUnits; // tokens of a unit per chunk
  static_assert(kChunk % kUnits == 0 && kChunk % 32 == 0, "chunk shape");
  static_assert(kG <= kWarps, "a warp per head for the chunk statistics");
  constexpr int kRowBytes = 2 * kDim;
  constexpr int kBufBytes = 2 * kChunk * kRowBytes; // K rows, then V rows
  const int lane = laneId(), warp = warpId();
  const int sub = lane % kLpr;
  const int unit = warp * kUnitsPerWarp + lane / kLpr;
  char *buf = smem;
  float *sS = reinterpret_cast<float *>(smem + 2 * kBufBytes); // [2][kG][kChunk]
  float *sAlpha = sS + 2 * kG * kChunk;                         // [2][kG]
  float *sStat = sAlpha + 2 * kG;                               // m, l [kG]

  float qv[kG][8];
  gqaLoadQ<kG>(q + (b * Hq + h0) * D + 8 * sub, D, nh, smScale, qv);

  // This lane's 16 bytes of the K and V rows of its unit's tokens of chunk
  // c (zeros past the split's end) into buffer c & 1.
  const uint32_t end = uint32_t(tEnd), pageTokens = uint32_t(P);
  auto issue = [&](int32_t c) {
    char *kb = buf + (c & 1) * kBufBytes, *vb = kb + kChunk * kRowBytes;
#pragma unroll
    for (int j = 0; j < kPerUnit; ++j) {
      const int tok = unit + j * kUnits;
      const uint32_t t = uint32_t(tBegin) + uint32_t(c * kChunk + tok);
      const bool ok = t < end;
      const int64_t row =
          ok ? (int64_t(pages[t / pageTokens]) * P + t % pageTokens) * Hkv +
                   hk
             : 0;
      nv::cpAsync16(kb + tok * kRowBytes + 16 * sub, kCache + row * D + 8 * sub,
                    ok);
      nv::cpAsync16(vb + tok * kRowBytes + 16 * sub, vCache + row * D + 8 * sub,
                    ok);
    }
    nv::cpAsyncCommit();
  };

  float acc[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h)
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[h][e] = 0.f;
  float mRun = nv::kNegInf, lRun = 0.f; // warp h's head h

  const int32_t chunks = int32_t(ceilDiv(tEnd - tBegin, kChunk));
  if (chunks > 0)
    issue(0);
  for (int32_t c = 0; c < chunks; ++c) {
    const char *kb = buf + (c & 1) * kBufBytes, *vb = kb + kChunk * kRowBytes;
    float *S = sS + (c & 1) * kG * kChunk;
    float *alpha = sAlpha + (c & 1) * kG;
    nv::cpAsyncWait<0>(); // chunk c: this lane's own copies
    // Scores (base 2, scaled); past the end -inf.
#pragma unroll
    for (int j = 0; j < kPerUnit; ++j) {
      const int tok = unit + j * kUnits;
      const bool ok = uint32_t(tBegin) + uint32_t(c * kChunk + tok) < end;
      float kv[8];
      nv::unpack8<TK>(
          *reinterpret_cast<const uint4 *>(kb + tok * kRowBytes + 16 * sub), kv);
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        float sc = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          sc += qv[h][e] * kv[e];
#pragma unroll
        for (int off = kLpr / 2; off > 0; off /= 2)
          sc += __shfl_xor_sync(0xffffffffu, sc, off);
        if (sub == 0)
          S[h * kChunk + tok] = ok ? sc : nv::kNegInf;
      }
    }
    __syncthreads(); // scores written; chunk c - 1's buffer is free
    if (c + 1 < chunks)
      issue(c + 1);
    // Warp h: head h's chunk max and sum, the running state's rescale.
    if (warp < nh) {
      float v[kChunk / 32];
      float cm = nv::kNegInf;
#pragma unroll
      for (int i = 0; i < kChunk / 32; ++i) {
        v[i] = S[warp * kChunk + lane + 32 * i];
        cm = fmaxf(cm, v[i]);
      }
      const float mNew = fmaxf(mRun, nv::warpMax(cm));
      float cs = 0.f;
#pragma unroll
      for (int i = 0; i < kChunk / 32; ++i) {
        const float pr = nv::fastExp2(v[i] - mNew); // -inf: 0
        S[warp * kChunk + lane + 32 * i] = pr;
        cs += pr;
      }
      const float a = nv::rescale2(mRun, mNew);
      lRun = lRun * a + nv::warpSum(cs);
      mRun = mNew;
      if (lane == 0)
        alpha[warp] = a;
    }
    __syncthreads(); // probabilities and rescales written
#pragma unroll
    for (int h = 0; h < kG; ++h) {
      const float a = h < nh ? alpha[h] : 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[h][e] *= a;
    }
#pragma unroll
    for (int j = 0; j < kPerUnit; ++j) {
      const int tok = unit + j * kUnits;
      float vv[8];
      nv::unpack8<TV>(
          *reinterpret_cast<const uint4 *>(vb + tok * kRowBytes + 16 * sub), vv);
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        const float pr = h < nh ? S[h * kChunk + tok] : 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[h][e] += pr * vv[e];
      }
    }
  }

  // Units share the running max: their sums add. Within the warp by
  // shuffles, across warps in shared memory (fixed order).
#pragma unroll
  for (int off = kLpr; off < 32; off *= 2)
#pragma unroll
    for (int h = 0; h < kG; ++h)
#pragma unroll
      for (int e = 0; e < 8; ++e)
        acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], off);
  if (warp < nh && lane == 0) {
    sStat[warp] = mRun;
    sStat[kG + warp] = lRun;
  }
  __syncthreads(); // every lane is done reading the buffers
  float *sPart = reinterpret_cast<float *>(buf); // [kWarps][kG][kDim]
  if (lane < kLpr) {
#pragma unroll
    for (int h = 0; h < kG; ++h)
#pragma unroll
      for (int e = 0; e < 8; ++e)
        sPart[(warp * kG + h) * kDim + 8 * sub + e] = acc[h][e];
  }
  __syncthreads();
  for (int64_t idx = threadIdx.x; idx < nh * kDim; idx += kThreads) {
    const int64_t h = idx / kDim, d = idx % kDim;
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      o += sPart[(w * kG + h) * kDim + d];
    const float l = sStat[kG + h];
    const int64_t row = slotRow + h0 + h;
    oPart[row * D + d] = l > 0.f ? o / l : 0.f;
    if (d == 0)
      lsePart[row] = l > 0.f ? (sStat[h] + log2f(l)) * nv::kLn2 : nv::kNegInf;
  }
  __syncthreads(); // shared memory is reused by the next pass
}

/// Fast path: D == Dv == 8 * kLpr. A unit of kLpr lanes holds a token's K
/// and V rows (8 elements per lane) and the online-softmax state of up to kG
/// heads; units take tokens round-robin, then merge within the warp by
/// shuffles and across warps through shared memory (fixed order).
/// Scores are kept in log2 units (q pre-scaled by smScale * log2 e).
template <int kThreads, int kLpr, int kG, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ void gqaSplitFast(const TQ *q, const TK *kCache, const TV *vCache,
                             const CheckedPages<TInd> &pages, float *oPart, float *lsePart,
                             int64_t Hq, int64_t Hkv, int64_t D, int64_t P,
                             float smScale, int64_t b, int64_t hk, int64_t h0,
                             int64_t nh, int64_t slotRow, int64_t tBegin,
                             int64_t tEnd, float *smem) {
  constexpr int kWarps = kThreads / 32, kUnitsPerWarp = 32 / kLpr;
  constexpr int kUnits = kWarps * kUnitsPerWarp;
  const int lane = laneId(), warp = warpId();
  const int sub = lane % kLpr;
  const int unit = warp * kUnitsPerWarp + lane / kLpr;
  const int64_t d0 = int64_t(sub) * 8;

  float qv[kG][8];
  gqaLoadQ<kG>(q + (b * Hq + h0) * D + d0, D, nh, smScale, qv);
  float m[kG], l[kG], acc[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    m[h] = nv::kNegInf;
    l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[h][e] = 0.f;
  }

  // Token numbers and page sizes fit in 32 bits (unsigned division: the
  // 64-bit one is emulated). Each step a unit takes kU tokens; their cache
  // rows (page id * P + slot) are looked up a step ahead, so a step's K/V
  // loads never wait on a page-id load, and all 2 * kU loads are issued
  // before the first is used.
  constexpr int kU = kGqaUnroll<kG>;
  constexpr uint32_t kStep = uint32_t(kUnits) * kU;
  const uint32_t end = uint32_t(tEnd), pageTokens = uint32_t(P);
  int64_t slot[kU]; // cache row index of the token (before * Hkv + hk)
  auto lookUp = [&](uint32_t base) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t t = base + uint32_t(u * kUnits + unit);
      slot[u] = t < end ? int64_t(pages[t / pageTokens]) * P + t % pageTokens
                        : int64_t(-1);
    }
  };
  lookUp(uint32_t(tBegin));
  // The trip count is block-uniform, so every lane reaches every shuffle.
  for (uint32_t base = uint32_t(tBegin); base < end; base += kStep) {
    float kv[kU][8], vv[kU][8];
    bool ok[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      ok[u] = slot[u] >= 0;
      if (ok[u]) {
        const int64_t row = slot[u] * Hkv + hk;
        nv::load8(kCache + row * D + d0, kv[u]);
        nv::load8(vCache + row * D + d0, vv[u]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          kv[u][e] = vv[u][e] = 0.f;
      }
    }
    lookUp(base + kStep);
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        float s = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          s += qv[h][e] * kv[u][e];
#pragma unroll
        for (int off = kLpr / 2; off > 0; off /= 2)
          s += __shfl_xor_sync(0xffffffffu, s, off);
        if (!ok[u])
          continue;
        if (s > m[h]) {
          const float c = nv::rescale2(m[h], s);
          l[h] *= c;
#pragma unroll
          for (int e = 0; e < 8; ++e)
            acc[h][e] *= c;
          m[h] = s;
        }
        const float pr = nv::fastExp2(s - m[h]);
        l[h] += pr;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[h][e] += pr * vv[u][e];
      }
    }
  }

  // Units of a warp: partners lane ^ off hold the same dims.
#pragma unroll
  for (int off = kLpr; off < 32; off *= 2) {
#pragma unroll
    for (int h = 0; h < kG; ++h)
      nv::combineSoftmaxWithLane(m[h], l[h], acc[h], off);
  }

  // Warps: [kWarps][kG][D] partial sums, then [kWarps][kG] m and l.
  float *sPart = smem;
  float *sM = sPart + kWarps * kG * D;
  float *sL = sM + kWarps * kG;
  if (lane < kLpr) {
#pragma unroll
    for (int h = 0; h < kG; ++h) {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        sPart[(warp * kG + h) * D + d0 + e] = acc[h][e];
      if (sub == 0) {
        sM[warp * kG + h] = m[h];
        sL[warp * kG + h] = l[h];
      }
    }
  }
  __syncthreads();
  gqaStoreWarpStates<kThreads>(sPart, sM, sL, kG, D, nh, oPart, lsePart,
                               slotRow + h0);
  __syncthreads(); // shared memory is reused by the next pass
}

/// Plain path for any D, Dv: a warp per query head, accumulating in the
/// head's own workspace row like the host body (each lane owns d = lane
/// mod 32, so no lane reads another's accumulator).
template <int kThreads, typename TQ, typename TK, typename TV, typename TInd>
__device__ void gqaSplitGeneric(const TQ *q, const TK *kCache, const TV *vCache,
                                const CheckedPages<TInd> &pages, float *oPart, float *lsePart,
                                int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                                int64_t P, float smScale, int64_t b, int64_t hk,
                                int64_t hBegin, int64_t hEnd, int64_t slotRow,
                                int64_t tBegin, int64_t tEnd) {
  constexpr int kWarps = kThreads / 32;
  const int lane = laneId();
  for (int64_t h = hBegin + warpId(); h < hEnd; h += kWarps) {
    float *acc = oPart + (slotRow + h) * Dv;
    const TQ *qh = q + (b * Hq + h) * D;
    for (int64_t d = lane; d < Dv; d += 32)
      acc[d] = 0.f;
    float m = nv::kNegInf, l = 0.f;
    for (int64_t t = tBegin; t < tEnd; ++t) {
      const int64_t row = (int64_t(pages[t / P]) * P + t % P) * Hkv + hk;
      float s = 0.f;
      for (int64_t d = lane; d < D; d += 32)
        s += nv::ldF(qh, d) * nv::ldF(kCache, row * D + d);
      s = nv::warpSum(s) * smScale;
      if (s > m) {
        const float c = m == nv::kNegInf ? 0.f : expf(m - s);
        l *= c;
        for (int64_t d = lane; d < Dv; d += 32)
          acc[d] *= c;
        m = s;
      }
      const float pr = expf(s - m);
      l += pr;
      for (int64_t d = lane; d < Dv; d += 32)
        acc[d] += pr * nv::ldF(vCache, row * Dv + d);
    }
    if (tEnd > tBegin) {
      const float inv = 1.0f / l;
      for (int64_t d = lane; d < Dv; d += 32)
        acc[d] *= inv;
    }
    if (lane == 0)
      lsePart[slotRow + h] = tEnd > tBegin ? m + logf(l) : nv::kNegInf;
  }
}

/// One pass of up to 8 query heads at lane count kLpr: the staged path or
/// the fast one, with 4 or 8 heads' registers.
template <int kThreads, int kLpr, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ void
gqaSplitGroup(const TQ *q, const TK *kCache, const TV *vCache,
              const CheckedPages<TInd> &pages, float *oPart, float *lsePart, int64_t Hq,
              int64_t Hkv, int64_t D, int64_t P, float smScale, int64_t b,
              int64_t hk, int64_t h0, int64_t nh, int64_t slotRow,
              int64_t tBegin, int64_t tEnd, bool staged, char *smem) {
  if constexpr (kIs16Bit<TK> && kIs16Bit<TV>) {
    if (staged) {
      if (nh <= 4)
        gqaSplitStaged<kThreads, kLpr, 4>(q, kCache, vCache, pages, oPart,
                                          lsePart, Hq, Hkv, D, P, smScale, b,
                                          hk, h0, nh, slotRow, tBegin, tEnd,
                                          smem);
      else
        gqaSplitStaged<kThreads, kLpr, 8>(q, kCache, vCache, pages, oPart,
                                          lsePart, Hq, Hkv, D, P, smScale, b,
                                          hk, h0, nh, slotRow, tBegin, tEnd,
                                          smem);
      return;
    }
  }
  float *sm = reinterpret_cast<float *>(smem);
  if (nh <= 4)
    gqaSplitFast<kThreads, kLpr, 4>(q, kCache, vCache, pages, oPart, lsePart,
                                    Hq, Hkv, D, P, smScale, b, hk, h0, nh,
                                    slotRow, tBegin, tEnd, sm);
  else
    gqaSplitFast<kThreads, kLpr, 8>(q, kCache, vCache, pages, oPart, lsePart,
                                    Hq, Hkv, D, P, smScale, b, hk, h0, nh,
                                    slotRow, tBegin, tEnd, sm);
}

/// Stages per warp of the tensor-core split for these operands and this
/// launch's shared memory; 0 when another path runs.
template <int kThreads, typename TQ, typename TK, typename TV>
__device__ __forceinline__ int gqaMmaPlan(const TQ *q, const TK *kCache,
                                          const TV *vCache, int64_t D,
                                          int64_t Dv, int64_t P,
                                          int64_t numPages, int64_t Hkv) {
  if constexpr (std::is_same_v<TQ, TK> && std::is_same_v<TK, TV> &&
                detail::kIs16Bit<TK>) {
    const int64_t smem = nv::dynamicSmemBytes();
    if (D == Dv && (D == 64 || D == 128) && nv::isAligned16(q) &&
        nv::isAligned16(kCache) && nv::isAligned16(vCache) &&
        smem >= gqaSplitSmemBytes<kThreads>(D) &&
        detail::gqaMmaRowsFit(numPages, P, Hkv))
      return detail::gqaMmaStages<kThreads>(smem, D);
  }
  return 0;
}

/// Split task n = (b * Hkv + hk) * S + s: its checked run-time mapping into
/// `task` (or the preload's, with `pre`) and, when it has work, the split;
/// what gqaDecodeSplit and gqaDecode share.
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen>
__device__ __forceinline__ int32_t
gqaSplitRun(GqaSplitTask &task, const TQ *q, const TK *kCache,
            const TV *vCache, const TPtr *kvIndptr, const TInd *kvIndices,
            const TLen *kvLens, float *workspace, int64_t batch,
            int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
            int64_t P, int64_t numPages, int64_t numIndices, int64_t S,
            float smScale, int64_t taskB, int64_t taskHk, int64_t s,
            char *smem, const GqaPreloaded<kThreads> *pre) {
  const int64_t numTasks = maxBatch * Hkv * S,
                n = (taskB * Hkv + taskHk) * S + s;
  // Every thread computes the same mapping (a few passes over kv_lens), so
  // the branches below stay block-uniform. Every request has a split task,
  // which checks its meta values (MetaGuard.h); a refused one reads no token.
  task = pre ? pre->task
             : gqaCheckedSplitTask(kvIndptr, kvLens, batch, Hkv, numTasks, n,
                                   numIndices, P);
  if (!task.active)
    return nv::kBodyOk;
  const int64_t b = task.b, hk = task.hk;
  const int64_t tBegin = task.tBegin, tEnd = task.tEnd;
  const int64_t group = Hq / Hkv;
  const CheckedPages<TInd> pages{kvIndices + task.first, numPages};
  // The ids the split reads, those of its tokens: report() at its end.
  const int64_t idFrom = tBegin / P, idTo = tEnd > tBegin ? (tEnd - 1) / P + 1 : 0;
  float *oPart = workspace;
  float *lsePart = workspace + numTasks * group * Dv;
  // Row of absolute head h is slotRow + h: rows n * group .. + group - 1.
  const int64_t slotRow = (n - hk) * group;
  if (const int stages = gqaMmaPlan<kThreads>(q, kCache, vCache, D, Dv, P,
                                              numPages, Hkv)) {
    if constexpr (std::is_same_v<TQ, TK> && std::is_same_v<TK, TV> &&
                  detail::kIs16Bit<TK>) {
      // The preload's first stages serve the first pass.
      const GqaPreloaded<kThreads> *first = pre && pre->prologue ? pre : nullptr;
      for (int64_t h0 = hk * group; h0 < (hk + 1) * group;
           h0 += detail::kGqaMmaHeads, first = nullptr) {
        const int64_t nh = imin(detail::kGqaMmaHeads, (hk + 1) * group - h0);
        if (D == 64)
          detail::gqaSplitMmaStages<kThreads, 64>(
              stages, q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, P,
              smScale, b, hk, h0, nh, slotRow, tBegin, tEnd, smem, first);
        else
          detail::gqaSplitMmaStages<kThreads, 128>(
              stages, q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, P,
              smScale, b, hk, h0, nh, slotRow, tBegin, tEnd, smem, first);
      }
      pages.report(idFrom, idTo);
      return nv::kBodyOk;
    }
  }
  const bool fast = D == Dv && (D == 64 || D == 128 || D == 256) &&
                    nv::isAligned16(q) && nv::isAligned16(kCache) &&
                    nv::isAligned16(vCache) &&
                    nv::dynamicSmemBytes() >= gqaSplitSmemBytes<kThreads>(D);
  if (!fast) {
    detail::gqaSplitGeneric<kThreads>(
        q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, D, Dv, P, smScale, b,
        hk, hk * group, (hk + 1) * group, slotRow, tBegin, tEnd);
    pages.report(idFrom, idTo);
    return nv::kBodyOk;
  }
  const bool staged = detail::kIs16Bit<TK> && detail::kIs16Bit<TV> &&
                      nv::dynamicSmemBytes() >= gqaStagedSmemBytes<kThreads>(D);
  for (int64_t h0 = hk * group; h0 < (hk + 1) * group;
       h0 += detail::kGqaMaxGroup) {
    const int64_t nh = imin(detail::kGqaMaxGroup, (hk + 1) * group - h0);
    if (D == 64)
      detail::gqaSplitGroup<kThreads, 8>(
          q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, D, P, smScale, b,
          hk, h0, nh, slotRow, tBegin, tEnd, staged, smem);
    else if (D == 128)
      detail::gqaSplitGroup<kThreads, 16>(
          q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, D, P, smScale, b,
          hk, h0, nh, slotRow, tBegin, tEnd, staged, smem);
    else
      detail::gqaSplitGroup<kThreads, 32>(
          q, kCache, vCache, pages, oPart, lsePart, Hq, Hkv, D, P, smScale, b,
          hk, h0, nh, slotRow, tBegin, tEnd, staged, smem);
  }
  pages.report(idFrom, idTo);
  return nv::kBodyOk;
}
} // namespace detail

/// Phase 0, split task n = (b * Hkv + hk) * S + s of N = maxBatch * Hkv * S
/// (the host body's mapping, kernels/common/GqaSplits.h): the Hq / Hkv query
/// heads of the KV head gqaSplitTask picks attend to its token range of its
/// request, and write workspace rows n * group onwards. Tasks past the
/// batch's share do nothing.
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen>
__device__ __noinline__ int32_t gqaDecodeSplit(
    const TQ *q, const TK *kCache, const TV *vCache, const TPtr *kvIndptr,
    const TInd *kvIndices, const TLen *kvLens, float *workspace, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
    int64_t numPages, int64_t numIndices, int64_t S, float smScale, int64_t b,
    int64_t hk, int64_t s, char *smem) {
  GqaSplitTask task;
  return detail::gqaSplitRun<kThreads>(
      task, q, kCache, vCache, kvIndptr, kvIndices, kvLens, workspace, batch,
      maxBatch, Hq, Hkv, D, Dv, P, numPages, numIndices, S, smScale, b, hk, s,
      smem, nullptr);
}

namespace detail {
/// Splits a merge reads at once: their lse and partial loads are issued
/// together.
constexpr int kGqaMergeBatch = 8;

/// o[b, h] = sum_i w_i o_i / sum_i w_i with w_i = exp(lse_i - max lse) over
/// split tasks [first, first + count) of pair (b, hk), for the heads of
/// group hk; o = 0 when every split is empty. Each thread combines its
/// outputs' partials online (a running maximum), kGqaMergeBatch splits per
/// round trip to L2 and no barrier: for a pair of up to that many splits
/// the merge is one round of loads.
template <int kThreads, typename TO>
__device__ __forceinline__ void
gqaMergePair(const float *oPart, const float *lsePart, TO *o, int64_t Hq,
             int64_t group, int64_t Dv, int64_t b, int64_t hk, int64_t first,
             int64_t count) {
  constexpr int kB = kGqaMergeBatch;
  const int32_t outputs = int32_t(group * Dv), dv = int32_t(Dv);
  for (int32_t idx = threadIdx.x; idx < outputs; idx += kThreads) {
    const int32_t j = idx / dv;
    const float *lseAt = lsePart + first * group + j;
    const float *partAt = oPart + first * group * Dv + idx;
    float m = nv::kNegInf, l = 0.f, acc = 0.f;
    for (int64_t i0 = 0; i0 < count; i0 += kB) {
      float lse[kB], part[kB];
#pragma unroll
      for (int k = 0; k < kB; ++k) {
        const bool ok = i0 + k < count;
        lse[k] = ok ? lseAt[(i0 + k) * group] : nv::kNegInf;
        part[k] = ok ? partAt[(i0 + k) * group * Dv] : 0.f;
      }
      float mx = m;
#pragma unroll
      for (int k = 0; k < kB; ++k)
        mx = fmaxf(mx, lse[k]);
      if (mx == nv::kNegInf)
        continue; // every split so far is empty
      const float c = expf(m - mx); // m = -inf: 0
      l *= c;
      acc *= c;
#pragma unroll
      for (int k = 0; k < kB; ++k) {
        const float w = expf(lse[k] - mx); // an empty split's: 0
        l += w;
        acc += w * part[k];
      }
      m = mx;
    }
    nv::stF(o, (b * Hq + hk * group) * Dv + idx, l > 0.f ? acc / l : 0.f);
  }
}
} // namespace detail

/// Phase 1, task (b, hk): the pair's splits (gqaPairTasks) merged into the
/// heads of group hk (detail::gqaMergePair). Requests b >= batch are
/// skipped.
template <int kThreads, typename TO, typename TLen>
__device__ __noinline__ int32_t gqaDecodeMerge(const float *workspace,
                                               const TLen *kvLens, TO *o,
                                               int64_t batch, int64_t maxBatch,
                                               int64_t Hq, int64_t Hkv,
                                               int64_t Dv, int64_t S, int64_t b,
                                               int64_t hk, char *smem) {
  (void)smem;
  if (b >= batch)
    return nv::kBodyOk;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  const GqaPairTasks pair = gqaPairTasks(kvLens, batch, Hkv, numTasks, b, hk);
  detail::gqaMergePair<kThreads>(workspace, workspace + numTasks * group * Dv,
                                 o, Hq, group, Dv, b, hk, pair.first,
                                 pair.count);
  return nv::kBodyOk;
}

/// One phase: split task n as gqaDecodeSplit, then an arrival on its pair's
/// counter (`arrivals[b * Hkv + hk]`, among the launch's events, never
/// reset: ArrivalCounters.h); the split that arrives last merges the pair
/// into o (the pair's tasks are part of its mapping). Nobody waits, so the
/// tasks need not run at once, and no merge phase or whole-phase event
/// stands between the splits and the op's readers. `preloaded`: the task's
/// gqaDecodePreload ran before its wait and returned true.
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen, typename TO>
__device__ __noinline__ int32_t gqaDecode(
    const TQ *q, const TK *kCache, const TV *vCache, const TPtr *kvIndptr,
    const TInd *kvIndices, const TLen *kvLens, float *workspace, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
    int64_t numPages, int64_t numIndices, int64_t S, float smScale, int64_t b,
    int64_t hk, int64_t s, TO *o, unsigned long long *arrivals, char *smem,
    bool preloaded = false) {
  GqaSplitTask task;
  const int32_t status = detail::gqaSplitRun<kThreads>(
      task, q, kCache, vCache, kvIndptr, kvIndices, kvLens, workspace, batch,
      maxBatch, Hq, Hkv, D, Dv, P, numPages, numIndices, S, smScale, b, hk, s,
      smem, preloaded ? detail::gqaPreloadedAt<kThreads>(smem) : nullptr);
  if (status != nv::kBodyOk || !task.active)
    return status;
  // Once the block's partials are written, the arrival releases them and,
  // for the last, acquires the others'.
  __shared__ int lastArrival;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned long long seen = nv::fetchAddAcqRelGpu(
        arrivals + task.b * Hkv + task.hk, task.arrival);
    lastArrival = completesLaunch(seen, task.arrival);
  }
  __syncthreads();
  if (!lastArrival)
    return nv::kBodyOk;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  detail::gqaMergePair<kThreads>(workspace, workspace + numTasks * group * Dv,
                                 o, Hq, group, Dv, task.b, task.hk,
                                 task.pairFirst, task.pairCount);
  return nv::kBodyOk;
}

/// gqaDecode's work that needs none of its inputs written in this launch,
/// issued before the task's wait: the run-time mapping (kv_lens, kv_indptr)
/// and, on the tensor-core path, the page ids and K/V copies of each warp's
/// first tiles. The caller guarantees that within the launch only a
/// kv_append with `slot_mapping` (its first `appended` entries) writes the
/// caches before this op, and nothing the page table: rows it may have
/// written are read again after the wait. False (nothing kept) when the
/// launch's shared memory has no room for what the body needs
/// (GqaPreloaded).
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen, typename TSlot>
__device__ __noinline__ bool gqaDecodePreload(
    const TQ *q, const TK *kCache, const TV *vCache, const TPtr *kvIndptr,
    const TInd *kvIndices, const TLen *kvLens, const TSlot *slotMapping,
    int64_t appended, int64_t batch, int64_t maxBatch, int64_t Hkv, int64_t D,
    int64_t Dv, int64_t P, int64_t numPages, int64_t numIndices, int64_t S,
    int64_t b, int64_t hk, int64_t s, char *smem) {
  detail::GqaPreloaded<kThreads> *pre = detail::gqaPreloadedAt<kThreads>(smem);
  if (!pre)
    return false;
  const int64_t numTasks = maxBatch * Hkv * S, n = (b * Hkv + hk) * S + s;
  const GqaSplitTask task = gqaCheckedSplitTask(kvIndptr, kvLens, batch, Hkv,
                                                numTasks, n, numIndices, P);
  const int stages = task.active ? detail::gqaMmaPlan<kThreads>(
                                       q, kCache, vCache, D, Dv, P, numPages,
                                       Hkv)
                                 : 0;
  const bool prologue =
      stages && int64_t(kThreads / 32) * stages *
                        detail::gqaMmaStageBytes(D) <=
                    reinterpret_cast<char *>(pre) - smem;
  if (threadIdx.x == 0) {
    pre->task = task;
    pre->prologue = prologue;
  }
  if constexpr (std::is_same_v<TQ, TK> && std::is_same_v<TK, TV> &&
                detail::kIs16Bit<TK>) {
    if (prologue) {
      const CheckedPages<TInd> pages{kvIndices + task.first, numPages};
      if (D == 64)
        detail::gqaSplitMmaPrologueStages<kThreads, 64>(
            stages, kCache, vCache, pages, Hkv, P, task.hk, task.tBegin,
            task.tEnd, slotMapping, appended, pre, smem);
      else
        detail::gqaSplitMmaPrologueStages<kThreads, 128>(
            stages, kCache, vCache, pages, Hkv, P, task.hk, task.tBegin,
            task.tEnd, slotMapping, appended, pre, smem);
      // The ids its copies read: those of its first tiles' tokens.
      pages.report(task.tBegin / P,
                   task.tEnd > task.tBegin ? (task.tEnd - 1) / P + 1 : 0);
    }
  }
  return true;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_GQADECODEBODIES_CUH
