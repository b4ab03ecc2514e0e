//===- KdaBodies.cuh - Device task bodies for KDA prefill --------*- CUDA
//-*-===//
//
// Block-cooperative versions of kernels/host/KdaBodies.h: the same phases,
// chunk numbering, per-(chunk, head) workspace slot layout (w, qg, kd, u,
// aqk, eg; rows past a partial chunk zero) and KdaParams. The algebra is the
// host's (see its header); so is the per-channel formulation: every decay
// factor is e^{G_later - G_earlier} <= 1, taken per pair and per channel.
//
// Phase 0 (intra-chunk), per (chunk, head), all in shared memory when it
// fits (kdaIntraSmemBytes: 150272 B at C = 64, K = V = 128):
//   1. normalised q, k and the raw gate, a warp per row;
//   2. the gate's prefix sum G (kept in log2 units), a thread per channel;
//   3. the pairs j <= i: M_ij = sum_c k_i k_j 2^{G_i - G_j} and
//      Aqk_ij = sum_c q_i k_j 2^{G_i - G_j}, a thread per 4 x 4 block of
//      pairs (one exp per pair and channel: the per-pair form the host uses,
//      never overflowing for strong decays);
//   4. the decayed operands qg, kd, the right-hand sides of w and u;
//   5. forward substitution (I + StrictLower(diag(beta) M)) [w | u] = rhs,
//      a thread per column of [w | u].
// Channel-indexed arrays live transposed, [channel][row] with an odd row
// count stride, so both a warp reading one row across channels and a
// thread walking its own channel are free of bank conflicts. With less
// shared memory the body keeps them in the slot's own workspace regions
// instead (row-major, as the host does), needing only kdaIntraMinSmemBytes.
//
// Phase 1 (state scan), per (sequence, head, V block): the state block
// S[K][<= 64 columns] stays in shared memory for the whole sequence; each
// chunk's w, qg, kd, aqk, eg are staged by cp.async, double-buffered so the
// next operand loads while the current step computes:
//   A. v_new = u - w S       B. o = qg S + Aqk v_new
//   C. S = diag(eg) S + kd^T v_new
// (FFMA; kdaScanSmemBytes: 131584 B at C = 64, K = 128).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH

#include "kernels/host/KdaBodies.h"
#include "kernels/nvidia/Numerics.cuh"

#include <cstdint>

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
// Chunk list and workspace (device copies of the host formulas)
//===----------------------------------------------------------------------===//

__host__ __device__ inline int64_t kdaCeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

__host__ __device__ inline int64_t kdaMaxChunks(int64_t maxTokens,
                                                int64_t maxSeqs, int64_t C) {
  return maxTokens / C + maxSeqs;
}

__host__ __device__ inline int64_t kdaNumChunks(const int32_t *cu, int64_t N,
                                                int64_t C) {
  int64_t total = 0;
  for (int64_t n = 0; n < N; ++n)
    total += kdaCeilDiv(int64_t(cu[n + 1]) - cu[n], C);
  return total;
}

__host__ __device__ inline int64_t kdaFirstChunkOfSeq(const int32_t *cu,
                                                      int64_t n, int64_t C) {
  return kdaNumChunks(cu, n, C);
}

/// A chunk's sequence, first token (absolute row) and length (1..C).
struct KdaChunk {
  int64_t seq;
  int64_t start;
  int64_t len;
};

__host__ __device__ inline bool kdaLocateChunk(const int32_t *cu, int64_t N,
                                               int64_t C, int64_t chunk,
                                               KdaChunk &out) {
  if (chunk < 0)
    return false;
  int64_t first = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = int64_t(cu[n + 1]) - cu[n];
    const int64_t count = kdaCeilDiv(len, C);
    if (chunk < first + count) {
      const int64_t offset = (chunk - first) * C;
      out.seq = n;
      out.start = cu[n] + offset;
      out.len = nv::imin(C, len - offset);
      return true;
    }
    first += count;
  }
  return false;
}

__host__ __device__ inline int64_t
kdaWorkspaceFloatsPerChunkHead(int64_t C, int64_t K, int64_t V) {
  return 3 * C * K + C * V + C * C + K;
}

__host__ __device__ inline int64_t kdaWorkspaceFloats(int64_t maxChunks,
                                                      int64_t H, int64_t C,
                                                      int64_t K, int64_t V) {
  return maxChunks * H * kdaWorkspaceFloatsPerChunkHead(C, K, V);
}

