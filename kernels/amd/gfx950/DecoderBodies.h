//===- DecoderBodies.h - gfx950 task bodies of the decoder ops  -*- C++ -*-===//
//
// Workgroup-cooperative versions of kernels/host/DecoderBodies.h for MI350X
// (gfx950, wave64). Each body takes the host body's parameters, in the same
// order, plus the workgroup's dynamic LDS `lds` last, and is called by all
// kThreads threads of the workgroup (a multiple of 64; Loom uses 256 = one
// wave per SIMD). Tile semantics, aliasing rules and workspace layouts are
// the host bodies'; the same generated task table drives both.
//
// Every body returns int32_t 0 (a status code of HipDevice.h; none of these
// fails), except embedding, which returns the host's bool (false: an id was
// out of range). Control flow around barriers depends only on
// workgroup-uniform values. Bodies are __forceinline__: on AMDGPU a real
// call would save callee-saved VGPRs to scratch; the emitted runTask switch
// inlines every body into the kernel, whose register count is the largest
// body's (tests/amd/check-isa.sh checks there is no scratch).
//
// Memory-bound bodies move 16-byte vectors (8 bf16 per lane, global_load_
// dwordx4), coalesced across the wave, whenever types, alignment and sizes
// allow, and fall back to a scalar loop with the same results otherwise.
//
// linear (decode: M <= 32 rows, weight-bandwidth bound) uses MFMA
// v_mfma_f32_16x16x32_{bf16,f16} as a wide dot-product engine: y^T = W x^T
// with A = 16 weight rows (output columns), B = 16 rows of x, so one pass
// over a weight tile serves up to 32 rows of x; every lane streams 64
// contiguous bytes of its weight row per 128-k block (non-temporal loads)
// and the fp32 accumulators stay in registers. x and W both bf16 (or both
// f16), K % 8 == 0, 16-byte aligned bases; otherwise a wave-per-column
// VALU path (fp32 accumulate, wave reduction).
//
// LDS (dynamic) per body, kThreads = 256: linearTile / linearPartial
// linearLdsBytes = 8 KB (only when a tile has fewer 16-column groups than
// waves: the K split meets in LDS, added in wave order); rope
// ropeLdsBytes(D) = 4 D B (cos/sin of one token; less: per-element angles);
// gqaDecodeSplit gqaSplitLdsBytes(D, group) (online-softmax states of the 16
// row groups; 66 KB at D = 128, 8 heads; less: the plain path); the others
// use only a few words of static LDS.
//
// Meta values (kernels/common/MetaGuard.h, as the NVIDIA bodies): kvAppend
// refuses a slot past the `numPages` pages of the caches (negative: padding,
// skipped) and writes nothing for it; gqaDecodeSplit checks its request's
// kv_indptr / kv_lens (pagedRequest: a refused request reads no token) and
// every page id it loads (CheckedPages: a compare and a select per id, a
// refused id reads page 0 and is recorded once at the end of the split). A
// refused value fails the task (Interpreter.h).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H
#define LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H

#include "kernels/amd/HipDevice.h"
#include "kernels/amd/MetaFault.h"
#include "kernels/common/GqaSplits.h"
#include "kernels/common/Rope.h"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace gfx950 {

namespace am = ::loom::amd;
using am::ceilDiv;
using am::imax;
using am::imin;
using am::roundUp;

namespace detail {
template <typename T> struct NoDeduce { using type = T; };
/// Keeps a parameter out of deduction, so `nullptr` works for an optional
/// buffer whose type follows another argument (as in the host bodies).
template <typename T> using NoDeduceT = typename NoDeduce<T>::type;

/// dst[0..n) = src[0..n) converted; 16-byte moves when both allow it.
template <int kThreads, typename TS, typename TD>
__device__ __forceinline__ void copyRow(const TS *src, TD *dst, int64_t n) {
  const int tid = int(am::threadId());
  if constexpr (std::is_same_v<TS, TD>) {
    const int64_t bytes = n * int64_t(sizeof(TS));
    if (bytes % 16 == 0 && am::isAligned16(src) && am::isAligned16(dst)) {
      for (int64_t i = tid; i < bytes / 16; i += kThreads)
        am::stGlobal16(
            reinterpret_cast<char *>(dst) + 16 * i,
            am::ldGlobal16(reinterpret_cast<const char *>(src) + 16 * i));
      return;
    }
  } else {
    if (n % 8 == 0 && am::isAligned16(src) && am::isAligned16(dst)) {
      for (int64_t i = int64_t(tid) * 8; i < n; i += kThreads * 8) {
        float v[8];
        am::load8(src + i, v);
        am::store8(dst + i, v);
      }
      return;
    }
  }
  for (int64_t i = tid; i < n; i += kThreads)
    am::stF(dst, i, am::ldF(src, i));
}
} // namespace detail

//===----------------------------------------------------------------------===//
// rmsnorm: x viewed as [R, D]; task = rows [r0, r1).
//===----------------------------------------------------------------------===//

/// None: the workgroup reduction's scratch is static LDS.
template <int kThreads>
__host__ __device__ constexpr int64_t rmsnormLdsBytes() {
  return 0;
}

namespace detail {
/// Sum of squares of the `stride`-strided share of row xr owned by `idx`
/// (8-element vectors when `vec`).
template <typename TX>
__device__ __forceinline__ float rowSumSq(const TX *xr, int64_t D, bool vec,
                                          int idx, int stride) {
  float ss = 0.f;
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += int64_t(stride) * 8) {
      float v[8];
      am::load8(xr + i, v);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        ss += v[e] * v[e];
    }
  } else {
    for (int64_t i = idx; i < D; i += stride) {
      const float v = am::ldF(xr, i);
      ss += v * v;
    }
  }
  return ss;
}

/// yr = xr * inv * w over the same share as rowSumSq (so y may alias x:
/// every element is rewritten by the thread that read it, after the whole
/// row's sum is known).
template <typename TX, typename TW, typename TY>
__device__ __forceinline__ void rowScale(const TX *xr, const TW *w, TY *yr,
                                         int64_t D, float inv, bool vec,
                                         int idx, int stride) {
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += int64_t(stride) * 8) {
      float v[8], g[8];
      am::load8(xr + i, v);
      am::load8(w + i, g);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = v[e] * inv * g[e]; // the host's (x * inv) * w
      am::store8(yr + i, v);
    }
  } else {
    for (int64_t i = idx; i < D; i += stride)
      am::stF(yr, i, am::ldF(xr, i) * inv * am::ldF(w, i));
  }
}
} // namespace detail

/// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for r in [r0, r1).
/// A wave per row when the tile has at least one row per wave (Qwen3's
/// per-head norm, many rows), the whole workgroup per row otherwise (a few
/// hidden-state rows of decode).
template <int kThreads, typename TX, typename TW, typename TY>
__device__ __forceinline__ int32_t rmsnormRows(const TX *x, const TW *w, TY *y,
                                               int64_t D, float eps, int64_t r0,
                                               int64_t r1, char *lds) {
  (void)lds;
  constexpr int kWaves = kThreads / am::kWaveSize;
  const bool vec = D % 8 == 0 && am::isAligned16(x) && am::isAligned16(w) &&
                   am::isAligned16(y);
  if (r1 - r0 >= kWaves) {
    const int lane = am::laneId();
    for (int64_t r = r0 + am::waveId(); r < r1; r += kWaves) {
      const float ss =
          am::waveSum(detail::rowSumSq(x + r * D, D, vec, lane, 64));
      const float inv = 1.0f / am::sqrtAcc(ss / float(D) + eps);
      detail::rowScale(x + r * D, w, y + r * D, D, inv, vec, lane, 64);
    }
    return am::kBodyOk;
  }
  __shared__ float scratch[kWaves];
  const int tid = int(am::threadId());
  for (int64_t r = r0; r < r1; ++r) {
    const float ss = am::blockSum<kThreads>(
        detail::rowSumSq(x + r * D, D, vec, tid, kThreads), scratch);
    const float inv = 1.0f / am::sqrtAcc(ss / float(D) + eps);
    detail::rowScale(x + r * D, w, y + r * D, D, inv, vec, tid, kThreads);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// linear: y[m, n] (+)= x[m, :] . w[n, :]   (x [M, K], w [N, K], y [M, N])
//
// MFMA path. Output columns come in 16-column groups ("n-tiles"), rows of x
// in 16-row m-tiles, two per pass (32 rows). For one n-tile and one 128-k
// block, lane l = 16 g + i (i = l % 16, g = l / 16):
//   A (weights): row n = n-tile base + i, k = kb + 32 g + 8 s + e for MFMA
//                step s = 0..3, slot e = 0..7: the lane reads 64 contiguous
//                bytes (four 16-byte loads) of its weight row;
//   B (x):       row m = m-tile base + i, the SAME k for each (g, s, e);
//   D:           lane l holds y^T[n = base + 4 g + r][m = base + i], r = 0..3.
// Because A and B use the same k for each slot, the hardware's own k order
// within an MFMA does not matter (HipDevice.h). Rows n >= n1 / m >= M and
// elements outside [k0, k1) are zeros in the registers (never loaded).
//
// Work split in a tile [n0, n1): n-tiles go to waves round-robin; when a
// tile has fewer n-tiles than waves, K is split among the waves of an
// n-tile as well and their partial sums meet in LDS, added in wave order.
//===----------------------------------------------------------------------===//

/// LDS of the in-workgroup K split: one [2][16][16] float tile per wave.
template <int kThreads> __host__ __device__ constexpr int64_t linearLdsBytes() {
  return (kThreads / am::kWaveSize) * 2 * 16 * 16 * 4;
}

namespace detail {

constexpr int kLinKBlock = 128; // k per block: four MFMA steps of 32

/// Keeps the 16-bit elements of a 16-byte chunk whose k (k..k+7) lies in
/// [kLo, kHi); zeros the others. Only edge chunks take the masking path.
__device__ __forceinline__ am::u32x4 maskChunk(am::u32x4 v, int k, int kLo,
                                               int kHi) {
  if (k >= kLo && k + 8 <= kHi)
    return v;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const int ke = k + 2 * w;
    const uint32_t lo = ke >= kLo && ke < kHi ? 0x0000ffffu : 0u;
    const uint32_t hi = ke + 1 >= kLo && ke + 1 < kHi ? 0xffff0000u : 0u;
    v[w] &= lo | hi;
  }
  return v;
}

/// The lane's four chunks of one row (`row` points at the row, null when
/// the row does not exist) in the k-block starting at kb: chunk s at
/// k = kb + 32 g + 8 s. Chunks outside [kLo, kHi) are zeros (not loaded);
/// `edge` (workgroup-uniform) says the block may straddle kLo or kHi.
/// kStream: non-temporal loads (weights, read once).
template <bool kStream, typename T>
__device__ __forceinline__ void loadChunks(const T *row, int kb, int g, int kLo,
                                           int kHi, bool edge,
                                           am::u32x4 (&out)[4]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int k = kb + 32 * g + 8 * s;
    am::u32x4 v = {0u, 0u, 0u, 0u};
    if (row && (!edge || (k < kHi && k + 8 > kLo))) {
      v = kStream ? am::ldStream16(row + k) : am::ldGlobal16(row + k);
      if (edge)
        v = maskChunk(v, k, kLo, kHi);
    }
    out[s] = v;
  }
}

/// acc[mt] (16 n x 16 m tile, D layout) += W[n-tile] x^T over k-blocks
/// [kbBegin, kbEnd) (block b starts at kStart + 128 b), for the m-tiles at
/// mBase and mBase + 16 (when present). wRow / xRow0 / xRow1: this lane's
/// weight row and x rows, null where the row does not exist. The next
/// block's loads are issued before the current block's MFMAs.
template <typename T>
__device__ __forceinline__ void
linearWaveMfma(const T *wRow, const T *xRow0, const T *xRow1, bool two,
               int kStart, int kLo, int kHi, int kbBegin, int kbEnd,
               am::f32x4 (&acc)[2]) {
  const int g = am::laneId() >> 4;
  acc[0] = am::zero4();
  acc[1] = am::zero4();
  if (kbBegin >= kbEnd)
    return;
  am::u32x4 wa[4], xa[4], xb[4];
  auto load = [&](int b, am::u32x4(&W)[4], am::u32x4(&X0)[4],
                  am::u32x4(&X1)[4]) {
    const int kb = kStart + b * kLinKBlock;
    const bool edge = kb < kLo || kb + kLinKBlock > kHi;
    loadChunks<true>(wRow, kb, g, kLo, kHi, edge, W);
    loadChunks<false>(xRow0, kb, g, kLo, kHi, edge, X0);
    loadChunks<false>(two ? xRow1 : nullptr, kb, g, kLo, kHi, edge, X1);
  };
  load(kbBegin, wa, xa, xb);
  // Not unrolled: the loop is already software-pipelined (the next block's
  // loads are in flight during this block's MFMAs), and the unrolled copies
  // of the edge masks and addresses take more SGPRs than a wave has once
  // the body is inlined into the persistent loop (generated decoders
  // spilled 100+ SGPRs into VGPR lanes).
#pragma nounroll
  for (int b = kbBegin; b < kbEnd; ++b) {
    am::u32x4 wn[4], xna[4], xnb[4];
    const bool more = b + 1 < kbEnd;
    if (more)
      load(b + 1, wn, xna, xnb);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      acc[0] = am::mfma16x16x32<T>(wa[s], xa[s], acc[0]);
      if (two)
        acc[1] = am::mfma16x16x32<T>(wa[s], xb[s], acc[1]);
    }
    if (more) {
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        wa[s] = wn[s];
        xa[s] = xna[s];
        xb[s] = xnb[s];
      }
    }
  }
}

