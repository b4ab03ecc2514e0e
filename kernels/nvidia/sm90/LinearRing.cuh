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
// into every stage made all SMs read the same lines of L2 at once. A thread
// releases a stage (an arrival on the stage's "empty" mbarrier) as soon as
// it has its fragments; thread 0, having read stage s, waits until every
// thread has released stage s - 1 and copies stage s - 1 + ring into its
// slot (one arrival per warp after a __syncwarp is as ordered, but
// compute-sanitizer's racecheck reports the copy against the other lanes'
// reads). At a row group's end the warps' partial sums meet in shared
// memory (two buffers, alternating by group) and each output adds them in
// warp order, so results do not depend on timing.
//
// The first stages need nothing but the weights: a task that must wait for
// its x issues them before waiting (linearRingStart, called through the
// body's linearPreload by the engine), so its copies are in flight across
// the dependency.
//
// Measured on the H200 (bench/results/h200/2026-12-02-h): 2 KB copies, x
// in every stage or x loaded once per tile were slower in the decoder; the
// last warp to release a stage refilling it (a shared-memory counter) was
// as fast, but compute-sanitizer's racecheck does not see that hand-off.
//
// The mbarriers live in static shared memory for the whole launch
// (linearRingInit, which the kernel calls before its loop): initialised
// again by every task in the dynamic shared memory other bodies reuse,
// they made compute-sanitizer's racecheck lose the copies' completion
// between consecutive tasks. So each slot's phase parity carries over from
// task to task (RingBarriers::parity), and every phase a task completes is
// also waited on before the task ends.
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
/// Stages a task's preload issues before its wait (linearRingStart). One:
/// all three measured the same in the decoder (bench/results/h200/
/// 2026-12-02-i), and a smaller burst leaves more of HBM to the short
/// latency-bound tasks that run while the linears' workers wait.
constexpr int kRingPreloadStages = 1;
constexpr int kRingRowBytes = 2 * kRingK + 16;

/// The ring's mbarriers, for the whole launch: a "full" and an "empty"
/// barrier per slot. Every use of a slot completes one phase of each.
struct RingBarriers {
  uint64_t full[kRingMaxStages], empty[kRingMaxStages];
  uint32_t parity; ///< bit i: the phase parity slot i's next use waits for
};

/// The block's ring barriers (static shared memory).
__device__ __forceinline__ RingBarriers &ringBarriers() {
  __shared__ RingBarriers barriers;
  return barriers;
}

/// Every thread, once per launch before any linear body: the barriers.
template <int kThreads> __device__ void linearRingInit() {
  RingBarriers &bars = ringBarriers();
  if (threadIdx.x == 0) {
    for (int i = 0; i < kRingMaxStages; ++i) {
      nv::mbarrierInit(bars.full + i, 1);
      nv::mbarrierInit(bars.empty + i, kThreads);
    }
    bars.parity = 0;
  }
  __syncthreads();
}

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
  return S::kScratchBytes + stages * S::kStageBytes;
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

/// One tile's walk through the ring: which weights stage s holds, and the
/// copies that fill it. The preload (before the task's inputs are ready)
/// and the body build the same plan from the same arguments.
template <int kThreads, typename T> struct RingPlan {
  using S = RingShape<kThreads>;
  struct Stage {
    int64_t rowA, rows, kA, kLen;
  };
  const T *w;
  int64_t K, n0, n1, k0, k1;
  int32_t chunks, total, ring;
  uint32_t parity0; // RingBarriers::parity when the task began
  uint64_t *full, *empty;
  char *stage0;

  __device__ RingPlan(const T *w, int64_t K, int64_t n0, int64_t n1,
                      int64_t k0, int64_t k1, int64_t stages, char *smem)
      : w(w), K(K), n0(n0), n1(n1), k0(k0), k1(k1) {
    chunks = int32_t(nv::ceilDiv(k1 - k0, kRingK));
    total = n1 > n0 ? int32_t(nv::ceilDiv(n1 - n0, kRingRows)) * chunks : 0;
    ring = int32_t(nv::imin(stages, total));
    RingBarriers &bars = ringBarriers();
    full = bars.full;
    empty = bars.empty;
    parity0 = bars.parity;
    stage0 = smem + linearRingSmemBytes<kThreads>(0);
  }

  /// The phase parity of the lap-th use of `slot` in this task.
  __device__ uint32_t phase(int32_t slot, uint32_t lap) const {
    return ((parity0 >> slot) ^ lap) & 1u;
  }

  /// The stage of row group `group`, k chunk `chunk`.
  __device__ Stage at(int32_t group, int32_t chunk) const {
    Stage st;
    st.rowA = n0 + int64_t(group) * kRingRows;
    st.rows = nv::imin(kRingRows, n1 - st.rowA);
    st.kA = k0 + int64_t(chunk) * kRingK;
    st.kLen = nv::imin(kRingK, k1 - st.kA);
    return st;
  }

  __device__ Stage stage(int32_t s) const { return at(s / chunks, s % chunks); }

  /// Thread 0: stage s into slot s % ring, a bulk copy per row (the
  /// hardware issues a warp's copies one lane at a time anyway).
  __device__ void issue(int32_t s) const {
    const Stage st = stage(s);
    const uint32_t bytes = uint32_t(2 * st.kLen);
    char *dst = stage0 + (s % ring) * S::kStageBytes;
    uint64_t *bar = full + s % ring;
    nv::mbarrierArriveExpectTx(bar, uint32_t(st.rows) * bytes);
    for (int64_t r = 0; r < st.rows; ++r)
      nv::bulkCopyToShared(dst + r * kRingRowBytes, w + (st.rowA + r) * K + st.kA,
                           bytes, bar);
  }

  /// Stages a preload issues: the rest wait for the body.
  __device__ int32_t preloaded() const {
    return nv::imin(ring, kRingPreloadStages);
  }

  /// Thread 0 issues stages [0, upTo); called after a barrier that ended
  /// every earlier use of the shared memory. Needs nothing but the
  /// weights, so it may run before the task's inputs are ready.
  __device__ void start(int32_t upTo) const {
    if (total <= 0 || threadIdx.x != 0)
      return;
    nv::fenceProxyAsyncShared(); // earlier bodies' use of these bytes
    for (int32_t s = 0; s < upTo; ++s)
      issue(s);
  }

  /// Thread 0, after the last stage: waits for the "empty" phases the
  /// refills did not (the last `ring` stages'), so no phase is left
  /// unwaited, and carries each slot's parity over to the next task.
  __device__ void finish() const {
    for (int32_t s = nv::imax(0, total - ring); s < total; ++s)
      nv::mbarrierWait(empty + s % ring, phase(s % ring, uint32_t(s / ring)));
    uint32_t parity = parity0;
    for (int32_t i = 0; i < ring; ++i)
      parity ^= uint32_t(((total - 1 - i) / ring + 1) & 1) << i;
    ringBarriers().parity = parity;
  }

  /// Thread 0 (after start(from)): stages [from, ring).
  __device__ void issueRest(int32_t from) const {
    if (threadIdx.x == 0)
      for (int32_t s = from; s < ring; ++s)
        issue(s);
  }
};

