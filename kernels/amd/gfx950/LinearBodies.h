//===- LinearBodies.h - gfx950 task bodies for linear --------- -*- C++ -*-===//
//
// linearTile, linearPartial and linearReduce of DecoderBodies.h (which
// includes this file; its header says what every decoder body shares and
// the LDS each takes): MFMA for bf16 or f16 x and weights, a wave per
// output column otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_LINEARBODIES_H
#define LOOM_KERNELS_AMD_GFX950_LINEARBODIES_H

#include "kernels/amd/gfx950/DecoderCommon.h"
#include "kernels/amd/gfx950/LinearNorm.h"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace gfx950 {

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
/// kStream: non-temporal loads (weights, read once). Loaded chunks go
/// through `norm` (LinearNorm.h).
template <bool kStream, typename T, typename Norm>
__device__ __forceinline__ void loadChunks(const T *row, int kb, int g, int kLo,
                                           int kHi, bool edge, const Norm &norm,
                                           am::u32x4 (&out)[4]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int k = kb + 32 * g + 8 * s;
    am::u32x4 v = {0u, 0u, 0u, 0u};
    if (row && (!edge || (k < kHi && k + 8 > kLo))) {
      v = kStream ? am::ldStream16(row + k) : am::ldGlobal16(row + k);
      if (edge)
        v = maskChunk(v, k, kLo, kHi);
      v = norm.chunk(v, k);
    }
    out[s] = v;
  }
}

/// acc[mt] (16 n x 16 m tile, D layout) += W[n-tile] x^T over k-blocks
/// [kbBegin, kbEnd) (block b starts at kStart + 128 b), for the m-tiles at
/// mBase and mBase + 16 (when present). wRow / xRow0 / xRow1: this lane's
/// weight row and x rows, null where the row does not exist. The next
/// block's loads are issued before the current block's MFMAs.
template <typename T, typename Norm>
__device__ __forceinline__ void
linearWaveMfma(const T *wRow, const T *xRow0, const T *xRow1, bool two,
               int kStart, int kLo, int kHi, int kbBegin, int kbEnd,
               const Norm &norm, am::f32x4 (&acc)[2]) {
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
    loadChunks<true>(wRow, kb, g, kLo, kHi, edge, NoNorm{}, W);
    loadChunks<false>(xRow0, kb, g, kLo, kHi, edge, norm, X0);
    loadChunks<false>(two ? xRow1 : nullptr, kb, g, kLo, kHi, edge, norm, X1);
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
template <int kThreads, typename T, typename Norm, typename Out>
__device__ __forceinline__ void
linearMfma(const T *x, const T *w, int64_t M, int64_t K, int64_t n0, int64_t n1,
           int64_t k0, int64_t k1, const Norm &norm, const Out &out, char *lds,
           bool ldsOk) {
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
                       kHi, 0, nBlocks, norm, acc);
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
                     kHi, kbBegin, kbEnd, norm, acc);
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
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ __forceinline__ void
linearPlain(const TIn *x, const TW *w, int64_t M, int64_t K, int64_t n0,
            int64_t n1, int64_t k0, int64_t k1, const Norm &norm,
            const Out &out) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int lane = am::laneId();
  for (int64_t n = n0 + am::waveId(); n < n1; n += kWaves) {
    for (int64_t m = 0; m < M; ++m) {
      float part = 0.f;
      for (int64_t k = k0 + lane; k < k1; k += 64)
        part += norm.value(x, m * K + k, k) * am::ldF(w, n * K + k);
      const float sum = am::waveSum(part);
      if (lane == 0)
        out(m, n, sum);
    }
  }
}

