//===- MlaSplitBodies.cuh - The sm90 MLA split (one piece) -----*- CUDA -*-===//
//
// mlaSplit and the piece bodies mlaDecode also runs, of MlaBodies.cuh
// (which includes this file; its header describes both paths and their
// shared memory): the tensor-core path (mlaSplitPieceFast) and the plain
// one (mlaSplitPieceGeneric).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_MLASPLITBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_MLASPLITBODIES_CUH

#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/sm90/MlaCommon.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

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

constexpr int64_t kMlaQBytes = int64_t(kMlaHeads) * kMlaStride * 2;
constexpr int64_t kMlaKvBytes = int64_t(kMlaTile) * kMlaStride * 2;
constexpr int64_t kMlaSBytes = int64_t(kMlaHeads) * kMlaTile * 4;
constexpr int64_t kMlaPBytes = int64_t(kMlaHeads) * kMlaPStride * 2;
constexpr int64_t kMlaStatBytes = 3 * kMlaHeads * 4;
constexpr int64_t kMlaSmemFast =
    2 * kMlaQBytes + 2 * kMlaKvBytes + kMlaSBytes + kMlaPBytes + kMlaStatBytes;

/// Where a piece's token lives in the cache: row = page * P + offset. A
/// power-of-two page size (1 and 64 in practice) takes a shift and a mask,
/// any other one division per row and tile.
struct MlaPageMap {
  const int32_t *pages; ///< the request's page ids (kv_indices + indptr[b])
  int64_t size;         ///< P
  int64_t numPages;     ///< pages of the caches
  int shift;            ///< log2(P) when P is a power of two, else -1
  /// A page id past the caches was read (as page 0): reportBad() records it.
  mutable bool bad = false;

  __device__ MlaPageMap(const int32_t *pages, int64_t size, int64_t numPages)
      : pages(pages), size(size), numPages(numPages), shift(-1) {
    if ((size & (size - 1)) == 0)
      for (shift = 0; (int64_t(1) << shift) < size; ++shift) {
      }
  }
  __device__ __forceinline__ int64_t pageIndex(int64_t tok) const {
    return shift >= 0 ? tok >> shift : tok / size;
  }
  /// The cache row of `tok` given its page id (loaded ahead of time); a
  /// page id past the caches reads page 0 and sets `bad` (MetaGuard.h:
  /// a select in the copy loop, the report once at the piece's end).
  __device__ __forceinline__ int64_t row(int64_t tok, int32_t page) const {
    const int64_t off = shift >= 0 ? (tok & (size - 1)) : tok % size;
    if (kCheckMeta) {
      const bool ok = uint64_t(uint32_t(page)) < uint64_t(numPages);
      bad = bad || !ok;
      page = ok ? page : 0;
    }
    return int64_t(page) * size + off;
  }
  /// Records the first refused id of tokens [tokBegin, tokEnd), if any.
  __device__ void reportBad(int64_t tokBegin, int64_t tokEnd) const {
    if (kCheckMeta && bad)
      reportBadPage(pages, pageIndex(tokBegin), pageIndex(tokEnd - 1) + 1,
                    numPages);
  }
};

/// One tile of a piece: S = Q K^T for the tile's `valid` tokens, the online
/// softmax (fresh statistics when `first`), then O = alpha O + P V into the
/// warp's accumulators. Starts after the barrier that made the tile and Q
/// visible; ends with the one that frees the tile buffer, P and the stats.
template <typename T>
__device__ __forceinline__ void
mlaTileStep(const T *sQ, const T *kv, int64_t valid, bool first, float scale2,
            float *sS, T *sP, float *sM, float *sL, float *sAlpha,
            float (&acc)[8][4]) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;

  // S for tokens [8 warp, 8 warp + 8) over 576 dims: 18 steps of two
  // k16 MMAs in two accumulator chains, each step's fragments loaded
  // while the previous step multiplies.
  {
    float sc[4] = {0.f, 0.f, 0.f, 0.f}, sc1[4] = {0.f, 0.f, 0.f, 0.f};
    const T *aBase = sQ + (lane & 15) * kMlaStride + (lane >> 4) * 8;
    const T *bBase =
        kv + (8 * warp + (lane & 7)) * kMlaStride + (lane >> 3) * 8;
    constexpr int kSteps = kMlaRow / 32;
    uint32_t a0[2][4], a1[2][4], bb[2][4];
    nv::ldmatrixX4(bb[0], bBase);
    nv::ldmatrixX4(a0[0], aBase);
    nv::ldmatrixX4(a1[0], aBase + 16);
#pragma unroll
    for (int i = 0; i < kSteps; ++i) {
      const int cur = i & 1, nxt = cur ^ 1;
      if (i + 1 < kSteps) {
        nv::ldmatrixX4(bb[nxt], bBase + 32 * (i + 1));
        nv::ldmatrixX4(a0[nxt], aBase + 32 * (i + 1));
        nv::ldmatrixX4(a1[nxt], aBase + 32 * (i + 1) + 16);
      }
      nv::mma16816<T>(sc, a0[cur], bb[cur][0], bb[cur][1]);
      nv::mma16816<T>(sc1, a1[cur], bb[cur][2], bb[cur][3]);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e)
      sc[e] += sc1[e];
    const int tok = 8 * warp + 2 * q;
    const float s0 = tok < valid ? sc[0] * scale2 : nv::kNegInf;
    const float s1 = tok + 1 < valid ? sc[1] * scale2 : nv::kNegInf;
    const float s2 = tok < valid ? sc[2] * scale2 : nv::kNegInf;
    const float s3 = tok + 1 < valid ? sc[3] * scale2 : nv::kNegInf;
    *reinterpret_cast<float2 *>(sS + g * kMlaTile + tok) = make_float2(s0, s1);
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
    const float mOld = first ? nv::kNegInf : sM[h];
    const float lOld = first ? 0.f : sL[h];
    const float mNew = fmaxf(mOld, mx); // finite: a tile has a valid token
    const float alpha = nv::rescale2(mOld, mNew);
    const float p0 = nv::fastExp2(s4.x - mNew), p1 = nv::fastExp2(s4.y - mNew);
    const float p2 = nv::fastExp2(s4.z - mNew), p3 = nv::fastExp2(s4.w - mNew);
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

  // O = alpha O + P V over latent dims [64 warp, 64 warp + 64): per k16
  // step, P's fragment and all four V fragments first, then 8 MMAs.
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
    const T *vBase = kv + ((lane & 7) + ((lane >> 3) & 1) * 8) * kMlaStride +
                     64 * warp + (lane >> 4) * 8;
#pragma unroll
    for (int kt = 0; kt < kMlaTile; kt += 16) {
      uint32_t pa[4], vb[4][4];
      nv::ldmatrixX4(pa, pBase + kt);
#pragma unroll
      for (int np = 0; np < 4; ++np)
        nv::ldmatrixX4Trans(vb[np], vBase + kt * kMlaStride + 16 * np);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        nv::mma16816<T>(acc[2 * np], pa, vb[np][0], vb[np][1]);
        nv::mma16816<T>(acc[2 * np + 1], pa, vb[np][2], vb[np][3]);
      }
    }
  }
  __syncthreads(); // the tile buffer and P are free again
}

/// The piece's normalised rows of heads [hg, hg + nh) from the warp's
/// accumulators, with the LSE from the last tile's stats: into partial_o
/// (fp32) and its natural-log LSE, or, when `out` is set (a piece that is
/// its whole request needs no merge), straight into o (T) and the base-2
/// lse.
template <typename T>
__device__ __forceinline__ void
mlaStorePiece(const float (&acc)[8][4], int64_t hg, int64_t nh, float *pieceO,
              float *pieceLse, T *out, float *outLse, const float *sM,
              const float *sL) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const float invLo = g < nh ? 1.f / sL[g] : 0.f;
  const float invHi = g + 8 < nh ? 1.f / sL[g + 8] : 0.f;
  auto store = [&](int64_t h, int d, float lo, float hi) {
    if (out)
      *reinterpret_cast<uint32_t *>(out + h * kMlaDc + d) = packPair<T>(lo, hi);
    else
      *reinterpret_cast<float2 *>(pieceO + h * kMlaDc + d) = make_float2(lo, hi);
  };
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const int d = 64 * warp + 8 * nt + 2 * q;
    if (g < nh)
      store(hg + g, d, acc[nt][0] * invLo, acc[nt][1] * invLo);
    if (g + 8 < nh)
      store(hg + g + 8, d, acc[nt][2] * invHi, acc[nt][3] * invHi);
  }
  if (tid < nh) {
    const float lse2 = sM[tid] + log2f(sL[tid]);
    if (out)
      outLse[hg + tid] = lse2;
    else
      pieceLse[hg + tid] = lse2 * nv::kLn2;
  }
}

/// Tensor-core split of one piece: request b's local tokens [tokBegin,
/// tokEnd), all heads, into the piece's partial_o rows and lse, or, when
/// `out` is set (the piece is the whole request), into o and lse. `pages`:
/// the request's page ids (kv_indices + kv_indptr[b]).
template <typename T>
__device__ void mlaSplitPieceFast(const MlaParams<T> &params, int64_t b,
                                  const int32_t *pages, int64_t tokBegin,
                                  int64_t tokEnd, float *pieceO,
                                  float *pieceLse, char *smem,
                                  T *out = nullptr, float *outLse = nullptr) {
  constexpr int kThreads = 256;
  const int tid = threadIdx.x;
  T *sQ = reinterpret_cast<T *>(smem);
  T *sKv = reinterpret_cast<T *>(smem + kMlaQBytes);
  float *sS = reinterpret_cast<float *>(smem + kMlaQBytes + 2 * kMlaKvBytes);
  T *sP = reinterpret_cast<T *>(reinterpret_cast<char *>(sS) + kMlaSBytes);
  float *sM =
      reinterpret_cast<float *>(reinterpret_cast<char *>(sP) + kMlaPBytes);
  float *sL = sM + kMlaHeads;
  float *sAlpha = sL + kMlaHeads;

  // The operands in registers: `params` is the caller's (local-memory) copy.
  const T *qNope = params.qNope, *qPe = params.qPe;
  const T *ckv = params.ckvCache, *kpe = params.kpeCache;
  const int64_t H = params.numHeads;
  const MlaPageMap map(pages, params.pageSize, params.numPages);
  const int64_t len = tokEnd - tokBegin;
  const int64_t nTiles = ceilDiv(len, kMlaTile);
  const float scale2 = params.smScale * nv::kLog2e;
  constexpr int kCkvChunks = kMlaDc / 8, kKpeChunks = kMlaDp / 8;

  // The copy of a tile, 16-byte cp.async (zero-filled past the piece): 8
  // threads a row, 128 contiguous bytes a row and instruction; thread
  // (rowLane, rowBase) copies chunks rowLane + 8k of rows rowBase + 32 pass.
  // (Bulk copies, two a row, measured no faster on the H200: the copies are
  // not what limits this loop.)
  constexpr int kRowThreads = 8;
  constexpr int kRowsPerPass = kThreads / kRowThreads;
  constexpr int kPasses = kMlaTile / kRowsPerPass;
  static_assert(kCkvChunks % kRowThreads == 0 && kKpeChunks == kRowThreads,
                "the copy assumes Dc = 512 and Dp = 64");
  const int rowLane = tid % kRowThreads, rowBase = tid / kRowThreads;
  // Page ids of this thread's rows of the next tile to issue: loaded one
  // tile ahead by a volatile load, which the compiler keeps there.
  int32_t page[kPasses];
  auto loadPages = [&](int64_t it) {
#pragma unroll
    for (int ps = 0; ps < kPasses; ++ps) {
      const int64_t t = it * kMlaTile + rowBase + ps * kRowsPerPass;
      page[ps] =
          nv::ldgAhead(map.pages + map.pageIndex(tokBegin + (t < len ? t : 0)));
    }
  };
  // Rows of tile `it` into buffer `buf`, as one cp.async group.
  auto issueTile = [&](int64_t it, int buf) {
    T *dst = sKv + buf * kMlaTile * kMlaStride;
#pragma unroll
    for (int ps = 0; ps < kPasses; ++ps) {
      const int r = rowBase + ps * kRowsPerPass;
      const int64_t t = it * kMlaTile + r;
      const bool valid = t < len;
      const int64_t row = valid ? map.row(tokBegin + t, page[ps]) : 0;
      const T *srcC = ckv + row * kMlaDc + rowLane * 8;
      const T *srcP = kpe + row * kMlaDp + rowLane * 8;
      T *d = dst + r * kMlaStride + rowLane * 8;
#pragma unroll
      for (int k = 0; k < kCkvChunks / kRowThreads; ++k)
        nv::cpAsync16(d + k * kRowThreads * 8, srcC + k * kRowThreads * 8,
                      valid);
      nv::cpAsync16(d + kMlaDc, srcP, valid);
    }
    nv::cpAsyncCommit();
  };

  for (int64_t hg = 0; hg < H; hg += kMlaHeads) {
    const int64_t nh = imin(kMlaHeads, H - hg);
    // Q rows of this head group (zeros past H), with tile 0's copies.
    for (int c = tid; c < kMlaHeads * (kMlaRow / 8); c += kThreads) {
      const int r = c / (kMlaRow / 8), ch = c % (kMlaRow / 8);
      T *dst = sQ + r * kMlaStride + ch * 8;
      if (r < nh) {
        const int64_t h = hg + r;
        const T *src = ch < kCkvChunks
                           ? qNope + (b * H + h) * kMlaDc + ch * 8
                           : qPe + (b * H + h) * kMlaDp + (ch - kCkvChunks) * 8;
        nv::cpAsync16(dst, src);
      } else {
        *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
      }
    }
    loadPages(0);
    issueTile(0, 0);
    loadPages(1);

    float acc[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[nt][e] = 0.f;

    for (int64_t it = 0; it < nTiles; ++it) {
      const int buf = int(it & 1);
      if (it + 1 < nTiles) {
        issueTile(it + 1, buf ^ 1);
        loadPages(it + 2);
        nv::cpAsyncWait<1>();
      } else {
        nv::cpAsyncWait<0>();
      }
      __syncthreads(); // tile `it` (and Q) visible to all
      const T *kv = sKv + buf * kMlaTile * kMlaStride;
      const int64_t valid = imin(kMlaTile, len - it * kMlaTile);
      mlaTileStep(sQ, kv, valid, it == 0, scale2, sS, sP, sM, sL, sAlpha, acc);
    }

    mlaStorePiece<T>(acc, hg, nh, pieceO, pieceLse, out, outLse, sM, sL);
    __syncthreads(); // Q and the stats are rewritten by the next group
  }
  map.reportBad(tokBegin, tokEnd);
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
  const int64_t numPages = p.numPages;

  for (int64_t i = threadIdx.x; i < H * Dc; i += kThreads)
    acc[i] = 0.f;
  for (int64_t h = threadIdx.x; h < H; h += kThreads) {
    sM[h] = nv::kNegInf;
    sL[h] = 0.f;
  }
  for (int64_t t = tokBegin; t < tokEnd; ++t) {
    const int64_t row =
        checkedIndex(pages + t / P, numPages, LOOM_META_PAGE_ID) * P + t % P;
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
/// piece (slot, b) at piece index slot + b, nothing else (nothing at all
/// when slot >= E). `minSlotTokens` must match the merge's.
template <int kThreads, typename T>
__device__ __noinline__ int32_t mlaSplit(
    const MlaParams<T> &p, int64_t slot, int64_t numSlots, float *partialO,
    float *partialLse, char *smem, int64_t minSlotTokens = kMlaMinSlotTokens) {
  const bool fast = detail::mlaUseFastSplit<kThreads>(p);
  const int64_t used =
      fast ? detail::kMlaSmemFast
           : mlaSplitGenericSmemBytes(p.numHeads, p.dimCkv, p.dimKpe);
  const detail::MlaOffsets offsets = detail::mlaOffsets<kThreads>(p, smem, used);
  const int64_t *off = offsets.off;
  const MlaSlots slots = mlaSlots(offsets.total, numSlots, minSlotTokens);
  if (slot >= slots.active)
    return nv::kBodyOk;
  const int64_t mineBegin = slots.begin(slot);
  const int64_t mineEnd = slots.end(slot);
  if (mineBegin >= mineEnd)
    return nv::kBodyOk;
  if (!fast && nv::dynamicSmemBytes() <
                   mlaSplitGenericSmemBytes(p.numHeads, p.dimCkv, p.dimKpe))
    return nv::kBodySmemTooSmall;
  const int64_t b0 = detail::mlaFirstRequest(off, p.batch, mineBegin, 0);
  int64_t reqBegin = off ? off[b0] : 0;
  for (int64_t b = b0; b < p.batch && reqBegin < mineEnd; ++b) {
    const int64_t reqEnd = off ? off[b + 1] : reqBegin + mlaCheckedLen(p, b);
    const int64_t begin = imax(mineBegin, reqBegin);
    const int64_t end = imin(mineEnd, reqEnd);
    if (begin < end) {
      const int64_t piece = MlaSlots::piece(slot, b);
      float *pieceO = partialO + piece * p.numHeads * p.dimCkv;
      float *pieceLse = partialLse + piece * p.numHeads;
      if constexpr (kThreads == 256 &&
                    (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)) {
        if (fast) {
          detail::mlaSplitPieceFast(p, b, offsets.pages(p, b),
                                    begin - reqBegin, end - reqBegin,
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

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_MLASPLITBODIES_CUH
