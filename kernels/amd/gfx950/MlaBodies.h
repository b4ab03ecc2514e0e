//===- MlaBodies.h - gfx950 task bodies for MLA paged decode -- -*- C++ -*-===//
//
// Workgroup-cooperative versions of kernels/host/MlaBodies.h: the same two
// phases (split over W token slots, merge per request), the same slot
// arithmetic, piece indices and workspace layout (partial_o
// [pieces][H][Dc] then partial_lse [pieces][H], natural log), the same
// MlaParams (the host struct: the emitted code fills it the same way).
//
// Split, MFMA path (bf16/f16, Dc = 512, Dp = 64, 256 threads = 4 waves):
// the piece's KV rows stream through LDS in tiles of 64 tokens; all heads of
// the slot (16 per pass) share every KV row, which is MLA's point.
//   * Q stays in registers: lane (i, g) of every wave holds head i's 576
//     dims in 18 k-steps of 32 (8 elements per lane per step, 72 VGPRs);
//   * S = Q K^T: wave w scores tokens [16 w, 16 w + 16) with
//     v_mfma_f32_16x16x32_{bf16,f16} (A = Q from registers, B = K rows,
//     ds_read_b128 from LDS), 18 MFMAs per tile;
//   * online softmax in base 2: a 16-lane DPP row per head, 4 tokens per
//     lane; P rounded to T into LDS;
//   * O += P V: wave w owns latent dims [128 w, 128 w + 128) (8 D tiles of
//     16 dims, fp32 accumulators in registers), 2 k-steps of 32 tokens;
//   * the next tile's KV is loaded into registers (16-byte global loads,
//     18 per thread) while the current one is computed, and the page ids of
//     the tile after that are loaded a tile ahead, so no load waits on a
//     page-id load. Rows past the piece are zero-filled, never read: the
//     unused tail of a page (which may hold NaN) is never touched.
// Other shapes, types or thread counts take a plain path (a KV row at a
// time in LDS, a wave per head), as does a dispatch with too little LDS.
//
// LDS: mlaSplitLdsBytes = 82112 B for the MFMA path (KV tile 64 x 584 T,
// P 16 x 72 T, S 16 x 68 fp32, softmax stats, row indices); plain path
// 4 (Dc + Dp + 4 H) B; merge mlaMergeLdsBytes(H, W) = 4 H (1 + W) B
// (8512 B at H = 16, W = 132), at least 8 H B (weights then recomputed in
// chunks). The merge computes a request's per-(head, piece) weights once
// into LDS, then sums 4 dims per thread with 16-byte loads and FMAs.
//
// Meta values (kernels/common/MetaGuard.h, as the NVIDIA bodies): every
// task maps the slots from the requests' checked lengths (mlaCheckedLen,
// kernels/host/MlaBodies.h: 0 for a request whose kv_indptr / kv_lens
// pagedRequest refuses), so split and merge agree and a refused request
// reads no page id; every split task checks every request
// (mlaCheckedTokens), so the fault is recorded whatever the slot. Page ids are checked where they become cache rows (one 32-bit
// compare per loaded id; a refused id reads page 0 and fails the task).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_MLABODIES_H
#define LOOM_KERNELS_AMD_GFX950_MLABODIES_H

#include "kernels/amd/HipDevice.h"
#include "kernels/amd/MetaFault.h"
#include "kernels/host/MlaBodies.h"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace gfx950 {

namespace am = ::loom::amd;
using am::ceilDiv;
using am::imax;
using am::imin;

/// The host's operand struct: the emitted code fills it the same way.
template <typename T> using MlaParams = host::MlaParams<T>;
// The checked lengths every task's mapping of the slots counts.
using host::mlaCheckedLen;
using host::mlaCheckedTokens;

// Workspace layout and slot arithmetic: kernels/common/MlaSlots.h, the one
// copy host and devices share (its divisions, loom::divFloorFast, keep off
// the emulated 64-bit path). Re-exported for emitted code.
using ::loom::kMlaMinSlotTokens;
using ::loom::MlaSlots;
using ::loom::mlaNumPieces;
using ::loom::mlaPartialOFloats;
using ::loom::mlaSlots;
using ::loom::mlaWorkspaceFloats;

