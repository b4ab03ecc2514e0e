//===- KdaBodies.cuh - Device task bodies for KDA prefill ------*- CUDA -*-===//
//
// Block-cooperative versions of kernels/host/KdaBodies.h: the same phases,
// chunk numbering, per-(chunk, head) workspace slot layout (w, qg, kd, u,
// aqk, eg in fp32; rows past a partial chunk zero) and KdaParams. The
// algebra is the host's (see its header).
//
// Two paths per phase, chosen at run time:
//  * The fast path (C = 64, K = 128, V = 128 in phase 0, 16-bit q/k/v/g/o,
//    aligned buffers, enough shared memory): tensor cores (tf32 mma.sync),
//    described above kdaIntraFastOne and kdaScanFastBlock.
//  * The generic path (any C <= 64, K, V), FFMA only:
//    phase 0 per (chunk, head), all in shared memory when it fits
//    (kdaIntraSmemBytes), else in the slot's own regions: normalised q, k
//    and the gate; its prefix sum G (log2 units); the pairs j <= i with one
//    exp per pair and channel (4 x 4 register blocks); qg, kd and the
//    right-hand sides; forward substitution for [w | u], a thread per
//    column. Phase 1 per (sequence, head, V block of <= 64): the state block
//    in shared memory, each chunk's operands staged by cp.async,
//    double-buffered: v_new = u - w S, o = qg S + Aqk v_new,
//    S = diag(eg) S + kd^T v_new.
// Channel-indexed arrays of the generic phase 0 live transposed,
// [channel][row] with an odd row stride, so a warp reading one row across
// channels and a thread walking its own channel are both free of bank
// conflicts.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH

#include "kernels/host/KdaBodies.h"
#include "kernels/nvidia/Numerics.cuh"
#include "kernels/nvidia/sm90/KdaTf32.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

namespace nv = ::loom::nvidia;
using nv::ceilDiv;
using nv::imax;
using nv::imin;
using nv::roundUp;

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

//===----------------------------------------------------------------------===//
// Phase 0: intra-chunk
//===----------------------------------------------------------------------===//

namespace detail {

__device__ __forceinline__ float kdaSoftplus(float x) {
  return x > 20.f ? x : log1pf(expf(x));
}
__device__ __forceinline__ float kdaGate(KdaGate mode, float aLog,
                                         float lowerBound, float x) {
  const float a = expf(aLog);
  if (mode == KdaGate::Bounded)
    return lowerBound * nv::sigmoid(a * x);
  return -a * kdaSoftplus(x);
}

/// Element (channel c, row i) of a channel-by-row array.
struct KdaView {
  float *base;
  int64_t cStride, iStride;
  __device__ __forceinline__ float &operator()(int64_t c, int64_t i) const {
    return base[c * cStride + i * iStride];
  }
};

/// k -> (row, col) with col <= row, k = row (row + 1) / 2 + col.
__device__ __forceinline__ void kdaTriangle(int64_t k, int64_t &row,
                                            int64_t &col) {
  int64_t r = int64_t((sqrtf(8.f * float(k) + 1.f) - 1.f) * 0.5f);
  while ((r + 1) * (r + 2) / 2 <= k)
    ++r;
  while (r * (r + 1) / 2 > k)
    --r;
  row = r;
  col = k - r * (r + 1) / 2;
}

/// Phase 0 for one (chunk, head).
template <int kThreads, typename T>
__device__ void kdaIntraChunkOne(const KdaParams<T> &p, const KdaChunk &ch,
                                 int64_t h, const KdaSlotT<float> &s,
                                 bool inSmem, char *smem) {
  constexpr int kWarps = kThreads / 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  const int64_t L = ch.len;
  float *lm = reinterpret_cast<float *>(smem); // [C][C] diag(beta) M
  float *beta = lm + C * C;                    // [C]
  float *gLast = beta + C;                     // [K] G_{L-1}, log2 units
  KdaView gT, qT, kT, uT;
  if (inSmem) {
    const int64_t cs = C + 1;
    float *big = gLast + K;
    gT = {big, cs, 1};
    qT = {big + K * cs, cs, 1};
    kT = {big + 2 * K * cs, cs, 1};
    uT = {big + 3 * K * cs, cs, 1};
  } else {
    gT = {s.w, 1, K};
    qT = {s.qg, 1, K};
    kT = {s.kd, 1, K};
    uT = {s.u, 1, V};
  }

  // 1. beta; normalised q and k; the raw gate (zero past L, so G stays
  //    G_{L-1} there and every value stays finite).
  const float aLog = p.aLog[h];
  const float *dtBias = p.dtBias + h * K;
  for (int64_t i = tid; i < C; i += kThreads)
    beta[i] = i < L ? nv::sigmoid(nv::ldF(p.beta, (ch.start + i) * H + h)) : 0.f;
  for (int64_t i = warp; i < C; i += kWarps) {
    if (i >= L) {
      for (int64_t c = lane; c < K; c += 32)
        qT(c, i) = kT(c, i) = gT(c, i) = 0.f;
      continue;
    }
    const int64_t row = (ch.start + i) * H + h;
    const T *qr = p.q + row * K, *kr = p.k + row * K;
    float qs = 0.f, ks = 0.f;
    for (int64_t c = lane; c < K; c += 32) {
      const float qv = nv::ldF(qr, c), kv = nv::ldF(kr, c);
      qs += qv * qv;
      ks += kv * kv;
    }
    qs = nv::warpSum(qs);
    ks = nv::warpSum(ks);
    const float qInv = p.qkL2norm ? 1.f / sqrtf(qs + host::kKdaNormEps) : 1.f;
    const float kInv = p.qkL2norm ? 1.f / sqrtf(ks + host::kKdaNormEps) : 1.f;
    for (int64_t c = lane; c < K; c += 32) {
      qT(c, i) = nv::ldF(qr, c) * qInv;
      kT(c, i) = nv::ldF(kr, c) * kInv;
      gT(c, i) = kdaGate(p.gate, aLog, p.lowerBound,
                         nv::ldF(p.g, row * K + c) + dtBias[c]);
    }
  }
  __syncthreads();

  // 2. Inclusive prefix sum along the rows, stored in log2 units.
  for (int64_t c = tid; c < K; c += kThreads) {
    float run = 0.f;
    for (int64_t i = 0; i < C; ++i) {
      run += gT(c, i);
      gT(c, i) = run * nv::kLog2e;
    }
    gLast[c] = run * nv::kLog2e; // rows >= L added zeros
  }
  __syncthreads();

  // 3. Pairs, a 4 x 4 block per thread: lower-triangle blocks first (so the
  //    busy threads are packed into the first warps), then the upper ones,
  //    which only write zeros.
  {
    const int64_t cb = (C + 3) / 4;
    const int64_t nLower = cb * (cb + 1) / 2;
    for (int64_t item = tid; item < cb * cb; item += kThreads) {
      int64_t bi, bj;
      const bool lower = item < nLower;
      if (lower) {
        kdaTriangle(item, bi, bj);
      } else {
        int64_t a, b;
        kdaTriangle(item - nLower, a, b);
        bi = b;
        bj = a + 1;
      }
      float accK[4][4] = {}, accQ[4][4] = {};
      if (lower) {
        int64_t ir[4], jr[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          ir[r] = nv::imin(4 * bi + r, C - 1);
          jr[r] = nv::imin(4 * bj + r, C - 1);
        }
#pragma unroll 2
        for (int64_t c = 0; c < K; ++c) {
          float gi[4], qi[4], ki[4], gj[4], kj[4];
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            gi[r] = gT(c, ir[r]);
            qi[r] = qT(c, ir[r]);
            ki[r] = kT(c, ir[r]);
            gj[r] = gT(c, jr[r]);
            kj[r] = kT(c, jr[r]);
          }
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int t = 0; t < 4; ++t) {
              // j > i (diagonal blocks only) may overflow: discarded below.
              const float kf = kj[t] * nv::fastExp2(gi[r] - gj[t]);
              accK[r][t] += ki[r] * kf;
              accQ[r][t] += qi[r] * kf;
            }
        }
      }
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int64_t i = 4 * bi + r, j = 4 * bj + t;
          if (i >= C || j >= C)
            continue;
          const bool live = lower && i < L;
          lm[i * C + j] = live && j < i ? beta[i] * accK[r][t] : 0.f;
          s.aqk[i * C + j] = live && j <= i ? p.scale * accQ[r][t] : 0.f;
        }
    }
  }
  __syncthreads();

  // 4. qg = scale q e^G, kd = k e^{G_last - G}, rhs of w = beta k e^G (in
  //    place of G), rhs of u = beta v, eg = e^{G_last}.
  for (int64_t idx = tid; idx < C * K; idx += kThreads) {
    const int64_t i = idx / K, c = idx % K;
    const float G = gT(c, i);
    float qg = 0.f, kd = 0.f, rhs = 0.f;
    if (i < L) {
      const float e = nv::fastExp2(G), kv = kT(c, i);
      qg = qT(c, i) * p.scale * e;
      rhs = beta[i] * kv * e;
      kd = kv * nv::fastExp2(gLast[c] - G);
    }
    s.qg[i * K + c] = qg; // in place when qT is s.qg
    s.kd[i * K + c] = kd;
    gT(c, i) = rhs;
  }
  for (int64_t c = tid; c < K; c += kThreads)
    s.eg[c] = nv::fastExp2(gLast[c]);
  for (int64_t idx = tid; idx < C * V; idx += kThreads) {
    const int64_t i = idx / V, c = idx % V;
    uT(c, i) =
        i < L ? beta[i] * nv::ldF(p.v, ((ch.start + i) * H + h) * V + c) : 0.f;
  }
  __syncthreads();

  // 5. Forward substitution, a column of [w | u] per thread, rows in order
  //    and each row's terms in order m = 0..i-1, as the host does.
  for (int64_t col = tid; col < K + V; col += kThreads) {
    const KdaView X = col < K ? gT : uT;
    const int64_t c = col < K ? col : col - K;
    for (int64_t i = 1; i < L; ++i) {
      const float *lmi = lm + i * C;
      float v = X(c, i);
      for (int64_t m = 0; m < i; ++m)
        v -= lmi[m] * X(c, m);
      X(c, i) = v;
    }
  }
  __syncthreads();

  // 6. Row-major w and u into the slot (already there without shared memory).
  if (inSmem) {
    for (int64_t idx = tid; idx < C * K; idx += kThreads)
      s.w[idx] = gT(idx % K, idx / K);
    for (int64_t idx = tid; idx < C * V; idx += kThreads)
      s.u[idx] = uT(idx % V, idx / V);
  }
  __syncthreads(); // shared memory is reused by the next chunk
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Phase 0, fast path: C = 64, K = V = 128, 16-bit inputs, 256 threads
//===----------------------------------------------------------------------===//
//
// Per (chunk, head), with G the prefix sum of the gate in log2 units:
//   A. q, k, g, v rows arrive by cp.async (the next chunk's while this one
//      computes, when two stages fit); rows past the chunk are zero-filled.
//   B. beta, 1/|q|, 1/|k| (a warp per row); the gate and its prefix sum (a
//      thread per channel and half chunk; the halves joined after a barrier).
//   C. M = diag(beta) StrictLower(K K^T .e) and Aqk inside each diagonal
//      16 x 16 block: per pair and channel, 2^{G_i - G_j} <= 1 (MUFU), a
//      warp per 4 x 4 pair block with the lanes over the channels, summed
//      across lanes by a 31-shuffle transpose reduction.
//   D. The six blocks below the diagonal blocks on the tensor cores: with
//      b = G of the row before sub-chunk s, row i in s and column j before
//      it, 2^{G_i - G_j} = 2^{G_i - b} 2^{b - G_j}, both factors <= 1 (no
//      overflow for any gate; an underflow only drops a term below 2^-126).
//      q, k of rows i times 2^{G_i - b}, k of columns j times 2^{b - G_j},
//      multiplied in 3xTF32 (fp32-accurate).
//   E. qg = scale q 2^G, kd = k 2^{G_last - G}, eg = 2^{G_last} and Aqk go
//      to the slot; K 2^G replaces G.
//   F. X = (I + StrictLower(M))^-1 by 16 x 16 blocks: the diagonal blocks by
//      forward substitution (a thread per column), then block distances
//      1, 2, 3: X_st = -X_ss sum_{t <= r < s} M_sr X_rt (fp32 FMA); then
//      X diag(beta).
//   G. w = X diag(beta) (K 2^G) and u = X diag(beta) V on the tensor cores
//      (3xTF32 for w; V is exact in tf32 so u takes 2 products), each warp
//      two 8-column tiles of w and two of u, straight to the slot.
// Every slot value equals the host's up to fp32 rounding.