/// Where a finished (m, n) value goes: y = residual + v, or partial = v.
template <typename TOut> struct LinearStore {
  const TOut *residual;
  TOut *y;
  int64_t N;
  __device__ __forceinline__ void operator()(int64_t m, int64_t n,
                                             float v) const {
    const int64_t idx = m * N + n;
    const float base = residual ? am::ldF(residual, idx) : 0.f;
    am::stF(y, idx, base + v);
  }
};
struct PartialStore {
  float *partial;
  int64_t N;
  __device__ __forceinline__ void operator()(int64_t m, int64_t n,
                                             float v) const {
    partial[m * N + n] = v;
  }
};

/// Writes a D-layout tile: lane (g, i) register r is (n = nBase + 4 g + r,
/// m = mBase + i).
template <typename Out>
__device__ __forceinline__ void storeTile(const Out &out, am::f32x4 acc,
                                          int64_t mBase, int64_t M,
                                          int64_t nBase, int64_t n1) {
  const int lane = am::laneId();
  const int64_t m = mBase + (lane & 15);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int64_t n = nBase + 4 * (lane >> 4) + r;
    if (m < M && n < n1)
      out(m, n, acc[r]);
  }
}

/// MFMA path of linearTile / linearPartial over k range [k0, k1).
template <int kThreads, typename T, typename Out>
__device__ __forceinline__ void
linearMfma(const T *x, const T *w, int64_t M, int64_t K, int64_t n0, int64_t n1,
           int64_t k0, int64_t k1, const Out &out, char *lds, bool ldsOk) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int wave = am::waveId(), lane = am::laneId();
  const int nTiles = int(ceilDiv(n1 - n0, 16));
  // k fits in 32 bits (a row of 2^31 elements would be 4 GB).
  const int kLo = int(k0), kHi = int(k1);
  const int kStart = kLo & ~7; // chunks start 8-aligned
  const int nBlocks = int(ceilDiv(kHi - kStart, kLinKBlock));
  auto rowOf = [&](const T *base, int64_t r, int64_t rows) -> const T * {
    return r < rows ? base + r * K : nullptr;
  };
  if (nTiles >= kWaves || !ldsOk) {
    // Each wave alone: n-tiles round-robin, whole K.
    for (int nt = wave; nt < nTiles; nt += kWaves) {
      const int64_t nBase = n0 + 16 * int64_t(nt);
      const T *wRow = rowOf(w, nBase + (lane & 15), n1);
      for (int64_t mBase = 0; mBase < M; mBase += 32) {
        const bool two = M - mBase > 16;
        am::f32x4 acc[2];
        linearWaveMfma(wRow, rowOf(x, mBase + (lane & 15), M),
                       rowOf(x, mBase + 16 + (lane & 15), M), two, kStart, kLo,
                       kHi, 0, nBlocks, acc);
        storeTile(out, acc[0], mBase, M, nBase, n1);
        if (two)
          storeTile(out, acc[1], mBase + 16, M, nBase, n1);
      }
    }
    return;
  }
  // Fewer n-tiles than waves: `per` waves share an n-tile, each a part of
  // the k-blocks; partial tiles meet in LDS ([wave][mt][16 x 16] floats,
  // element (4 g + r) * 16 + i per lane) and the first wave of the n-tile
  // adds them in wave order.
  const int per = kWaves / nTiles;
  const int nt = wave / per, part = wave % per;
  const bool active = nt < nTiles; // wave-uniform
  const int64_t nBase = n0 + 16 * int64_t(nt);
  const T *wRow = rowOf(w, nBase + (lane & 15), n1);
  const int kbBegin = part * nBlocks / per;
  const int kbEnd = (part + 1) * nBlocks / per;
  float *slots = reinterpret_cast<float *>(lds);
  const int cell = (4 * (lane >> 4)) * 16 + (lane & 15);
  for (int64_t mBase = 0; mBase < M; mBase += 32) {
    const bool two = M - mBase > 16;
    am::f32x4 acc[2] = {am::zero4(), am::zero4()};
    if (active)
      linearWaveMfma(wRow, rowOf(x, mBase + (lane & 15), M),
                     rowOf(x, mBase + 16 + (lane & 15), M), two, kStart, kLo,
                     kHi, kbBegin, kbEnd, acc);
    float *mine = slots + wave * 512;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        mine[mt * 256 + cell + 16 * r] = acc[mt][r];
    am::syncThreads();
    if (active && part == 0) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        am::f32x4 sum = am::zero4();
        for (int q = 0; q < per; ++q)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            sum[r] += slots[(wave + q) * 512 + mt * 256 + cell + 16 * r];
        if (mt == 0 || two)
          storeTile(out, sum, mBase + 16 * mt, M, nBase, n1);
      }
    }
    am::syncThreads(); // the slots are rewritten by the next m pass
  }
}

/// Plain path (any types): a wave per output column, lanes over k, a wave
/// reduction per row of x.
template <int kThreads, typename TIn, typename TW, typename Out>
__device__ __forceinline__ void
linearPlain(const TIn *x, const TW *w, int64_t M, int64_t K, int64_t n0,
            int64_t n1, int64_t k0, int64_t k1, const Out &out) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int lane = am::laneId();
  for (int64_t n = n0 + am::waveId(); n < n1; n += kWaves) {
    for (int64_t m = 0; m < M; ++m) {
      float part = 0.f;
      for (int64_t k = k0 + lane; k < k1; k += 64)
        part += am::ldF(x, m * K + k) * am::ldF(w, n * K + k);
      const float sum = am::waveSum(part);
      if (lane == 0)
        out(m, n, sum);
    }
  }
}

template <int kThreads, typename TIn, typename TW, typename Out>
__device__ __forceinline__ void
linearAny(const TIn *x, const TW *w, int64_t M, int64_t K, int64_t n0,
          int64_t n1, int64_t k0, int64_t k1, const Out &out, char *lds) {
  if (n0 >= n1 || M <= 0)
    return;
  if constexpr (std::is_same_v<TIn, TW> && am::kIs16Bit<TIn>) {
    if (K % 8 == 0 && am::isAligned16(x) && am::isAligned16(w)) {
      const bool ldsOk = am::dynamicLdsBytes() >= linearLdsBytes<kThreads>();
      linearMfma<kThreads>(x, w, M, K, n0, n1, k0, k1, out, lds, ldsOk);
      return;
    }
  }
  linearPlain<kThreads>(x, w, M, K, n0, n1, k0, k1, out);
}

} // namespace detail