namespace detail {

constexpr int kMlaTile = 64;             // tokens per LDS tile
constexpr int kMlaHeads = 16;            // heads per pass: one MFMA row tile
constexpr int kMlaDc = 512;              // latent dims (also V)
constexpr int kMlaDp = 64;               // rope dims
constexpr int kMlaRow = kMlaDc + kMlaDp; // 576 = 18 k-steps of 32
/// KV row stride in elements: 1168 B = 292 dwords = 4 mod 32 banks, so the
/// 8 lanes of one ds_read_b128 pass (8 consecutive rows) hit 8 disjoint
/// 4-bank groups; rows stay 16-byte aligned.
constexpr int kMlaStride = kMlaRow + 8;
constexpr int kMlaPStride = kMlaTile + 8; // P rows: 144 B, same reason
constexpr int kMlaSStride = kMlaTile + 4; // score rows: 272 B (float4 reads)
constexpr int kMlaChunksPerRow = kMlaRow / 8; // 72 16-byte chunks

constexpr int64_t kMlaKvBytes = int64_t(kMlaTile) * kMlaStride * 2;
constexpr int64_t kMlaPBytes = int64_t(kMlaHeads) * kMlaPStride * 2;
constexpr int64_t kMlaSBytes = int64_t(kMlaHeads) * kMlaSStride * 4;
constexpr int64_t kMlaStatBytes = 3 * kMlaHeads * 4;
constexpr int64_t kMlaRowBytes = int64_t(kMlaTile) * 8;
constexpr int64_t kMlaLdsFast =
    kMlaKvBytes + kMlaPBytes + kMlaSBytes + kMlaStatBytes + kMlaRowBytes;

/// Position in a 32-token k-step of the P / V operands of slot (g, e):
/// token tk(g, e) = 2 g + (e & 1) + 8 (e >> 1). A bijection of
/// {0..3} x {0..7} onto 0..31 chosen for the V reads: for a fixed e the 4
/// lane groups read rows 2 apart, 2 * 292 = 8 mod 32 banks apart, so the 64
/// lanes' 16-bit reads (16 consecutive dims per group) are conflict-free.
/// P is stored pre-permuted (sP[h][32 ks + 8 g + e] = P[h][32 ks + tk]) so
/// the A operand is one ds_read_b128.
__device__ __forceinline__ int mlaTok(int g, int e) {
  return 2 * g + (e & 1) + 8 * (e >> 1);
}
/// Inverse: the stored position 8 g + e of token tt (0..31).
__device__ __forceinline__ int mlaPos(int tt) {
  const int g = (tt >> 1) & 3, e = (tt & 1) + 2 * (tt >> 3);
  return 8 * g + e;
}

/// What the split reads of MlaParams, compacted for the inlined bodies:
/// per-lane data pointers in VGPRs (am::toVgpr), 32-bit sizes.
template <typename T> struct MlaDev {
  const T *qNope, *qPe, *ckv, *kpe;
  int H, Dc, Dp, P;
  float smScale;
  uint32_t numPages; ///< page ids below it are valid (mlaPageLimit)
};

/// The caches' pages as a bound for int32 page ids: a negative id, as
/// uint32_t, is >= 2^31 >= the bound, so one unsigned compare checks both
/// ends.
__device__ __forceinline__ uint32_t mlaPageLimit(int64_t numPages) {
  return uint32_t(imax(0, imin(numPages, int64_t(1) << 31)));
}

/// The cache row of request token `tok` (pages: the request's page ids, P
/// the page size); a page id at or past `numPages` is refused (MetaGuard.h)
/// and page 0 read instead.
__device__ __forceinline__ int64_t mlaRow(const int32_t *pages, int tok, int P,
                                          uint32_t numPages) {
  const int32_t *at = pages + tok / P;
  int32_t page = *at;
  if (kCheckMeta && uint32_t(page) >= numPages) {
    recordMetaFault(at, page, LOOM_META_PAGE_ID);
    page = 0;
  }
  return int64_t(page) * P + tok % P;
}

/// The MFMA split of one piece: request b's local tokens [tokBegin,
/// tokEnd), all heads, into the piece's partial_o rows and lse. `pages`:
/// the request's page ids; `qNope` / `qPe` of d: the request's rows.
template <typename T>
__device__ __forceinline__ void
mlaSplitPieceMfma(const MlaDev<T> &d, const int32_t *pages, int tokBegin,
                  int tokEnd, float *pieceO, float *pieceLse, char *lds) {
  constexpr int kThreads = 256;
  const int tid = int(am::threadId()), lane = am::laneId(), wave = am::waveId();
  const int i = lane & 15, g = lane >> 4;
  T *sKv = reinterpret_cast<T *>(lds);
  T *sP = reinterpret_cast<T *>(lds + kMlaKvBytes);
  float *sS = reinterpret_cast<float *>(lds + kMlaKvBytes + kMlaPBytes);
  float *sM =
      reinterpret_cast<float *>(lds + kMlaKvBytes + kMlaPBytes + kMlaSBytes);
  float *sL = sM + kMlaHeads, *sAlpha = sL + kMlaHeads;
  int64_t *sRow = reinterpret_cast<int64_t *>(lds + kMlaKvBytes + kMlaPBytes +
                                              kMlaSBytes + kMlaStatBytes);

  const int H = d.H, P = d.P;
  const int len = tokEnd - tokBegin;
  const int nTiles = (len + kMlaTile - 1) / kMlaTile;
  const float scale2 = d.smScale * am::kLog2e;
  // KV row index (page * P + slot) of tile token r of tile `it`; -1 past
  // the piece. Threads 0..63, one token each; the page id is checked.
  auto rowOf = [&](int it, int r, int pg) -> int64_t {
    const int t = it * kMlaTile + r;
    if (t >= len)
      return -1;
    return mlaRow(pages, tokBegin + t, pg, d.numPages);
  };
  // This thread's 18 16-byte chunks of a tile, from the rows in sRow: 16 of
  // the ckv part (chunk c = tid + 256 q, q < 16: row c / 64, chunk c % 64)
  // and 2 of the kpe part (c = tid + 256 q, q < 2: row c / 8, chunk c % 8).
  // Rows past the piece load row 0 (always in bounds) and are zeroed by a
  // mask built arithmetically: no branches, no lane masks kept live.
  constexpr int kCkvPer = kMlaTile * (kMlaDc / 8) / kThreads; // 16
  constexpr int kKpePer = kMlaTile * (kMlaDp / 8) / kThreads; // 2
  am::u32x4 stage[kCkvPer + kKpePer];
  auto loadTile = [&]() {
#pragma unroll
    for (int q = 0; q < kCkvPer + kKpePer; ++q) {
      const bool ckv = q < kCkvPer; // compile-time after unrolling
      const int c = tid + kThreads * (ckv ? q : q - kCkvPer);
      const int r = ckv ? c / (kMlaDc / 8) : c / (kMlaDp / 8);
      const int ch = ckv ? c % (kMlaDc / 8) : c % (kMlaDp / 8);
      const int64_t row = sRow[r];
      const uint32_t keep = ~uint32_t(row >> 63); // 0 for row -1
      const int64_t rowOk = row & int64_t(~(row >> 63));
      const am::u32x4 v = ckv ? am::ldGlobal16(d.ckv + rowOk * kMlaDc + ch * 8)
                              : am::ldGlobal16(d.kpe + rowOk * kMlaDp + ch * 8);
      stage[q] = v & keep;
    }
  };
  auto storeTile = [&]() {
#pragma unroll
    for (int q = 0; q < kCkvPer + kKpePer; ++q) {
      const bool ckv = q < kCkvPer;
      const int c = tid + kThreads * (ckv ? q : q - kCkvPer);
      const int r = ckv ? c / (kMlaDc / 8) : c / (kMlaDp / 8);
      const int el =
          ckv ? 8 * (c % (kMlaDc / 8)) : kMlaDc + 8 * (c % (kMlaDp / 8));
      *reinterpret_cast<am::u32x4 *>(sKv + r * kMlaStride + el) = stage[q];
    }
  };

  for (int hg = 0; hg < H; hg += kMlaHeads) {
    const int nh = imin(kMlaHeads, H - hg);
    // Q in registers: k-step ks, lane (i, g) = head hg + i, dims
    // 32 ks + 8 g .. + 8 of [q_nope | q_pe]; zeros past H (a clamped,
    // in-bounds load, then zeroed).
    am::u32x4 qa[kMlaRow / 32];
    const int hq = hg + imin(i, nh - 1);
    const uint32_t keepQ = uint32_t((i - nh) >> 31); // all ones if i < nh
#pragma unroll
    for (int ks = 0; ks < kMlaRow / 32; ++ks) {
      // k-step ks < 16 is q_nope, the last two q_pe (compile-time).
      const am::u32x4 v =
          ks < kMlaDc / 32
              ? am::ldGlobal16(d.qNope + hq * kMlaDc + 32 * ks + 8 * g)
              : am::ldGlobal16(d.qPe + hq * kMlaDp + 32 * ks - kMlaDc + 8 * g);
      qa[ks] = v & keepQ;
    }
    if (tid < kMlaHeads) {
      sM[tid] = am::kNegInf;
      sL[tid] = 0.f;
    }
    // Prologue: rows of tile 0, its KV, rows of tile 1.
    int64_t nextRow = -1;
    if (tid < kMlaTile)
      sRow[tid] = rowOf(0, tid, P);
    am::syncThreads();
    loadTile();
    if (tid < kMlaTile)
      nextRow = rowOf(1, tid, P);
    am::syncThreads(); // everyone has read sRow
    storeTile();
    if (tid < kMlaTile)
      sRow[tid] = nextRow;
    am::syncThreads();

    am::f32x4 acc[8];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
      acc[nt] = am::zero4();

    for (int it = 0; it < nTiles; ++it) {
      // sKv holds tile it, sRow the rows of tile it + 1.
      const bool more = it + 1 < nTiles;
      int pp = P; // per-iteration: nothing derived from P is hoisted
      am::opaque(pp);
      if (more)
        loadTile(); // tile it + 1 into registers, in flight during compute
      if (tid < kMlaTile)
        nextRow = rowOf(it + 2, tid, pp); // page ids after the KV loads
      const int valid = imin(kMlaTile, len - it * kMlaTile);

      // S for tokens [16 wave, 16 wave + 16), all 16 heads.
      {
        am::f32x4 sc = am::zero4();
        const T *bRow = sKv + (16 * wave + i) * kMlaStride + 8 * g;
#pragma unroll
        for (int ks = 0; ks < kMlaRow / 32; ++ks)
          sc = am::mfma16x16x32<T>(
              qa[ks], *reinterpret_cast<const am::u32x4 *>(bRow + 32 * ks), sc);
        // D layout: register r = head 4 g + r, column = token 16 wave + i.
        const int tok = 16 * wave + i;
#pragma unroll
        for (int r = 0; r < 4; ++r)
          sS[(4 * g + r) * kMlaSStride + tok] =
              tok < valid ? sc[r] * scale2 : am::kNegInf;
      }
      am::syncThreads();

      // Online softmax: head h = tid / 16 (one DPP row), tokens 4 j..4 j+3.
      {
        const int h = tid >> 4, j = tid & 15;
        const am::f32x4 s4 =
            *reinterpret_cast<const am::f32x4 *>(sS + h * kMlaSStride + 4 * j);
        const float mx = am::rowMax16(__builtin_fmaxf(
            __builtin_fmaxf(s4[0], s4[1]), __builtin_fmaxf(s4[2], s4[3])));
        const float mOld = sM[h], lOld = sL[h];
        const float mNew = __builtin_fmaxf(mOld, mx); // finite: valid >= 1
        const float alpha = am::rescale2(mOld, mNew);
        float pr[4];
#pragma unroll
        for (int e = 0; e < 4; ++e)
          pr[e] = am::fastExp2(s4[e] - mNew); // -inf (past the piece) -> 0
        const float sum = am::rowSum16((pr[0] + pr[1]) + (pr[2] + pr[3]));
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int tt = 4 * j + e; // token in the tile
          sP[h * kMlaPStride + 32 * (tt >> 5) + mlaPos(tt & 31)] =
              am::fromF32<T>(pr[e]);
        }
        // Every lane of the row read sM / sL above; LDS operations of one
        // wave complete in order, so lane 0's writes come after them.
        if (j == 0) {
          sM[h] = mNew;
          sL[h] = lOld * alpha + sum;
          sAlpha[h] = alpha;
        }
      }
      am::syncThreads();

      // O = alpha O + P V over latent dims [128 wave, 128 wave + 128).
      {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float a = sAlpha[4 * g + r];
#pragma unroll
          for (int nt = 0; nt < 8; ++nt)
            acc[nt][r] *= a;
        }
#pragma unroll
        for (int ks = 0; ks < kMlaTile / 32; ++ks) {
          const am::u32x4 pa = *reinterpret_cast<const am::u32x4 *>(
              sP + i * kMlaPStride + 32 * ks + 8 * g);
          const uint16_t *vBase = reinterpret_cast<const uint16_t *>(sKv) +
                                  (32 * ks) * kMlaStride + 128 * wave + i;
#pragma unroll
          for (int nt = 0; nt < 8; ++nt) {
            // B: column = dim 128 wave + 16 nt + i, slot (g, e) = token
            // 32 ks + mlaTok(g, e) of the tile.
            am::u32x4 vb;
#pragma unroll
            for (int w2 = 0; w2 < 4; ++w2) {
              const uint32_t lo =
                  vBase[mlaTok(g, 2 * w2) * kMlaStride + 16 * nt];
              const uint32_t hi =
                  vBase[mlaTok(g, 2 * w2 + 1) * kMlaStride + 16 * nt];
              vb[w2] = lo | (hi << 16);
            }
            acc[nt] = am::mfma16x16x32<T>(pa, vb, acc[nt]);
          }
        }
      }
      am::syncThreads(); // the KV tile and P are free again

      if (more) {
        storeTile();
        if (tid < kMlaTile)
          sRow[tid] = nextRow;
      }
      am::syncThreads();
    }

