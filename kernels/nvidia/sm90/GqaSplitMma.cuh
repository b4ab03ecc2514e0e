//===- GqaSplitMma.cuh - gqa_decode's split on the tensor cores -*- CUDA -*-===//
//
// The split path of gqaDecodeSplit (GqaDecodeBodies.cuh) for 16-bit q, K and
// V of one type and head dim 64 or 128: up to 16 query heads of one KV head
// attend to a token range with mma.sync m16n8k16, heads on M (rows past the
// group's are zeros) and tokens on N.
//
// Why: on the CUDA cores a chunk's dot products, shuffles and block
// barriers took longer than its loads; on the tensor cores they are a few
// MMAs per tile, and no warp waits for another's tile. With one block of
// 8 warps per SM the loop is still bound by how fast the warps issue, not
// by memory, so its instructions per tile count (bench/results/h200/
// 2026-12-03-d/experiments.md).
//
// Warp w owns the split's 16-token tiles w, w + kWarps, ...: it copies
// their K and V rows itself (cp.async, 16 bytes a lane, into a ring of
// kStages stages of its own; chunk c of row r at position c ^ (r & 7), so
// the 8 rows an ldmatrix reads fall in 8 different banks), looks up the
// page ids of the tile it will copy next while it scores this one, and
// never waits for another warp until the warps' states meet at the end.
// Per tile: S = Q K^T (K by ldmatrix as the B operand), an online softmax
// per head (scores in log2 units), O += P V with P taken from the score
// registers (the accumulator layout of two n8 tiles is the A layout of one
// k16 step) and V by ldmatrix.trans. P goes to the MMA as a 16-bit high
// part plus the 16-bit rest, so the weights keep fp32's precision, as on
// the CUDA-core paths; the tensor cores have the time for the second MMA.
//
// The ring's first stages need only the page table and the cache as the
// launch found them: gqaDecodePreload issues them before the task waits
// for q (gqaSplitMmaPrologue), and the body reads again only the rows of
// those tiles that this launch's kv_append writes.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_GQASPLITMMA_CUH
#define LOOM_KERNELS_NVIDIA_SM90_GQASPLITMMA_CUH

#include "kernels/common/MetaGuard.h"
#include "kernels/nvidia/sm90/DecoderCommon.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {
namespace detail {

/// Query heads one pass of the tensor-core split scores: the MMA's M.
constexpr int kGqaMmaHeads = 16;
/// Tokens of a warp's tile: one k16 step of P V.
constexpr int kGqaMmaTile = 16;
constexpr int kGqaMmaMaxStages = 4;

/// Bytes of a warp's stage at head dim D: its tile's K rows, then V rows.
__host__ __device__ constexpr int64_t gqaMmaStageBytes(int64_t D) {
  return 2 * kGqaMmaTile * D * 2;
}

/// Bytes the warps' final states take (aliasing the rings): [kWarps][16]
/// partial sums of D floats, then [kWarps][16] maxima and sums.
template <int kThreads>
__host__ __device__ constexpr int64_t gqaMmaMergeBytes(int64_t D) {
  return int64_t(kThreads / 32) * kGqaMmaHeads * (D + 2) * 4;
}

/// Stages per warp the tensor-core split takes in `smemBytes` at head dim D
/// (at most kGqaMmaMaxStages); 0 when fewer than two fit.
template <int kThreads>
__host__ __device__ constexpr int gqaMmaStages(int64_t smemBytes, int64_t D) {
  const int64_t perStage = int64_t(kThreads / 32) * gqaMmaStageBytes(D);
  int64_t stages = smemBytes / perStage;
  stages = stages > kGqaMmaMaxStages ? kGqaMmaMaxStages : stages;
  return stages >= 2 && smemBytes >= gqaMmaMergeBytes<kThreads>(D)
             ? int(stages)
             : 0;
}

/// Whether a cache of numPages pages of P tokens x Hkv heads has row
/// indices the tensor-core split can pass as 32-bit values.
__host__ __device__ constexpr bool gqaMmaRowsFit(int64_t numPages, int64_t P,
                                                 int64_t Hkv) {
  return numPages <= (int64_t(1) << 31) / (P * Hkv);
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return std::is_same_v<T, bf16> ? nv::packBf16x2(lo, hi)
                                 : nv::packF16x2(lo, hi);
}

template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t w) {
  return std::is_same_v<T, bf16> ? nv::unpackBf16x2(w) : nv::unpackF16x2(w);
}