/// Output-column tile: y[m, n] = residual[m, n] + x[m, :] . w[n, :] for all
/// m < M (runtime rows) and n in [n0, n1). `residual` may be null, or alias
/// `y` (each element is read just before the same lane overwrites it).
template <int kThreads, typename TIn, typename TW, typename TOut>
__device__ __forceinline__ int32_t linearTile(
    const TIn *x, const TW *w, const detail::NoDeduceT<TOut> *residual, TOut *y,
    int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, 0, K,
                              detail::LinearStore<TOut>{residual, y, N}, lds);
  return am::kBodyOk;
}

/// Split-K phase 0: the fp32 partial product over K range [k0, k1) for
/// columns [n0, n1) and all m < M; element (m, n) is partial[m * N + n].
template <int kThreads, typename TIn, typename TW>
__device__ __forceinline__ int32_t linearPartial(
    const TIn *x, const TW *w, float *partial, int64_t M, int64_t K, int64_t N,
    int64_t n0, int64_t n1, int64_t k0, int64_t k1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, k0, k1,
                              detail::PartialStore{partial, N}, lds);
  return am::kBodyOk;
}

/// Split-K phase 1: y[m, n] = residual[m, n] + sum_s partials[s][m, n],
/// splits summed in order 0..splits-1 (bitwise the host's sum).
template <int kThreads, typename TOut>
__device__ __forceinline__ int32_t
linearReduce(const float *partials, int64_t splits, int64_t sliceStride,
             const detail::NoDeduceT<TOut> *residual, TOut *y, int64_t M,
             int64_t N, int64_t n0, int64_t n1, char *lds) {
  (void)lds;
  const int64_t width = n1 - n0;
  for (int64_t e = am::threadId(); e < M * width; e += kThreads) {
    const int64_t m = e / width, n = n0 + e % width;
    const int64_t idx = m * N + n;
    float sum = 0.f;
    for (int64_t s = 0; s < splits; ++s)
      sum += partials[s * sliceStride + idx];
    const float base = residual ? am::ldF(residual, idx) : 0.f;
    am::stF(y, idx, base + sum);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// rope: x, y [T, H, D]; task = flattened rows [r0, r1) over T * H.
//
// The host takes each angle and its cos/sin in double. Without device
// libraries this is done by hand, as accurately: inv_freq_i =
// theta^(-2 i / rotaryDim) = rho^i with rho = theta^(-2 / rotaryDim) found
// by Newton's method in double (rho^rotaryDim = theta^-2) and rho^i by
// squaring; angle = pos * inv_freq_i in double; Cody-Waite reduction by
// pi/2 in double (fdlibm's three-part pi/2); the reduced |r| <= pi/4 in
// fp32 through Cephes' sinf/cosf polynomials (~1 ulp). Against the host's
// float(std::cos(angle)) this is within a couple of fp32 ulps even at
// positions of 10^6.
//===----------------------------------------------------------------------===//

template <int kThreads>
__host__ __device__ constexpr int64_t ropeLdsBytes(int64_t D) {
  return 4 * D; // cos and sin of rotaryDim / 2 <= D / 2 pairs
}

namespace detail {

/// x^n for n >= 0 by squaring, in double.
__device__ __forceinline__ double powInt(double x, int64_t n) {
  double r = 1.0;
  while (n > 0) {
    if (n & 1)
      r *= x;
    x *= x;
    n >>= 1;
  }
  return r;
}

/// rho = theta^(-2 / rotaryDim) to double precision.
__device__ __forceinline__ double ropeRho(float theta, int64_t rotaryDim) {
  const double c = 1.0 / (double(theta) * double(theta)); // rho^rd = c
  double y =
      double(am::fastExp2(-2.f * am::fastLog2(theta) / float(rotaryDim)));
#pragma unroll
  for (int it = 0; it < 4; ++it) { // quadratic: 1e-6 -> 1e-12 -> 1e-16
    const double q = powInt(y, rotaryDim);
    y = y * (1.0 - (q - c) / (double(rotaryDim) * q));
  }
  return y;
}

/// cos and sin of a double angle, returned as floats.
__device__ __forceinline__ void sinCosD(double angle, float &cosOut,
                                        float &sinOut) {
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  constexpr double kPio2_1 = 1.57079632673412561417e+00;  // 33 bits of pi/2
  constexpr double kPio2_1t = 6.07710050650619224932e-11; // pi/2 - kPio2_1
  constexpr double kPio2_2 = 6.07710050630396597660e-11;  // 33 more bits
  constexpr double kPio2_2t = 2.02226624879595063154e-21; // the rest
  const double k = __builtin_rint(angle * kTwoOverPi);
  // r = angle - k pi/2, exactly enough for |k| < 2^20 (positions < ~1.6e6
  // radians; beyond, the error grows like k * 2e-21).
  double r = __builtin_fma(-k, kPio2_1, angle);
  r = __builtin_fma(-k, kPio2_2, r);
  r = __builtin_fma(-k, kPio2_2t, r);
  (void)kPio2_1t;
  const float x = float(r), z = x * x;
  const float s =
      ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z *
          x +
      x;
  const float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z +
                   4.166664568298827e-2f) *
                      z * z -
                  0.5f * z + 1.0f;
  switch (int64_t(k) & 3) {
  case 0:
    cosOut = c, sinOut = s;
    break;
  case 1:
    cosOut = -s, sinOut = c;
    break;
  case 2:
    cosOut = -c, sinOut = -s;
    break;
  default:
    cosOut = s, sinOut = -c;
    break;
  }
}

/// cos / sin of pair j of a token at `pos` (its frequency scaled by
/// `scaling`, kernels/common/Rope.h).
__device__ __forceinline__ void ropeAngle(double rho, const RopeScaling &scaling,
                                          double pos, int64_t j, float &c,
                                          float &s) {
  sinCosD(pos * ropeScaledInvFreq(powInt(rho, j), scaling), c, s);
}

} // namespace detail

/// NeoX-halves rotary embedding of rows [r0, r1) (row = t * H + h): pair
/// i < rotaryDim/2 rotates (x[i], x[i + rotaryDim/2]) by angle
/// positions[t] * theta^(-2i/rotaryDim) (that frequency scaled by
/// `scaling`); dims past rotaryDim are copied.
/// `y` may alias `x` (each element pair is read and written by one thread).
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ __forceinline__ int32_t rope(const TX *x, const TPos *positions,
                                        TY *y, int64_t H, int64_t D,
                                        int64_t rotaryDim, float theta,
                                        RopeScaling scaling, int64_t r0,
                                        int64_t r1, char *lds) {
  const int tid = int(am::threadId());
  const int64_t half = rotaryDim / 2;
  const double rho = detail::ropeRho(theta, rotaryDim);
  const bool table = am::dynamicLdsBytes() >= uint32_t(8 * half);
  float *sCos = reinterpret_cast<float *>(lds);
  float *sSin = sCos + half;
  for (int64_t r = r0; r < r1;) {
    // Rows [r, rEnd) share token t and hence all angles.
    const int64_t t = r / H;
    const int64_t rEnd = imin(r1, (t + 1) * H);
    const double pos = double(positions[t]);
    if (table) {
      for (int64_t j = tid; j < half; j += kThreads)
        detail::ropeAngle(rho, scaling, pos, j, sCos[j], sSin[j]);
      am::syncThreads();
    }
    const int64_t rows = rEnd - r;
    for (int64_t e = tid; e < rows * half; e += kThreads) {
      const int64_t row = r + e / half, j = e % half;
      float c, s;
      if (table) {
        c = sCos[j];
        s = sSin[j];
      } else {
        detail::ropeAngle(rho, scaling, pos, j, c, s);
      }
      const float a = am::ldF(x, row * D + j);
      const float b = am::ldF(x, row * D + j + half);
      am::stF(y, row * D + j, a * c - b * s);
      am::stF(y, row * D + j + half, b * c + a * s);
    }
    const int64_t tailDims = D - rotaryDim;
    for (int64_t e = tid; e < rows * tailDims; e += kThreads) {
      const int64_t row = r + e / tailDims, i = rotaryDim + e % tailDims;
      am::stF(y, row * D + i, am::ldF(x, row * D + i));
    }
    if (table)
      am::syncThreads(); // the table is rewritten for the next token
    r = rEnd;
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// kv_append: task = tokens [t0, t1).
//===----------------------------------------------------------------------===//

/// Copies token t's K row [Hkv, D] and V row [Hkv, Dv] to page
/// slotMapping[t] / P, slot slotMapping[t] % P of the [pages, P, Hkv, D|Dv]
/// caches; a negative slot (padding token) is skipped, a slot past the
/// `numPages` pages refused (MetaGuard.h) and nothing written for it.
template <int kThreads, typename TK, typename TV, typename TSlot, typename TKC,
          typename TVC>
__device__ __forceinline__ int32_t
kvAppend(const TK *k, const TV *v, const TSlot *slotMapping, TKC *kCache,
         TVC *vCache, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
         int64_t numPages, int64_t t0, int64_t t1, char *lds) {
  (void)lds;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t slot = int64_t(slotMapping[t]);
    if (slot < 0 ||
        !writableIndex(slotMapping + t, numPages * P, LOOM_META_SLOT))
      continue;
    const int64_t page = slot / P, inPage = slot % P;
    detail::copyRow<kThreads>(k + t * Hkv * D,
                              kCache + (page * P + inPage) * Hkv * D, Hkv * D);
    detail::copyRow<kThreads>(
        v + t * Hkv * Dv, vCache + (page * P + inPage) * Hkv * Dv, Hkv * Dv);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// gqa_decode: split-KV, two phases, N = maxBatch * Hkv * S split tasks
// mapped to work at run time as the host's (kernels/common/GqaSplits.h).
// Workspace (float), as the host's (group = Hq / Hkv):
//   o partials   [N * group][Dv]   at workspace + 0 (task n: rows n*group..)
//   lse partials [N * group]       at workspace + N * group * Dv
// Each partial o is normalised by its own softmax denominator; its lse is
// the natural-log log-sum-exp of its scaled scores (-inf if empty).
//
// Fast path (D == Dv in {64, 128, 256}, 16-byte aligned, bf16/f16/float
// rows): a "row group" of L = D / 8 lanes holds one K/V row, 8 elements per
// lane (16-byte loads for 16-bit types); a wave holds 64 / L row groups and
// each row group walks its own strided share of the split's tokens, 4
// tokens per step (their page ids loaded a step ahead, so the K/V loads of
// a step never wait on a page-id load). Every row group keeps, for each of
// the (up to 8) query heads of the KV group, an online softmax in base 2:
// m, l and acc[8] for its 8 dims. Scores: per-lane 8-element dot, summed
// over the row group by DPP. At the end the row groups' states meet in LDS
// and one thread per (head, dim) merges them in a fixed order.
//===----------------------------------------------------------------------===//

/// LDS of the fast split path for head dim D and `group` query heads per
/// KV head (states of every row group of the workgroup: m, l, acc[D]).
template <int kThreads>
__host__ __device__ constexpr int64_t gqaSplitLdsBytes(int64_t D,
                                                       int64_t group) {
  // Row groups of D / 8 lanes; head slots per row group as instantiated
  // (1, 2, 4 or 8: the group size rounded up, at most 8 per pass).
  const int64_t groups = D >= 8 ? kThreads / (D / 8) : 0;
  const int64_t slots = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
  return 4 * groups * slots * (D + 2);
}

namespace detail {

/// Tokens per row group per step: 4 (2 with 8 heads, for registers).
template <int kG> constexpr int kGqaUnroll = kG >= 8 ? 2 : 4;

/// The query heads of one split, pre-offset: query rows of the group's
/// heads, K/V of KV head hk (element offset of token row `row` is
/// row * rowStride), the split's output rows and lse slots of those heads.
/// Token numbers and page ids fit in 32 bits. The heads are processed in
/// batches of kG (the group size rounded up to 1, 2, 4 or 8).
template <typename TQ, typename TK, typename TV, typename TInd>
struct GqaFastArgs {
  const TQ *q;              ///< q[b, h0, :], heads D apart
  const TK *k;              ///< kCache + hk * D
  const TV *v;              ///< vCache + hk * D
  CheckedPages<TInd> pages; ///< this request's page ids, checked as read
  float *out;        ///< workspace + (task's first row) * D, heads D apart
  float *lse;        ///< lse partials + task's first row, heads 1 apart
  int64_t rowStride; ///< Hkv * D elements per token row
  int D, P, tBegin, tEnd;
  int group;    ///< query heads of the KV group
  float scale2; ///< smScale * log2(e)
};

template <int kThreads, int kL, int kG, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFastBatch(const GqaFastArgs<TQ, TK, TV, TInd> &a, int h0, int nh,
                  char *lds) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  constexpr int kRowsPerWave = am::kWaveSize / kL;
  constexpr int kGroups = kWaves * kRowsPerWave; // row groups per workgroup
  constexpr int kU = kGqaUnroll<kG>;
  const int lane = am::laneId(), wave = am::waveId();
  const int sub = lane % kL;                      // lane in its row group
  const int rg = wave * kRowsPerWave + lane / kL; // row group id
  const int D = a.D, P = a.P;
  const int d0 = sub * 8; // this lane's 8 dims

  // Query chunks of the batch's heads (zeros past nh).
  float qv[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    if (h < nh) {
      am::load8(a.q + (h0 + h) * D + d0, qv[h]);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        qv[h][e] = 0.f;
    }
  }
  float m[kG], l[kG], acc[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    m[h] = am::kNegInf;
    l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[h][e] = 0.f;
  }

  // Row group rg takes tokens tBegin + rg + kGroups * j (j < perGroup), kU
  // per step: step st covers j = st * kU + u. The step count is
  // workgroup-uniform, so every lane runs every step (the DPP reductions
  // need their whole row group) and invalid slots are masked.
  const int len = a.tEnd - a.tBegin;
  const int perGroup = len > rg ? (len - rg + kGroups - 1) / kGroups : 0;
  const int steps = (len + kGroups * kU - 1) / (kGroups * kU);
  int page[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int t = a.tBegin + rg + kGroups * u;
    page[u] = u < perGroup ? int(a.pages[t / P]) : 0;
  }
  for (int st = 0; st < steps; ++st) {
    float kv[kU][8], vv[kU][8];
    bool valid[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int j = st * kU + u;
      const int t = a.tBegin + rg + kGroups * j;
      valid[u] = j < perGroup;
      if (valid[u]) {
        const int64_t row = int64_t(page[u]) * P + t % P;
        am::load8(a.k + row * a.rowStride + d0, kv[u]);
        am::load8(a.v + row * a.rowStride + d0, vv[u]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          kv[u][e] = vv[u][e] = 0.f;
      }
    }
    // Page ids of the next step, issued after this step's K/V loads, so
    // waiting for the K/V never waits for them.
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int j = (st + 1) * kU + u;
      const int t = a.tBegin + rg + kGroups * j;
      page[u] = j < perGroup ? int(a.pages[t / P]) : 0;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          dot += qv[h][e] * kv[u][e];
        const float s2 = am::groupReduce<kL>(dot, am::SumOp{}) * a.scale2;
        // An invalid slot leaves the state as it is (alpha = 1, p = 0).
        const float mNew = valid[u] ? __builtin_fmaxf(m[h], s2) : m[h];
        const float alpha = valid[u] ? am::rescale2(m[h], mNew) : 1.f;
        const float p = valid[u] ? am::fastExp2(s2 - mNew) : 0.f;
        m[h] = mNew;
        l[h] = l[h] * alpha + p;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[h][e] = acc[h][e] * alpha + p * vv[u][e];
      }
    }
  }

  // States to LDS: [rg][h] {m, l, acc[D]} (stride D + 2 floats).
  float *states = reinterpret_cast<float *>(lds);
  const int stride = D + 2;
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    float *mine = states + (rg * kG + h) * stride;
    if (sub == 0) {
      mine[0] = m[h];
      mine[1] = l[h];
    }
#pragma unroll
    for (int e = 0; e < 8; ++e)
      mine[2 + d0 + e] = acc[h][e];
  }
  am::syncThreads();
  // Merge: a thread per (head, dim), row groups in order 0..kGroups-1.
  for (int e = int(am::threadId()); e < nh * D; e += kThreads) {
    const int h = e / D, d = e % D;
    float mx = am::kNegInf;
    for (int g = 0; g < kGroups; ++g)
      mx = __builtin_fmaxf(mx, states[(g * kG + h) * stride]);
    if (mx == am::kNegInf) { // no token in this split: o = 0, lse = -inf
      a.out[(h0 + h) * D + d] = 0.f;
      if (d == 0)
        a.lse[h0 + h] = am::kNegInf;
      continue;
    }
    float L = 0.f, O = 0.f;
    for (int g = 0; g < kGroups; ++g) {
      const float *sg = states + (g * kG + h) * stride;
      const float w = am::rescale2(sg[0], mx);
      L += sg[1] * w;
      O += sg[2 + d] * w;
    }
    a.out[(h0 + h) * D + d] = O / L;
    if (d == 0)
      a.lse[h0 + h] = (mx + am::fastLog2(L)) * am::kLn2; // natural log
  }
  am::syncThreads(); // the states are rewritten by the next head batch
}

/// All heads of the split, in batches of kG.
template <int kThreads, int kL, int kG, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFast(const GqaFastArgs<TQ, TK, TV, TInd> &a, char *lds) {
  for (int h0 = 0; h0 < a.group; h0 += kG)
    gqaSplitFastBatch<kThreads, kL, kG>(
        a, h0, a.group - h0 < kG ? a.group - h0 : kG, lds);
}

template <int kThreads, int kL, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFastGroup(const GqaFastArgs<TQ, TK, TV, TInd> &a, char *lds) {
  if (a.group <= 1)
    gqaSplitFast<kThreads, kL, 1>(a, lds);
  else if (a.group <= 2)
    gqaSplitFast<kThreads, kL, 2>(a, lds);
  else if (a.group <= 4)
    gqaSplitFast<kThreads, kL, 4>(a, lds);
  else
    gqaSplitFast<kThreads, kL, 8>(a, lds);
}

/// CheckedPages::report, forced inline: the compiler left the member
/// function out of line, and a call brings the stack ABI and scratch.
template <typename TInd>
__device__ __forceinline__ void
reportPages(const CheckedPages<TInd> &pages, int64_t from, int64_t to) {
  if (kCheckMeta && pages.bad)
    reportBadPage(pages.ids, from, to, pages.numPages);
}

/// Plain split (any D, Dv, types): a wave per query head, lanes over dims,
/// tokens in order; the running output lives in the head's own workspace
/// row (each element owned by one lane), as in the host body.
template <int kThreads, typename TQ, typename TK, typename TV, typename TInd>
__device__ __forceinline__ void
gqaSplitPlain(const TQ *q, const TK *kCache, const TV *vCache,
              const CheckedPages<TInd> &pages, float *workspace,
              float *lsePart, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
              int64_t P, float smScale, int64_t b, int64_t hk, int64_t slot0,
              int64_t tBegin, int64_t tEnd) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int lane = am::laneId();
  const int64_t group = Hq / Hkv;
  for (int64_t h = hk * group + am::waveId(); h < (hk + 1) * group;
       h += kWaves) {
    const int64_t slotIdx = slot0 + h - hk * group;
    float *acc = workspace + slotIdx * Dv;
    const TQ *qh = q + (b * Hq + h) * D;
    for (int64_t d = lane; d < Dv; d += 64)
      acc[d] = 0.f;
    float m = am::kNegInf, l = 0.f;
    for (int64_t t = tBegin; t < tEnd; ++t) {
      const int64_t row = (pages[t / P] * P + t % P) * Hkv + hk;
      float part = 0.f;
      for (int64_t d = lane; d < D; d += 64)
        part += am::ldF(qh, d) * am::ldF(kCache, row * D + d);
      const float score = am::waveSum(part) * smScale;
      const float mNew = __builtin_fmaxf(m, score);
      const float c = m == am::kNegInf ? 0.f : am::expAcc(m - mNew);
      const float p = am::expAcc(score - mNew);
      l = l * c + p;
      m = mNew;
      for (int64_t d = lane; d < Dv; d += 64)
        acc[d] = acc[d] * c + p * am::ldF(vCache, row * Dv + d);
    }
    if (tEnd > tBegin) {
      const float inv = 1.0f / l;
      for (int64_t d = lane; d < Dv; d += 64)
        acc[d] *= inv;
      if (lane == 0)
        lsePart[slotIdx] = m + am::logAcc(l);
    } else if (lane == 0) {
      lsePart[slotIdx] = am::kNegInf;
    }
  }
}

} // namespace detail

