//===- LinearRing.cuh - A linear tile's weights through a bulk-copy ring -*-
// CUDA -*-===//
//
// The path of the linear body (LinearBodies.cuh) for up to 32 rows of x
// when the block has the shared memory: the copy engine streams the tile's
// weights through a ring of shared-memory stages (cp.async.bulk completing
// on one mbarrier per stage), so the loads in flight do not depend on how
// many registers 8 warps can give to them.
//
// A stage holds 64 KB of weights: 16 rows (one m16 tile) x 2048 k for up
// to 8 rows of x, 32 rows x 1024 k for more (RingShape, withRingShape), so
// the x a stage reads from L2 is at most the weights it holds. Each row is
// one bulk copy padded by 16 bytes, so the 8 rows a quarter-warp's
// fragments read fall in 8 different banks. The stages walk the tile's
// groups of rows, each over its k chunks. Warp w multiplies the 64-k
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
// memory (two buffers, alternating by group; for more than 8 rows of x, one
// buffer into which half the warps add theirs) and each output adds them
// in a fixed order, so results do not depend on timing.
//
// With a norm (LinearNorm.cuh) each thread also loads the norm's scale at
// its x chunks' k, and multiplies them only after it released the stage,
// so the refill never waits for that; the first row group's x also gives
// the rows' sums of squares.
//
// The first stages need nothing but the weights: a task that must wait for
// its x issues them before waiting (linearRingStart, called through the
// body's linearPreload by the engine), so its copies are in flight across
// the dependency.
//
// Measured on the H200 (bench/results/h200/2026-12-02-h, -03-c): 2 KB
// copies, x in every stage or x loaded once per tile were slower for up to
// 8 rows of x; for 17-32 rows, stages of 64 rows x 512 k (1 KB copies, x
// a quarter of the weights) were much slower than 32 x 1024; the last warp
// to release a stage refilling it (a shared-memory counter) was as fast,
// but compute-sanitizer's racecheck does not see that hand-off.
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
#include "kernels/nvidia/sm90/LinearNorm.cuh"

#include <cstdint>