template <typename F> struct KdaSlotT { F *w, *qg, *kd, *u, *aqk, *eg; };

template <typename F>
__host__ __device__ inline KdaSlotT<F> kdaSlot(F *workspace, int64_t chunk,
                                               int64_t h, int64_t H, int64_t C,
                                               int64_t K, int64_t V) {
  F *base =
      workspace + (chunk * H + h) * kdaWorkspaceFloatsPerChunkHead(C, K, V);
  KdaSlotT<F> s;
  s.w = base;
  s.qg = s.w + C * K;
  s.kd = s.qg + C * K;
  s.u = s.kd + C * K;
  s.aqk = s.u + C * V;
  s.eg = s.aqk + C * C;
  return s;
}

//===----------------------------------------------------------------------===//
// Shared memory
//===----------------------------------------------------------------------===//

/// Phase 0 with everything in shared memory.
__host__ __device__ constexpr int64_t kdaIntraSmemBytes(int64_t C, int64_t K,
                                                        int64_t V) {
  return 4 * (C * C + C + K + (3 * K + V) * (C + 1));
}
/// Phase 0 with the big arrays in the workspace slot.
__host__ __device__ constexpr int64_t kdaIntraMinSmemBytes(int64_t C,
                                                           int64_t K) {
  return 4 * (C * C + C + K);
}
/// Phase 1.
__host__ __device__ constexpr int64_t kdaScanSmemBytes(int64_t C, int64_t K) {
  const int64_t kp = (K + 3) / 4 * 4;
  return 4 * (64 * kp + 2 * C * kp + C * C + 64 * C + kp);
}

//===----------------------------------------------------------------------===//
// Phase 0: intra-chunk
//===----------------------------------------------------------------------===//

namespace detail {

__device__ __forceinline__ float kdaSoftplus(float x) {
  return x > 20.f ? x : log1pf(expf(x));
}
__device__ __forceinline__ float kdaSigmoid(float x) {
  return 1.f / (1.f + expf(-x));
}
__device__ __forceinline__ float kdaGate(KdaGate mode, float aLog,
                                         float lowerBound, float x) {
  const float a = expf(aLog);
  if (mode == KdaGate::Bounded)
    return lowerBound * kdaSigmoid(a * x);
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
    beta[i] = i < L ? kdaSigmoid(nv::ldF(p.beta, (ch.start + i) * H + h)) : 0.f;
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

/// Phase 0 task: global chunks [c0, c1) of head h (indices at or past the
/// run-time chunk count are skipped).
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaIntraChunk(const KdaParams<T> &p, int64_t c0, int64_t c1,
                                 int64_t h, float *workspace, char *smem) {
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

/// Phase 1 task: sequence n (skipped when n >= the run-time N), head h,
/// columns [v0, v1), in sub-blocks of 64 columns. Writes o for those
/// columns and final_state[n, h, :, v0:v1]; initial_state may alias it.
template <int kThreads, typename T>
__device__ __noinline__ int32_t kdaStateScan(const KdaParams<T> &p, int64_t n, int64_t h,
                                int64_t v0, int64_t v1, const float *workspace,
                                char *smem) {
  if (n >= p.numSeqs)
    return nv::kBodyOk;
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  if (nv::dynamicSmemBytes() < kdaScanSmemBytes(C, K))
    return nv::kBodySmemTooSmall;
  const int64_t seqStart = p.cuSeqlens[n];
  const int64_t len = int64_t(p.cuSeqlens[n + 1]) - seqStart;
  const int64_t firstChunk = kdaFirstChunkOfSeq(p.cuSeqlens, n, C);
  const int64_t numChunks = kdaCeilDiv(len, C);
  float *state = p.finalState + (n * H + h) * K * V;
  const float *init =
      p.initialState ? p.initialState + (n * H + h) * K * V : nullptr;
  float *sm = reinterpret_cast<float *>(smem);
  for (int64_t vs = v0; vs < v1; vs += 64) {
    const int64_t ncols = nv::imin(64, v1 - vs);
    if (ncols > 32)
      detail::kdaScanBlock<kThreads, 2>(p, h, seqStart, len, firstChunk,
                                        numChunks, state, init, vs, ncols,
                                        workspace, sm);
    else
      detail::kdaScanBlock<kThreads, 1>(p, h, seqStart, len, firstChunk,
                                        numChunks, state, init, vs, ncols,
                                        workspace, sm);
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
