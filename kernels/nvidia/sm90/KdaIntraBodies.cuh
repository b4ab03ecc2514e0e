//===- KdaIntraBodies.cuh - KDA prefill phase 0 (intra-chunk) --*- CUDA -*-===//
//
// kdaIntraChunk of KdaBodies.cuh (which includes this file; its header
// describes both phases' paths): per (chunk, head), the workspace slot's
// w, qg, kd, u, aqk and eg, on the tensor cores where the fast path applies
// (kdaIntraChunkFast), else with FFMA (kdaIntraChunkGeneric).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDAINTRABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDAINTRABODIES_CUH

#include "kernels/nvidia/sm90/KdaCommon.cuh"
#include "kernels/nvidia/sm90/KdaTf32.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

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

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_KDAINTRABODIES_CUH