/// (a, b) as a 16-bit pair `hi` and the pair of what rounding left, `lo`.
template <typename T>
__device__ __forceinline__ void splitPair(float a, float b, uint32_t &hi,
                                          uint32_t &lo) {
  hi = pack2<T>(a, b);
  const float2 h = unpack2<T>(hi);
  lo = pack2<T>(a - h.x, b - h.y);
}

/// The warps' split states meet: for heads h < nh, the kWarps partial
/// sums sPart[(w * heads + h) * D + d] with their base-2 maxima and weight
/// sums (sM, sL at w * heads + h) become o partial row `row0 + h`
/// (normalised) and its natural-log lse, as every split path writes them.
template <int kThreads>
__device__ __forceinline__ void
gqaStoreWarpStates(const float *sPart, const float *sM, const float *sL,
                   int heads, int64_t D, int64_t nh, float *oPart,
                   float *lsePart, int64_t row0) {
  constexpr int kWarps = kThreads / 32;
  for (int64_t idx = threadIdx.x; idx < nh * D; idx += kThreads) {
    const int64_t h = idx / D, d = idx % D;
    float mx = nv::kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      mx = fmaxf(mx, sM[w * heads + h]);
    float lsum = 0.f, acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float c = nv::rescale2(sM[w * heads + h], mx);
      lsum += sL[w * heads + h] * c;
      acc += sPart[(w * heads + h) * D + d] * c;
    }
    const int64_t row = row0 + h;
    oPart[row * D + d] = lsum > 0.f ? acc / lsum : 0.f;
    if (d == 0)
      lsePart[row] = lsum > 0.f ? (mx + log2f(lsum)) * nv::kLn2 : nv::kNegInf;
  }
}

/// Byte offset of 16-byte chunk c of row r in a tile of kDim-element rows.
template <int kDim>
__device__ __forceinline__ int tileOffset(int r, int c) {
  return r * (2 * kDim) + ((c ^ (r & 7)) << 4);
}

/// A warp's ring (see the file comment): looks up the page ids of its next
/// tile one copy ahead, and copies tiles into its stages. Cache row indices
/// (page * P + slot) * Hkv + hk must fit in 31 bits (gqaMmaRowsFit): the
/// lanes pass them around as 32-bit values.
template <int kThreads, int kDim, int kStages, typename T, typename TInd>
struct GqaMmaRing {
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kChunks = kDim / 8; // 16-byte chunks of a row
  static constexpr int kTileBytes = kGqaMmaTile * kDim * 2;
  static constexpr int kStageBytes = int(gqaMmaStageBytes(kDim));

  const T *kCache, *vCache;
  const CheckedPages<TInd> *pages;
  int64_t P, Hkv, hk;
  uint32_t tBegin, len;
  int32_t mine; ///< the warp's tiles: w, w + kWarps, ...
  char *ring;   ///< the warp's kStages stages
  int lane, warp;
  // Lane j's token j (j = lane % 16) of the tile looked up last.
  int64_t nextId = 0;
  uint32_t nextSlot = 0;
  bool nextOk = false;

  __device__ GqaMmaRing(const T *kCache, const T *vCache,
                        const CheckedPages<TInd> &pages, int64_t P,
                        int64_t Hkv, int64_t hk, int64_t tBegin, int64_t tEnd,
                        char *smem)
      : kCache(kCache), vCache(vCache), pages(&pages), P(P), Hkv(Hkv), hk(hk),
        tBegin(uint32_t(tBegin)), len(uint32_t(tEnd - tBegin)),
        lane(laneId()), warp(warpId()) {
    const int32_t tiles = int32_t((len + kGqaMmaTile - 1) / kGqaMmaTile);
    mine = warp < tiles ? (tiles - 1 - warp) / kWarps + 1 : 0;
    ring = smem + warp * kStages * kStageBytes;
  }