/// Floats of gqa_decode workspace; D is the value head dim (Dv).
__host__ __device__ inline int64_t
gqaWorkspaceFloats(int64_t maxBatch, int64_t S, int64_t Hq, int64_t D) {
  return maxBatch * S * Hq * (D + 1);
}

/// Phase 0, split task n = (b * Hkv + hk) * S + s of N = maxBatch * Hkv * S
/// (the host body's mapping, kernels/common/GqaSplits.h): the query heads of
/// the KV head gqaSplitTask picks attend to its token range of its request
/// (token t in page kvIndices[kvIndptr[r] + t/P], slot t % P) and write
/// workspace rows n * group onwards. Tasks past the batch's share do nothing.
/// Every request has a split task, which checks its meta values
/// (MetaGuard.h: `numIndices` entries of kv_indices, page ids below
/// `numPages`); a refused request reads no token.
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen>
__device__ __forceinline__ int32_t gqaDecodeSplit(
    const TQ *q, const TK *kCache, const TV *vCache, const TPtr *kvIndptr,
    const TInd *kvIndices, const TLen *kvLens, float *workspace, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
    int64_t numPages, int64_t numIndices, int64_t S, float smScale, int64_t b,
    int64_t hk, int64_t s, char *lds) {
  const int64_t numTasks = maxBatch * Hkv * S, n = (b * Hkv + hk) * S + s;
  // Every thread computes the same mapping: the branches stay block-uniform.
  const GqaSplitTask task = gqaCheckedSplitTask(
      kvIndptr, kvLens, batch, Hkv, numTasks, n, numIndices, P);
  if (!task.active)
    return am::kBodyOk;
  b = task.b;
  hk = task.hk;
  const int64_t tBegin = task.tBegin, tEnd = task.tEnd;
  const CheckedPages<TInd> pages{kvIndices + task.first, numPages};
  // The ids the split reads, those of its tokens: a refused one reads as
  // page 0 (a select in the token loop) and is recorded by report() at the
  // end (MetaGuard.h).
  const int64_t idFrom = tBegin / P;
  const int64_t idTo = tEnd > tBegin ? (tEnd - 1) / P + 1 : idFrom;
  const int64_t group = Hq / Hkv;
  const int64_t slot0 = n * group;
  float *lsePart = workspace + numTasks * group * Dv;
  const bool fastShape =
      D == Dv && (D == 64 || D == 128 || D == 256) && am::isAligned16(q) &&
      am::isAligned16(kCache) && am::isAligned16(vCache) &&
      am::dynamicLdsBytes() >= gqaSplitLdsBytes<kThreads>(D, group);
  if (fastShape) {
    const detail::GqaFastArgs<TQ, TK, TV, TInd> a{
        q + (b * Hq + hk * group) * D,
        kCache + hk * D,
        vCache + hk * D,
        pages,
        workspace + slot0 * D,
        lsePart + slot0,
        Hkv * D,
        int(D),
        int(P),
        int(tBegin),
        int(tEnd),
        int(group),
        smScale * am::kLog2e};
    if (D == 64)
      detail::gqaSplitFastGroup<kThreads, 8>(a, lds);
    else if (D == 128)
      detail::gqaSplitFastGroup<kThreads, 16>(a, lds);
    else
      detail::gqaSplitFastGroup<kThreads, 32>(a, lds);
    detail::reportPages(a.pages, idFrom, idTo); // this thread's ids: a's
    return am::kBodyOk;
  }
  detail::gqaSplitPlain<kThreads>(q, kCache, vCache, pages, workspace, lsePart,
                                  Hq, Hkv, D, Dv, P, smScale, b, hk, slot0,
                                  tBegin, tEnd);
  detail::reportPages(pages, idFrom, idTo);
  return am::kBodyOk;
}

