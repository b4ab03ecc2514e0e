//===- LinearBodies.cuh - The sm90 linear body (tensor cores) -*- CUDA -*-===//
//
// linearTile, linearPartial and linearReduce of DecoderBodies.cuh (which
// includes this file; its header says what every decoder body shares): the
// bulk-copy ring of LinearRing.cuh for up to 32 rows of x, the register
// path otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_LINEARBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_LINEARBODIES_CUH

#include "kernels/nvidia/sm90/DecoderCommon.cuh"
#include "kernels/nvidia/sm90/LinearRing.cuh"

#include <cstdint>
#include <type_traits>


namespace loom {
namespace sm90 {

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
template <int MT, bool kNorm> struct LinFrag {
  uint4 w[2][2][2];
  uint4 x[MT][2];
  uint4 scale[kNorm ? 2 : 1]; ///< the norm's scale at x's k (per h)
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
template <int MT, typename T, typename Norm>
__device__ void linearWarpMma(const T *x, const T *w, int64_t K, int64_t M,
                              int64_t mBase, int64_t nBase, int64_t nEnd,
                              int64_t ka, int64_t kb, int64_t kLo, int64_t kHi,
                              const Norm &norm, float (&acc)[2][MT][4]) {
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
  using Frag = LinFrag<MT, Norm::kOn>;
  auto load = [&](int64_t k0, Frag &f) {
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
      if constexpr (Norm::kOn)
        f.scale[h] = ok && xOk ? norm.scaleAt(k) : zero;
    }
  };
  // x meets the norm's scale here, not at its load, so the next step's
  // loads are issued before anything waits for this one's.
  auto compute = [&](const Frag &f) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const uint4 xv = norm.template apply<T>(f.x[mt][h], f.scale[h]);
#pragma unroll
        for (int cg = 0; cg < 2; ++cg)
          nv::mma16816Chunks<T>(acc[cg][mt], f.w[cg][0][h], f.w[cg][1][h], xv);
      }
  };
  if (ka >= kb)
    return;
  // Two register stages: one k step's loads (4 KB a warp) in flight while
  // another multiplies. A third (LOOM_LINEAR_STAGES=3, tried on the H200)
  // moved no decoder row (bench/results/h200/README.md, 2026-12-02's
  // second run).
  Frag cur, next;
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
template <int kThreads, int MT, typename T, typename Norm, typename Out>
__device__ void linearMmaPass(const T *x, const T *w, int64_t M, int64_t K,
                              int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                              int64_t mBase, float *part, const Norm &norm,
                              const Out &out) {
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
                        k1, norm, acc);
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
      linearWarpMma<MT>(x, w, K, M, mBase, nBase, n1, ka, kb, k0, k1, norm,
                        acc);
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
                      norm, acc);
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
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ void linearGeneric(const TIn *x, const TW *w, int64_t M, int64_t K,
                              int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                              const Norm &norm, const Out &out) {
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
            acc[j] += norm.value(x, (m0 + j) * K + k, k) * wv;
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

/// The register and plain paths over rows [0, M) of x.
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ void linearRows(const TIn *x, const TW *w, int64_t M, int64_t K,
                           int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                           char *smem, const Norm &norm, const Out &out) {
  if constexpr (std::is_same_v<TIn, TW> && kIs16Bit<TIn>) {
    if (K % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(w)) {
      float *part = nv::dynamicSmemBytes() >= linearSmemBytes<kThreads>()
                        ? reinterpret_cast<float *>(smem)
                        : nullptr;
      for (int64_t mBase = 0; mBase < M; mBase += kLinRows) {
        switch (ceilDiv(imin(M - mBase, kLinRows), 8)) {
        case 1:
          linearMmaPass<kThreads, 1>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     norm, out);
          break;
        case 2:
          linearMmaPass<kThreads, 2>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     norm, out);
          break;
        case 3:
          linearMmaPass<kThreads, 3>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     norm, out);
          break;
        default:
          linearMmaPass<kThreads, 4>(x, w, M, K, n0, n1, k0, k1, mBase, part,
                                     norm, out);
          break;
        }
      }
      return;
    }
  }
  linearGeneric<kThreads>(x, w, M, K, n0, n1, k0, k1, norm, out);
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M, n in [n0, n1), x's rows
/// through `norm` (LinearNorm.cuh). preloaded: linearPreload ran with the
/// same arguments since the last body.
template <int kThreads, typename TIn, typename TW, typename Norm,
          typename Out>
__device__ void linearBlock(const TIn *x, const TW *w, int64_t M, int64_t K,
                            int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                            char *smem, bool preloaded, Norm norm,
                            const Out &out) {
  if (n0 >= n1 || M <= 0)
    return;
  const int64_t ringStages = linearRingStagesFor<kThreads>(x, w, M, K, k0, k1);
  if (ringStages > 0) {
    if constexpr (std::is_same_v<TIn, TW> && kIs16Bit<TIn>)
      linearRing<kThreads>(x, w, M, K, n0, n1, k0, k1, ringStages, smem,
                           preloaded, norm, out);
    return;
  }
  if constexpr (!Norm::kOn) {
    linearRows<kThreads>(x, w, M, K, n0, n1, k0, k1, smem, norm, out);
  } else {
    // Blocks of rows, each block's sums of squares first.
    for (int64_t mb = 0; mb < M; mb += kNormRows) {
      const int64_t rows = imin(kNormRows, M - mb);
      norm.template sumRows<kThreads>(x + mb * K, rows);
      linearRows<kThreads>(x + mb * K, w, rows, K, n0, n1, k0, k1, smem, norm,
                           [&](int64_t m, int64_t n, float v) {
                             out(mb + m, n, norm.scale(int(m)) * v);
                           });
    }
  }
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
                                detail::NoNorm{},
                                detail::LinearStore<TOut>{residual, y, N});
  return nv::kBodyOk;
}

/// linearTile of x's rows RMS-normalised with the scale `norm` [K] and eps
/// (a loom.linear with `norm`): y = residual + rmsnorm(x) . w^T.
template <int kThreads, typename TIn, typename TW, typename TOut>
__device__ __noinline__ int32_t
linearNormTile(const TIn *x, const detail::NoDeduceT<TIn> *norm, float eps,
               const TW *w, const detail::NoDeduceT<TOut> *residual, TOut *y,
               int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1,
               char *smem, bool preloaded = false) {
  detail::linearBlock<kThreads>(x, w, M, K, n0, n1, 0, K, smem, preloaded,
                                detail::RowNorm<TIn>(norm, eps, K),
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
                                detail::NoNorm{},
                                detail::PartialStore{partial, N});
  return nv::kBodyOk;
}

/// linearPartial of the normalised rows (linearNormTile); each split's
/// sums carry their row's 1/rms, taken over all of K.
template <int kThreads, typename TIn, typename TW>
__device__ __noinline__ int32_t
linearNormPartial(const TIn *x, const detail::NoDeduceT<TIn> *norm, float eps,
                  const TW *w, float *partial, int64_t M, int64_t K, int64_t N,
                  int64_t n0, int64_t n1, int64_t k0, int64_t k1, char *smem,
                  bool preloaded = false) {
  detail::linearBlock<kThreads>(x, w, M, K, n0, n1, k0, k1, smem, preloaded,
                                detail::RowNorm<TIn>(norm, eps, K),
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

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_LINEARBODIES_CUH