namespace detail {

/// Gate of one element, with a = e^{A_log} hoisted.
__device__ __forceinline__ float kdaGateA(KdaGate mode, float a,
                                          float lowerBound, float x) {
  if (mode == KdaGate::Bounded)
    return lowerBound * nv::sigmoid(a * x);
  return -a * kdaSoftplus(x);
}

/// One level of kdaTransposeReduce32: lanes that differ in bit W swap
/// halves of their first 2W values and add.
template <int W>
__device__ __forceinline__ void kdaReduceLevel(float (&v)[32], int lane) {
  const bool upper = (lane & W) != 0;
#pragma unroll
  for (int i = 0; i < W; ++i) {
    const float send = upper ? v[i] : v[i + W];
    const float keep = upper ? v[i + W] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, W);
  }
  if constexpr (W > 1)
    kdaReduceLevel<W / 2>(v, lane);
}

/// Sum over the warp of 32 values at once: lane l gets the total of v[l]
/// (31 shuffles instead of 32 x 5).
__device__ __forceinline__ float kdaTransposeReduce32(float (&v)[32],
                                                      int lane) {
  kdaReduceLevel<16>(v, lane);
  return v[0];
}

/// Two adjacent 16-bit values (4-byte aligned) as fp32.
template <typename T> __device__ __forceinline__ float2 kdaPair(const T *p) {
  static_assert(sizeof(T) == 2, "16-bit storage");
  const uint32_t w = *reinterpret_cast<const uint32_t *>(p);
  return make_float2(nv::toF32(T{uint16_t(w & 0xffffu)}),
                     nv::toF32(T{uint16_t(w >> 16)}));
}

/// Pointers into the phase-0 fast-path shared memory.
template <typename T> struct KdaIntraSmem {
  const T *q, *k, *g, *v; // this chunk's stage, [64][kRawStride]
  float *G;               // [64][kGStride], later K 2^G
  float *M;               // [64][kMStride]; upper blocks: scratch in F
  float *X;               // [64][kMStride]: Aqk, then the inverse
  float *beta, *invq, *invk, *gLast, *half; // [64] x 3, [128] x 2
};

/// A. Queues the cp.async loads of one chunk's q, k, g, v rows into a stage
/// (rows >= len zero-filled, nothing read for them).
template <int kThreads, typename T>
__device__ void kdaIntraFastLoad(const KdaParams<T> &p, const KdaChunk &ch,
                                 int64_t h, T *stage) {
  using namespace kda_fast;
  static_assert(kV == kK, "q, k, g and v rows share one stage layout");
  constexpr int kPieces = kK * 2 / 16; // 16-byte pieces per row
  const int64_t H = p.numHeads;
  for (int idx = threadIdx.x; idx < 4 * kC * kPieces; idx += kThreads) {
    const int arr = idx / (kC * kPieces), rem = idx % (kC * kPieces);
    const int i = rem / kPieces, pc = rem % kPieces;
    const T *base = arr == 0 ? p.q : arr == 1 ? p.k : arr == 2 ? p.g : p.v;
    const bool valid = i < ch.len;
    const T *src =
        base + ((valid ? ch.start + i : ch.start) * H + h) * kK + 8 * pc;
    nv::cpAsync16(stage + (arr * kC + i) * kRawStride + 8 * pc, src, valid);
  }
}