/// The MFMA and plain paths over rows [0, M) of x.
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ __forceinline__ void
linearRows(const TIn *x, const TW *w, int64_t M, int64_t K, int64_t n0,
           int64_t n1, int64_t k0, int64_t k1, const Norm &norm,
           const Out &out, char *lds) {
  if constexpr (std::is_same_v<TIn, TW> && am::kIs16Bit<TIn>) {
    if (K % 8 == 0 && am::isAligned16(x) && am::isAligned16(w)) {
      const bool ldsOk = am::dynamicLdsBytes() >= linearLdsBytes<kThreads>();
      linearMfma<kThreads>(x, w, M, K, n0, n1, k0, k1, norm, out, lds, ldsOk);
      return;
    }
  }
  linearPlain<kThreads>(x, w, M, K, n0, n1, k0, k1, norm, out);
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M, n in [n0, n1), x's rows
/// through `norm` (LinearNorm.h).
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ __forceinline__ void
linearAny(const TIn *x, const TW *w, int64_t M, int64_t K, int64_t n0,
          int64_t n1, int64_t k0, int64_t k1, const Norm &norm,
          const Out &out, char *lds) {
  if (n0 >= n1 || M <= 0)
    return;
  if constexpr (!Norm::kOn) {
    linearRows<kThreads>(x, w, M, K, n0, n1, k0, k1, norm, out, lds);
  } else {
    // Blocks of rows, each block's sums of squares first.
    for (int64_t mb = 0; mb < M; mb += kNormRows) {
      const int64_t rows = imin(kNormRows, M - mb);
      norm.template sumRows<kThreads>(x + mb * K, rows);
      linearRows<kThreads>(x + mb * K, w, rows, K, n0, n1, k0, k1, norm,
                           [&](int64_t m, int64_t n, float v) {
                             out(mb + m, n, norm.scale(int(m)) * v);
                           },
                           lds);
    }
  }
}

} // namespace detail

/// Output-column tile: y[m, n] = residual[m, n] + x[m, :] . w[n, :] for all
/// m < M (runtime rows) and n in [n0, n1). `residual` may be null, or alias
/// `y` (each element is read just before the same lane overwrites it).
template <int kThreads, typename TIn, typename TW, typename TOut>
__device__ __forceinline__ int32_t linearTile(
    const TIn *x, const TW *w, const detail::NoDeduceT<TOut> *residual, TOut *y,
    int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, 0, K, detail::NoNorm{},
                              detail::LinearStore<TOut>{residual, y, N}, lds);
  return am::kBodyOk;
}

/// linearTile of x's rows RMS-normalised with the scale `norm` [K] and eps
/// (a loom.linear with `norm`): y = residual + rmsnorm(x) . w^T.
template <int kThreads, typename TIn, typename TW, typename TOut>
__device__ __forceinline__ int32_t linearNormTile(
    const TIn *x, const detail::NoDeduceT<TIn> *norm, float eps, const TW *w,
    const detail::NoDeduceT<TOut> *residual, TOut *y, int64_t M, int64_t K,
    int64_t N, int64_t n0, int64_t n1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, 0, K,
                              detail::RowNorm<TIn>{norm, eps, K},
                              detail::LinearStore<TOut>{residual, y, N}, lds);
  return am::kBodyOk;
}

/// Split-K phase 0: the fp32 partial product over K range [k0, k1) for
/// columns [n0, n1) and all m < M; element (m, n) is partial[m * N + n].
template <int kThreads, typename TIn, typename TW>
__device__ __forceinline__ int32_t linearPartial(
    const TIn *x, const TW *w, float *partial, int64_t M, int64_t K, int64_t N,
    int64_t n0, int64_t n1, int64_t k0, int64_t k1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, k0, k1, detail::NoNorm{},
                              detail::PartialStore{partial, N}, lds);
  return am::kBodyOk;
}

/// linearPartial of the normalised rows (linearNormTile); each split's
/// sums carry their row's 1/rms, taken over all of K.
template <int kThreads, typename TIn, typename TW>
__device__ __forceinline__ int32_t linearNormPartial(
    const TIn *x, const detail::NoDeduceT<TIn> *norm, float eps, const TW *w,
    float *partial, int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1,
    int64_t k0, int64_t k1, char *lds) {
  detail::linearAny<kThreads>(x, w, M, K, n0, n1, k0, k1,
                              detail::RowNorm<TIn>{norm, eps, K},
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

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_LINEARBODIES_H
