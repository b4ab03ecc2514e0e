//===- LinearNorm.cuh - RMS-normalised rows of x for the linear body -*- CUDA -*-===//
//
// What a linear tile does to the rows of x it reads (linearNormTile,
// linearNormPartial: a loom.linear with `norm`): nothing (NoNorm), or RMS
// normalisation (RowNorm). rmsnorm(x)[m, k] = x[m, k] * g[k] * inv[m] with
// inv[m] = 1 / sqrt(mean(x[m, :]^2) + eps), and inv[m] is the same for
// every k, so the tile feeds its tensor cores x[m, k] * g[k] (rounded to
// x's type) and multiplies each finished sum by inv[m]: the normalised rows
// are never stored.
//
// The sums of squares come from the x the tile loads anyway when it can:
// the bulk-copy ring's first row group walks all of K, each (row, k) in
// exactly one lane, and each warp leaves its share in shared memory
// (kSumParts parts a row). Otherwise (a k range short of K, the register
// path) sumRows reads the rows once more before the tile, one part a row.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_LINEARNORM_CUH
#define LOOM_KERNELS_NVIDIA_SM90_LINEARNORM_CUH

#include "kernels/nvidia/sm90/DecoderCommon.cuh"

#include <cstdint>

namespace loom {
namespace sm90 {
namespace detail {

/// Rows of x one set of sums covers (the ring's most; the other paths go
/// through x in blocks of this many rows).
constexpr int kNormRows = 32;
/// Parts a row's sum of squares may come in (one per warp of 8).
constexpr int kSumParts = 8;

/// The block's partial sums of squares, [part][row] (static shared memory).
__device__ __forceinline__ float *normSums() {
  __shared__ float sums[kSumParts * kNormRows];
  return sums;
}

/// x as it is (scaleAt and apply do nothing the compiler keeps).
struct NoNorm {
  static constexpr bool kOn = false;
  __device__ uint4 scaleAt(int64_t) const { return make_uint4(0, 0, 0, 0); }
  template <typename T> __device__ uint4 apply(uint4 v, uint4) const {
    return v;
  }
  template <typename T> __device__ float value(const T *x, int64_t i, int64_t) const {
    return nv::ldF(x, i);
  }
  __device__ float scale(int) const { return 1.f; }
};

/// x's rows RMS-normalised with the scale g [K] and eps.
template <typename T> struct RowNorm {
  static constexpr bool kOn = true;
  const T *g;
  float eps;
  int64_t K;
  int parts; ///< partial sums a row has in normSums()

  __device__ RowNorm(const T *g, float eps, int64_t K)
      : g(g), eps(eps), K(K), parts(0) {}

  /// g[k..k+8), loaded beside x's chunk at k so that apply, which needs
  /// both, waits for neither alone (an unaligned scale, as a stacked
  /// buffer's slice may be, is read element by element).
  __device__ uint4 scaleAt(int64_t k) const {
    const T *p = g + k;
    if (nv::isAligned16(p))
      return *reinterpret_cast<const uint4 *>(p);
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = uint32_t(p[2 * i].bits) | uint32_t(p[2 * i + 1].bits) << 16;
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  /// 8 elements of x times their scaleAt chunk: the tensor cores' operand.
  /// Called as late as possible (after the ring stage is released, in the
  /// register path's multiply step), so no load waits on it.
  template <typename> __device__ uint4 apply(uint4 v, uint4 scale) const {
    return nv::mul8<T>(v, scale);
  }
  /// x[i] (at column k) times g[k], rounded as chunk's are.
  __device__ float value(const T *x, int64_t i, int64_t k) const {
    return nv::toF32(nv::fromF32<T>(nv::ldF(x, i) * nv::ldF(g, k)));
  }
  /// inv of row m (of the rows the sums cover), as rmsnormRows takes it.
  __device__ float scale(int m) const {
    const float *sums = normSums();
    float ss = 0.f;
    for (int p = 0; p < parts; ++p)
      ss += sums[p * kNormRows + m];
    return 1.0f / sqrtf(ss / float(K) + eps);
  }

  /// Every thread: the sums of rows [0, rows) of x (rows <= kNormRows), one
  /// part a row, each row a warp's; `parts` becomes 1. Barriers before (an
  /// earlier tile may still read the sums) and after.
  template <int kThreads>
  __device__ void sumRows(const T *x, int64_t rows) {
    constexpr int kWarps = kThreads / 32;
    const int lane = laneId();
    const bool vec = K % 8 == 0 && nv::isAligned16(x);
    __syncthreads();
    for (int64_t m = warpId(); m < rows; m += kWarps) {
      const T *xr = x + m * K;
      float ss = 0.f;
      if (vec) {
#pragma unroll 4
        for (int64_t i = 8 * int64_t(lane); i < K; i += 256)
          ss += nv::sumSq8<T>(*reinterpret_cast<const uint4 *>(xr + i));
      } else {
        for (int64_t i = lane; i < K; i += 32) {
          const float v = nv::ldF(xr, i);
          ss += v * v;
        }
      }
      ss = nv::warpSum(ss);
      if (lane == 0)
        normSums()[m] = ss;
    }
    parts = 1;
    __syncthreads();
  }
};

} // namespace detail
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_LINEARNORM_CUH