namespace loom {
namespace sm90 {
namespace detail {

namespace nv = ::loom::nvidia;

/// Weights a stage holds: 64 KB of 16-bit elements, whatever its rows.
constexpr int kRingStageElems = 16 * 2048;
constexpr int kRingMaxXRows = 32; // x rows: four n8 tiles of the mma
constexpr int kRingMaxStages = 12;
constexpr int kRingMinStages = 3; // one filling, one read, one ahead
/// Stages a task's preload issues before its wait (linearRingStart). One:
/// all three measured the same in the decoder (bench/results/h200/
/// 2026-12-02-i), and a smaller burst leaves more of HBM to the short
/// latency-bound tasks that run while the linears' workers wait.
constexpr int kRingPreloadStages = 1;

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

/// A ring for up to 8 kXTiles rows of x: stages of kTiles m16 tiles of
/// weight rows (one bulk copy of 4 KB / kTiles per row), so a stage's x
/// chunk serves 16 kTiles weight rows: the x each stage reads from L2 is
/// kXTiles / (2 kTiles) of its weights.
template <int kThreads, int kRowTiles, int kXRowTiles> struct RingShape {
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kTiles = kRowTiles, kXTiles = kXRowTiles;
  static constexpr int kRows = 16 * kTiles;     // weight rows a stage holds
  static constexpr int kK = kRingStageElems / kRows; // k a stage holds
  /// A weight row in a stage, padded by 16 bytes so the 8 rows a
  /// quarter-warp's fragments read fall in 8 different banks.
  static constexpr int kRowBytes = 2 * kK + 16;
  static constexpr int kXRows = 8 * kXTiles;
  static constexpr int kSlices = kK / 64; // 64-k slices of a stage
  static constexpr int kSlicesPerWarp = kSlices / kWarps;
  static_assert(kSlices % kWarps == 0, "a stage's slices divide the warps");
  /// Partial sums of one row group, a slot of kRows x kXRows: with one row
  /// tile, a slot per warp and two buffers alternating by group; with more
  /// (kFold), one buffer of kWarps / kTiles slots that the warps fill in
  /// rounds (the first round stores, the others add in warp order), so
  /// that three stages still fit beside it.
  static constexpr int kSlotFloats = kRows * kXRows;
  static constexpr int kRounds = kTiles;
  static constexpr bool kFold = kRounds > 1;
  static constexpr int kSlots = kWarps / kRounds;
  static constexpr int kScratchBytes = (kFold ? 1 : 2) * kSlots * kSlotFloats * 4;
  static constexpr int kStageBytes = kRows * kRowBytes;
};

/// f(RingShape<...>{}) for the ring shape that takes xRows (1..32) rows of
/// x: one row tile for up to 8 (the x a stage reads is half its weights),
/// two for more (half up to 16 rows, as much as its weights up to 32).
template <int kThreads, typename F>
__host__ __device__ auto withRingShape(int64_t xRows, const F &f) {
  if (xRows <= 8)
    return f(RingShape<kThreads, 1, 1>{});
  if (xRows <= 16)
    return f(RingShape<kThreads, 2, 2>{});
  return f(RingShape<kThreads, 2, 4>{});
}

/// Dynamic shared memory a ring of `stages` stages for xRows rows of x takes.
template <int kThreads>
__host__ __device__ int64_t linearRingSmemBytes(int64_t stages,
                                                int64_t xRows = 1) {
  return withRingShape<kThreads>(xRows, [&](auto shape) {
    using S = decltype(shape);
    return int64_t(S::kScratchBytes) + stages * S::kStageBytes;
  });
}

/// Stages of the ring for `xRows` rows of x in `smemBytes` of dynamic shared
/// memory; 0 when the ring path does not apply.
template <int kThreads>
__host__ __device__ int64_t linearRingStages(int64_t smemBytes, int64_t xRows) {
  if (xRows < 1 || xRows > kRingMaxXRows)
    return 0;
  return withRingShape<kThreads>(xRows, [&](auto shape) -> int64_t {
    using S = decltype(shape);
    const int64_t room = smemBytes - S::kScratchBytes;
    const int64_t stages =
        room <= 0 ? 0 : nv::imin(kRingMaxStages, room / S::kStageBytes);
    return stages >= kRingMinStages ? stages : 0;
  });
}

/// One tile's walk through the ring: which weights stage s holds, and the
/// copies that fill it. The preload (before the task's inputs are ready)
/// and the body build the same plan from the same arguments.
template <typename S, typename T> struct RingPlan {
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
    chunks = int32_t(nv::ceilDiv(k1 - k0, S::kK));
    total = n1 > n0 ? int32_t(nv::ceilDiv(n1 - n0, S::kRows)) * chunks : 0;
    ring = int32_t(nv::imin(stages, total));
    RingBarriers &bars = ringBarriers();
    full = bars.full;
    empty = bars.empty;
    parity0 = bars.parity;
    stage0 = smem + S::kScratchBytes;
  }

  /// The phase parity of the lap-th use of `slot` in this task.
  __device__ uint32_t phase(int32_t slot, uint32_t lap) const {
    return ((parity0 >> slot) ^ lap) & 1u;
  }