  /// Looks up the page id of the lane's token of the warp's tile i.
  __device__ void lookUp(int32_t i) {
    const uint32_t t = uint32_t(warp + i * kWarps) * kGqaMmaTile + (lane & 15);
    nextOk = i < mine && t < len;
    const uint32_t abs = tBegin + (nextOk ? t : 0u);
    nextSlot = abs % uint32_t(P);
    nextId = nextOk ? int64_t(pages->ids[abs / uint32_t(P)]) : 0;
  }

  /// The cache row of the looked-up token (-1: past the range).
  __device__ int32_t row() const {
    return nextOk ? int32_t((pages->checked(nextId) * P + nextSlot) * Hkv + hk)
                  : -1;
  }

  /// Copies the looked-up tile, lane j's token at `row` (from row()), into
  /// stage `slot` (zeros past the range) and commits a group, empty when
  /// the tile is past the warp's.
  __device__ void copy(int slot, int32_t row) {
    constexpr int kRowsPerCopy = 32 / kChunks; // rows one warp-wide copy covers
    char *kt = ring + slot * kStageBytes, *vt = kt + kTileBytes;
    const int ch = lane % kChunks;
    const T *kLane = kCache + 8 * ch, *vLane = vCache + 8 * ch;
#pragma unroll
    for (int c = 0; c < kGqaMmaTile / kRowsPerCopy; ++c) {
      const int r = c * kRowsPerCopy + lane / kChunks;
      const int32_t rr = __shfl_sync(0xffffffffu, row, r);
      // Past the range: row 0 of the cache, not read (zero-filled).
      const int64_t at = int64_t(max(rr, 0)) * kDim;
      nv::cpAsync16(kt + tileOffset<kDim>(r, ch), kLane + at, rr >= 0);
      nv::cpAsync16(vt + tileOffset<kDim>(r, ch), vLane + at, rr >= 0);
    }
    nv::cpAsyncCommit();
  }
};

/// What a split's preload (gqaDecodePreload) leaves its body, at the end of
/// the dynamic shared memory, past the rings: the mapping; whether the
/// tensor-core path's first kStages - 1 tiles per warp are in flight; each
/// lane's look-up of the tile the body copies first; and, per prologue
/// tile row, the cache row when it holds a token this launch appends
/// (slot_mapping: the preload may have read it before its writer ran, so
/// the body reads it again after the wait; -1 otherwise).
template <int kThreads> struct GqaPreloaded {
  GqaSplitTask task;
  int32_t prologue;
  int64_t nextId[kThreads];
  uint32_t nextSlot[kThreads];
  uint8_t nextOk[kThreads];
  int32_t again[kThreads / 32][kGqaMmaMaxStages - 1][kGqaMmaTile];
};

/// Where GqaPreloaded lives in `smem`, when the launch has room for it.
template <int kThreads>
__device__ __forceinline__ GqaPreloaded<kThreads> *gqaPreloadedAt(char *smem) {
  constexpr int64_t kBytes =
      (int64_t(sizeof(GqaPreloaded<kThreads>)) + 127) / 128 * 128;
  const int64_t dyn = nv::dynamicSmemBytes();
  return dyn >= kBytes ? reinterpret_cast<GqaPreloaded<kThreads> *>(
                             smem + (dyn - kBytes) / 128 * 128)
                       : nullptr;
}

/// The tensor-core split's first kStages - 1 tiles per warp, issued by the
/// preload before the task's wait (gqaSplitMma finishes them), and what the
/// body needs of them in `pre`. `appended` slots of slot_mapping are the
/// cache slots (page * P + entry) this launch writes.
template <int kThreads, int kDim, int kStages, typename T, typename TInd,
          typename TSlot>
__device__ void gqaSplitMmaPrologue(const T *kCache, const T *vCache,
                                    const CheckedPages<TInd> &pages,
                                    int64_t Hkv, int64_t P, int64_t hk,
                                    int64_t tBegin, int64_t tEnd,
                                    const TSlot *slotMapping, int64_t appended,
                                    GqaPreloaded<kThreads> *pre, char *smem) {
  GqaMmaRing<kThreads, kDim, kStages, T, TInd> r(kCache, vCache, pages, P,
                                                 Hkv, hk, tBegin, tEnd, smem);
  r.lookUp(0);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    const int32_t row = r.row();
    int32_t again = -1;
    if (row >= 0) {
      const int64_t slot = (row - hk) / Hkv;
      for (int64_t a = 0; a < appended; ++a)
        if (int64_t(slotMapping[a]) == slot)
          again = row;
    }
    if (r.lane < kGqaMmaTile)
      pre->again[r.warp][s][r.lane] = again;
    r.copy(s, row);
    r.lookUp(s + 1);
  }
  pre->nextId[threadIdx.x] = r.nextId;
  pre->nextSlot[threadIdx.x] = r.nextSlot;
  pre->nextOk[threadIdx.x] = r.nextOk;
}

