//===- LinearNorm.h - RMS-normalised rows of x for the linear body -*- C++ -*-===//
//
// What a gfx950 linear tile does to the rows of x it reads: nothing
// (NoNorm), or RMS normalisation (RowNorm, for linearNormTile and
// linearNormPartial). As on NVIDIA (kernels/nvidia/sm90/LinearNorm.cuh):
// the tile multiplies x[m, k] by g[k] (rounded to x's type) as it loads
// it and each finished sum by its row's 1 / sqrt(mean(x[m, :]^2) + eps),
// so the normalised rows are never stored. Here the sums of squares are
// always read before the tile, a block of kNormRows rows at a time.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_LINEARNORM_H
#define LOOM_KERNELS_AMD_GFX950_LINEARNORM_H

#include "kernels/amd/gfx950/DecoderCommon.h"

#include <cstdint>

namespace loom {
namespace gfx950 {
namespace detail {

/// Rows of x one set of sums covers.
constexpr int kNormRows = 32;

/// The block's sums of squares, one per row (LDS).
__device__ __forceinline__ float *normSums() {
  __shared__ float sums[kNormRows];
  return sums;
}

/// x as it is.
struct NoNorm {
  static constexpr bool kOn = false;
  __device__ __forceinline__ am::u32x4 chunk(am::u32x4 v, int) const {
    return v;
  }
  template <typename T>
  __device__ __forceinline__ float value(const T *x, int64_t i,
                                         int64_t) const {
    return am::ldF(x, i);
  }
  __device__ __forceinline__ float scale(int) const { return 1.f; }
};

/// x's rows RMS-normalised with the scale g [K] and eps.
template <typename T> struct RowNorm {
  static constexpr bool kOn = true;
  const T *g;
  float eps;
  int64_t K;

  /// 8 elements of x at k, each times g[k + e] rounded to T (the fp32
  /// product of two 16-bit values is exact, so this rounds once).
  __device__ __forceinline__ am::u32x4 chunk(am::u32x4 v, int k) const {
    float a[8];
    am::unpack8<T>(v, a);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      a[e] *= am::ldF(g, k + e);
    return am::pack8<T>(a);
  }
  /// x[i] (at column k) times g[k], rounded as chunk's are.
  __device__ __forceinline__ float value(const T *x, int64_t i,
                                         int64_t k) const {
    return am::toF32(am::fromF32<T>(am::ldF(x, i) * am::ldF(g, k)));
  }
  /// 1 / rms of row m of the block sumRows last read.
  __device__ __forceinline__ float scale(int m) const {
    return 1.0f / am::sqrtAcc(normSums()[m] / float(K) + eps);
  }
  /// Every thread: the sums of rows [0, rows) of x (rows <= kNormRows), a
  /// wave a row. Barriers before (an earlier block may still read them)
  /// and after.
  template <int kThreads>
  __device__ void sumRows(const T *x, int64_t rows) const {
    constexpr int kWaves = kThreads / am::kWaveSize;
    const int lane = am::laneId();
    am::syncThreads();
    for (int64_t m = am::waveId(); m < rows; m += kWaves) {
      float ss = 0.f;
      for (int64_t i = lane; i < K; i += am::kWaveSize) {
        const float v = am::ldF(x + m * K, i);
        ss += v * v;
      }
      ss = am::waveSum(ss);
      if (lane == 0)
        normSums()[m] = ss;
    }
    am::syncThreads();
  }
};

} // namespace detail
} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_LINEARNORM_H
