//===- LinearRing.cuh - A linear tile's weights through a bulk-copy ring -*-
// CUDA -*-===//
//
// The path of the linear body (DecoderBodies.cuh) for up to 8 rows of x when
// the block has the shared memory: the copy engine streams the tile's
// weights through a ring of shared-memory stages (cp.async.bulk completing
// on one mbarrier per stage), so the loads in flight do not depend on how
// many registers 8 warps can give to them.
//
// A stage holds kRingRows = 16 weight rows (one m16 tile) x kRingK k, each
// row one 4 KB bulk copy padded by 16 bytes, so the 8 rows a quarter-warp's
// fragments read fall in 8 different banks. The stages walk the tile's
// groups of 16 rows, each over its k chunks. Warp w multiplies the 64-k
// slices w, w + kWarps, ... of every stage with mma.m16n8k16 (weights as A,
// x as B; a lane reads 16 contiguous bytes of each of its rows, as the
// register path does); x comes from global memory, as copying its chunk
// into every stage made all SMs read the same lines of L2 at once. A warp
// releases a stage (an arrival on the stage's "empty" mbarrier) as soon as
// it has its fragments; warp 0, having read stage s, waits until every warp
// has released stage s - 1 and copies stage s - 1 + ring into its slot. At
// a row group's end the warps' partial sums meet in shared memory (two
// buffers, alternating by group) and each output adds them in warp order,
// so results do not depend on timing.
//
// Measured on the H200 (bench/results/h200/2026-12-02-h): 2 KB copies, x
// in every stage or x loaded once per tile were slower in the decoder; the
// last warp to release a stage refilling it (a shared-memory counter) was
// as fast, but compute-sanitizer's racecheck does not see that hand-off.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_LINEARRING_CUH
#define LOOM_KERNELS_NVIDIA_SM90_LINEARRING_CUH

#include "kernels/nvidia/BulkCopy.cuh"
#include "kernels/nvidia/Numerics.cuh"

#include <cstdint>

