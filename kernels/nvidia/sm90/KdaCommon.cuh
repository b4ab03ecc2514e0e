//===- KdaCommon.cuh - What the sm90 KDA phases share ----------*- CUDA -*-===//
//
// The names both KDA phases (KdaIntraBodies.cuh, KdaScanBodies.cuh) use:
// the host's operand struct and chunk list, the shared memory each path
// needs (which the launch reads too), and the fast path's tile shape and
// shared-memory row strides.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDACOMMON_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDACOMMON_CUH

#include "kernels/host/KdaBodies.h"
#include "kernels/nvidia/Numerics.cuh"
#include "kernels/nvidia/sm90/Aliases.cuh"

#include <cstdint>

namespace loom {
namespace sm90 {

/// The host's operand struct and gate enum: the emitted code fills them the
/// same way.
template <typename T> using KdaParams = host::KdaParams<T>;
using KdaGate = host::KdaGate;

//===----------------------------------------------------------------------===//
// Chunk list and workspace
//===----------------------------------------------------------------------===//

// One copy for every target: kernels/common/KdaChunks.h.
using namespace ::loom::kda;

//===----------------------------------------------------------------------===//
// Shared memory
//===----------------------------------------------------------------------===//

/// Phase 0 (generic path) with everything in shared memory.
__host__ __device__ constexpr int64_t kdaIntraSmemBytes(int64_t C, int64_t K,
                                                        int64_t V) {
  return 4 * (C * C + C + K + (3 * K + V) * (C + 1));
}
/// Phase 0 (generic path) with the big arrays in the workspace slot.
__host__ __device__ constexpr int64_t kdaIntraMinSmemBytes(int64_t C,
                                                           int64_t K) {
  return 4 * (C * C + C + K);
}
/// Phase 1 (generic path).
__host__ __device__ constexpr int64_t kdaScanSmemBytes(int64_t C, int64_t K) {
  const int64_t kp = (K + 3) / 4 * 4;
  return 4 * (64 * kp + 2 * C * kp + C * C + 64 * C + kp);
}

//===----------------------------------------------------------------------===//
// The fast path (tensor cores): C = 64, K = 128 (and V = 128 in phase 0)
//===----------------------------------------------------------------------===//

namespace kda_fast {
constexpr int kC = 64;   ///< chunk rows
constexpr int kK = 128;  ///< key channels
constexpr int kV = 128;  ///< value channels in phase 0 (q, k, g, v rows alike)
constexpr int kSub = 16; ///< sub-chunk rows (the decay reference granule)
// Row strides (elements) of the shared arrays, chosen so that the fragment
// loads are free of bank conflicts: an 8-byte load of (row g, col 2q) wants
// stride = 8 (mod 32) floats; a 4-byte load of (row 2q, col g) wants twice
// the stride = 8 (mod 32); 16-bit rows of 136 give (4 g + q) distinct words.
constexpr int kRawStride = 136; ///< 16-bit input rows (q, k, g, v)
constexpr int kGStride = 132;   ///< fp32 G, then K e^G (read as (2q, g))
constexpr int kMStride = 72;    ///< fp32 64 x 64 matrices (read as (g, 2q))
constexpr int kRowStride = 136; ///< fp32 w / qg rows in phase 1 ((g, 2q))
constexpr int kKdStride = 132;  ///< fp32 kd rows in phase 1 ((2q, g))

/// Phase 0: one input stage (q, k, g, v as 16-bit rows).
constexpr int64_t kIntraStageBytes = 4 * kC * kRawStride * 2;
/// Phase 0 without the stages: G, M, X (Aqk, then the inverse) and the
/// per-row / per-channel vectors (beta, 1/|q|, 1/|k|; G_last, half sums).
constexpr int64_t kIntraWorkBytes =
    4 * (kC * kGStride + 2 * kC * kMStride + 3 * kC + 2 * kK);
} // namespace kda_fast

/// Phase 0 fast path with `stages` input buffers (2: the next chunk loads
/// while this one computes; 1: it loads after).
__host__ __device__ constexpr int64_t kdaIntraFastSmemBytes(int64_t stages) {
  return stages * kda_fast::kIntraStageBytes + kda_fast::kIntraWorkBytes;
}

/// Phase 1 fast path for blocks of 16 * nvt state columns (nvt = 1 or 2).
__host__ __device__ constexpr int64_t kdaScanFastSmemBytes(int64_t nvt) {
  return 4 * (2 * kda_fast::kC * kda_fast::kRowStride // w, 2 buffers
              + 2 * kda_fast::kC * (16 * nvt + 4)     // u, 2 buffers
              + kda_fast::kC * kda_fast::kRowStride   // qg
              + kda_fast::kC * kda_fast::kKdStride    // kd
              + kda_fast::kC * kda_fast::kMStride     // aqk
              + kda_fast::kK                          // eg
              + 16 * nvt * kda_fast::kMStride         // v_new^T
              + 16 * nvt * kda_fast::kRowStride)      // S^T
         + 2 * 8 * (64 / (8 / nvt)) * 16;             // o staging
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_KDACOMMON_CUH
