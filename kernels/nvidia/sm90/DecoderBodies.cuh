//===- DecoderBodies.cuh - Device task bodies of the decoder ops -*- CUDA
//-*-===//
//
// Block-cooperative versions of kernels/host/DecoderBodies.h for sm_90a (they
// also build for sm_100a). Each body takes the host body's parameters, in the
// same order, plus the block's dynamic shared memory `smem` last, and is
// called by all kThreads threads of the block (blockDim.x == kThreads, a
// multiple of 32). Tile semantics, aliasing rules and workspace layouts are
// the host bodies'; the same generated task table drives both.
//
// Every body returns int32_t 0 (a status code of Numerics.cuh; none of these
// fails), except embedding, which returns the host's bool (false: an id was
// out of range). Control flow around barriers depends only on block-uniform
// values.
//
// Speed: the memory-bound bodies move 16-byte vectors (8 bf16) coalesced
// across the warp; linear uses mma.sync tensor cores with x as the narrow
// operand, so one pass over a weight tile serves up to 32 rows of x. Each
// fast path checks its preconditions (types, alignment, shapes) at run time
// and falls back to a plain loop with the same results otherwise.
//
// Dynamic shared memory per body (kThreads = 256), see the *SmemBytes
// functions: linearTile/linearPartial 32 KB (up to 32 rows of x stream the
// weights through a ring in whatever the launch gives, at least
// linearRingSmemBytes(3, rows): LinearRing.cuh), rope 2 KB, gqaDecodeSplit
// 33 KB (D = 128) / 66 KB (D = 256), the others none (rmsnormRows and
// argmaxRows use 32 B / 96 B of static shared memory). Each body checks
// what the launch gave (%dynamic_smem_size) and with less takes a slower
// path that needs none, with the same results.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH

#include "kernels/common/GqaSplits.h"
#include "kernels/common/Rope.h"
#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/Numerics.cuh"
#include "kernels/nvidia/sm90/LinearRing.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

namespace nv = ::loom::nvidia;
using nv::ceilDiv;
using nv::imax;
using nv::imin;
using nv::roundUp;

namespace detail {
template <typename T> struct NoDeduce { using type = T; };
/// Keeps a parameter out of deduction, so `nullptr` works for an optional
/// buffer whose type follows another argument (as in the host bodies).
template <typename T> using NoDeduceT = typename NoDeduce<T>::type;

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

using nv::laneId;
using nv::warpId;

/// dst[0..n) = src[0..n) converted; 16-byte moves when both allow it.
template <int kThreads, typename TS, typename TD>
__device__ void copyRow(const TS *src, TD *dst, int64_t n) {
  if constexpr (std::is_same_v<TS, TD>) {
    const int64_t bytes = n * int64_t(sizeof(TS));
    if (bytes % 16 == 0 && nv::isAligned16(src) && nv::isAligned16(dst)) {
      const uint4 *s = reinterpret_cast<const uint4 *>(src);
      uint4 *d = reinterpret_cast<uint4 *>(dst);
      for (int64_t i = threadIdx.x; i < bytes / 16; i += kThreads)
        d[i] = s[i];
      return;
    }
  } else {
    if (n % 8 == 0 && nv::isAligned16(src) && nv::isAligned16(dst)) {
      for (int64_t i = threadIdx.x * 8; i < n; i += kThreads * 8) {
        float v[8];
        nv::load8(src + i, v);
        nv::store8(dst + i, v);
      }
      return;
    }
  }
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    nv::stF(dst, i, nv::ldF(src, i));
}

template <int kThreads, typename TD>
__device__ void fillRow(TD *dst, int64_t n, float value) {
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    nv::stF(dst, i, value);
}
} // namespace detail

//===----------------------------------------------------------------------===//
// rmsnorm
//===----------------------------------------------------------------------===//

/// None: the block reduction's scratch is static shared memory.
template <int kThreads>
__host__ __device__ constexpr int64_t rmsnormSmemBytes() {
  return 0;
}

namespace detail {
/// Sum of squares of the `stride`-strided share of row xr owned by `idx`.
template <int kStride, typename TX>
__device__ __forceinline__ float rowSumSq(const TX *xr, int64_t D, bool vec,
                                          int idx) {
  float ss = 0.f;
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += kStride * 8) {
      float v[8];
      nv::load8(xr + i, v);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        ss += v[e] * v[e];
    }
  } else {
    for (int64_t i = idx; i < D; i += kStride) {
      float v = nv::ldF(xr, i);
      ss += v * v;
    }
  }
  return ss;
}

/// yr = xr * inv * w over the same share (so y may alias x).
template <int kStride, typename TX, typename TW, typename TY>
__device__ __forceinline__ void rowScale(const TX *xr, const TW *w, TY *yr,
                                         int64_t D, float inv, bool vec,
                                         int idx) {
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += kStride * 8) {
      float v[8], g[8];
      nv::load8(xr + i, v);
      nv::load8(w + i, g);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = v[e] * inv * g[e];
      nv::store8(yr + i, v);
    }
  } else {
    for (int64_t i = idx; i < D; i += kStride)
      nv::stF(yr, i, nv::ldF(xr, i) * inv * nv::ldF(w, i));
  }
}
} // namespace detail

/// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for r in [r0, r1).
/// A warp per row for D <= 1024 (Qwen3's per-head norm), the whole block
/// per row above (hidden states).
template <int kThreads, typename TX, typename TW, typename TY>
__device__ __noinline__ int32_t rmsnormRows(const TX *x, const TW *w, TY *y, int64_t D,
                               float eps, int64_t r0, int64_t r1, char *smem) {
  constexpr int kWarps = kThreads / 32;
  const bool vec = D % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(w) &&
                   nv::isAligned16(y);
  if (D <= 1024) {
    const int lane = detail::laneId();
    for (int64_t r = r0 + detail::warpId(); r < r1; r += kWarps) {
      float ss = nv::warpSum(detail::rowSumSq<32>(x + r * D, D, vec, lane));
      float inv = 1.0f / sqrtf(ss / float(D) + eps);
      detail::rowScale<32>(x + r * D, w, y + r * D, D, inv, vec, lane);
    }
    return nv::kBodyOk;
  }
  __shared__ float scratch[kWarps];
  for (int64_t r = r0; r < r1; ++r) {
    float ss = nv::blockSum<kThreads>(
        detail::rowSumSq<kThreads>(x + r * D, D, vec, threadIdx.x), scratch);
    float inv = 1.0f / sqrtf(ss / float(D) + eps);
    detail::rowScale<kThreads>(x + r * D, w, y + r * D, D, inv, vec,
                               threadIdx.x);
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// linear: y[m, n] (+)= x[m, :] . w[n, :]
//
// Tensor-core path (x and w both bf16 or both f16, K % 8 == 0, 16-byte
// aligned bases). Up to 32 rows of x, with k0 and k1 multiples of 8 and the
// shared memory for it, take the bulk-copy ring of LinearRing.cuh; the
// rest take the register path below. It computes y^T = w . x^T with
// mma.m16n8k16: A = 16 weight rows (output columns), B = 8 rows of x. The
// sum over k does not care which k each fragment slot holds as long as A
// and B agree, so each lane loads 16 contiguous bytes of its weight row and
// of its x row and feeds them to the slots the fragment layout assigns it:
// lane (g, q) of a 64-wide k step reads k = 16q..16q+15, whole 128-byte
// lines per 4 lanes, with no shuffles or shared memory. A warp owns 32
// output columns and up to 32 rows of x (2 x 4 mma tiles, 32 fp32
// accumulators per lane) and keeps the next step's loads in flight while it
// multiplies the current one.
//
// Work split in a tile [n0, n1): when the 32-column pairs divide among the
// warps, each warp takes whole pairs over all of K. Otherwise the pairs' k
// steps, in order, are cut into one equal run per warp (a tile of 48
// columns keeps all 8 warps equally busy, where one K slice per pair left
// half of them with half a pair) and the runs' pieces meet in shared
// memory, added in a fixed order; when their slots do not fit (wide tiles
// with x of more than 8 rows), K is split among the warps of a pair.
// M > 32 takes several passes over the weight tile.
//===----------------------------------------------------------------------===//

/// Partial tiles of a K-split tile: one 32 x 32 float tile per warp. With
/// less, a tile narrower than 32 columns per warp leaves warps idle instead.
template <int kThreads>
__host__ __device__ constexpr int64_t linearSmemBytes() {
  return kThreads / 32 * 32 * 32 * 4;
}

namespace detail {

constexpr int kLinCols = 32;  // output columns per warp (two m16 tiles)
constexpr int kLinRows = 32;  // x rows per pass (four n8 tiles)
constexpr int kLinKStep = 64; // k per warp per step

/// One k step's operands of a lane: w[cg][half][h] is 8 weights of column
/// nBase + 16cg + 8half + g, x[mt][h] 8 values of row mBase + 8mt + g, both
/// at k = k0 + 16q + 8h.
template <int MT> struct LinFrag {
  uint4 w[2][2][2];
  uint4 x[MT][2];
};

/// Zeroes the 16-bit elements of an 8-element chunk starting at k that lie
/// outside [kLo, kHi).
__device__ __forceinline__ uint4 maskChunk(uint4 v, int64_t k, int64_t kLo,
                                           int64_t kHi) {
  uint32_t m[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t e = k + 2 * i;
    m[i] = (e >= kLo && e < kHi ? 0x0000ffffu : 0u) |
           (e + 1 >= kLo && e + 1 < kHi ? 0xffff0000u : 0u);
  }
  return make_uint4(v.x & m[0], v.y & m[1], v.z & m[2], v.w & m[3]);
}

/// acc[cg][mt][e] += sum over k in [ka, kb) ∩ [kLo, kHi) for this warp's
/// 32 x 8MT block: column nBase + 16cg + g (+8 for e >= 2), row
/// mBase + 8mt + 2q + (e & 1). ka, kb are multiples of 8 within the row; x
/// elements outside [kLo, kHi) are zeroed in registers (the weights there
/// are finite row data, so their products vanish). Columns >= nEnd and rows
/// >= M read as zero.
template <int MT, typename T>
__device__ void linearWarpMma(const T *x, const T *w, int64_t K, int64_t M,
                              int64_t mBase, int64_t nBase, int64_t nEnd,
                              int64_t ka, int64_t kb, int64_t kLo, int64_t kHi,
                              float (&acc)[2][MT][4]) {
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
  // Row bases and validity bits instead of 4 + MT live 64-bit pointers:
  // the other rows are at constant multiples of K from these.
  const T *wBase = w + (nBase + g) * K + 16 * q;
  const T *xBase = x + (mBase + g) * K + 16 * q;
  uint32_t wOk = 0, xOk = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r) // rows g, g + 8, g + 16, g + 24
    wOk |= uint32_t(nBase + 8 * r + g < nEnd) << r;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
    xOk |= uint32_t(mBase + 8 * mt + g < M) << mt;
  auto load = [&](int64_t k0, LinFrag<MT> &f) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t k = k0 + 16 * q + 8 * h;
      const bool ok = k < kb;
#pragma unroll
      for (int cg = 0; cg < 2; ++cg)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = 2 * cg + half;
          f.w[cg][half][h] =
              ok && (wOk >> r & 1)
                  ? nv::ldStream16(wBase + (8 * r) * K + k0 + 8 * h)
                  : zero;
        }
      const bool partial = k < kLo || k + 8 > kHi;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        f.x[mt][h] = ok && (xOk >> mt & 1)
                         ? *reinterpret_cast<const uint4 *>(
                               xBase + (8 * mt) * K + k0 + 8 * h)
                         : zero;
        if (partial) // the first or last chunk of an unaligned range
          f.x[mt][h] = maskChunk(f.x[mt][h], k, kLo, kHi);
      }
    }
  };
  auto compute = [&](const LinFrag<MT> &f) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int cg = 0; cg < 2; ++cg)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          nv::mma16816Chunks<T>(acc[cg][mt], f.w[cg][0][h], f.w[cg][1][h],
                                f.x[mt][h]);
  };
  if (ka >= kb)
    return;
  // Two register stages: one k step's loads (4 KB a warp) in flight while
  // another multiplies. A third (LOOM_LINEAR_STAGES=3, tried on the H200)
  // moved no decoder row (bench/results/h200/README.md, 2026-12-02's
  // second run).
  LinFrag<MT> cur, next;
  load(ka, cur);
  for (int64_t k = ka; k < kb; k += kLinKStep) {
    load(k + kLinKStep, next); // all-zero past kb: predicated off
    compute(cur);
    cur = next;
  }
}