/// B-G for one (chunk, head) whose inputs are in sm's stage.
template <int kThreads, typename T>
__device__ void kdaIntraFastOne(const KdaParams<T> &p, const KdaChunk &ch,
                                int64_t h, const KdaSlotT<float> &slot,
                                const KdaIntraSmem<T> &sm) {
  using namespace kda_fast;
  using namespace kda_tc;
  static_assert(kThreads == 256, "the fast path maps work to 8 warps");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int64_t H = p.numHeads;
  const int L = int(ch.len);
  const float scale = p.scale;

  // B. beta; 1/|q|, 1/|k| (a warp per row).
  if (tid < kC)
    sm.beta[tid] =
        tid < L ? nv::sigmoid(nv::ldF(p.beta, (ch.start + tid) * H + h)) : 0.f;
  for (int i = warp; i < kC; i += 8) {
    float qs = 0.f, ks = 0.f;
#pragma unroll
    for (int m = 0; m < kK / 32; ++m) {
      const float qv = nv::toF32(sm.q[i * kRawStride + lane + 32 * m]);
      const float kv = nv::toF32(sm.k[i * kRawStride + lane + 32 * m]);
      qs += qv * qv;
      ks += kv * kv;
    }
    qs = nv::warpSum(qs);
    ks = nv::warpSum(ks);
    if (lane == 0) {
      sm.invq[i] = p.qkL2norm ? 1.f / sqrtf(qs + host::kKdaNormEps) : 1.f;
      sm.invk[i] = p.qkL2norm ? 1.f / sqrtf(ks + host::kKdaNormEps) : 1.f;
    }
  }
  //    The gate (zero past L, so G stays G_{L-1} there) and its prefix sum:
  //    a thread per channel and half chunk.
  {
    const int c = tid & (kK - 1), half = tid >> 7;
    const float a = expf(p.aLog[h]), dt = p.dtBias[h * kK + c];
    float run = 0.f;
#pragma unroll 4
    for (int r = 0; r < kC / 2; ++r) {
      const int i = half * (kC / 2) + r;
      const float x = i < L ? kdaGateA(p.gate, a, p.lowerBound,
                                       nv::toF32(sm.g[i * kRawStride + c]) + dt)
                            : 0.f;
      run += x;
      sm.G[i * kGStride + c] = run; // natural units, local prefix
    }
    if (half == 0)
      sm.half[c] = run;
    __syncthreads();
    const float off = half ? sm.half[c] : 0.f;
#pragma unroll 4
    for (int r = 0; r < kC / 2; ++r) {
      const int i = half * (kC / 2) + r;
      sm.G[i * kGStride + c] = (sm.G[i * kGStride + c] + off) * nv::kLog2e;
    }
    if (half)
      sm.gLast[c] = (run + off) * nv::kLog2e;
  }
  __syncthreads();

  // C. Diagonal 16 x 16 blocks, per pair: 24 full 4 x 4 blocks (below the
  //    4 x 4 diagonal) and 16 triangular ones; each warp 3 + 2.
  {
    // kTri: a block on the 4 x 4 diagonal (pairs t <= r only).
    auto pairBlock = [&](auto kTri, int s, int bi, int bj) {
      constexpr bool tri = decltype(kTri)::value;
      const int i0 = s * kSub + 4 * bi, j0 = s * kSub + 4 * bj;
      float acc[32];
#pragma unroll
      for (int e = 0; e < 32; ++e)
        acc[e] = 0.f;
        // The lane's channels: 2 lane, 2 lane + 1 and 64 more (pairs: one
        // 4-byte load of two 16-bit values, one 8-byte load of two G's).
#pragma unroll 1
      for (int m = 0; m < kK / 64; ++m) {
        const int c = 2 * lane + 64 * m;
        float2 gi[4], qi[4], ki[4], gj[4], kj[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          gi[r] =
              *reinterpret_cast<const float2 *>(sm.G + (i0 + r) * kGStride + c);
          gj[r] =
              *reinterpret_cast<const float2 *>(sm.G + (j0 + r) * kGStride + c);
          qi[r] = kdaPair(sm.q + (i0 + r) * kRawStride + c);
          ki[r] = kdaPair(sm.k + (i0 + r) * kRawStride + c);
          kj[r] = kdaPair(sm.k + (j0 + r) * kRawStride + c);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            if (tri && t > r)
              continue;
            if (tri && t == r) {
              acc[16 + 4 * r + t] += qi[r].x * ki[r].x + qi[r].y * ki[r].y;
              continue;
            }
            const float kf0 = kj[t].x * nv::fastExp2(gi[r].x - gj[t].x);
            const float kf1 = kj[t].y * nv::fastExp2(gi[r].y - gj[t].y);
            acc[4 * r + t] += ki[r].x * kf0 + ki[r].y * kf1;
            acc[16 + 4 * r + t] += qi[r].x * kf0 + qi[r].y * kf1;
          }
      }
      const float val = kdaTransposeReduce32(acc, lane);
      const int r = (lane & 15) >> 2, t = lane & 3;
      const int i = i0 + r, j = j0 + t;
      if (lane < 16) {
        if (j < i)
          sm.M[i * kMStride + j] = sm.beta[i] * sm.invk[i] * sm.invk[j] * val;
      } else if (j <= i) {
        sm.X[i * kMStride + j] = scale * sm.invq[i] * sm.invk[j] * val;
      }
    };
    // Full blocks: index b -> sub-chunk b / 6, (bi, bj) the (b % 6)-th pair
    // of (1,0) (2,0) (2,1) (3,0) (3,1) (3,2).
#pragma unroll 1
    for (int b = warp; b < 24; b += 8) {
      const int s = b / 6, pr = b % 6;
      const int bi = pr < 1 ? 1 : pr < 3 ? 2 : 3;
      const int bj = pr < 1 ? 0 : pr < 3 ? pr - 1 : pr - 3;
      pairBlock(std::false_type{}, s, bi, bj);
    }
#pragma unroll 1
    for (int b = warp; b < 16; b += 8)
      pairBlock(std::true_type{}, b / 4, b % 4, b % 4);
  }

  // D. Blocks (s, t), t < s, of 16 x 16: warp w < 6 takes the w-th of
  //    (1,0) (2,0) (2,1) (3,0) (3,1) (3,2).
  if (warp < 6) {
    const int s = warp < 1 ? 1 : warp < 3 ? 2 : 3;
    const int t = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp - 3;
    const int ref = s * kSub - 1;
    const int ia = s * kSub + g, ib = ia + 8;
    float accQ[2][4] = {}, accK[2][4] = {};
#pragma unroll 2
    for (int kk = 0; kk < kK / 8; ++kk) {
      const int c = 8 * kk + 2 * q; // this lane's channels c, c + 1
      auto G2 = [&](int row) {
        return *reinterpret_cast<const float2 *>(sm.G + row * kGStride + c);
      };
      const float2 gb = G2(ref), gia = G2(ia), gib = G2(ib);
      // Row factors 2^{G_i - b} for rows ia, ib and channels c, c + 1.
      const float fa00 = nv::fastExp2(gia.x - gb.x);
      const float fa01 = nv::fastExp2(gia.y - gb.y);
      const float fa10 = nv::fastExp2(gib.x - gb.x);
      const float fa11 = nv::fastExp2(gib.y - gb.y);
      const float qa = sm.invq[ia], qb = sm.invq[ib];
      const float ka = sm.invk[ia], kb = sm.invk[ib];
      const float2 qia = kdaPair(sm.q + ia * kRawStride + c);
      const float2 qib = kdaPair(sm.q + ib * kRawStride + c);
      const float2 kia = kdaPair(sm.k + ia * kRawStride + c);
      const float2 kib = kdaPair(sm.k + ib * kRawStride + c);
      uint32_t aQh[4], aQl[4], aKh[4], aKl[4];
      // Fragment order: (ia, c), (ib, c), (ia, c + 1), (ib, c + 1).
      splitTf32(qia.x * qa * fa00, aQh[0], aQl[0]);
      splitTf32(qib.x * qb * fa10, aQh[1], aQl[1]);
      splitTf32(qia.y * qa * fa01, aQh[2], aQl[2]);
      splitTf32(qib.y * qb * fa11, aQh[3], aQl[3]);
      splitTf32(kia.x * ka * fa00, aKh[0], aKl[0]);
      splitTf32(kib.x * kb * fa10, aKh[1], aKl[1]);
      splitTf32(kia.y * ka * fa01, aKh[2], aKl[2]);
      splitTf32(kib.y * kb * fa11, aKh[3], aKl[3]);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int j = t * kSub + 8 * nt + g;
        const float kjn = sm.invk[j];
        const float2 kj = kdaPair(sm.k + j * kRawStride + c), gj = G2(j);
        uint32_t bh0, bl0, bh1, bl1;
        splitTf32(kj.x * kjn * nv::fastExp2(gb.x - gj.x), bh0, bl0);
        splitTf32(kj.y * kjn * nv::fastExp2(gb.y - gj.y), bh1, bl1);
        mmaTf32(accQ[nt], aQl[0], aQl[1], aQl[2], aQl[3], bh0, bh1);
        mmaTf32(accQ[nt], aQh[0], aQh[1], aQh[2], aQh[3], bl0, bl1);
        mmaTf32(accQ[nt], aQh[0], aQh[1], aQh[2], aQh[3], bh0, bh1);
        mmaTf32(accK[nt], aKl[0], aKl[1], aKl[2], aKl[3], bh0, bh1);
        mmaTf32(accK[nt], aKh[0], aKh[1], aKh[2], aKh[3], bl0, bl1);
        mmaTf32(accK[nt], aKh[0], aKh[1], aKh[2], aKh[3], bh0, bh1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int j = t * kSub + 8 * nt + 2 * q;
      sm.M[ia * kMStride + j] = sm.beta[ia] * accK[nt][0];
      sm.M[ia * kMStride + j + 1] = sm.beta[ia] * accK[nt][1];
      sm.M[ib * kMStride + j] = sm.beta[ib] * accK[nt][2];
      sm.M[ib * kMStride + j + 1] = sm.beta[ib] * accK[nt][3];
      sm.X[ia * kMStride + j] = scale * accQ[nt][0];
      sm.X[ia * kMStride + j + 1] = scale * accQ[nt][1];
      sm.X[ib * kMStride + j] = scale * accQ[nt][2];
      sm.X[ib * kMStride + j + 1] = scale * accQ[nt][3];
    }
  }
  __syncthreads();

  // E. qg, kd, eg and Aqk to the slot; G -> K 2^G.
  for (int idx = tid; idx < kC * kK / 4; idx += kThreads) {
    const int i = idx / (kK / 4), c = 4 * (idx % (kK / 4));
    float qg[4], kd[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float Gv = sm.G[i * kGStride + c + e];
      const float ex = nv::fastExp2(Gv);
      const float kv = nv::toF32(sm.k[i * kRawStride + c + e]) * sm.invk[i];
      qg[e] = nv::toF32(sm.q[i * kRawStride + c + e]) * sm.invq[i] * scale * ex;
      kd[e] = kv * nv::fastExp2(sm.gLast[c + e] - Gv);
      sm.G[i * kGStride + c + e] = kv * ex;
    }
    *reinterpret_cast<float4 *>(slot.qg + i * kK + c) =
        make_float4(qg[0], qg[1], qg[2], qg[3]);
    *reinterpret_cast<float4 *>(slot.kd + i * kK + c) =
        make_float4(kd[0], kd[1], kd[2], kd[3]);
  }
  if (tid < kK)
    slot.eg[tid] = nv::fastExp2(sm.gLast[tid]);
  for (int idx = tid; idx < kC * kC / 4; idx += kThreads) {
    const int i = idx / (kC / 4), j = 4 * (idx % (kC / 4));
    float a[4];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      a[e] = j + e <= i ? sm.X[i * kMStride + j + e] : 0.f;
    *reinterpret_cast<float4 *>(slot.aqk + i * kC + j) =
        make_float4(a[0], a[1], a[2], a[3]);
  }
  __syncthreads();

  // F. X = (I + StrictLower(M))^-1. Diagonal blocks: a thread per column.
  if (tid < kC) {
    const int base = (tid >> 4) * kSub, jj = tid & 15;
    float x[kSub];
#pragma unroll
    for (int i = 0; i < kSub; ++i) {
      float acc = 0.f;
#pragma unroll
      for (int m = 0; m < i; ++m)
        acc += sm.M[(base + i) * kMStride + base + m] * x[m];
      x[i] = i == jj ? 1.f : i < jj ? 0.f : -acc;
    }
#pragma unroll
    for (int i = 0; i < kSub; ++i)
      sm.X[(base + i) * kMStride + base + jj] = x[i];
  }
  __syncthreads();
  //    Below the diagonal, by distance d: T = sum_{t<=r<s} M_sr X_rt goes to
  //    the (unused) upper block (t, s) of M, then X_st = -X_ss T.
#pragma unroll 1
  for (int d = 1; d < 4; ++d) {
    const int blocks = 4 - d;
    for (int idx = tid; idx < blocks * kSub * kSub; idx += kThreads) {
      const int t = idx / (kSub * kSub), s = t + d;
      const int a = (idx / kSub) % kSub, b = idx % kSub;
      float acc = 0.f;
      for (int r = t; r < s; ++r)
#pragma unroll 4
        for (int m = 0; m < kSub; ++m)
          acc += sm.M[(s * kSub + a) * kMStride + r * kSub + m] *
                 sm.X[(r * kSub + m) * kMStride + t * kSub + b];
      sm.M[(t * kSub + a) * kMStride + s * kSub + b] = acc;
    }
    __syncthreads();
    for (int idx = tid; idx < blocks * kSub * kSub; idx += kThreads) {
      const int t = idx / (kSub * kSub), s = t + d;
      const int a = (idx / kSub) % kSub, b = idx % kSub;
      float acc = 0.f;
#pragma unroll 4
      for (int m = 0; m < kSub; ++m)
        acc += sm.X[(s * kSub + a) * kMStride + s * kSub + m] *
               sm.M[(t * kSub + m) * kMStride + s * kSub + b];
      sm.X[(s * kSub + a) * kMStride + t * kSub + b] = -acc;
    }
    __syncthreads();
  }
  //    X diag(beta), zero above the diagonal.
  for (int idx = tid; idx < kC * kC; idx += kThreads) {
    const int i = idx / kC, j = idx % kC;
    sm.X[i * kMStride + j] = j <= i ? sm.X[i * kMStride + j] * sm.beta[j] : 0.f;
  }
  __syncthreads();

  // G. w = X (K 2^G), u = X V. Warp w: columns [16 w, 16 w + 16) of both;
  //    row tile r needs k-steps below 16 (r + 1) only (X is lower).
#pragma unroll 1
  for (int rt = 0; rt < kC / 16; ++rt) {
    float accW[2][4] = {}, accU[2][4] = {};
    const int ra = 16 * rt + g, rb = ra + 8;
#pragma unroll 1
    for (int kk = 0; kk < 2 * (rt + 1); ++kk) {
      const int j = 8 * kk + 2 * q;
      const float2 xa =
          *reinterpret_cast<const float2 *>(sm.X + ra * kMStride + j);
      const float2 xb =
          *reinterpret_cast<const float2 *>(sm.X + rb * kMStride + j);
      uint32_t ah[4], al[4];
      splitTf32(xa.x, ah[0], al[0]);
      splitTf32(xb.x, ah[1], al[1]);
      splitTf32(xa.y, ah[2], al[2]);
      splitTf32(xb.y, ah[3], al[3]);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int col = 16 * warp + 8 * nt + g;
        uint32_t bh0, bl0, bh1, bl1;
        splitTf32(sm.G[j * kGStride + col], bh0, bl0);
        splitTf32(sm.G[(j + 1) * kGStride + col], bh1, bl1);
        mmaTf32(accW[nt], al[0], al[1], al[2], al[3], bh0, bh1);
        mmaTf32(accW[nt], ah[0], ah[1], ah[2], ah[3], bl0, bl1);
        mmaTf32(accW[nt], ah[0], ah[1], ah[2], ah[3], bh0, bh1);
        const uint32_t v0 = toTf32(nv::toF32(sm.v[j * kRawStride + col]));
        const uint32_t v1 = toTf32(nv::toF32(sm.v[(j + 1) * kRawStride + col]));
        mmaTf32(accU[nt], al[0], al[1], al[2], al[3], v0, v1);
        mmaTf32(accU[nt], ah[0], ah[1], ah[2], ah[3], v0, v1);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int col = 16 * warp + 8 * nt + 2 * q;
      *reinterpret_cast<float2 *>(slot.w + ra * kK + col) =
          make_float2(accW[nt][0], accW[nt][1]);
      *reinterpret_cast<float2 *>(slot.w + rb * kK + col) =
          make_float2(accW[nt][2], accW[nt][3]);
      *reinterpret_cast<float2 *>(slot.u + ra * kV + col) =
          make_float2(accU[nt][0], accU[nt][1]);
      *reinterpret_cast<float2 *>(slot.u + rb * kV + col) =
          make_float2(accU[nt][2], accU[nt][3]);
    }
  }
  __syncthreads(); // the next chunk reuses the shared memory
}

/// Phase 0 fast path over chunks [c0, c1) of head h.
template <int kThreads, typename T>
__device__ void kdaIntraFast(const KdaParams<T> &p, int64_t c0, int64_t c1,
                             int64_t h, float *workspace, char *smem,
                             int stages) {
  using namespace kda_fast;
  const int64_t C = p.chunkSize;
  T *stage0 = reinterpret_cast<T *>(smem);
  float *work = reinterpret_cast<float *>(smem + stages * kIntraStageBytes);
  KdaIntraSmem<T> sm;
  sm.G = work;
  sm.M = sm.G + kC * kGStride;
  sm.X = sm.M + kC * kMStride;
  sm.beta = sm.X + kC * kMStride;
  sm.invq = sm.beta + kC;
  sm.invk = sm.invq + kC;
  sm.gLast = sm.invk + kC;
  sm.half = sm.gLast + kK;
  constexpr int64_t kStageElems = kIntraStageBytes / sizeof(T);

  KdaChunk ch, next;
  if (c0 >= c1 || !kdaLocateChunk(p.cuSeqlens, p.numSeqs, C, c0, ch))
    return;
  kdaIntraFastLoad<kThreads>(p, ch, h, stage0);
  nv::cpAsyncCommit();
  for (int64_t c = c0; c < c1; ++c) {
    const int buf = stages == 2 ? int((c - c0) & 1) : 0;
    const bool hasNext =
        c + 1 < c1 && kdaLocateChunk(p.cuSeqlens, p.numSeqs, C, c + 1, next);
    if (hasNext && stages == 2) {
      kdaIntraFastLoad<kThreads>(p, next, h, stage0 + (buf ^ 1) * kStageElems);
      nv::cpAsyncCommit();
      nv::cpAsyncWait<1>();
    } else {
      nv::cpAsyncWait<0>();
    }
    __syncthreads();
    const T *st = stage0 + buf * kStageElems;
    sm.q = st;
    sm.k = st + kC * kRawStride;
    sm.g = st + 2 * kC * kRawStride;
    sm.v = st + 3 * kC * kRawStride;
    kdaIntraFastOne<kThreads>(
        p, ch, h, kdaSlot(workspace, c, h, p.numHeads, C, p.dimK, p.dimV), sm);
    if (!hasNext)
      break;
    if (stages == 1) {
      kdaIntraFastLoad<kThreads>(p, next, h, stage0);
      nv::cpAsyncCommit();
    }
    ch = next;
  }
  nv::cpAsyncWait<0>();
}

} // namespace detail