    // Normalise and store this head group's rows of the piece: lane (g, i)
    // register r of tile nt is head 4 g + r, dim 128 wave + 16 nt + i.
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int h = 4 * g + r;
      if (h < nh) {
        const float inv = 1.f / sL[h];
        float *row = pieceO + (hg + h) * kMlaDc + 128 * wave + i;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
          *am::gptr(row + 16 * nt) = acc[nt][r] * inv;
      }
    }
    if (tid < nh)
      *am::gptr(pieceLse + hg + tid) =
          (sM[tid] + am::fastLog2(sL[tid])) * am::kLn2;
    am::syncThreads(); // the stats are rewritten by the next head group
  }
}

/// Plain split of one piece (any shape / type): a KV row at a time in LDS,
/// a wave per head for the scores, the accumulators in the piece's own
/// partial_o rows (each element owned by one thread), as in the host body.
template <int kThreads, typename T>
__device__ __forceinline__ void
mlaSplitPiecePlain(const MlaDev<T> &d, const int32_t *pages, int tokBegin,
                   int tokEnd, float *acc, float *pieceLse, char *lds) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int H = d.H, Dc = d.Dc, Dp = d.Dp;
  const int tid = int(am::threadId()), lane = am::laneId();
  float *kc = reinterpret_cast<float *>(lds);
  float *kp = kc + Dc;
  float *sM = kp + Dp, *sL = sM + H, *sScale = sL + H, *sPr = sScale + H;

  for (int e = tid; e < H * Dc; e += kThreads)
    acc[e] = 0.f;
  for (int h = tid; h < H; h += kThreads) {
    sM[h] = am::kNegInf;
    sL[h] = 0.f;
  }
  for (int t = tokBegin; t < tokEnd; ++t) {
    // Per-token copies of the sizes, so that nothing derived from them is
    // hoisted out of the token loop (am::opaque).
    int nH = d.H, nDc = d.Dc, nDp = d.Dp, nP = d.P;
    am::opaque(nH);
    am::opaque(nDc);
    am::opaque(nDp);
    am::opaque(nP);
    const int64_t row = mlaRow(pages, t, nP, d.numPages);
    am::syncThreads(); // the previous row's readers are done
    for (int dd = tid; dd < nDc; dd += kThreads)
      kc[dd] = am::ldF(d.ckv, row * nDc + dd);
    for (int dd = tid; dd < nDp; dd += kThreads)
      kp[dd] = am::ldF(d.kpe, row * nDp + dd);
    am::syncThreads();
    for (int h = am::waveId(); h < nH; h += kWaves) {
      float dot = 0.f;
      for (int dd = lane; dd < nDc; dd += 64)
        dot += am::ldF(d.qNope, h * nDc + dd) * kc[dd];
      for (int dd = lane; dd < nDp; dd += 64)
        dot += am::ldF(d.qPe, h * nDp + dd) * kp[dd];
      const float sc = d.smScale * am::waveSum(dot);
      if (lane == 0) {
        float m = sM[h], c = 1.f;
        if (sc > m) { // the host's mlaOnlineUpdate
          c = am::expAcc(m - sc);
          sL[h] *= c;
          sM[h] = m = sc;
        }
        const float ex = am::expAcc(sc - m);
        sL[h] += ex;
        sScale[h] = c;
        sPr[h] = ex;
      }
    }
    am::syncThreads();
    for (int e = tid; e < nH * nDc; e += kThreads) {
      const int h = e / nDc;
      acc[e] = acc[e] * sScale[h] + sPr[h] * kc[e % nDc];
    }
  }
  am::syncThreads();
  for (int e = tid; e < H * Dc; e += kThreads)
    acc[e] *= 1.f / sL[e / Dc];
  for (int h = tid; h < H; h += kThreads)
    pieceLse[h] = sM[h] + am::logAcc(sL[h]);
  am::syncThreads(); // the stats are rewritten by the next piece
}