/// f(col, row, v) for each accumulator v of this lane in its warp's block
/// of 32 output columns x 8MT rows of x (col, row within the block).
template <int MT, typename F>
__device__ __forceinline__ void forEachAccumulator(const float (&acc)[2][MT][4],
                                                   const F &f) {
  const int lane = laneId(), g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int cg = 0; cg < 2; ++cg)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        f(16 * cg + g + (e >= 2 ? 8 : 0), 8 * mt + 2 * q + (e & 1),
          acc[cg][mt][e]);
}

/// A warp's partial sums into shared memory at tile[col * rowStride + row].
template <int MT>
__device__ __forceinline__ void storeWarpPartial(const float (&acc)[2][MT][4],
                                                 float *tile, int rowStride) {
  forEachAccumulator<MT>(acc, [&](int col, int row, float v) {
    tile[col * rowStride + row] = v;
  });
}

/// Once every warp has stored its partials: out(mBase + row, n0 + col,
/// sum(pair, column in the pair, row)) for the tile's rows x nCols outputs,
/// then a barrier, as the next pass rewrites the partials.
template <int kThreads, typename Out, typename Sum>
__device__ void addPartials(int64_t rows, int64_t nCols, int64_t mBase,
                            int64_t n0, const Out &out, const Sum &sum) {
  __syncthreads();
  for (int64_t idx = threadIdx.x; idx < rows * nCols; idx += kThreads) {
    const int64_t col = idx % nCols, row = idx / nCols;
    out(mBase + row, n0 + col, sum(col / kLinCols, col % kLinCols, row));
  }
  __syncthreads();
}