/// Shapes phase 0's fast path covers (it also needs 16-bit inputs, 16-byte
/// aligned buffers and kdaIntraFastSmemBytes(1) of shared memory).
__host__ __device__ constexpr bool kdaIntraFastShape(int64_t C, int64_t K,
                                                     int64_t V) {
  return C == kda_fast::kC && K == kda_fast::kK && V == kda_fast::kV;
}

/// Phase 0, generic path (FFMA; any C <= 64, K, V): kBodySmemTooSmall below
/// kdaIntraMinSmemBytes.
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaIntraChunkGeneric(const KdaParams<T> &p,
                                                     int64_t c0, int64_t c1,
                                                     int64_t h,
                                                     float *workspace,
                                                     char *smem) {
  const int64_t C = p.chunkSize, K = p.dimK, V = p.dimV;
  const uint32_t have = nv::dynamicSmemBytes();
  const bool inSmem = have >= kdaIntraSmemBytes(C, K, V);
  if (!inSmem && have < kdaIntraMinSmemBytes(C, K))
    return nv::kBodySmemTooSmall;
  c1 = nv::imin(c1, p.maxChunks);
  KdaChunk ch;
  for (int64_t c = c0; c < c1; ++c) {
    if (!kdaLocateChunk(p.cuSeqlens, p.numSeqs, C, c, ch))
      return nv::kBodyOk; // chunk indices only grow: the rest are past too
    KdaSlotT<float> s = kdaSlot(workspace, c, h, p.numHeads, C, K, V);
    detail::kdaIntraChunkOne<kThreads>(p, ch, h, s, inSmem, smem);
  }
  return nv::kBodyOk;
}