namespace loom {
namespace sm90 {
namespace detail {

namespace nv = ::loom::nvidia;

constexpr int kRingRows = 16;    // weight rows a stage holds
constexpr int kRingK = 2048;     // k a stage holds: 4 KB per weight row
constexpr int kRingMaxXRows = 8; // x rows: the n8 side of the mma
constexpr int kRingMaxStages = 12;
constexpr int kRingMinStages = 3; // one filling, one read, one ahead
constexpr int kRingRowBytes = 2 * kRingK + 16;
constexpr int kRingHeaderBytes = 256; // two mbarriers per stage
static_assert(kRingHeaderBytes >= 2 * 8 * kRingMaxStages,
              "the header holds two mbarriers per stage");

template <int kThreads> struct RingShape {
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kSlices = kRingK / 64; // 64-k slices of a stage
  static constexpr int kSlicesPerWarp = kSlices / kWarps;
  static_assert(kSlices % kWarps == 0, "a stage's slices divide the warps");
  /// Partial sums of one row group: [kWarps][kRingRows][kRingMaxXRows].
  static constexpr int kPartFloats = kWarps * kRingRows * kRingMaxXRows;
  static constexpr int kScratchBytes = 2 * kPartFloats * 4;
  static constexpr int kStageBytes = kRingRows * kRingRowBytes;
};

/// Dynamic shared memory a ring of `stages` stages takes.
template <int kThreads>
__host__ __device__ constexpr int64_t linearRingSmemBytes(int64_t stages) {
  using S = RingShape<kThreads>;
  return kRingHeaderBytes + S::kScratchBytes + stages * S::kStageBytes;
}

/// Stages of the ring for `xRows` rows of x in `smemBytes` of dynamic shared
/// memory; 0 when the ring path does not apply.
template <int kThreads>
__host__ __device__ int64_t linearRingStages(int64_t smemBytes, int64_t xRows) {
  if (xRows < 1 || xRows > kRingMaxXRows)
    return 0;
  const int64_t room = smemBytes - linearRingSmemBytes<kThreads>(0);
  const int64_t stages =
      room <= 0
          ? 0
          : nv::imin(kRingMaxStages, room / RingShape<kThreads>::kStageBytes);
  return stages >= kRingMinStages ? stages : 0;
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M <= 8, n in [n0, n1),
/// through a ring of `stages` stages (linearRingStages) in `smem`. k0, k1
/// and K multiples of 8; x and w 16-byte aligned, 16-bit elements.
template <int kThreads, typename T, typename Out>
__device__ void linearRing(const T *x, const T *w, int64_t M, int64_t K,
                           int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                           int64_t stages, char *smem, const Out &out) {
  using S = RingShape<kThreads>;
  const int warp = nv::warpId(), lane = nv::laneId(), g = lane >> 2,
            q = lane & 3;
  const int32_t chunks = int32_t(nv::ceilDiv(k1 - k0, kRingK));
  const int32_t total = int32_t(nv::ceilDiv(n1 - n0, kRingRows)) * chunks;
  if (total <= 0)
    return;
  const int32_t ring = int32_t(nv::imin(stages, total));
  uint64_t *full = reinterpret_cast<uint64_t *>(smem);
  uint64_t *empty = full + kRingMaxStages;
  float *scratch = reinterpret_cast<float *>(smem + kRingHeaderBytes);
  char *stage0 = smem + linearRingSmemBytes<kThreads>(0);

  struct Stage {
    int64_t rowA, rows, kA, kLen;
  };
  auto stageOf = [&](int32_t s) {
    Stage st;
    st.rowA = n0 + int64_t(s / chunks) * kRingRows;
    st.rows = nv::imin(kRingRows, n1 - st.rowA);
    st.kA = k0 + int64_t(s % chunks) * kRingK;
    st.kLen = nv::imin(kRingK, k1 - st.kA);
    return st;
  };
  // One warp: stage s into slot s % ring, a bulk copy per row.
  auto issue = [&](int32_t s) {
    const Stage st = stageOf(s);
    const uint32_t bytes = uint32_t(2 * st.kLen);
    char *dst = stage0 + (s % ring) * S::kStageBytes;
    uint64_t *bar = full + s % ring;
    if (lane == 0)
      nv::mbarrierArriveExpectTx(bar, uint32_t(st.rows) * bytes);
    __syncwarp();
    if (lane < st.rows)
      nv::bulkCopyToShared(dst + lane * kRingRowBytes,
                           w + (st.rowA + lane) * K + st.kA, bytes, bar);
  };

  if (threadIdx.x == 0) {
    for (int i = 0; i < ring; ++i) {
      nv::mbarrierInit(full + i, 1);
      nv::mbarrierInit(empty + i, S::kWarps);
    }
  }
  __syncthreads();
  if (warp == 0) {
    nv::fenceProxyAsyncShared(); // earlier bodies' use of these bytes
    for (int32_t s = 0; s < ring; ++s)
      issue(s);
  }

  const uint4 zero = make_uint4(0, 0, 0, 0);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int32_t s = 0; s < total; ++s) {
    const int32_t slot = s % ring;
    const Stage st = stageOf(s);
    const char *base = stage0 + slot * S::kStageBytes;
    nv::mbarrierWait(full + slot, uint32_t((s / ring) & 1));

    // Rows g, g + 8 of the weights and row g of x, at k = 64 * slice +
    // 16q + 8h of the stage.
    uint4 a[S::kSlicesPerWarp][2][2], b[S::kSlicesPerWarp][2];
#pragma unroll
    for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = 64 * (warp + i * S::kWarps) + 16 * q + 8 * h;
        const bool kOk = k < st.kLen;
#pragma unroll
        for (int half = 0; half < 2; ++half)
          a[i][half][h] =
              kOk && g + 8 * half < st.rows
                  ? *reinterpret_cast<const uint4 *>(
                        base + (g + 8 * half) * kRingRowBytes + 2 * k)
                  : zero;
        b[i][h] = kOk && g < M
                      ? *reinterpret_cast<const uint4 *>(x + g * K + st.kA + k)
                      : zero;
      }
    // Release the stage; warp 0 refills the one before once all have.
    __syncwarp();
    if (lane == 0)
      nv::mbarrierArrive(empty + slot);
    if (warp == 0 && s >= 1 && s - 1 + ring < total) {
      nv::mbarrierWait(empty + (s - 1) % ring, uint32_t((s - 1) / ring & 1));
      issue(s - 1 + ring);
    }

#pragma unroll
    for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        nv::mma16816Chunks<T>(acc, a[i][0][h], a[i][1][h], b[i][h]);

    if (s % chunks != chunks - 1)
      continue;
    // The row group is done: each warp's partials into this group's buffer,
    // then each output adds the warps' in order.
    float *part = scratch + ((s / chunks) & 1) * S::kPartFloats;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = g + (e >= 2 ? 8 : 0), m = 2 * q + (e & 1);
      part[(warp * kRingRows + row) * kRingMaxXRows + m] = acc[e];
      acc[e] = 0.f;
    }
    __syncthreads();
    for (int64_t idx = threadIdx.x; idx < st.rows * M; idx += kThreads) {
      const int row = int(idx / M), m = int(idx % M);
      float v = 0.f;
#pragma unroll
      for (int wv = 0; wv < S::kWarps; ++wv)
        v += part[(wv * kRingRows + row) * kRingMaxXRows + m];
      out(m, st.rowA + row, v);
    }
  }
  __syncthreads(); // every wait is done: the barriers may go
  if (threadIdx.x == 0)
    for (int i = 0; i < ring; ++i) {
      nv::mbarrierInval(full + i);
      nv::mbarrierInval(empty + i);
    }
  __syncthreads();
}

} // namespace detail
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_LINEARRING_CUH