/// One pass over rows [mBase, mBase + 8MT) of the tile.
/// k in [k0, k1) is covered by the 8-aligned [ka, kb) with masking.
template <int kThreads, int MT, typename T, typename Out>
__device__ void linearMmaPass(const T *x, const T *w, int64_t M, int64_t K,
                              int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                              int64_t mBase, float *part, const Out &out) {
  constexpr int kWarps = kThreads / 32;
  const int warp = warpId();
  const int64_t nCols = n1 - n0, nPairs = ceilDiv(nCols, kLinCols);
  const int64_t ka = k0 / 8 * 8, kb = imax(ka, roundUp(k1, 8));
  // Pairs that do not divide among the warps: the pairs' k steps, in pair
  // order, are cut into kWarps equal runs, one per warp; a run's piece of
  // pair p goes to slot warp + p (a warp's pairs follow the previous warp's,
  // so no two pieces share a slot), and each output adds its pair's pieces
  // in warp order.
  const int64_t steps = ceilDiv(kb - ka, kLinKStep), units = nPairs * steps;
  constexpr int64_t kSlotFloats = kLinCols * 8 * MT;
  const bool evenRuns = part && nPairs % kWarps != 0 && units >= kWarps &&
                        (kWarps + nPairs - 1) * kSlotFloats * 4 <=
                            linearSmemBytes<kThreads>();
  if (evenRuns) {
    auto runStart = [&](int64_t wv) { return wv * units / kWarps; };
    const int64_t u0 = runStart(warp), u1 = runStart(warp + 1);
    for (int64_t p = u0 / steps; p * steps < u1; ++p) {
      const int64_t sA = imax(u0, p * steps) - p * steps;
      const int64_t sB = imin(u1, (p + 1) * steps) - p * steps;
      float acc[2][MT][4] = {};
      linearWarpMma<MT>(x, w, K, M, mBase, n0 + p * kLinCols, n1,
                        ka + sA * kLinKStep, imin(kb, ka + sB * kLinKStep), k0,
                        k1, acc);
      storeWarpPartial<MT>(acc, part + (warp + p) * kSlotFloats, 8 * MT);
    }
    addPartials<kThreads>(imin(M - mBase, 8 * MT), nCols, mBase, n0, out,
                          [&](int64_t p, int64_t c, int64_t row) {
                            float v = 0.f;
                            for (int wv = 0; wv < kWarps; ++wv)
                              if (runStart(wv) < (p + 1) * steps &&
                                  runStart(wv + 1) > p * steps)
                                v += part[(wv + p) * kSlotFloats + c * 8 * MT +
                                          row];
                            return v;
                          });
    return;
  }
  if (nPairs >= kWarps || !part) {
    // Whole K per warp: the epilogue runs from registers.
    for (int64_t pr = warp; pr < nPairs; pr += kWarps) {
      const int64_t nBase = n0 + pr * kLinCols;
      float acc[2][MT][4] = {};
      linearWarpMma<MT>(x, w, K, M, mBase, nBase, n1, ka, kb, k0, k1, acc);
      forEachAccumulator<MT>(acc, [&](int col, int row, float v) {
        if (nBase + col < n1 && mBase + row < M)
          out(mBase + row, nBase + col, v);
      });
    }
    return;
  }
  // Fewer pairs than warps: warp = ks * nPairs + pair takes K slice ks.
  const int64_t kSplit = kWarps / nPairs;
  const int64_t kPer = roundUp(ceilDiv(kb - ka, kSplit), kLinKStep);
  if (warp < nPairs * kSplit) {
    const int64_t pr = warp % nPairs, ks = warp / nPairs;
    const int64_t kA = imin(kb, ka + ks * kPer), kB = imin(kb, kA + kPer);
    float acc[2][MT][4] = {};
    linearWarpMma<MT>(x, w, K, M, mBase, n0 + pr * kLinCols, n1, kA, kB, k0, k1,
                      acc);
    storeWarpPartial<MT>(acc, part + warp * kLinCols * kLinRows, kLinRows);
  }
  addPartials<kThreads>(imin(M - mBase, 8 * MT), nCols, mBase, n0, out,
                        [&](int64_t pr, int64_t c, int64_t row) {
                          float v = 0.f;
                          for (int64_t ks = 0; ks < kSplit; ++ks)
                            v += part[((ks * nPairs + pr) * kLinCols + c) *
                                          kLinRows +
                                      row];
                          return v;
                        });
}

/// Plain path for any types, alignment and K: a warp per output column.
template <int kThreads, typename TIn, typename TW, typename Out>
__device__ void linearGeneric(const TIn *x, const TW *w, int64_t M, int64_t K,
                              int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                              const Out &out) {
  constexpr int kWarps = kThreads / 32;
  const int lane = laneId();
  for (int64_t n = n0 + warpId(); n < n1; n += kWarps) {
    for (int64_t m0 = 0; m0 < M; m0 += 8) {
      float acc[8] = {};
      for (int64_t k = k0 + lane; k < k1; k += 32) {
        const float wv = nv::ldF(w, n * K + k);
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (m0 + j < M)
            acc[j] += nv::ldF(x, (m0 + j) * K + k) * wv;
      }
#pragma unroll
      for (int j = 0; j < 8; ++j)
        acc[j] = nv::warpSum(acc[j]);
      if (lane == 0)
        for (int j = 0; j < 8 && m0 + j < M; ++j)
          out(m0 + j, n, acc[j]);
    }
  }
}

/// Stages of the ring linearBlock streams this tile's weights through; 0:
/// another path.
template <int kThreads, typename TIn, typename TW>
__device__ int64_t linearRingStagesFor(const TIn *x, const TW *w, int64_t M,
                                       int64_t K, int64_t k0, int64_t k1) {
  if constexpr (std::is_same_v<TIn, TW> && kIs16Bit<TIn>)
    return K % 8 == 0 && k0 % 8 == 0 && k1 % 8 == 0 && nv::isAligned16(x) &&
                   nv::isAligned16(w)
               ? linearRingStages<kThreads>(nv::dynamicSmemBytes(), M)
               : 0;
  return 0;
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M, n in [n0, n1). preloaded:
/// linearPreload ran with the same arguments since the last body.
template <int kThreads, typename TIn, typename TW, typename Out>
__device__ void linearBlock(const TIn *x, const TW *w, int64_t M, int64_t K,
                            int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                            char *smem, bool preloaded, const Out &out) {
  if (n0 >= n1 || M <= 0)
    return;
  if constexpr (std::is_same_v<TIn, TW> && kIs16Bit<TIn>) {
    if (K % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(w)) {
      const int64_t ringStages =
          linearRingStagesFor<kThreads>(x, w, M, K, k0, k1);
      if (ringStages > 0) {
        linearRing<kThreads>(x, w, M, K, n0, n1, k0, k1, ringStages, smem,
                             preloaded, out);
        return;
      }
      float *part = nv::dynamicSmemBytes() >= linearSmemBytes<kThreads>()
                        ? reinterpret_cast<float *>(smem)
                        : nullptr;
      for (int64_t mBase = 0; mBase < M; mBase += kLinRows) {
        switch (ceilDiv(imin(M - mBase, kLinRows), 8)) {
        case 1:
          linearMmaPass<kThreads, 1>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     out);
          break;
        case 2:
          linearMmaPass<kThreads, 2>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     out);
          break;
        case 3:
          linearMmaPass<kThreads, 3>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     out);
          break;
        default:
          linearMmaPass<kThreads, 4>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     out);
          break;
        }
      }
      return;
    }
  }
  linearGeneric<kThreads>(x, w, M, K, n0, n1, k0, k1, out);
}