/// Phase 0, fast path (tensor cores). -1 when the call is outside it (shape,
/// element type, alignment or shared memory), so the caller can fall back.
template <int kThreads, typename T>
__device__ __forceinline__ int32_t kdaIntraChunkFast(const KdaParams<T> &p,
                                                     int64_t c0, int64_t c1,
                                                     int64_t h,
                                                     float *workspace,
                                                     char *smem) {
  if constexpr (sizeof(T) != 2) {
    return -1;
  } else {
    const uint32_t have = nv::dynamicSmemBytes();
    const int stages = have >= kdaIntraFastSmemBytes(2)   ? 2
                       : have >= kdaIntraFastSmemBytes(1) ? 1
                                                          : 0;
    if (!kdaIntraFastShape(p.chunkSize, p.dimK, p.dimV) || stages == 0 ||
        !nv::isAligned16(p.q) || !nv::isAligned16(p.k) ||
        !nv::isAligned16(p.g) || !nv::isAligned16(p.v) ||
        !nv::isAligned16(workspace))
      return -1;
    detail::kdaIntraFast<kThreads>(p, c0, nv::imin(c1, p.maxChunks), h,
                                   workspace, smem, stages);
    return nv::kBodyOk;
  }
}

/// Phase 0 task: global chunks [c0, c1) of head h (indices at or past the
/// run-time chunk count are skipped). The fast path where it applies, else
/// the generic one.
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaIntraChunk(const KdaParams<T> &p, int64_t c0,
                                              int64_t c1, int64_t h,
                                              float *workspace, char *smem) {
  const int32_t fast =
      kdaIntraChunkFast<kThreads>(p, c0, c1, h, workspace, smem);
  if (fast >= 0)
    return fast;
  return kdaIntraChunkGeneric<kThreads>(p, c0, c1, h, workspace, smem);
}

//===----------------------------------------------------------------------===//
// Phase 1: state scan
//===----------------------------------------------------------------------===//