template <int kThreads, typename T>
__device__ __forceinline__ bool mlaUseMfma(const MlaParams<T> &p) {
  if constexpr (kThreads == 256 && am::kIs16Bit<T>)
    return p.dimCkv == kMlaDc && p.dimKpe == kMlaDp &&
           am::isAligned16(p.qNope) && am::isAligned16(p.qPe) &&
           am::isAligned16(p.ckvCache) && am::isAligned16(p.kpeCache) &&
           am::dynamicLdsBytes() >= kMlaLdsFast;
  return false;
}

} // namespace detail

/// LDS the split needs for its MFMA path.
template <int kThreads>
__host__ __device__ constexpr int64_t mlaSplitLdsBytes() {
  return detail::kMlaLdsFast;
}

/// LDS of the plain split path.
__host__ __device__ constexpr int64_t
mlaSplitPlainLdsBytes(int64_t numHeads, int64_t dimCkv, int64_t dimKpe) {
  return 4 * (dimCkv + dimKpe + 4 * numHeads);
}

/// Phase 0 task `slot` of `numSlots`: partial_o / partial_lse of every
/// piece (slot, b) at piece index slot + b, nothing else (nothing at all
/// when slot >= E). `minSlotTokens` must match the merge's. The slots count
/// the requests' checked lengths (mlaCheckedLen), which every task checks.
template <int kThreads, typename T>
__device__ __forceinline__ int32_t mlaSplit(const MlaParams<T> &p, int64_t slot,
                                            int64_t numSlots, float *partialO,
                                            float *partialLse, char *lds,
                                            int64_t minSlotTokens =
                                                kMlaMinSlotTokens) {
  const MlaSlots slots =
      mlaSlots(mlaCheckedTokens(p), numSlots, minSlotTokens);
  if (slot >= slots.active)
    return am::kBodyOk;
  const int64_t mineBegin = slots.begin(slot);
  const int64_t mineEnd = slots.end(slot);
  if (mineBegin >= mineEnd)
    return am::kBodyOk;
  const bool mfma = detail::mlaUseMfma<kThreads>(p);
  if (!mfma && am::dynamicLdsBytes() <
                   mlaSplitPlainLdsBytes(p.numHeads, p.dimCkv, p.dimKpe))
    return am::kBodyLdsTooSmall;
  const int H = int(p.numHeads), Dc = int(p.dimCkv), Dp = int(p.dimKpe);
  // Walk the prefix sum of the checked kv_lens until past this slot (the
  // host's loop).
  int64_t reqBegin = 0;
  for (int b = 0; b < int(p.batch) && reqBegin < mineEnd; ++b) {
    const PagedRequest req =
        pagedRequest(p.kvIndptr, p.kvLens, b, p.numIndices, p.pageSize);
    const int64_t reqEnd = reqBegin + req.len;
    const int64_t begin = imax(mineBegin, reqBegin);
    const int64_t end = imin(mineEnd, reqEnd);
    if (begin < end) {
      const int piece = int(MlaSlots::piece(slot, b));
      float *pieceO = am::toVgpr(partialO + int64_t(piece) * H * Dc);
      float *pieceLse = am::toVgpr(partialLse + int64_t(piece) * H);
      // The request's rows and pages, per-lane pointers in VGPRs.
      detail::MlaDev<T> d{am::toVgpr(p.qNope + int64_t(b) * H * Dc),
                          am::toVgpr(p.qPe + int64_t(b) * H * Dp),
                          am::toVgpr(p.ckvCache),
                          am::toVgpr(p.kpeCache),
                          H,
                          Dc,
                          Dp,
                          int(p.pageSize),
                          p.smScale,
                          detail::mlaPageLimit(p.numPages)};
      // Per-iteration sizes: nothing the piece derives from them is hoisted
      // out of this loop (am::opaque).
      am::opaque(d.H);
      am::opaque(d.Dc);
      am::opaque(d.Dp);
      am::opaque(d.P);
      am::opaque(d.smScale);
      const int32_t *pages = am::toVgpr(p.kvIndices + req.first);
      const int tb = int(begin - reqBegin), te = int(end - reqBegin);
      if constexpr (kThreads == 256 && am::kIs16Bit<T>) {
        if (mfma) {
          detail::mlaSplitPieceMfma(d, pages, tb, te, pieceO, pieceLse, lds);
          reqBegin = reqEnd;
          continue;
        }
      }
      detail::mlaSplitPiecePlain<kThreads>(d, pages, tb, te, pieceO, pieceLse,
                                           lds);
    }
    reqBegin = reqEnd;
  }
  return am::kBodyOk;
}