/// Stores y = residual + v (residual optional, may alias y).
template <typename TOut> struct LinearStore {
  const TOut *residual;
  TOut *y;
  int64_t N;
  __device__ void operator()(int64_t m, int64_t n, float v) const {
    const int64_t idx = m * N + n;
    const float base = residual ? nv::ldF(residual, idx) : 0.f;
    nv::stF(y, idx, base + v);
  }
};

struct PartialStore {
  float *partial;
  int64_t N;
  __device__ void operator()(int64_t m, int64_t n, float v) const {
    partial[m * N + n] = v;
  }
};
} // namespace detail

/// Once per launch, every thread, before the first linearTile /
/// linearPartial: the weight ring's barriers (static shared memory).
using detail::linearRingInit;

/// The loads of linearTile / linearPartial that need none of the task's
/// inputs (the first stages of the weight ring), issued while the engine
/// still waits for them; true when it issued any, and then the body must
/// be called next with the same arguments and preloaded = true. Every
/// thread of the block calls it.
template <int kThreads, typename TIn, typename TW>
__device__ __noinline__ bool linearPreload(const TIn *x, const TW *w,
                                           int64_t M, int64_t K, int64_t n0,
                                           int64_t n1, int64_t k0, int64_t k1,
                                           char *smem) {
  if (n0 >= n1 || M <= 0)
    return false;
  const int64_t stages =
      detail::linearRingStagesFor<kThreads>(x, w, M, K, k0, k1);
  if (stages == 0)
    return false;
  detail::linearRingStart<kThreads>(w, M, K, n0, n1, k0, k1, stages, smem);
  return true;
}

/// Output-column tile: y[m, n] = residual[m, n] + x[m, :] . w[n, :] for
/// m < M, n in [n0, n1). `residual` may be null or alias `y`. preloaded:
/// linearPreload(x, w, M, K, n0, n1, 0, K, smem) returned true.
template <int kThreads, typename TIn, typename TW, typename TOut>
__device__ __noinline__ int32_t linearTile(const TIn *x, const TW *w,
                              const detail::NoDeduceT<TOut> *residual, TOut *y,
                              int64_t M, int64_t K, int64_t N, int64_t n0,
                              int64_t n1, char *smem, bool preloaded = false) {
  detail::linearBlock<kThreads>(x, w, M, K, n0, n1, 0, K, smem, preloaded,
                                detail::LinearStore<TOut>{residual, y, N});
  return nv::kBodyOk;
}

/// Split-K phase 0: partial[m * N + n] = x[m, k0:k1] . w[n, k0:k1].
/// preloaded: as linearTile's, k range [k0, k1).
template <int kThreads, typename TIn, typename TW>
__device__ __noinline__ int32_t linearPartial(const TIn *x, const TW *w, float *partial,
                                 int64_t M, int64_t K, int64_t N, int64_t n0,
                                 int64_t n1, int64_t k0, int64_t k1,
                                 char *smem, bool preloaded = false) {
  detail::linearBlock<kThreads>(x, w, M, K, n0, n1, k0, k1, smem, preloaded,
                                detail::PartialStore{partial, N});
  return nv::kBodyOk;
}