namespace detail {

/// Copies `rows` x `cols` floats (source row stride sStride) to shared
/// memory (row stride dStride): cp.async when every 16-byte piece is
/// aligned, plain loads and stores otherwise.
template <int kThreads>
__device__ void kdaStage(float *dst, int64_t dStride, const float *src,
                         int64_t sStride, int64_t rows, int64_t cols,
                         bool async) {
  if (async) {
    const int64_t per = cols / 4;
    for (int64_t idx = threadIdx.x; idx < rows * per; idx += kThreads) {
      const int64_t r = idx / per, c = (idx % per) * 4;
      nv::cpAsync16(dst + r * dStride + c, src + r * sStride + c);
    }
  } else {
    for (int64_t idx = threadIdx.x; idx < rows * cols; idx += kThreads) {
      const int64_t r = idx / cols, c = idx % cols;
      dst[r * dStride + c] = src[r * sStride + c];
    }
  }
}

/// One V sub-block [vs, vs + ncols) (ncols <= 32 kJ) of sequence n, head h.
/// Thread layout: lane owns columns lane + 32 jj; in steps A and B warp w
/// owns chunk rows w + kWarps r; in step C channels 4w + 4 kWarps r + e.
template <int kThreads, int kJ, typename T>
__device__ void kdaScanBlock(const KdaParams<T> &p, int64_t h, int64_t seqStart,
                             int64_t len, int64_t firstChunk, int64_t numChunks,
                             float *state, const float *init, int64_t vs,
                             int64_t ncols, const float *workspace,
                             float *smem) {
  constexpr int kWarps = kThreads / 32;
  constexpr int kRows = (64 + kWarps - 1) / kWarps; // C <= 64
  constexpr int kCR = 4;
  constexpr int64_t kChPerBlock = 4 * kWarps * kCR;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  const int64_t kp = (K + 3) / 4 * 4;
  float *S = smem;           // [kp][64]
  float *bufA = S + kp * 64; // [C][kp]
  float *bufB = bufA + C * kp;
  float *sAqk = bufB + C * kp; // [C][C]
  float *sVn = sAqk + C * C;   // [C][64]
  float *sEg = sVn + C * 64;   // [kp]
  const bool async = K % 4 == 0 && C % 4 == 0 && nv::isAligned16(workspace);

  for (int64_t idx = tid; idx < kp * 64; idx += kThreads) {
    const int64_t c = idx / 64, j = idx % 64;
    S[idx] = c < K && j < ncols && init ? init[c * V + vs + j] : 0.f;
  }
  // Padding columns K..kp of the staged operands stay zero.
  for (int64_t idx = tid; idx < C * (kp - K); idx += kThreads) {
    const int64_t r = idx / (kp - K), c = K + idx % (kp - K);
    bufA[r * kp + c] = bufB[r * kp + c] = 0.f;
  }
  for (int64_t c = K + tid; c < kp; c += kThreads)
    sEg[c] = 0.f;

  auto slotOf = [&](int64_t ci) {
    return kdaSlot(workspace, firstChunk + ci, h, H, C, K, V);
  };
  float *X = bufA, *Y = bufB;
  if (numChunks > 0)
    kdaStage<kThreads>(X, kp, slotOf(0).w, K, C, K, async);
  nv::cpAsyncCommit();

  for (int64_t ci = 0; ci < numChunks; ++ci) {
    const KdaSlotT<const float> s = slotOf(ci);
    const int64_t L = nv::imin(C, len - ci * C), t0 = seqStart + ci * C;
    kdaStage<kThreads>(Y, kp, s.qg, K, C, K, async);
    kdaStage<kThreads>(sAqk, C, s.aqk, C, C, C, async);
    kdaStage<kThreads>(sEg, kp, s.eg, K, 1, K, async);
    nv::cpAsyncCommit();
    nv::cpAsyncWait<1>();
    __syncthreads(); // w (in X) ready

    // A. v_new = u - w S (rows past L: w = u = 0, so v_new = 0).
    {
      float dot[kRows][kJ] = {};
      for (int64_t c = 0; c < kp; c += 4) {
        float sv[4][kJ];
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int jj = 0; jj < kJ; ++jj)
            sv[e][jj] = S[(c + e) * 64 + lane + 32 * jj];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = warp + kWarps * r;
          if (i < C) {
            const float4 wv = *reinterpret_cast<const float4 *>(X + i * kp + c);
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
              dot[r][jj] += wv.x * sv[0][jj] + wv.y * sv[1][jj] +
                            wv.z * sv[2][jj] + wv.w * sv[3][jj];
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = warp + kWarps * r;
        if (i < C)
#pragma unroll
          for (int jj = 0; jj < kJ; ++jj) {
            const int64_t j = lane + 32 * jj;
            const float u = j < ncols ? s.u[i * V + vs + j] : 0.f;
            sVn[i * 64 + j] = u - dot[r][jj];
          }
      }
    }
    __syncthreads(); // v_new ready, X free
    kdaStage<kThreads>(X, kp, s.kd, K, C, K, async);
    nv::cpAsyncCommit();
    nv::cpAsyncWait<1>();
    __syncthreads(); // qg, aqk, eg ready

    // B. o = qg S + Aqk v_new (Aqk is zero above the diagonal).
    {
      float o[kRows][kJ] = {};
      for (int64_t c = 0; c < kp; c += 4) {
        float sv[4][kJ];
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int jj = 0; jj < kJ; ++jj)
            sv[e][jj] = S[(c + e) * 64 + lane + 32 * jj];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = warp + kWarps * r;
          if (i < C) {
            const float4 qv = *reinterpret_cast<const float4 *>(Y + i * kp + c);
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
              o[r][jj] += qv.x * sv[0][jj] + qv.y * sv[1][jj] +
                          qv.z * sv[2][jj] + qv.w * sv[3][jj];
          }
        }
      }
      for (int64_t m = 0; m < C; ++m) {
        float vv[kJ];
#pragma unroll
        for (int jj = 0; jj < kJ; ++jj)
          vv[jj] = sVn[m * 64 + lane + 32 * jj];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int64_t i = warp + kWarps * r;
          if (i < C) {
            const float a = sAqk[i * C + m];
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
              o[r][jj] += a * vv[jj];
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = warp + kWarps * r;
        if (i < L)
#pragma unroll
          for (int jj = 0; jj < kJ; ++jj) {
            const int64_t j = lane + 32 * jj;
            if (j < ncols)
              nv::stF(p.o, ((t0 + i) * H + h) * V + vs + j, o[r][jj]);
          }
      }
    }
    __syncthreads(); // S reads done, Y free
    if (ci + 1 < numChunks)
      kdaStage<kThreads>(Y, kp, slotOf(ci + 1).w, K, C, K, async);
    nv::cpAsyncCommit();
    nv::cpAsyncWait<1>();
    __syncthreads(); // kd (in X) ready

    // C. S = diag(eg) S + kd^T v_new, each (c, j) owned by one thread.
    for (int64_t cb = 0; cb < kp; cb += kChPerBlock) {
      float acc[kCR][4][kJ];
      int64_t c4[kCR];
#pragma unroll
      for (int r = 0; r < kCR; ++r) {
        c4[r] = cb + 4 * warp + 4 * kWarps * r;
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int jj = 0; jj < kJ; ++jj)
            acc[r][e][jj] =
                c4[r] < kp
                    ? sEg[c4[r] + e] * S[(c4[r] + e) * 64 + lane + 32 * jj]
                    : 0.f;
      }
      for (int64_t i = 0; i < L; ++i) {
        float vv[kJ];
#pragma unroll
        for (int jj = 0; jj < kJ; ++jj)
          vv[jj] = sVn[i * 64 + lane + 32 * jj];
#pragma unroll
        for (int r = 0; r < kCR; ++r) {
          if (c4[r] < kp) {
            const float4 kd =
                *reinterpret_cast<const float4 *>(X + i * kp + c4[r]);
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj) {
              acc[r][0][jj] += kd.x * vv[jj];
              acc[r][1][jj] += kd.y * vv[jj];
              acc[r][2][jj] += kd.z * vv[jj];
              acc[r][3][jj] += kd.w * vv[jj];
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kCR; ++r)
        if (c4[r] < kp)
#pragma unroll
          for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
              S[(c4[r] + e) * 64 + lane + 32 * jj] = acc[r][e][jj];
    }
    __syncthreads(); // S updated; X and the chunk operands free
    float *tmp = X;
    X = Y;
    Y = tmp;
  }
  nv::cpAsyncWait<0>();

  for (int64_t idx = tid; idx < K * 64; idx += kThreads) {
    const int64_t c = idx / 64, j = idx % 64;
    if (j < ncols)
      state[c * V + vs + j] = S[idx];
  }
  __syncthreads(); // the next sub-block rewrites the shared memory
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Phase 1, fast path: C = 64, K = 128, column blocks of 16 or 32, 256 threads
//===----------------------------------------------------------------------===//
//
// The state is kept transposed, S^T [16 columns][128 channels] per column
// tile: its m16n8 C tiles are directly the A fragments of the products
// below (KdaTf32.cuh), so nothing is transposed. S^T lives in shared
// memory (fp32); each warp also holds its channel slice in registers, where
// the update accumulates. Warps: kNvt column tiles of 16 x (8 / kNvt) row
// groups; a row group's warp owns 64 / kRq chunk rows in the products and
// 128 / kRq channels in the update. Per chunk, with the slot's w, qg, kd,
// aqk, u, eg staged by cp.async (w and u double-buffered and loaded two
// chunks ahead, qg one, kd / aqk / eg one phase ahead):
//   X phase: v_new^T = u^T - S^T w^T and the partial o^T = S^T qg^T for the
//            warp's rows; v_new^T to shared memory.
//   Y phase: o^T += v_new^T aqk^T (causal tiles only), o rows to global;
//            the warp's slice S^T = eg S^T + v_new^T kd, back to shared
//            memory for the next chunk.
// Two barriers per chunk.
//
// Precision: the two products the state depends on (S^T w^T and v_new^T
// kd) are 3xTF32, so the final state keeps fp32 accuracy over any length;
// o's products are plain tf32 (10-bit mantissa), which keeps o's relative
// RMS error near the bf16 rounding of o itself (~1.7e-3 against fp64).
// bf16 operands instead (one rounding of w, kd, S, v_new each) reach the
// 5e-3 bound on long, slowly decaying sequences (a numpy model of the
// chunked algorithm, 1024 tokens, gates near 0: o 5.1e-3, state 4.7e-3).

namespace detail {

template <typename T> struct KdaScanSmem {
  float *w0, *w1, *u0, *u1, *qg, *kd, *aqk, *eg, *vn, *st;
  T *ost;
  // Selected, not indexed: an indexed pointer pair would live on the stack.
  __device__ float *w(int buf) const { return buf ? w1 : w0; }
  __device__ float *u(int buf) const { return buf ? u1 : u0; }
};

template <int kThreads, int kNvt, typename T>
__device__ void kdaScanFastBlock(const KdaParams<T> &p, int64_t h,
                                 int64_t seqStart, int64_t len,
                                 int64_t firstChunk, int64_t numChunks,
                                 float *state, const float *init, int64_t vs,
                                 const float *workspace, char *smem) {
  using namespace kda_fast;
  using namespace kda_tc;
  static_assert(kThreads == 256, "the fast path maps work to 8 warps");
  constexpr int kNc = 16 * kNvt;    // state columns in this block
  constexpr int kRq = 8 / kNvt;     // row groups (warps per column tile)
  constexpr int kRows = kC / kRq;   // chunk rows per warp
  constexpr int kRt = kRows / 8;    // their n8 tiles
  constexpr int kCt = 16 / kRq;     // channel tiles (of 8) each warp updates
  constexpr int kUStride = kNc + 4; // u rows ((2q, g) loads)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int vt = warp / kRq, rq = warp % kRq;
  const int r0 = rq * kRows;
  const int64_t H = p.numHeads, V = p.dimV, C = kC, K = kK;

  float *f = reinterpret_cast<float *>(smem);
  KdaScanSmem<T> sm;
  sm.w0 = f;
  sm.w1 = sm.w0 + kC * kRowStride;
  sm.u0 = sm.w1 + kC * kRowStride;
  sm.u1 = sm.u0 + kC * kUStride;
  sm.qg = sm.u1 + kC * kUStride;
  sm.kd = sm.qg + kC * kRowStride;
  sm.aqk = sm.kd + kC * kKdStride;
  sm.eg = sm.aqk + kC * kMStride;
  sm.vn = sm.eg + kK;
  sm.st = sm.vn + kNc * kMStride;
  sm.ost = reinterpret_cast<T *>(sm.st + kNc * kRowStride) + warp * kRows * 16;

  auto slotOf = [&](int64_t ci) {
    return kdaSlot(workspace, firstChunk + ci, h, H, C, K, V);
  };
  // cp.async stagers; chunks past the sequence queue nothing.
  auto loadWU = [&](int64_t ci, int buf) {
    if (ci >= numChunks)
      return;
    const KdaSlotT<const float> s = slotOf(ci);
    for (int idx = tid; idx < kC * kK / 4; idx += kThreads) {
      const int r = idx / (kK / 4), c = 4 * (idx % (kK / 4));
      nv::cpAsync16(sm.w(buf) + r * kRowStride + c, s.w + r * K + c);
    }
    for (int idx = tid; idx < kC * kNc / 4; idx += kThreads) {
      const int r = idx / (kNc / 4), c = 4 * (idx % (kNc / 4));
      nv::cpAsync16(sm.u(buf) + r * kUStride + c, s.u + r * V + vs + c);
    }
  };
  auto loadQg = [&](int64_t ci) {
    if (ci >= numChunks)
      return;
    const KdaSlotT<const float> s = slotOf(ci);
    for (int idx = tid; idx < kC * kK / 4; idx += kThreads) {
      const int r = idx / (kK / 4), c = 4 * (idx % (kK / 4));
      nv::cpAsync16(sm.qg + r * kRowStride + c, s.qg + r * K + c);
    }
  };
  auto loadKd = [&](int64_t ci) {
    const KdaSlotT<const float> s = slotOf(ci);
    for (int idx = tid; idx < kC * kK / 4; idx += kThreads) {
      const int r = idx / (kK / 4), c = 4 * (idx % (kK / 4));
      nv::cpAsync16(sm.kd + r * kKdStride + c, s.kd + r * K + c);
    }
    for (int idx = tid; idx < kC * kC / 4; idx += kThreads) {
      const int r = idx / (kC / 4), c = 4 * (idx % (kC / 4));
      nv::cpAsync16(sm.aqk + r * kMStride + c, s.aqk + r * C + c);
    }
    for (int idx = tid; idx < kK / 4; idx += kThreads)
      nv::cpAsync16(sm.eg + 4 * idx, s.eg + 4 * idx);
  };

  // S^T [16 columns][128 channels] of this column tile lives in shared
  // memory (sm.st, fp32); the warp's own channel slice, tiles
  // ct = rq kCt + lt, also in registers: (col g, ch 8ct + 2q), (g, +1),
  // (g + 8, 8ct + 2q), (g + 8, +1), the C layout its update accumulates in.
  float mine[kCt][4];
  auto chOf = [&](int lt) { return 8 * (rq * kCt + lt) + 2 * q; };
  {
    const int64_t col = vs + 16 * vt + g;
#pragma unroll
    for (int lt = 0; lt < kCt; ++lt) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        mine[lt][e] =
            init ? init[(chOf(lt) + (e & 1)) * V + col + 8 * (e >> 1)] : 0.f;
      float *y = sm.st + (16 * vt + g) * kRowStride + chOf(lt);
      *reinterpret_cast<float2 *>(y) = make_float2(mine[lt][0], mine[lt][1]);
      *reinterpret_cast<float2 *>(y + 8 * kRowStride) =
          make_float2(mine[lt][2], mine[lt][3]);
    }
  }

  loadWU(0, 0);
  nv::cpAsyncCommit();
  loadQg(0);
  nv::cpAsyncCommit();
  loadWU(1, 1);
  nv::cpAsyncCommit();

#pragma unroll 1
  for (int64_t ci = 0; ci < numChunks; ++ci) {
    const int buf = int(ci & 1);
    const int64_t L = nv::imin(C, len - ci * C), t0 = seqStart + ci * C;
    nv::cpAsyncWait<1>(); // w, u, qg of chunk ci
    __syncthreads();      // ... and every warp's S^T slice
    loadKd(ci);
    nv::cpAsyncCommit();

    // X phase: v_new^T and S^T qg^T for rows [r0, r0 + kRows).
    float vn[kRt][4] = {}, oa[kRt][4] = {};
    {
      const float *W = sm.w(buf);
#pragma unroll 4
      for (int ct = 0; ct < 16; ++ct) {
        // A = S^T tile ct: {c0, c2, c1, c3} of its C layout.
        const float *y = sm.st + (16 * vt + g) * kRowStride + 8 * ct + 2 * q;
        const float2 lo = *reinterpret_cast<const float2 *>(y);
        const float2 hi = *reinterpret_cast<const float2 *>(y + 8 * kRowStride);
        uint32_t ah[4], al[4];
        splitTf32(lo.x, ah[0], al[0]);
        splitTf32(hi.x, ah[1], al[1]);
        splitTf32(lo.y, ah[2], al[2]);
        splitTf32(hi.y, ah[3], al[3]);
#pragma unroll
        for (int rt = 0; rt < kRt; ++rt) {
          const int off = (r0 + 8 * rt + g) * kRowStride + 8 * ct + 2 * q;
          const float2 wv = *reinterpret_cast<const float2 *>(W + off);
          const float2 qv = *reinterpret_cast<const float2 *>(sm.qg + off);
          uint32_t bh0, bl0, bh1, bl1;
          splitTf32(wv.x, bh0, bl0);
          splitTf32(wv.y, bh1, bl1);
          mmaTf32(vn[rt], al[0], al[1], al[2], al[3], bh0, bh1);
          mmaTf32(vn[rt], ah[0], ah[1], ah[2], ah[3], bl0, bl1);
          mmaTf32(vn[rt], ah[0], ah[1], ah[2], ah[3], bh0, bh1);
          mmaTf32(oa[rt], ah[0], ah[1], ah[2], ah[3], toTf32(qv.x),
                  toTf32(qv.y));
        }
      }
      const float *U = sm.u(buf);
#pragma unroll
      for (int rt = 0; rt < kRt; ++rt) {
        const int row = r0 + 8 * rt + 2 * q, col = 16 * vt + g;
        vn[rt][0] = U[row * kUStride + col] - vn[rt][0];
        vn[rt][1] = U[(row + 1) * kUStride + col] - vn[rt][1];
        vn[rt][2] = U[row * kUStride + col + 8] - vn[rt][2];
        vn[rt][3] = U[(row + 1) * kUStride + col + 8] - vn[rt][3];
        float *x = sm.vn + (16 * vt + g) * kMStride + row;
        *reinterpret_cast<float2 *>(x) = make_float2(vn[rt][0], vn[rt][1]);
        *reinterpret_cast<float2 *>(x + 8 * kMStride) =
            make_float2(vn[rt][2], vn[rt][3]);
      }
    }
    nv::cpAsyncWait<0>(); // kd, aqk, eg
    __syncthreads();      // v_new^T complete; w[buf], u[buf], qg free
    loadQg(ci + 1);
    nv::cpAsyncCommit();
    loadWU(ci + 2, buf);
    nv::cpAsyncCommit();

    // Y phase. The S^T slice first scales by e^{G_last}.
#pragma unroll
    for (int lt = 0; lt < kCt; ++lt) {
      const float e0 = sm.eg[chOf(lt)], e1 = sm.eg[chOf(lt) + 1];
      mine[lt][0] *= e0;
      mine[lt][1] *= e1;
      mine[lt][2] *= e0;
      mine[lt][3] *= e1;
    }
#pragma unroll
    for (int jt = 0; jt < kC / 8; ++jt) {
      const float *x = sm.vn + (16 * vt + g) * kMStride + 8 * jt + 2 * q;
      const float2 xa = *reinterpret_cast<const float2 *>(x);
      const float2 xb = *reinterpret_cast<const float2 *>(x + 8 * kMStride);
      uint32_t ah[4], al[4];
      splitTf32(xa.x, ah[0], al[0]);
      splitTf32(xb.x, ah[1], al[1]);
      splitTf32(xa.y, ah[2], al[2]);
      splitTf32(xb.y, ah[3], al[3]);
      // o^T += v_new^T aqk^T where row tile rt reaches column tile jt.
#pragma unroll
      for (int rt = 0; rt < kRt; ++rt) {
        if (8 * jt > r0 + 8 * rt)
          continue;
        const float2 av = *reinterpret_cast<const float2 *>(
            sm.aqk + (r0 + 8 * rt + g) * kMStride + 8 * jt + 2 * q);
        mmaTf32(oa[rt], ah[0], ah[1], ah[2], ah[3], toTf32(av.x), toTf32(av.y));
      }
      // S^T slice += v_new^T kd (3xTF32: the state keeps fp32 accuracy).
#pragma unroll
      for (int lt = 0; lt < kCt; ++lt) {
        // B = kd (k = row 8 jt + slot, n = channel): (2q, g), (2q + 1, g).
        const float *kd =
            sm.kd + (8 * jt + 2 * q) * kKdStride + 8 * (rq * kCt + lt) + g;
        uint32_t bh0, bl0, bh1, bl1;
        splitTf32(kd[0], bh0, bl0);
        splitTf32(kd[kKdStride], bh1, bl1);
        mmaTf32(mine[lt], al[0], al[1], al[2], al[3], bh0, bh1);
        mmaTf32(mine[lt], ah[0], ah[1], ah[2], ah[3], bl0, bl1);
        mmaTf32(mine[lt], ah[0], ah[1], ah[2], ah[3], bh0, bh1);
      }
    }
    // o rows < L: the warp's [kRows][16] tile through shared memory, then
    // 16-byte stores.
#pragma unroll
    for (int rt = 0; rt < kRt; ++rt) {
      const int rr = 8 * rt + 2 * q;
      sm.ost[rr * 16 + g] = nv::fromF32<T>(oa[rt][0]);
      sm.ost[(rr + 1) * 16 + g] = nv::fromF32<T>(oa[rt][1]);
      sm.ost[rr * 16 + g + 8] = nv::fromF32<T>(oa[rt][2]);
      sm.ost[(rr + 1) * 16 + g + 8] = nv::fromF32<T>(oa[rt][3]);
    }
    __syncwarp();
    if (lane < 2 * kRows) {
      const int rr = lane >> 1, piece = lane & 1;
      if (r0 + rr < L)
        *reinterpret_cast<uint4 *>(p.o + ((t0 + r0 + rr) * H + h) * V + vs +
                                   16 * vt + 8 * piece) =
            *reinterpret_cast<const uint4 *>(sm.ost + rr * 16 + 8 * piece);
    }
    __syncwarp();
    // The updated slice for the other warps of this column tile.
#pragma unroll
    for (int lt = 0; lt < kCt; ++lt) {
      float *y = sm.st + (16 * vt + g) * kRowStride + chOf(lt);
      *reinterpret_cast<float2 *>(y) = make_float2(mine[lt][0], mine[lt][1]);
      *reinterpret_cast<float2 *>(y + 8 * kRowStride) =
          make_float2(mine[lt][2], mine[lt][3]);
    }
  }
  nv::cpAsyncWait<0>();

  // Final state: each warp its channel slice (current in its registers).
  {
    const int64_t col = vs + 16 * vt + g;
#pragma unroll
    for (int lt = 0; lt < kCt; ++lt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        state[(chOf(lt) + (e & 1)) * V + col + 8 * (e >> 1)] = mine[lt][e];
  }
  __syncthreads(); // the next column block rewrites the shared memory
}

} // namespace detail

/// Column ranges and shapes phase 1's fast path covers (it also needs
/// 16-bit o, 16-byte aligned o and workspace, and kdaScanFastSmemBytes).
__host__ __device__ constexpr bool
kdaScanFastShape(int64_t C, int64_t K, int64_t V, int64_t v0, int64_t v1) {
  return C == kda_fast::kC && K == kda_fast::kK && V % 4 == 0 && v0 % 16 == 0 &&
         (v1 - v0) % 16 == 0 && v1 > v0;
}

namespace detail {
/// The sequence's chunk range and state blocks, shared by both paths.
struct KdaScanSeq {
  int64_t seqStart, len, firstChunk, numChunks;
  float *state;
  const float *init;
};
template <typename T>
__device__ __forceinline__ KdaScanSeq kdaScanSeq(const KdaParams<T> &p,
                                                 int64_t n, int64_t h) {
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  KdaScanSeq s;
  s.seqStart = p.cuSeqlens[n];
  s.len = int64_t(p.cuSeqlens[n + 1]) - s.seqStart;
  s.firstChunk = kdaFirstChunkOfSeq(p.cuSeqlens, n, C);
  s.numChunks = kdaCeilDiv(s.len, C);
  s.state = p.finalState + (n * H + h) * K * V;
  s.init = p.initialState ? p.initialState + (n * H + h) * K * V : nullptr;
  return s;
}
} // namespace detail

/// Phase 1, generic path (FFMA; any C <= 64, K): blocks of 64 columns;
/// kBodySmemTooSmall below kdaScanSmemBytes.
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaStateScanGeneric(const KdaParams<T> &p,
                                                    int64_t n, int64_t h,
                                                    int64_t v0, int64_t v1,
                                                    const float *workspace,
                                                    char *smem) {
  if (n >= p.numSeqs)
    return nv::kBodyOk;
  if (nv::dynamicSmemBytes() < kdaScanSmemBytes(p.chunkSize, p.dimK))
    return nv::kBodySmemTooSmall;
  const detail::KdaScanSeq q = detail::kdaScanSeq(p, n, h);
  float *sm = reinterpret_cast<float *>(smem);
  for (int64_t vs = v0; vs < v1; vs += 64) {
    const int64_t ncols = nv::imin(64, v1 - vs);
    if (ncols > 32)
      detail::kdaScanBlock<kThreads, 2>(p, h, q.seqStart, q.len, q.firstChunk,
                                        q.numChunks, q.state, q.init, vs, ncols,
                                        workspace, sm);
    else
      detail::kdaScanBlock<kThreads, 1>(p, h, q.seqStart, q.len, q.firstChunk,
                                        q.numChunks, q.state, q.init, vs, ncols,
                                        workspace, sm);
  }
  return nv::kBodyOk;
}

/// Phase 1, fast path (tensor cores): blocks of 32 columns (16 for the
/// rest). -1 when the call is outside it, so the caller can fall back.
template <int kThreads, typename T>
__device__ __forceinline__ int32_t kdaStateScanFast(const KdaParams<T> &p,
                                                    int64_t n, int64_t h,
                                                    int64_t v0, int64_t v1,
                                                    const float *workspace,
                                                    char *smem) {
  if constexpr (sizeof(T) != 2) {
    return -1;
  } else {
    if (!kdaScanFastShape(p.chunkSize, p.dimK, p.dimV, v0, v1) ||
        !nv::isAligned16(workspace) || !nv::isAligned16(p.o) ||
        nv::dynamicSmemBytes() < kdaScanFastSmemBytes(v1 - v0 >= 32 ? 2 : 1))
      return -1;
    if (n >= p.numSeqs)
      return nv::kBodyOk;
    const detail::KdaScanSeq q = detail::kdaScanSeq(p, n, h);
    for (int64_t vs = v0; vs < v1;) {
      if (v1 - vs >= 32) {
        detail::kdaScanFastBlock<kThreads, 2>(
            p, h, q.seqStart, q.len, q.firstChunk, q.numChunks, q.state, q.init,
            vs, workspace, smem);
        vs += 32;
      } else {
        detail::kdaScanFastBlock<kThreads, 1>(
            p, h, q.seqStart, q.len, q.firstChunk, q.numChunks, q.state, q.init,
            vs, workspace, smem);
        vs += 16;
      }
    }
    return nv::kBodyOk;
  }
}

/// Phase 1 task: sequence n (skipped when n >= the run-time N), head h,
/// columns [v0, v1). Writes o for those columns and final_state[n, h, :,
/// v0:v1]; initial_state may alias it. The fast path where it applies, else
/// the generic one.
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaStateScan(const KdaParams<T> &p, int64_t n,
                                             int64_t h, int64_t v0, int64_t v1,
                                             const float *workspace,
                                             char *smem) {
  const int32_t fast =
      kdaStateScanFast<kThreads>(p, n, h, v0, v1, workspace, smem);
  if (fast >= 0)
    return fast;
  return kdaStateScanGeneric<kThreads>(p, n, h, v0, v1, workspace, smem);
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