  /// The stage of row group `group`, k chunk `chunk`.
  __device__ Stage at(int32_t group, int32_t chunk) const {
    Stage st;
    st.rowA = n0 + int64_t(group) * S::kRows;
    st.rows = nv::imin(S::kRows, n1 - st.rowA);
    st.kA = k0 + int64_t(chunk) * S::kK;
    st.kLen = nv::imin(S::kK, k1 - st.kA);
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
      nv::bulkCopyToShared(dst + r * S::kRowBytes,
                           w + (st.rowA + r) * K + st.kA, bytes, bar);
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
__device__ void linearRingStart(const T *w, int64_t M, int64_t K, int64_t n0,
                                int64_t n1, int64_t k0, int64_t k1,
                                int64_t stages, char *smem) {
  withRingShape<kThreads>(M, [&](auto shape) {
    const RingPlan<decltype(shape), T> plan(w, K, n0, n1, k0, k1, stages, smem);
    plan.start(plan.preloaded());
  });
}

/// linearRing for one ring shape S.
template <typename S, typename T, typename Norm, typename Out>
__device__ void linearRingShaped(const T *x, const T *w, int64_t M, int64_t K,
                                 int64_t n0, int64_t n1, int64_t k0,
                                 int64_t k1, int64_t stages, char *smem,
                                 bool started, Norm norm, const Out &out) {
  using Plan = RingPlan<S, T>;
  constexpr int kTiles = S::kTiles, kXTiles = S::kXTiles;
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
  // The rows' sums of squares: from the first row group's loads when it
  // walks all of K, else read before the walk (the copies are in flight).
  static_assert(S::kWarps <= kSumParts, "a part per warp");
  const bool sumsInRing = Norm::kOn && k0 == 0 && k1 == K;
  if constexpr (Norm::kOn) {
    if (sumsInRing)
      norm.parts = S::kWarps;
    else
      norm.template sumRows<S::kWarps * 32>(x, M);
  }
  float sumSq[kXTiles] = {};

  const uint4 zero = make_uint4(0, 0, 0, 0);
  float acc[kTiles][kXTiles][4] = {};
  // s = lap * ring + slot = group * chunks + chunk: counters, so the loop
  // divides by nothing.
  int32_t slot = 0, chunk = 0, group = 0;
  uint32_t lap = 0;
  for (int32_t s = 0; s < total; ++s) {
    const typename Plan::Stage st = plan.at(group, chunk);
    const char *base = stage0 + slot * S::kStageBytes;
    nv::mbarrierWait(full + slot, plan.phase(slot, lap));

    // Rows 16t + g, 16t + g + 8 of the weights and rows 8mt + g of x, at
    // k = 64 * slice + 16q + 8h of the stage.
    uint4 a[S::kSlicesPerWarp][kTiles][2][2],
        b[S::kSlicesPerWarp][kXTiles][2];
    // The norm's scale at the same k as x (NoNorm: none).
    uint4 gs[Norm::kOn ? S::kSlicesPerWarp : 1][2];
#pragma unroll
    for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = 64 * (warp + i * S::kWarps) + 16 * q + 8 * h;
        const bool kOk = k < st.kLen;
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int row = 16 * t + 8 * half + g;
            a[i][t][half][h] =
                kOk && row < st.rows
                    ? *reinterpret_cast<const uint4 *>(
                          base + row * S::kRowBytes + 2 * k)
                    : zero;
          }
#pragma unroll
        for (int mt = 0; mt < kXTiles; ++mt)
          b[i][mt][h] = kOk && 8 * mt + g < M
                            ? *reinterpret_cast<const uint4 *>(
                                  x + (8 * mt + g) * K + st.kA + k)
                            : zero;
        if constexpr (Norm::kOn)
          gs[i][h] = kOk && g < M ? norm.scaleAt(st.kA + k) : zero;
      }
    // Release the stage (each thread its own reads); thread 0 refills the
    // one before once all have.
    nv::mbarrierArrive(empty + slot);
    if (threadIdx.x == 0 && s >= 1 && s - 1 + ring < total) {
      const int32_t prev = slot == 0 ? ring - 1 : slot - 1;
      nv::mbarrierWait(empty + prev, plan.phase(prev, slot == 0 ? lap - 1 : lap));
      plan.issue(s - 1 + ring);
    }
    if constexpr (Norm::kOn) {
      // x's rows normalised (and, over the first row group, their sums of
      // squares), now that the stage is free again.
#pragma unroll
      for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int mt = 0; mt < kXTiles; ++mt) {
            if (sumsInRing && group == 0)
              sumSq[mt] += nv::sumSq8<T>(b[i][mt][h]);
            b[i][mt][h] = norm.template apply<T>(b[i][mt][h], gs[i][h]);
          }
    }

#pragma unroll
    for (int i = 0; i < S::kSlicesPerWarp; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
#pragma unroll
          for (int mt = 0; mt < kXTiles; ++mt)
            nv::mma16816Chunks<T>(acc[t][mt], a[i][t][0][h], a[i][t][1][h],
                                  b[i][mt][h]);

    if (++slot == ring) {
      slot = 0;
      ++lap;
    }
    if (++chunk != chunks)
      continue;
    chunk = 0;
    // The row group is done: the warps' partials meet in shared memory and
    // each output adds them in a fixed order.
    float *part = scratch + (S::kFold ? 0 : (group & 1) * S::kSlots *
                                                 S::kSlotFloats);
    if constexpr (Norm::kOn) {
      // Row 8mt + g's share of this warp, before the barrier below.
      if (sumsInRing && group == 0)
#pragma unroll
        for (int mt = 0; mt < kXTiles; ++mt) {
          float ss = sumSq[mt];
          ss += __shfl_xor_sync(0xffffffffu, ss, 1);
          ss += __shfl_xor_sync(0xffffffffu, ss, 2);
          if (q == 0)
            normSums()[warp * kNormRows + 8 * mt + g] = ss;
        }
    }
    ++group;
    const int round = warp / S::kSlots;
    float *slotOf = part + (warp % S::kSlots) * S::kSlotFloats;
    auto each = [&](auto f) {
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int mt = 0; mt < kXTiles; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            f(slotOf[(16 * t + g + (e >= 2 ? 8 : 0)) * S::kXRows + 8 * mt +
                     2 * q + (e & 1)],
              acc[t][mt][e]);
    };
#pragma unroll
    for (int r = 0; r < S::kRounds; ++r) {
      if (round == r)
        each([r](float &slotV, float &v) {
          slotV = r == 0 ? v : slotV + v;
          v = 0.f;
        });
      __syncthreads();
    }
    const int32_t m32 = int32_t(M), outs = int32_t(st.rows) * m32;
    for (int32_t idx = threadIdx.x; idx < outs; idx += S::kWarps * 32) {
      const int32_t row = idx / m32, m = idx - row * m32;
      float v = 0.f;
#pragma unroll
      for (int wv = 0; wv < S::kSlots; ++wv)
        v += part[wv * S::kSlotFloats + row * S::kXRows + m];
      out(m, st.rowA + row, norm.scale(m) * v);
    }
    if (S::kFold) // one buffer: the next group's partials wait for the sums
      __syncthreads();
  }
  if (threadIdx.x == 0)
    plan.finish();
  __syncthreads(); // the next task reads the parity and reuses the slots
}

/// out(m, n, x[m, k0:k1] . w[n, k0:k1]) for m < M <= 32, n in [n0, n1),
/// x's rows through `norm` (LinearNorm.cuh), through a ring of `stages`
/// stages (linearRingStages) in `smem`; started: linearRingStart ran with
/// the same arguments since the last body. k0, k1 and K multiples of 8; x
/// and w 16-byte aligned, 16-bit elements.
template <int kThreads, typename T, typename Norm, typename Out>
__device__ void linearRing(const T *x, const T *w, int64_t M, int64_t K,
                           int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                           int64_t stages, char *smem, bool started,
                           const Norm &norm, const Out &out) {
  withRingShape<kThreads>(M, [&](auto shape) {
    linearRingShaped<decltype(shape)>(x, w, M, K, n0, n1, k0, k1, stages, smem,
                                      started, norm, out);
  });
}

} // namespace detail
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_LINEARRING_CUH