/// LDS of the merge: the natural-log lse per head plus the weights of every
/// piece of a request per head. A request has at most E <= numSlots pieces,
/// so with this much they are computed once per request; with less (but at
/// least mlaMergeMinLdsBytes) they are recomputed in chunks.
__host__ __device__ constexpr int64_t mlaMergeLdsBytes(int64_t numHeads,
                                                       int64_t numSlots) {
  return 4 * numHeads * (1 + numSlots);
}
/// The least the merge runs with: lse plus one piece's weights per head.
__host__ __device__ constexpr int64_t mlaMergeMinLdsBytes(int64_t numHeads) {
  return 4 * numHeads * 2;
}

namespace detail {

/// acc[0 .. kVec) += w * src[0 .. kVec): one 16-byte load when kVec = 4.
template <int kVec>
__device__ __forceinline__ void mlaFmaVec(float (&acc)[kVec], float w,
                                          const float *src) {
  if constexpr (kVec == 4) {
    const am::f32x4 v = *reinterpret_cast<const am::f32x4 *>(src);
    acc[0] = __builtin_fmaf(w, v.x, acc[0]);
    acc[1] = __builtin_fmaf(w, v.y, acc[1]);
    acc[2] = __builtin_fmaf(w, v.z, acc[2]);
    acc[3] = __builtin_fmaf(w, v.w, acc[3]);
  } else {
    acc[0] = __builtin_fmaf(w, src[0], acc[0]);
  }
}

/// The weighted sum over the request's `span` pieces (lseP / oP: its first
/// piece's lse and o rows), kVec elements per thread and step. Weights come
/// from sWeight[j * H + h], filled for chunks of `cap` pieces: once per
/// request when span <= cap, else per chunk and element batch.
template <int kThreads, int kVec, typename T>
__device__ __forceinline__ void
mlaMergeSum(T *o, int H, int Dc, int span, int cap, const float *oP,
            const float *lseP, const float *sLseNat, float *sWeight) {
  const int tid = int(am::threadId());
  auto fill = [&](int c0, int n) {
    am::syncThreads(); // the previous chunk's readers are done
    for (int i = tid; i < n * H; i += kThreads) {
      const int j = i / H, h = i - j * H; // once per (piece, head)
      sWeight[i] = am::expAcc(lseP[(c0 + j) * H + h] - sLseNat[h]);
    }
    am::syncThreads();
  };
  const bool once = span <= cap;
  if (once)
    fill(0, span);
  const int nVec = H * Dc / kVec, dcVec = Dc / kVec;
  const int64_t pieceStride = int64_t(H) * Dc;
  for (int v0 = 0; v0 < nVec; v0 += kThreads) {
    const int v = v0 + tid;
    const int h = v < nVec ? v / dcVec : 0; // one division per kVec elements
    const float *src = oP + int64_t(v) * kVec;
    float acc[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      acc[k] = 0.f;
    for (int c0 = 0; c0 < span; c0 += cap) {
      const int n = imin(cap, span - c0);
      if (!once)
        fill(c0, n); // workgroup-uniform: all threads run every v0 and c0
      if (v < nVec)
        for (int j = 0; j < n; ++j)
          mlaFmaVec<kVec>(acc, sWeight[j * H + h],
                          src + int64_t(c0 + j) * pieceStride);
    }
    if (v < nVec)
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        am::stF(o, v * kVec + k, acc[k]);
  }
}

/// Merges request b (global tokens [reqBegin, reqEnd)) from its pieces, those
/// of slots slotOf(reqBegin) .. slotOf(reqEnd - 1) (all written): the host's
/// arithmetic, a thread per head for the lse, then mlaMergeSum. o / lse: the
/// request's rows; H, Dc: sizes (opaque per request, see am::opaque).
template <int kThreads, typename T>
__device__ __forceinline__ void
mlaMergeRequest(T *o, float *lse, int b, int H, int Dc, int64_t reqBegin,
                int64_t reqEnd, const MlaSlots &slots, const float *partialO,
                const float *partialLse, float *sLseNat, float *sWeight,
                int cap) {
  const int tid = int(am::threadId());
  if (reqBegin >= reqEnd) {
    for (int e = tid; e < H * Dc; e += kThreads)
      am::stF(o, e, 0.f);
    for (int h = tid; h < H; h += kThreads)
      lse[h] = am::kNegInf;
    return;
  }
  const int64_t first = MlaSlots::piece(slots.slotOf(reqBegin), b);
  const int span =
      int(MlaSlots::piece(slots.slotOf(reqEnd - 1), b) - first + 1);
  // The request's pieces: lse at lseP[j * H + h], o rows from oP.
  const float *lseP = am::toVgpr(partialLse + first * H);
  const float *oP = am::toVgpr(partialO + first * H * Dc);
  am::syncThreads(); // the previous request's readers of sLseNat are done
  for (int h = tid; h < H; h += kThreads) {
    float maxLse = am::kNegInf;
    for (int j = 0; j < span; ++j)
      maxLse = __builtin_fmaxf(maxLse, lseP[j * H + h]);
    float sum = 0.f;
    for (int j = 0; j < span; ++j)
      sum += am::expAcc(lseP[j * H + h] - maxLse);
    const float lseNat = maxLse + am::logAcc(sum);
    sLseNat[h] = lseNat;
    lse[h] = lseNat / host::kMlaLn2;
  }
  // (mlaMergeSum's first fill syncs before reading sLseNat.)
  if (Dc % 4 == 0 && am::isAligned16(partialO))
    mlaMergeSum<kThreads, 4>(o, H, Dc, span, cap, oP, lseP, sLseNat, sWeight);
  else
    mlaMergeSum<kThreads, 1>(o, H, Dc, span, cap, oP, lseP, sLseNat, sWeight);
}

} // namespace detail

/// Phase 1 task `task` of `numMergeTasks`: merges the requests whose first
/// merge unit it owns (MlaMergeSplit); `numSlots` and `minSlotTokens` are
/// phase 0's.
template <int kThreads, typename T>
__device__ __forceinline__ int32_t
mlaMerge(const MlaParams<T> &p, int64_t task, int64_t numMergeTasks,
         int64_t numSlots, const float *partialO, const float *partialLse,
         char *lds, int64_t minSlotTokens = kMlaMinSlotTokens) {
  const uint32_t have = am::dynamicLdsBytes();
  if (have < uint32_t(mlaMergeMinLdsBytes(p.numHeads)))
    return am::kBodyLdsTooSmall;
  const MlaSlots slots =
      mlaSlots(mlaCheckedTokens(p), numSlots, minSlotTokens);
  float *sLseNat = reinterpret_cast<float *>(lds);
  float *sWeight = sLseNat + p.numHeads;
  // Pieces whose weights fit at once (>= 1 by the check above).
  const int cap = int(have / uint32_t(4 * p.numHeads)) - 1;
  // Whole requests, in the task of each request's first head group.
  const MlaMergeSplit split =
      mlaMergeSplit(p.batch, p.numHeads, numMergeTasks);
  int64_t reqBegin = 0;
  for (int b = 0; b < int(p.batch); ++b) {
    const int64_t reqEnd = reqBegin + mlaCheckedLen(p, b); // the split's
    if (MlaMergeSplit::owns(int64_t(b) * split.chunks, task, numMergeTasks)) {
      int H = int(p.numHeads), Dc = int(p.dimCkv);
      am::opaque(H); // per request: see am::opaque
      am::opaque(Dc);
      detail::mlaMergeRequest<kThreads>(
          am::toVgpr(p.o + int64_t(b) * H * Dc), am::toVgpr(p.lse + b * H), b,
          H, Dc, reqBegin, reqEnd, slots, partialO, partialLse, sLseNat,
          sWeight, cap);
    }
    reqBegin = reqEnd;
  }
  return am::kBodyOk;
}

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_MLABODIES_H