/// The split of token range [tBegin, tEnd) for query heads [h0, h0 + nh),
/// nh <= 16, of KV head hk of request b (see the file comment); writes
/// oPart / lsePart rows slotRow + h0 .. as the other paths do. With `pre`,
/// the preload issued the ring's first stages (gqaSplitMmaPrologue).
template <int kThreads, int kDim, int kStages, typename T, typename TInd>
__device__ void gqaSplitMma(const T *q, const T *kCache, const T *vCache,
                            const CheckedPages<TInd> &pages, float *oPart,
                            float *lsePart, int64_t Hq, int64_t Hkv, int64_t P,
                            float smScale, int64_t b, int64_t hk, int64_t h0,
                            int64_t nh, int64_t slotRow, int64_t tBegin,
                            int64_t tEnd, char *smem,
                            const GqaPreloaded<kThreads> *pre) {
  static_assert(kDim == 64 || kDim == 128, "head dim");
  using Ring = GqaMmaRing<kThreads, kDim, kStages, T, TInd>;
  constexpr int kWarps = kThreads / 32;
  constexpr int kChunks = Ring::kChunks;
  constexpr int kTileBytes = Ring::kTileBytes;
  constexpr int kStageBytes = Ring::kStageBytes;
  constexpr int kKSteps = kDim / 16;  // k16 steps of Q K^T
  constexpr int kDTiles = kDim / 8;   // n8 tiles of O
  const int lane = laneId(), warp = warpId(), g = lane >> 2, qd = lane & 3;

  // Q rows h0 + g and h0 + g + 8 as A fragments (zeros past nh).
  uint32_t qa[kKSteps][4];
  {
    const T *qLo = q + (b * Hq + h0 + g) * kDim + 2 * qd;
    const T *qHi = qLo + 8 * kDim;
    const bool lo = g < nh, hi = g + 8 < nh;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      const int k = 16 * kk;
      qa[kk][0] = lo ? *reinterpret_cast<const uint32_t *>(qLo + k) : 0u;
      qa[kk][1] = hi ? *reinterpret_cast<const uint32_t *>(qHi + k) : 0u;
      qa[kk][2] = lo ? *reinterpret_cast<const uint32_t *>(qLo + k + 8) : 0u;
      qa[kk][3] = hi ? *reinterpret_cast<const uint32_t *>(qHi + k + 8) : 0u;
    }
  }

  Ring r(kCache, vCache, pages, P, Hkv, hk, tBegin, tEnd, smem);
  const uint32_t len = r.len;
  const int32_t mine = r.mine;
  char *ring = r.ring;
  if (!pre) {
    r.lookUp(0);
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      r.copy(s, r.row());
      r.lookUp(s + 1);
    }
  } else {
    r.nextId = pre->nextId[threadIdx.x];
    r.nextSlot = pre->nextSlot[threadIdx.x];
    r.nextOk = pre->nextOk[threadIdx.x];
    // Rows this launch appended, read again now that their writer is done
    // (once the preload's copies of them have landed).
    bool any = false;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s)
      for (int t = 0; t < kGqaMmaTile; ++t)
        any |= pre->again[warp][s][t] >= 0;
    if (any) {
      nv::cpAsyncWait<0>();
      __syncwarp();
#pragma unroll
      for (int s = 0; s < kStages - 1; ++s)
        for (int t = 0; t < kGqaMmaTile; ++t) {
          const int32_t row = pre->again[warp][s][t];
          if (row < 0)
            continue;
          for (int c = lane; c < 2 * kChunks; c += 32) {
            const bool isV = c >= kChunks;
            const int ch = c % kChunks;
            const T *src = (isV ? vCache : kCache) + int64_t(row) * kDim + 8 * ch;
            *reinterpret_cast<int4 *>(ring + s * kStageBytes +
                                      (isV ? kTileBytes : 0) +
                                      tileOffset<kDim>(t, ch)) =
                *reinterpret_cast<const int4 *>(src);
          }
        }
      __syncwarp();
    }
  }

  const float scale2 = smScale * nv::kLog2e;
  float m[2] = {nv::kNegInf, nv::kNegInf}, l[2] = {0.f, 0.f};
  float o[kDTiles][4] = {};

  int slot = 0, fill = kStages - 1;
  for (int32_t i = 0; i < mine; ++i) {
    __syncwarp(); // every lane is done with the slot the copy refills
    r.copy(fill, r.row());
    r.lookUp(i + kStages);
    fill = fill + 1 == kStages ? 0 : fill + 1;
    nv::cpAsyncWait<kStages - 1>();
    __syncwarp(); // the other lanes' copies of tile i
    const char *kt = ring + slot * kStageBytes, *vt = kt + kTileBytes;
    slot = slot + 1 == kStages ? 0 : slot + 1;

    // S = Q K^T: n8 tiles of tokens 0-7 and 8-15. Lane l gives row l % 8
    // of matrix l / 8: tokens 8 (l / 16) + l % 8, chunk 2kk + (l / 8) % 2.
    // Even and odd k steps accumulate apart: two chains of kKSteps / 2
    // dependent MMAs per n8 tile instead of one of kKSteps.
    float s[2][4] = {}, sOdd[2][4] = {};
    const int kRow = ((lane >> 4) << 3) + (lane & 7), kHalf = (lane >> 3) & 1;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      uint32_t kb[4];
      nv::ldmatrixX4(kb, kt + tileOffset<kDim>(kRow, 2 * kk + kHalf));
      float(&acc)[2][4] = kk & 1 ? sOdd : s;
      nv::mma16816<T>(acc[0], qa[kk], kb[0], kb[1]);
      nv::mma16816<T>(acc[1], qa[kk], kb[2], kb[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[nt][e] += sOdd[nt][e];

    // Online softmax of rows g (e = 0, 1) and g + 8 (e = 2, 3); the four
    // lanes of a row hold its 16 tokens.
    const uint32_t tok0 = uint32_t(warp + i * kWarps) * kGqaMmaTile;
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = nv::kNegInf;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool ok = tok0 + 8 * nt + 2 * qd + e < len;
          float &v = s[nt][2 * r + e];
          v = ok ? v * scale2 : nv::kNegInf;
          mx = fmaxf(mx, v);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float mNew = fmaxf(m[r], mx); // finite: token tok0 is in range
      alpha[r] = nv::rescale2(m[r], mNew);
      m[r] = mNew;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float &v = s[nt][2 * r + e];
          v = nv::fastExp2(v - mNew); // -inf: 0
          sum += v;
        }
      l[r] = l[r] * alpha[r] + sum;
    }
#pragma unroll
    for (int dt = 0; dt < kDTiles; ++dt) {
      o[dt][0] *= alpha[0];
      o[dt][1] *= alpha[0];
      o[dt][2] *= alpha[1];
      o[dt][3] *= alpha[1];
    }

    // O += P V, P in two 16-bit parts. Lane l gives row l % 8 of matrix
    // l / 8: tokens 8 ((l / 8) % 2) + l % 8, chunk 2dp + l / 16.
    uint32_t pHi[4], pLo[4];
    splitPair<T>(s[0][0], s[0][1], pHi[0], pLo[0]);
    splitPair<T>(s[0][2], s[0][3], pHi[1], pLo[1]);
    splitPair<T>(s[1][0], s[1][1], pHi[2], pLo[2]);
    splitPair<T>(s[1][2], s[1][3], pHi[3], pLo[3]);
    const int vRow = (((lane >> 3) & 1) << 3) + (lane & 7), vHalf = lane >> 4;
#pragma unroll
    for (int dp = 0; dp < kDim / 16; ++dp) {
      uint32_t vb[4];
      nv::ldmatrixX4Trans(vb, vt + tileOffset<kDim>(vRow, 2 * dp + vHalf));
      nv::mma16816<T>(o[2 * dp], pHi, vb[0], vb[1]);
      nv::mma16816<T>(o[2 * dp + 1], pHi, vb[2], vb[3]);
      nv::mma16816<T>(o[2 * dp], pLo, vb[0], vb[1]);
      nv::mma16816<T>(o[2 * dp + 1], pLo, vb[2], vb[3]);
    }
  }
  nv::cpAsyncWait<0>(); // the trailing groups are empty

  // A row's sum is spread over its four lanes; its maximum is not.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }

  // The warps' states meet in shared memory (over the rings, once every
  // warp is done with its own): [kWarps][16][kDim] sums, then maxima, sums.
  __syncthreads();
  float *sPart = reinterpret_cast<float *>(smem);
  float *sM = sPart + kWarps * kGqaMmaHeads * kDim;
  float *sL = sM + kWarps * kGqaMmaHeads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int h = g + 8 * r;
    if (h >= nh)
      continue;
    float *dst = sPart + (warp * kGqaMmaHeads + h) * kDim + 2 * qd;