/// Split-K phase 1: y = residual + sum of the splits in order 0..splits-1.
template <int kThreads, typename TOut>
__device__ __noinline__ int32_t linearReduce(const float *partials, int64_t splits,
                                int64_t sliceStride,
                                const detail::NoDeduceT<TOut> *residual,
                                TOut *y, int64_t M, int64_t N, int64_t n0,
                                int64_t n1, char *smem) {
  const int64_t nCols = n1 - n0;
  for (int64_t i = threadIdx.x; i < M * nCols; i += kThreads) {
    const int64_t idx = (i / nCols) * N + n0 + i % nCols;
    float sum = 0.f;
    for (int64_t s = 0; s < splits; ++s)
      sum += partials[s * sliceStride + idx];
    const float base = residual ? nv::ldF(residual, idx) : 0.f;
    nv::stF(y, idx, base + sum);
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// rope (NeoX halves)
//===----------------------------------------------------------------------===//

namespace detail {
/// Pairs whose cos/sin sit in shared memory at once.
constexpr int64_t kRopePairs = 256;

/// Without shared memory: a thread per pair, each computing its angle.
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ void ropeDirect(const TX *x, const TPos *positions, TY *y, int64_t H,
                           int64_t D, int64_t rotaryDim, float theta,
                           const RopeScaling &scaling, int64_t r0, int64_t r1) {
  const int64_t half = rotaryDim / 2, tail = D - rotaryDim;
  const int64_t per = half + tail;
  for (int64_t idx = threadIdx.x; idx < (r1 - r0) * per; idx += kThreads) {
    const int64_t row = r0 + idx / per, j = idx % per;
    if (j >= half) { // past the rotary dims: copied
      const int64_t off = row * D + rotaryDim + (j - half);
      nv::stF(y, off, nv::ldF(x, off));
      continue;
    }
    const double invFreq = ropeScaledInvFreq(
        pow(double(theta), -2.0 * double(j) / double(rotaryDim)), scaling);
    const double angle = double(positions[row / H]) * invFreq;
    const float c = float(cos(angle)), sn = float(sin(angle));
    const int64_t off = row * D + j;
    const float a = nv::ldF(x, off), b = nv::ldF(x, off + half);
    nv::stF(y, off, a * c - b * sn);
    nv::stF(y, off + half, b * c + a * sn);
  }
}
} // namespace detail

/// The cos/sin table; with less, each element computes its own angle.
template <int kThreads> __host__ __device__ constexpr int64_t ropeSmemBytes() {
  return 2 * detail::kRopePairs * 4;
}

/// Rows [r0, r1) of the flattened [T * H] rows. Each token's cos/sin are
/// computed once (in double, as the host does, then cast to float) into
/// shared memory and applied to all its heads. `y` may alias `x`.
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ __noinline__ int32_t rope(const TX *x, const TPos *positions, TY *y, int64_t H,
                        int64_t D, int64_t rotaryDim, float theta,
                        RopeScaling scaling, int64_t r0, int64_t r1,
                        char *smem) {
  using detail::kRopePairs;
  if (nv::dynamicSmemBytes() < ropeSmemBytes<kThreads>()) {
    detail::ropeDirect<kThreads>(x, positions, y, H, D, rotaryDim, theta,
                                 scaling, r0, r1);
    return nv::kBodyOk;
  }
  float *cosv = reinterpret_cast<float *>(smem);
  float *sinv = cosv + kRopePairs;
  const int64_t half = rotaryDim / 2;
  const bool vec =
      half % 8 == 0 && D % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(y);
  // theta^e as 2^(e log2 theta), and sin and cos from one reduction: a
  // third of pow + cos + sin, the same floats (the double results differ
  // in their last bits at most).
  const double log2Theta = log2(double(theta));
  for (int64_t r = r0; r < r1;) {
    const int64_t t = r / H;
    const int64_t rEnd = imin(r1, (t + 1) * H), rows = rEnd - r;
    const double pos = double(positions[t]);
    for (int64_t i0 = 0; i0 < half; i0 += kRopePairs) {
      const int64_t cnt = imin(kRopePairs, half - i0);
      __syncthreads(); // the previous table's readers are done
      for (int64_t j = threadIdx.x; j < cnt; j += kThreads) {
        const double invFreq = ropeScaledInvFreq(
            exp2(-2.0 * double(i0 + j) / double(rotaryDim) * log2Theta),
            scaling);
        double sn, cs;
        sincos(pos * invFreq, &sn, &cs);
        cosv[j] = float(cs);
        sinv[j] = float(sn);
      }
      __syncthreads();
      if (vec) {
        const int64_t groups = cnt / 8;
        for (int64_t idx = threadIdx.x; idx < rows * groups; idx += kThreads) {
          const int64_t row = r + idx / groups, j = (idx % groups) * 8;
          const int64_t off = row * D + i0 + j;
          float a[8], b[8], ya[8], yb[8];
          nv::load8(x + off, a);
          nv::load8(x + off + half, b);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            ya[e] = a[e] * cosv[j + e] - b[e] * sinv[j + e];
            yb[e] = b[e] * cosv[j + e] + a[e] * sinv[j + e];
          }
          nv::store8(y + off, ya);
          nv::store8(y + off + half, yb);
        }
      } else {
        for (int64_t idx = threadIdx.x; idx < rows * cnt; idx += kThreads) {
          const int64_t row = r + idx / cnt, j = idx % cnt;
          const int64_t off = row * D + i0 + j;
          const float a = nv::ldF(x, off), b = nv::ldF(x, off + half);
          nv::stF(y, off, a * cosv[j] - b * sinv[j]);
          nv::stF(y, off + half, b * cosv[j] + a * sinv[j]);
        }
      }
    }
    const int64_t tail = D - rotaryDim;
    for (int64_t idx = threadIdx.x; idx < rows * tail; idx += kThreads) {
      const int64_t off = (r + idx / tail) * D + rotaryDim + idx % tail;
      nv::stF(y, off, nv::ldF(x, off));
    }
    r = rEnd;
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// kv_append
//===----------------------------------------------------------------------===//

/// Tokens [t0, t1): K row [Hkv, D] and V row [Hkv, Dv] of token t go to slot
/// slotMapping[t] of the [pages, P, Hkv, D|Dv] caches; negative slots are
/// padding and skipped, slots past the `numPages` pages refused.
template <int kThreads, typename TK, typename TV, typename TSlot, typename TKC,
          typename TVC>
__device__ __noinline__ int32_t kvAppend(const TK *k, const TV *v, const TSlot *slotMapping,
                            TKC *kCache, TVC *vCache, int64_t Hkv, int64_t D,
                            int64_t Dv, int64_t P, int64_t numPages, int64_t t0,
                            int64_t t1, char *smem) {
  for (int64_t t = t0; t < t1; ++t) {
    // page slot / P, entry slot % P; a slot past the caches is refused
    // (MetaGuard.h) and nothing written.
    const int64_t row = int64_t(slotMapping[t]);
    if (row < 0 || !writableIndex(slotMapping + t, numPages * P, LOOM_META_SLOT))
      continue;
    detail::copyRow<kThreads>(k + t * Hkv * D, kCache + row * Hkv * D, Hkv * D);
    detail::copyRow<kThreads>(v + t * Hkv * Dv, vCache + row * Hkv * Dv,
                              Hkv * Dv);
  }
  return nv::kBodyOk;
}

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
  for (int64_t idx = threadIdx.x; idx < nh * D; idx += kThreads) {
    const int64_t h = idx / D, d = idx % D;
    float mx = nv::kNegInf;
    for (int w = 0; w < kWarps; ++w)
      mx = fmaxf(mx, sM[w * kG + h]);
    float lsum = 0.f, o = 0.f;
    for (int w = 0; w < kWarps; ++w) {
      const float c = nv::rescale2(sM[w * kG + h], mx);
      lsum += sL[w * kG + h] * c;
      o += sPart[(w * kG + h) * D + d] * c;
    }
    const int64_t row = slotRow + h0 + h;
    oPart[row * D + d] = lsum > 0.f ? o / lsum : 0.f;
    if (d == 0)
      lsePart[row] = lsum > 0.f ? (mx + log2f(lsum)) * nv::kLn2 : nv::kNegInf;
  }
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
  const int64_t numTasks = maxBatch * Hkv * S, n = (b * Hkv + hk) * S + s;
  // Every thread computes the same mapping (a few passes over kv_lens), so
  // the branches below stay block-uniform.
  const GqaSplitTask task = gqaSplitTask(kvLens, batch, Hkv, numTasks, n);
  if (!task.active)
    return nv::kBodyOk;
  b = task.b;
  hk = task.hk;
  // Every request has a split task, which checks its meta values
  // (MetaGuard.h); a refused one reads no token.
  const PagedRequest req = pagedRequest(kvIndptr, kvLens, b, numIndices, P);
  const bool refused = task.tEnd > req.len;
  const int64_t tBegin = refused ? 0 : task.tBegin;
  const int64_t tEnd = refused ? 0 : task.tEnd;
  const int64_t group = Hq / Hkv;
  const CheckedPages<TInd> pages{kvIndices + req.first, numPages};
  // The ids the split reads, those of its tokens: report() at its end.
  const int64_t idFrom = tBegin / P, idTo = tEnd > tBegin ? (tEnd - 1) / P + 1 : 0;
  float *oPart = workspace;
  float *lsePart = workspace + numTasks * group * Dv;
  // Row of absolute head h is slotRow + h: rows n * group .. + group - 1.
  const int64_t slotRow = (n - hk) * group;
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

/// Phase 1, task (b, hk): o[b, h] = sum_i w_i o_i / sum_i w_i with
/// w_i = exp(lse_i - max lse) over the pair's split tasks (gqaPairTasks),
/// for the heads of group hk; o = 0 when every split is empty. Requests
/// b >= batch are skipped. With the shared memory for the pair's
/// count x group weights, they are computed once (the lse loads in parallel)
/// and each output's partial loads are issued together; the plain loop
/// otherwise.
template <int kThreads, typename TO, typename TLen>
__device__ __noinline__ int32_t gqaDecodeMerge(const float *workspace,
                                               const TLen *kvLens, TO *o,
                                               int64_t batch, int64_t maxBatch,
                                               int64_t Hq, int64_t Hkv,
                                               int64_t Dv, int64_t S, int64_t b,
                                               int64_t hk, char *smem) {
  if (b >= batch)
    return nv::kBodyOk;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  const GqaPairTasks pair = gqaPairTasks(kvLens, batch, Hkv, numTasks, b, hk);
  const float *lsePart = workspace + numTasks * group * Dv;
  const int64_t weights = pair.count * group;
  if (nv::dynamicSmemBytes() >= weights * 4) {
    // The pair's lse rows are contiguous: [count][group] from first * group.
    float *w = reinterpret_cast<float *>(smem);
    for (int64_t i = threadIdx.x; i < weights; i += kThreads)
      w[i] = lsePart[pair.first * group + i];
    __syncthreads();
    for (int64_t j = threadIdx.x; j < group; j += kThreads) {
      float mx = nv::kNegInf;
      for (int64_t i = 0; i < pair.count; ++i)
        mx = fmaxf(mx, w[i * group + j]);
      float wsum = 0.f;
      for (int64_t i = 0; i < pair.count; ++i) {
        const float e =
            mx == nv::kNegInf ? 0.f : expf(w[i * group + j] - mx);
        w[i * group + j] = e;
        wsum += e;
      }
      const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
      for (int64_t i = 0; i < pair.count; ++i)
        w[i * group + j] *= inv;
    }
    __syncthreads();
    const float *part = workspace + pair.first * group * Dv;
    for (int64_t idx = threadIdx.x; idx < group * Dv; idx += kThreads) {
      const int64_t j = idx / Dv;
      float acc = 0.f;
#pragma unroll 8
      for (int64_t i = 0; i < pair.count; ++i)
        acc += w[i * group + j] * part[i * group * Dv + idx];
      nv::stF(o, (b * Hq + hk * group) * Dv + idx, acc);
    }
    __syncthreads(); // the weights' readers are done before the next body
    return nv::kBodyOk;
  }
  for (int64_t idx = threadIdx.x; idx < group * Dv; idx += kThreads) {
    const int64_t j = idx / Dv, d = idx % Dv;
    float mx = nv::kNegInf;
    for (int64_t i = 0; i < pair.count; ++i)
      mx = fmaxf(mx, lsePart[(pair.first + i) * group + j]);
    float out = 0.f;
    if (mx != nv::kNegInf) {
      float wsum = 0.f, acc = 0.f;
      for (int64_t i = 0; i < pair.count; ++i) {
        const int64_t slotIdx = (pair.first + i) * group + j;
        const float ws = expf(lsePart[slotIdx] - mx);
        wsum += ws;
        acc += ws * workspace[slotIdx * Dv + d];
      }
      out = acc / wsum;
    }
    nv::stF(o, (b * Hq + hk * group + j) * Dv + d, out);
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// Elementwise: element range [e0, e1)
//===----------------------------------------------------------------------===//

namespace detail {
template <int kThreads, typename TA, typename TB, typename TY, typename F>
__device__ void elementwise2(const TA *a, const TB *b, TY *y, int64_t e0,
                             int64_t e1, const F &f) {
  int64_t vecEnd = e0;
  if (e0 % 8 == 0 && nv::isAligned16(a) && nv::isAligned16(b) &&
      nv::isAligned16(y)) {
    vecEnd = e0 + (e1 - e0) / 8 * 8;
    for (int64_t e = e0 + threadIdx.x * 8; e < vecEnd; e += kThreads * 8) {
      float va[8], vb[8];
      nv::load8(a + e, va);
      nv::load8(b + e, vb);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        va[i] = f(va[i], vb[i]);
      nv::store8(y + e, va);
    }
  }
  for (int64_t e = vecEnd + threadIdx.x; e < e1; e += kThreads)
    nv::stF(y, e, f(nv::ldF(a, e), nv::ldF(b, e)));
}

struct SiluMulOp {
  __device__ float operator()(float g, float u) const {
    return g * nv::sigmoid(g) * u;
  }
};
struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
} // namespace detail

/// y = silu(gate) * up. `y` may alias either input.
template <int kThreads, typename TG, typename TU, typename TY>
__device__ __noinline__ int32_t siluMul(const TG *gate, const TU *up, TY *y, int64_t e0,
                           int64_t e1, char *smem) {
  detail::elementwise2<kThreads>(gate, up, y, e0, e1, detail::SiluMulOp{});
  return nv::kBodyOk;
}

/// y = a + b. `y` may alias either input.
template <int kThreads, typename TA, typename TB, typename TY>
__device__ __noinline__ int32_t add(const TA *a, const TB *b, TY *y, int64_t e0, int64_t e1,
                       char *smem) {
  detail::elementwise2<kThreads>(a, b, y, e0, e1, detail::AddOp{});
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// embedding / argmax: rows [b0, b1)
//===----------------------------------------------------------------------===//

/// y[b] = table[ids[b]]. As the host body, returns false when an id is
/// outside [0, vocab): that id is not read and its row is zeroed (the other
/// rows are still copied).
template <int kThreads, typename TT, typename TId, typename TY>
__device__ __noinline__ bool embedding(const TT *table, const TId *ids, TY *y, int64_t vocab,
                          int64_t D, int64_t b0, int64_t b1, char *smem) {
  bool ok = true;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t id = int64_t(ids[b]);
    if (id < 0 || id >= vocab) {
      recordMetaFault(ids + b, id, LOOM_META_TOKEN_ID);
      detail::fillRow<kThreads>(y + b * D, D, 0.f);
      ok = false;
      continue;
    }
    detail::copyRow<kThreads>(table + id * D, y + b * D, D);
  }
  return ok;
}

/// None: the per-warp candidates sit in static shared memory.
template <int kThreads>
__host__ __device__ constexpr int64_t argmaxSmemBytes() {
  return 0;
}

namespace detail {
/// Is (va, ia) ahead of (vb, ib)? NaN beats numbers; then larger; ties go
/// to the lower index: the host's "first NaN, else first maximum".
__device__ __forceinline__ bool argBefore(float va, int64_t ia, float vb,
                                          int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb)
    return na;
  if (!na && va != vb)
    return va > vb;
  return ia < ib;
}
} // namespace detail

/// indices[b] = argmax_v x[b, v], one row at a time across the block.
template <int kThreads, typename TX, typename TIdx>
__device__ __noinline__ int32_t argmaxRows(const TX *x, TIdx *indices, int64_t V, int64_t b0,
                              int64_t b1, char *smem) {
  constexpr int kWarps = kThreads / 32;
  __shared__ float sVal[kWarps];
  __shared__ int64_t sIdx[kWarps];
  const int lane = detail::laneId(), warp = detail::warpId();
  const bool vec = V % 8 == 0 && nv::isAligned16(x);
  for (int64_t b = b0; b < b1; ++b) {
    const TX *row = x + b * V;
    // The sentinel loses to every element, -inf included (index order).
    float best = nv::kNegInf;
    int64_t bestIdx = INT64_MAX;
    auto consider = [&](float v, int64_t i) {
      if (detail::argBefore(v, i, best, bestIdx)) {
        best = v;
        bestIdx = i;
      }
    };
    if (vec) {
      for (int64_t i = threadIdx.x * 8; i < V; i += kThreads * 8) {
        float v[8];
        nv::load8(row + i, v);
#pragma unroll
        for (int e = 0; e < 8; ++e)
          consider(v[e], i + e);
      }
    } else {
      for (int64_t i = threadIdx.x; i < V; i += kThreads)
        consider(nv::ldF(row, i), i);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
      float v = __shfl_xor_sync(0xffffffffu, best, off);
      int64_t i = __shfl_xor_sync(0xffffffffu, bestIdx, off);
      consider(v, i);
    }
    if (lane == 0) {
      sVal[warp] = best;
      sIdx[warp] = bestIdx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w)
        consider(sVal[w], sIdx[w]);
      indices[b] = TIdx(bestIdx);
    }
    __syncthreads(); // the scratch is reused by the next row
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH
