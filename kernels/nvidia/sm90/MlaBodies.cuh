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

#include "kernels/host/MlaBodies.h"
#include "kernels/nvidia/Atomics.cuh"
#include "kernels/nvidia/MetaFault.cuh"
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

template <typename T>
__device__ __forceinline__ uint32_t packPair(float lo, float hi) {
  return std::is_same_v<T, bf16> ? nv::packBf16x2(lo, hi)
                                 : nv::packF16x2(lo, hi);
}

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

//===----------------------------------------------------------------------===//
// One phase: the slots merge their own requests
//===----------------------------------------------------------------------===//

/// What the pieces of one request add to its arrival counter in every
/// launch, together: each adds its token count, and the piece holding the
/// request's first token also adds kMlaLaunchArrivals - kv_len. The counter
/// is never reset: before launch e it holds a multiple of this, so the value
/// an arrival sees tells it the launch's target without a launch number.
constexpr unsigned long long kMlaLaunchArrivals = 1ull << 32;

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
    const unsigned long long target =
        (seen / kMlaLaunchArrivals + 1) * kMlaLaunchArrivals;
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
/// (kMlaLaunchArrivals per request and launch); all numSlots tasks must be
/// resident together (the persistent launch guarantees it). Inlined: a
/// program calls it from its one tile function, and a call costs a cold
/// launch its stack copy of the operands and a jump to far code.
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
          unsigned long long share = static_cast<unsigned long long>(end - begin);
          if (begin == reqBegin)
            share += kMlaLaunchArrivals - static_cast<unsigned long long>(reqEnd - reqBegin);
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