/// Phase 1, task (b, hk): o[b, h] = sum_i w_i o_i / sum_i w_i with
/// w_i = exp(lse_i - max lse) over the pair's split tasks (gqaPairTasks), a
/// thread per (head, dim), splits in order (the host's arithmetic). A
/// request with no tokens gets o = 0.
template <int kThreads, typename TO, typename TLen>
__device__ __forceinline__ int32_t gqaDecodeMerge(
    const float *workspace, const TLen *kvLens, TO *o, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t Dv, int64_t S,
    int64_t b, int64_t hk, char *lds) {
  (void)lds;
  if (b >= batch)
    return am::kBodyOk;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  const GqaPairTasks pair = gqaPairTasks(kvLens, batch, Hkv, numTasks, b, hk);
  const float *lsePart = workspace + numTasks * group * Dv;
  for (int64_t e = am::threadId(); e < group * Dv; e += kThreads) {
    const int64_t j = e / Dv, d = e % Dv;
    float mx = am::kNegInf;
    for (int64_t i = 0; i < pair.count; ++i)
      mx = __builtin_fmaxf(mx, lsePart[(pair.first + i) * group + j]);
    TO *oh = o + (b * Hq + hk * group + j) * Dv;
    if (mx == am::kNegInf) {
      am::stF(oh, d, 0.f);
      continue;
    }
    float wsum = 0.f;
    for (int64_t i = 0; i < pair.count; ++i)
      wsum += am::expAcc(lsePart[(pair.first + i) * group + j] - mx);
    float acc = 0.f;
    for (int64_t i = 0; i < pair.count; ++i) {
      const int64_t slotIdx = (pair.first + i) * group + j;
      acc += am::expAcc(lsePart[slotIdx] - mx) * workspace[slotIdx * Dv + d];
    }
    am::stF(oh, d, acc / wsum);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// Elementwise: task = element range [e0, e1) of the flattened buffers.
//===----------------------------------------------------------------------===//

namespace detail {
/// y[e] = f(a[e], b[e]) for e in [e0, e1): 8-element vectors over the
/// 8-aligned middle when all three bases allow it, scalars elsewhere. Each
/// element is read and written by one thread, so y may alias a or b.
template <int kThreads, typename TA, typename TB, typename TY, typename F>
__device__ __forceinline__ void elementwise2(const TA *a, const TB *b, TY *y,
                                             int64_t e0, int64_t e1, F f) {
  const int tid = int(am::threadId());
  int64_t v0 = e1, v1 = e1; // the vectorised part [v0, v1)
  if (am::isAligned16(a) && am::isAligned16(b) && am::isAligned16(y)) {
    v0 = imin(roundUp(e0, 8), e1);
    v1 = imax(v0, e1 & ~int64_t(7));
  }
  for (int64_t e = v0 + int64_t(tid) * 8; e < v1; e += kThreads * 8) {
    float va[8], vb[8];
    am::load8(a + e, va);
    am::load8(b + e, vb);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      va[i] = f(va[i], vb[i]);
    am::store8(y + e, va);
  }
  for (int64_t e = e0 + tid; e < v0; e += kThreads)
    am::stF(y, e, f(am::ldF(a, e), am::ldF(b, e)));
  for (int64_t e = v1 + tid; e < e1; e += kThreads)
    am::stF(y, e, f(am::ldF(a, e), am::ldF(b, e)));
}
} // namespace detail

/// y = silu(gate) * up = gate / (1 + exp(-gate)) * up.
template <int kThreads, typename TG, typename TU, typename TY>
__device__ __forceinline__ int32_t siluMul(const TG *gate, const TU *up, TY *y,
                                           int64_t e0, int64_t e1, char *lds) {
  (void)lds;
  detail::elementwise2<kThreads>(gate, up, y, e0, e1, [](float g, float u) {
    return g / (1.0f + am::expAcc(-g)) * u;
  });
  return am::kBodyOk;
}

/// y = a + b.
template <int kThreads, typename TA, typename TB, typename TY>
__device__ __forceinline__ int32_t add(const TA *a, const TB *b, TY *y,
                                       int64_t e0, int64_t e1, char *lds) {
  (void)lds;
  detail::elementwise2<kThreads>(a, b, y, e0, e1,
                                 [](float u, float v) { return u + v; });
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// embedding / argmax: task = rows [b0, b1).
//===----------------------------------------------------------------------===//

/// y[b] = table[ids[b]]; an id outside [0, vocab) is not read: its row is
/// zeroed and the body returns false (every thread reads every id, so the
/// result is workgroup-uniform).
template <int kThreads, typename TT, typename TId, typename TY>
__device__ __forceinline__ bool embedding(const TT *table, const TId *ids,
                                          TY *y, int64_t vocab, int64_t D,
                                          int64_t b0, int64_t b1, char *lds) {
  (void)lds;
  bool ok = true;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t id = int64_t(ids[b]);
    if (id < 0 || id >= vocab) {
      recordMetaFault(ids + b, id, LOOM_META_TOKEN_ID);
      ok = false;
      for (int64_t i = am::threadId(); i < D; i += kThreads)
        am::stF(y, b * D + i, 0.f);
      continue;
    }
    detail::copyRow<kThreads>(table + id * D, y + b * D, D);
  }
  return ok;
}

namespace detail {
/// True when (va, ia) comes before (vb, ib) in the host's argmax order: a
/// NaN beats any number, larger beats smaller, and among equals (or NaNs)
/// the lower index wins.
__device__ __forceinline__ bool argBefore(float va, int64_t ia, float vb,
                                          int64_t ib) {
  const bool na = am::isNan(va), nb = am::isNan(vb);
  if (na != nb)
    return na;
  if (!na && va != vb)
    return va > vb;
  return ia < ib;
}
} // namespace detail

/// indices[b] = argmax_v x[b, v] (lowest index among equal maxima; the
/// first NaN if the row has one). A workgroup per row: strided scans, then
/// a wave reduction of (value, index) pairs and one across waves in LDS.
template <int kThreads, typename TX, typename TIdx>
__device__ __forceinline__ int32_t argmaxRows(const TX *x, TIdx *indices,
                                              int64_t V, int64_t b0, int64_t b1,
                                              char *lds) {
  (void)lds;
  constexpr int kWaves = kThreads / am::kWaveSize;
  __shared__ float sVal[kWaves];
  __shared__ int64_t sIdx[kWaves];
  const int tid = int(am::threadId()), lane = am::laneId();
  for (int64_t b = b0; b < b1; ++b) {
    const TX *row = x + b * V;
    float best = am::kNegInf;
    int64_t bestIdx = V; // "none": loses to every real element
    for (int64_t v = tid; v < V; v += kThreads) {
      const float val = am::ldF(row, v);
      if (bestIdx == V || detail::argBefore(val, v, best, bestIdx)) {
        best = val;
        bestIdx = v;
      }
    }
#pragma unroll
    for (int off = 1; off < 64; off *= 2) {
      const float ov = am::shuffle(best, lane ^ off);
      const int lo =
          am::shuffle(int(uint64_t(bestIdx) & 0xffffffffu), lane ^ off);
      const int hi = am::shuffle(int(uint64_t(bestIdx) >> 32), lane ^ off);
      const int64_t oi = int64_t((uint64_t(uint32_t(hi)) << 32) | uint32_t(lo));
      if (oi != V &&
          (bestIdx == V || detail::argBefore(ov, oi, best, bestIdx))) {
        best = ov;
        bestIdx = oi;
      }
    }
    if (lane == 0) {
      sVal[am::waveId()] = best;
      sIdx[am::waveId()] = bestIdx;
    }
    am::syncThreads();
    if (tid == 0) {
      float bv = sVal[0];
      int64_t bi = sIdx[0];
      for (int w = 1; w < kWaves; ++w)
        if (sIdx[w] != V &&
            (bi == V || detail::argBefore(sVal[w], sIdx[w], bv, bi))) {
          bv = sVal[w];
          bi = sIdx[w];
        }
      indices[b] = TIdx(bi);
    }
    am::syncThreads(); // sVal / sIdx are rewritten for the next row
  }
  return am::kBodyOk;
}

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H