/// The loads of linearRing that need no input: the ring's first stages.
/// Every thread of the block calls it; linearRing with started = true
/// (same arguments) then consumes them.
template <int kThreads, typename T>
__device__ void linearRingStart(const T *w, int64_t K, int64_t n0, int64_t n1,
                                int64_t k0, int64_t k1, int64_t stages,
                                char *smem) {
  const RingPlan<kThreads, T> plan(w, K, n0, n1, k0, k1, stages, smem);
  plan.start(plan.preloaded());
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M <= 8, n in [n0, n1),
/// through a ring of `stages` stages (linearRingStages) in `smem`; started:
/// linearRingStart ran with the same arguments since the last body. k0, k1
/// and K multiples of 8; x and w 16-byte aligned, 16-bit elements.
template <int kThreads, typename T, typename Out>
__device__ void linearRing(const T *x, const T *w, int64_t M, int64_t K,
                           int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                           int64_t stages, char *smem, bool started,
                           const Out &out) {
  using S = RingShape<kThreads>;
  using Plan = RingPlan<kThreads, T>;
  const int warp = nv::warpId(), lane = nv::laneId(), g = lane >> 2,
            q = lane & 3;
  const Plan plan(w, K, n0, n1, k0, k1, stages, smem);
  const int32_t chunks = plan.chunks, total = plan.total, ring = plan.ring;
  if (total <= 0)
    return;
  uint64_t *full = plan.full, *empty = plan.empty;
  float *scratch = reinterpret_cast<float *>(smem);
  char *stage0 = plan.stage0;
  if (!started)
    plan.start(ring);
  else
    plan.issueRest(plan.preloaded());

  const uint4 zero = make_uint4(0, 0, 0, 0);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  // s = lap * ring + slot = group * chunks + chunk: counters, so the loop
  // divides by nothing.
  int32_t slot = 0, chunk = 0, group = 0;
  uint32_t lap = 0;
  for (int32_t s = 0; s < total; ++s) {
    const typename Plan::Stage st = plan.at(group, chunk);
    const char *base = stage0 + slot * S::kStageBytes;
    nv::mbarrierWait(full + slot, plan.phase(slot, lap));

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
    // Release the stage (each thread its own reads); thread 0 refills the
    // one before once all have.
    nv::mbarrierArrive(empty + slot);
    if (threadIdx.x == 0 && s >= 1 && s - 1 + ring < total) {
      const int32_t prev = slot == 0 ? ring - 1 : slot - 1;
      nv::mbarrierWait(empty + prev, plan.phase(prev, slot == 0 ? lap - 1 : lap));
      plan.issue(s - 1 + ring);
    }

#pragma unroll
    for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        nv::mma16816Chunks<T>(acc, a[i][0][h], a[i][1][h], b[i][h]);

    if (++slot == ring) {
      slot = 0;
      ++lap;
    }
    if (++chunk != chunks)
      continue;
    chunk = 0;
    // The row group is done: each warp's partials into this group's buffer,
    // then each output adds the warps' in order.
    float *part = scratch + (group++ & 1) * S::kPartFloats;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = g + (e >= 2 ? 8 : 0), m = 2 * q + (e & 1);
      part[(warp * kRingRows + row) * kRingMaxXRows + m] = acc[e];
      acc[e] = 0.f;
    }
    __syncthreads();
    const int32_t m32 = int32_t(M), outs = int32_t(st.rows) * m32; // <= 128
    for (int32_t idx = threadIdx.x; idx < outs; idx += kThreads) {
      const int32_t row = idx / m32, m = idx - row * m32;
      float v = 0.f;
#pragma unroll
      for (int wv = 0; wv < S::kWarps; ++wv)
        v += part[(wv * kRingRows + row) * kRingMaxXRows + m];
      out(m, st.rowA + row, v);
    }
  }
  if (threadIdx.x == 0)
    plan.finish();
  __syncthreads(); // the next task reads the parity and reuses the slots
}

} // namespace detail
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_LINEARRING_CUH