#pragma unroll
    for (int dt = 0; dt < kDTiles; ++dt) {
      dst[8 * dt] = o[dt][2 * r];
      dst[8 * dt + 1] = o[dt][2 * r + 1];
    }
    if (qd == 0) {
      sM[warp * kGqaMmaHeads + h] = m[r];
      sL[warp * kGqaMmaHeads + h] = l[r];
    }
  }
  __syncthreads();
  gqaStoreWarpStates<kThreads>(sPart, sM, sL, kGqaMmaHeads, kDim, nh, oPart,
                               lsePart, slotRow + h0);
  __syncthreads(); // shared memory is reused by the next pass
}

/// gqaSplitMma with the stage count taken at run time (2..4).
template <int kThreads, int kDim, typename T, typename TInd>
__device__ void gqaSplitMmaStages(int stages, const T *q, const T *kCache,
                                  const T *vCache,
                                  const CheckedPages<TInd> &pages,
                                  float *oPart, float *lsePart, int64_t Hq,
                                  int64_t Hkv, int64_t P, float smScale,
                                  int64_t b, int64_t hk, int64_t h0,
                                  int64_t nh, int64_t slotRow, int64_t tBegin,
                                  int64_t tEnd, char *smem,
                                  const GqaPreloaded<kThreads> *pre) {
  if (stages >= 4)
    gqaSplitMma<kThreads, kDim, 4>(q, kCache, vCache, pages, oPart, lsePart,
                                   Hq, Hkv, P, smScale, b, hk, h0, nh,
                                   slotRow, tBegin, tEnd, smem, pre);
  else if (stages == 3)
    gqaSplitMma<kThreads, kDim, 3>(q, kCache, vCache, pages, oPart, lsePart,
                                   Hq, Hkv, P, smScale, b, hk, h0, nh,
                                   slotRow, tBegin, tEnd, smem, pre);
  else
    gqaSplitMma<kThreads, kDim, 2>(q, kCache, vCache, pages, oPart, lsePart,
                                   Hq, Hkv, P, smScale, b, hk, h0, nh,
                                   slotRow, tBegin, tEnd, smem, pre);
}

/// gqaSplitMmaPrologue with the stage count taken at run time (2..4).
template <int kThreads, int kDim, typename T, typename TInd, typename TSlot>
__device__ void gqaSplitMmaPrologueStages(
    int stages, const T *kCache, const T *vCache,
    const CheckedPages<TInd> &pages, int64_t Hkv, int64_t P, int64_t hk,
    int64_t tBegin, int64_t tEnd, const TSlot *slotMapping, int64_t appended,
    GqaPreloaded<kThreads> *pre, char *smem) {
  if (stages >= 4)
    gqaSplitMmaPrologue<kThreads, kDim, 4>(kCache, vCache, pages, Hkv, P, hk,
                                           tBegin, tEnd, slotMapping,
                                           appended, pre, smem);
  else if (stages == 3)
    gqaSplitMmaPrologue<kThreads, kDim, 3>(kCache, vCache, pages, Hkv, P, hk,
                                           tBegin, tEnd, slotMapping,
                                           appended, pre, smem);
  else
    gqaSplitMmaPrologue<kThreads, kDim, 2>(kCache, vCache, pages, Hkv, P, hk,
                                           tBegin, tEnd, slotMapping,
                                           appended, pre, smem);
}

} // namespace detail
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_GQASPLITMMA_CUH
