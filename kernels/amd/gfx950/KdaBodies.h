//===- KdaBodies.h - gfx950 task bodies for KDA prefill ------- -*- C++ -*-===//
//
// Workgroup-cooperative versions of kernels/host/KdaBodies.h: the same
// phases, chunk numbering, per-(chunk, head) workspace slot layout (w, qg,
// kd, u, aqk, eg; rows past a partial chunk zero) and KdaParams. The algebra
// is the host's (see its header); all arithmetic is fp32, as the host's.
//
// The matrix products run on v_mfma_f32_16x16x4_f32 (fp32 operands, fp32
// accumulate: the host's precision, only the summation order differs). A
// bf16 MFMA would be 16x faster per product but rounds w, qg, kd, the state
// and the decay factors to 8 bits of mantissa, and the forward substitution
// amplifies such errors; see "What is left for speed" in the report.
//
// Phase 0 (intra-chunk), per (chunk, head); rows are padded to CP =
// roundUp(C, 16), row-major arrays in LDS (or, with too little LDS, in the
// slot's own workspace regions, as the host does):
//   1. normalised q, k and the raw gate, a wave per row;
//   2. the gate's inclusive prefix sum G (natural log, the host's order), a
//      thread per channel;
//   3. the pairs j <= i: M_ij = sum_c k_i k_j e^{G_i - G_j} and
//      Aqk_ij = sum_c q_i k_j e^{G_i - G_j}.
//      Off-diagonal 16 x 16 blocks (block row bi > block column bj) on MFMA:
//      with the anchor r = 16 bi (j < r <= i), e^{G_i - G_j} =
//      e^{G_i - G_r} e^{G_r - G_j} with both factors <= 1, so
//      M_blk = (K_I e^{G_I - G_r}) (K_J e^{G_r - G_J})^T is a plain product
//      that never overflows however strong the decay. Diagonal blocks keep
//      the host's per-pair, per-channel form (a thread per pair);
//   4. the decayed operands qg = scale q e^G, kd = k e^{G_last - G} and the
//      right-hand sides beta k e^G, beta v;
//   5. forward substitution (I + StrictLower(diag(beta) M)) [w | u] = rhs by
//      16-row blocks: rows of block bi first subtract the already solved
//      blocks (an MFMA product lm[I][J<I] X[J], 16-column tiles over the
//      wave), then solve the 16 x 16 unit-lower diagonal block in registers
//      (a thread per column, rows and terms in order). The same operations as
//      the host's substitution, associated by blocks.
//
// Phase 1 (state scan), per (sequence, head, V block) in sub-blocks of 64
// columns: the state S [K][<= 64] stays in LDS for the whole sequence; per
// chunk, w, qg, aqk, eg are in LDS (the next chunk's loaded into registers
// while the current chunk's state update runs) and kd replaces w after
// step A (loaded while step B runs):
//   A. v_new = u - w S        (16 x 16 tiles (row, column) over the waves)
//   B. o = qg S + Aqk v_new    (Aqk lower triangular: only m < 16 (it + 1))
//   C. S = diag(eg) S + kd^T v_new   (16 x 16 tiles (channel, column))
// all on MFMA; needs K <= 128 (kdaScanLdsBytes: 148992 B at C = 64,
// K = 128), else a plain path with the state in final_state (as the host).
//
// LDS: kdaIntraLdsBytes(C, K, V) = 150784 B at C = 64, K = V = 128 (fallback
// kdaIntraMinLdsBytes(C, K) = 17664 B); kdaScanLdsBytes(C, K) (fallback
// kdaScanMinLdsBytes(C) = 16 KB).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_KDABODIES_H
#define LOOM_KERNELS_AMD_GFX950_KDABODIES_H

#include "kernels/amd/HipDevice.h"
#include "kernels/amd/MetaFault.h"
#include "kernels/host/KdaBodies.h"

#include <cstdint>

namespace loom {
namespace gfx950 {

namespace am = ::loom::amd;
using am::ceilDiv;
using am::imax;
using am::imin;
using am::roundUp;

/// The host's operand struct and gate enum: the emitted code fills them the
/// same way.
template <typename T> using KdaParams = host::KdaParams<T>;
using KdaGate = host::KdaGate;

//===----------------------------------------------------------------------===//
// Chunk list and workspace
//===----------------------------------------------------------------------===//

// One copy for every target (32-bit counts on the device):
// kernels/common/KdaChunks.h.
using namespace ::loom::kda;

/// kda::kdaCheckedChunks (the check of cu_seqlens the emitted tile functions
/// make before a body; -1 when refused, and the tile returns) as a
/// workgroup-uniform scalar. Every lane reads the same cu_seqlens, but
/// through a generic pointer, which the compiler takes for divergent: the
/// emitted `if (chunks < 0) return` then became a divergent branch around
/// the whole body, whose saved exec mask spilled 2 SGPRs to VGPR lanes in
/// the KDA programs. The emitted call loom::gfx950::kdaCheckedChunks finds
/// this one (a name declared in the namespace hides those its using
/// directive brings).
__device__ __forceinline__ int64_t kdaCheckedChunks(const int32_t *cu,
                                                    int64_t N, int64_t C,
                                                    int64_t numTokens,
                                                    int64_t maxChunks) {
  return am::uniform64(
      ::loom::kda::kdaCheckedChunks(cu, N, C, numTokens, maxChunks));
}

//===----------------------------------------------------------------------===//
// LDS
//===----------------------------------------------------------------------===//

namespace detail {
/// Rows padded to whole 16-row MFMA tiles.
__host__ __device__ constexpr int64_t kdaPadRows(int64_t C) {
  return (C + 15) / 16 * 16;
}
/// The MFMA paths use one fixed LDS layout for every C <= 64, K <= 128,
/// V <= 128, so that every stride is a compile-time constant: LDS addresses
/// become a base register plus instruction offsets, which keeps the fully
/// unrolled loops within the 102 SGPRs (a runtime stride would need a
/// scalar register per unrolled row offset).
constexpr int kKdaMaxC = 64, kKdaMaxK = 128, kKdaMaxV = 128;
/// Row stride of q, k, G / w, u in phase 0 and of w, qg in phase 1: 130 =
/// 2 mod 32 banks, so the 16 rows an MFMA operand reads (one per lane) are
/// 2 banks apart and the 4 lane groups (4 consecutive channels) 1 apart.
constexpr int kKdaRowStride = kKdaMaxK + 2;
/// Row stride of lm (phase 0) and aqk (phase 1), same reason.
constexpr int kKdaCStride = kKdaMaxC + 2;
// Phase 0 layout (floats).
constexpr int kKdaLm = 0;                                 // lm [64][66]
constexpr int kKdaBeta = kKdaLm + kKdaMaxC * kKdaCStride; // beta [64]
constexpr int kKdaGLast = kKdaBeta + kKdaMaxC;            // G_last [128]
constexpr int kKdaQ = kKdaGLast + kKdaMaxK;               // q [64][130]
constexpr int kKdaK = kKdaQ + kKdaMaxC * kKdaRowStride;   // k [64][130]
constexpr int kKdaG = kKdaK + kKdaMaxC * kKdaRowStride;   // G, w [64][130]
constexpr int kKdaU = kKdaG + kKdaMaxC * kKdaRowStride;   // u [64][130]
constexpr int kKdaIntraFloats = kKdaU + kKdaMaxC * kKdaRowStride;
} // namespace detail

/// Phase 0, MFMA path (C <= 64, K <= 128, V <= 128): 150784 B.
__host__ __device__ constexpr int64_t kdaIntraLdsBytes(int64_t C, int64_t K,
                                                       int64_t V) {
  return C <= detail::kKdaMaxC && K <= detail::kKdaMaxK && V <= detail::kKdaMaxV
             ? 4 * int64_t(detail::kKdaIntraFloats)
             : -1; // no MFMA path for this shape
}
/// Phase 0, plain path (q, k, G, u in the workspace slot): lm [C][C],
/// beta [C].
__host__ __device__ constexpr int64_t kdaIntraMinLdsBytes(int64_t C,
                                                          int64_t K) {
  return 4 * (C * C + C) + 0 * K;
}

namespace detail {
constexpr int kKdaScanCols = 64; // V sub-block (the host's kKdaVSub)
/// Phase 1 strides: kd rows 144 = 16 mod 32 banks (the A operand of step C
/// reads 16 consecutive channels per lane group, the 4 groups 16 banks
/// apart), and the same for S and v_new rows (80 floats; every B operand).
constexpr int kKdaKdStride = kKdaMaxK + 16;
constexpr int kKdaColStride = kKdaScanCols + 16;
constexpr int kKdaWKFloats =
    kKdaMaxC * (kKdaKdStride > kKdaRowStride ? kKdaKdStride : kKdaRowStride);
constexpr int kKdaSW = 0;                                    // w / kd
constexpr int kKdaSQg = kKdaSW + kKdaWKFloats;               // qg [64][130]
constexpr int kKdaSAqk = kKdaSQg + kKdaMaxC * kKdaRowStride; // aqk [64][66]
constexpr int kKdaSS = kKdaSAqk + kKdaMaxC * kKdaCStride;    // S [128][80]
constexpr int kKdaSVn = kKdaSS + kKdaMaxK * kKdaColStride;   // v_new [64][80]
constexpr int kKdaSEg = kKdaSVn + kKdaMaxC * kKdaColStride;  // eg [128]
constexpr int kKdaScanFloats = kKdaSEg + kKdaMaxK;
} // namespace detail

/// Phase 1, MFMA path (C <= 64, K <= 128): 148992 B.
__host__ __device__ constexpr int64_t kdaScanLdsBytes(int64_t C, int64_t K) {
  return C <= detail::kKdaMaxC && K <= detail::kKdaMaxK
             ? 4 * int64_t(detail::kKdaScanFloats)
             : -1;
}
/// Phase 1 plain path: v_new [C][64].
__host__ __device__ constexpr int64_t kdaScanMinLdsBytes(int64_t C) {
  return 4 * C * detail::kKdaScanCols;
}

//===----------------------------------------------------------------------===//
// Phase 0: intra-chunk
//===----------------------------------------------------------------------===//

namespace detail {

__device__ __forceinline__ float kdaSoftplus(float x) {
  // log(1 + e^x) without overflow: for large x it is x to fp32 precision.
  return x > 20.f ? x : am::log1pAcc(am::expAcc(x));
}
__device__ __forceinline__ float kdaSigmoid(float x) {
  return 1.f / (1.f + am::expAcc(-x));
}
/// Per-channel log decay of one token (the host's gate()).
__device__ __forceinline__ float kdaGate(KdaGate mode, float aLog,
                                         float lowerBound, float x) {
  const float a = am::expAcc(aLog);
  if (mode == KdaGate::Bounded)
    return lowerBound * kdaSigmoid(a * x);
  return -a * kdaSoftplus(x);
}

/// k -> (row, col) with col <= row, k = row (row + 1) / 2 + col.
__device__ __forceinline__ void kdaTriangle(int k, int &row, int &col) {
  int r = int((am::sqrtAcc(8.f * float(k) + 1.f) - 1.f) * 0.5f);
  while ((r + 1) * (r + 2) / 2 <= k)
    ++r;
  while (r * (r + 1) / 2 > k)
    --r;
  row = r;
  col = k - r * (r + 1) / 2;
}

/// What the inner loops read of KdaParams, compacted: per-lane data
/// pointers in VGPRs (toVgpr) and 32-bit sizes, so that the fully inlined
/// bodies stay within the scalar register file (HipDevice.h, toVgpr).
template <typename T> struct KdaDev {
  const T *q, *k, *v, *g, *beta;
  const float *aLog, *dtBias;
  T *o;
  int numHeads, dimK, dimV, chunkSize;
  KdaGate gate;
  float lowerBound, scale;
  bool qkL2norm;
};

/// The sizes of `d` made opaque (see am::opaque): called at the top of
/// every iteration of a loop around a whole chunk step.
template <typename T> __device__ __forceinline__ void kdaOpaque(KdaDev<T> &d) {
  am::opaque(d.numHeads);
  am::opaque(d.dimK);
  am::opaque(d.dimV);
  am::opaque(d.chunkSize);
  am::opaque(d.scale);
  am::opaque(d.lowerBound);
}

template <typename T>
__device__ __forceinline__ KdaDev<T> kdaDev(const KdaParams<T> &p) {
  return {am::toVgpr(p.q),
          am::toVgpr(p.k),
          am::toVgpr(p.v),
          am::toVgpr(p.g),
          am::toVgpr(p.beta),
          p.aLog,
          am::toVgpr(p.dtBias),
          am::toVgpr(p.o),
          int(p.numHeads),
          int(p.dimK),
          int(p.dimV),
          int(p.chunkSize),
          p.gate,
          p.lowerBound,
          p.scale,
          p.qkL2norm};
}

/// Step 1 of both paths: beta; normalised q, k and the raw gate of rows
/// i < L, a wave per row, written through q(i, c), k(i, c), g(i, c).
template <int kThreads, typename T, typename FQ, typename FK, typename FG>
__device__ __forceinline__ void kdaLoadRows(const KdaDev<T> &p,
                                            const KdaChunk &ch, int h, int L,
                                            float *beta, FQ q, FK k, FG g) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int tid = int(am::threadId()), lane = am::laneId();
  const int H = int(p.numHeads), K = int(p.dimK);
  const float aLog = p.aLog[h];
  const float *dtBias = p.dtBias + int64_t(h) * K;
  // beta of rows past L is never read.
  for (int i = tid; i < L; i += kThreads)
    beta[i] = kdaSigmoid(am::ldF(p.beta, (ch.start + i) * H + h));
  for (int i = am::waveId(); i < L; i += kWaves) {
    const int64_t row = (ch.start + i) * H + h;
    const T *qr = p.q + row * K, *kr = p.k + row * K;
    float qs = 0.f, ks = 0.f;
    for (int c = lane; c < K; c += 64) {
      const float qv = am::ldF(qr, c), kv = am::ldF(kr, c);
      qs += qv * qv;
      ks += kv * kv;
    }
    qs = am::waveSum(qs);
    ks = am::waveSum(ks);
    const float qInv =
        p.qkL2norm ? 1.f / am::sqrtAcc(qs + host::kKdaNormEps) : 1.f;
    const float kInv =
        p.qkL2norm ? 1.f / am::sqrtAcc(ks + host::kKdaNormEps) : 1.f;
    for (int c = lane; c < K; c += 64) {
      q(i, c) = am::ldF(qr, c) * qInv;
      k(i, c) = am::ldF(kr, c) * kInv;
      g(i, c) = kdaGate(p.gate, aLog, p.lowerBound,
                        am::ldF(p.g, row * K + c) + dtBias[c]);
    }
  }
}

/// Phase 0 for one (chunk, head), MFMA path, everything in LDS (fixed
/// layout, see kKdaQ ...). Rows >= L are never read or written: their
/// values are known (q = k = 0, G = G_last, rhs = 0, lm = 0).
template <int kThreads, typename T>
__device__ __forceinline__ void
kdaIntraChunkMfma(const KdaDev<T> &p, const KdaChunk &ch, int h,
                  const KdaSlotT<float> &s, char *lds) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  constexpr int RS = kKdaRowStride, CS = kKdaCStride;
  const int tid = int(am::threadId()), lane = am::laneId(), wave = am::waveId();
  const int i16 = lane & 15, g = lane >> 4;
  const int K = int(p.dimK), V = int(p.dimV), C = int(p.chunkSize);
  const int L = int(ch.len);
  const int nbL = (L + 15) / 16; // 16-row blocks holding valid rows
  float *f = reinterpret_cast<float *>(lds);
  float *lm = f + kKdaLm, *beta = f + kKdaBeta, *gLast = f + kKdaGLast;
  float *aQ = f + kKdaQ, *aK = f + kKdaK, *aG = f + kKdaG, *aU = f + kKdaU;
  const float scale = p.scale;

  // 1. beta; normalised q and k; the raw gate.
  kdaLoadRows<kThreads>(
      p, ch, h, L, beta,
      [&](int i, int c) -> float & { return aQ[i * RS + c]; },
      [&](int i, int c) -> float & { return aK[i * RS + c]; },
      [&](int i, int c) -> float & { return aG[i * RS + c]; });
  am::syncThreads();

  // 2. Inclusive prefix sum along the rows (the host's order), a thread per
  //    channel; G_last = G_{L-1}.
  for (int c = tid; c < K; c += kThreads) {
    float run = 0.f;
    for (int i = 0; i < L; ++i) {
      run += aG[i * RS + c];
      aG[i * RS + c] = run;
    }
    gLast[c] = run;
  }
  am::syncThreads();

  // 3a. Off-diagonal blocks (bi > bj, 16 bi < L), a wave per block. Lane
  //     (i16, g), k-step c4: channel c = c4 + g;
  //       A[i][c] = k (or q) of row r + i times e^{G_row - G_r},
  //       B[c][j] = k of row 16 bj + j times e^{G_r - G_row},  r = 16 bi;
  //     D register rr = (row r + 4 g + rr, column 16 bj + i16).
  {
    const int nPairs = nbL * (nbL - 1) / 2;
    for (int item = wave; item < nPairs; item += kWaves) {
      int bi, bj;
      kdaTriangle(item, bi, bj); // bj <= bi: block row bi + 1 > bj
      bi += 1;
      const int r = 16 * bi, rowI = r + i16, rowJ = 16 * bj + i16;
      const bool okI = rowI < L; // rowJ < r < L always
      const float *gR = aG + r * RS + g, *gI = aG + rowI * RS + g,
                  *gJ = aG + rowJ * RS + g;
      const float *kI = aK + rowI * RS + g, *qI = aQ + rowI * RS + g,
                  *kJ = aK + rowJ * RS + g;
      am::f32x4 accM = am::zero4(), accQ = am::zero4();
      for (int c4 = 0; c4 < K; c4 += 4) {
        float ak = 0.f, aq = 0.f, bk = 0.f;
        if (c4 + g < K) {
          const float gr = gR[c4];
          const float ei = okI ? am::fastExp(gI[c4] - gr) : 0.f;
          ak = okI ? kI[c4] * ei : 0.f;
          aq = okI ? qI[c4] * ei : 0.f;
          bk = kJ[c4] * am::fastExp(gr - gJ[c4]);
        }
        accM = am::mfma16x16x4f32(ak, bk, accM);
        accQ = am::mfma16x16x4f32(aq, bk, accQ);
      }
      const int col = 16 * bj + i16;
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        const int row = r + 4 * g + rr;
        if (row < L) {
          lm[row * CS + col] = beta[row] * accM[rr];
          am::gptr(s.aqk)[row * C + col] = scale * accQ[rr];
        }
      }
    }
  }
  // 3b. Diagonal blocks: pairs j <= i of one 16-row block, a thread per
  //     pair, per channel as the host (j == i: the host's diag, no exp).
  for (int item = tid; item < nbL * 136; item += kThreads) {
    int ii, jj;
    kdaTriangle(item % 136, ii, jj);
    const int blk = item / 136, i = 16 * blk + ii, j = 16 * blk + jj;
    if (i >= L)
      continue;
    const float *qi = aQ + i * RS, *ki = aK + i * RS, *kj = aK + j * RS;
    const float *gi = aG + i * RS, *gj = aG + j * RS;
    float sumK = 0.f, sumQ = 0.f;
    if (j < i) {
      for (int c = 0; c < K; ++c) {
        const float kf = kj[c] * am::fastExp(gi[c] - gj[c]);
        sumK += ki[c] * kf;
        sumQ += qi[c] * kf;
      }
      lm[i * CS + j] = beta[i] * sumK;
    } else {
      for (int c = 0; c < K; ++c)
        sumQ += qi[c] * ki[c];
    }
    am::gptr(s.aqk)[i * C + j] = scale * sumQ;
  }
  // 3c. The rest of aqk is zero: above the diagonal and rows past L. So are
  //     the rows of lm from L to the end of the last block (the
  //     substitution below then runs on whole blocks without row guards).
  // (Element loops here are 2-D, a wave per row and lanes over columns: a
  // flat index would need a division by a run-time K, V or C, whose
  // reciprocal the compiler keeps in scalar registers for the whole body.)
  for (int i = wave; i < C; i += kWaves)
    for (int j = lane; j < C; j += 64)
      if (j > i || i >= L)
        am::gptr(s.aqk)[i * C + j] = 0.f;
  for (int i = L + wave; i < 16 * nbL; i += kWaves)
    for (int j = lane; j < CS; j += 64)
      lm[i * CS + j] = 0.f;
  am::syncThreads();

  // 4. qg = scale q e^G, kd = k e^{G_last - G} (to the slot), rhs of w =
  //    beta k e^G (in place of G), rhs of u = beta v, eg = e^{G_last}.
  for (int i = wave; i < L; i += kWaves) {
    const T *vRow = p.v + ((ch.start + i) * p.numHeads + h) * V;
    for (int c = lane; c < K; c += 64) {
      const float G = aG[i * RS + c], ex = am::expAcc(G);
      const float kv = aK[i * RS + c];
      am::gptr(s.qg)[i * K + c] = aQ[i * RS + c] * (scale * ex);
      am::gptr(s.kd)[i * K + c] = kv * am::expAcc(gLast[c] - G);
      aG[i * RS + c] = beta[i] * kv * ex;
    }
    for (int c = lane; c < V; c += 64)
      aU[i * RS + c] = beta[i] * am::ldF(vRow, c);
  }
  for (int c = tid; c < K; c += kThreads)
    am::gptr(s.eg)[c] = am::expAcc(gLast[c]);
  // Rows L .. 16 nbL of both right-hand sides are zero (and stay zero).
  for (int i = L + wave; i < 16 * nbL; i += kWaves)
    for (int c = lane; c < RS; c += 64)
      aG[i * RS + c] = aU[i * RS + c] = 0.f;
  am::syncThreads();

  // 5. Forward substitution (I + lm) [w | u] = rhs by 16-row blocks.
  const int kTiles = (K + 15) / 16, vTiles = (V + 15) / 16;
  for (int bi = 0; bi < nbL; ++bi) {
    const int r0 = 16 * bi;
    if (bi > 0) {
      // X[I] -= lm[I][J < I] X[J] on MFMA, 16-column tiles of [w | u] over
      // the waves: A[i][m] = lm(r0 + i, m), B[m][col] = X(m, col), k-slot
      // m = m4 + g; D register rr = (row r0 + 4 g + rr, column col). Rows
      // past L have lm = 0 and X = 0, so they stay 0.
      const float *aRow = lm + (r0 + i16) * CS + g;
      for (int t = wave; t < kTiles + vTiles; t += kWaves) {
        const bool isW = t < kTiles;
        float *X = isW ? aG : aU;
        const int col = 16 * (isW ? t : t - kTiles) + i16;
        const bool okCol = col < (isW ? K : V);
        const float *bCol = X + g * RS + col;
        am::f32x4 acc = am::zero4();
        for (int m4 = 0; m4 < r0; m4 += 4)
          acc = am::mfma16x16x4f32(aRow[m4], okCol ? bCol[m4 * RS] : 0.f, acc);
        if (okCol) {
#pragma unroll
          for (int rr = 0; rr < 4; ++rr)
            X[(r0 + 4 * g + rr) * RS + col] -= acc[rr];
        }
      }
      am::syncThreads();
    }
    // The diagonal block, a thread per column of [w | u], in registers:
    // rows and the terms of each row in order, as the host. Whole blocks
    // (rows past L are 0 = 0 - 0); every address is a base plus a
    // compile-time offset.
    for (int col = tid; col < K + V; col += kThreads) {
      float *xc = (col < K ? aG + col : aU + (col - K)) + r0 * RS;
      const float *lmb = lm + r0 * CS + r0;
      float x[16];
#pragma unroll
      for (int ii = 0; ii < 16; ++ii)
        x[ii] = xc[ii * RS];
#pragma unroll
      for (int ii = 1; ii < 16; ++ii) {
        float v = x[ii];
#pragma unroll
        for (int mm = 0; mm < ii; ++mm)
          v -= lmb[ii * CS + mm] * x[mm];
        x[ii] = v;
      }
#pragma unroll
      for (int ii = 1; ii < 16; ++ii)
        xc[ii * RS] = x[ii];
    }
    am::syncThreads();
  }

  // 6. w and u into the slot; rows L..C-1 of w, qg, kd, u are zero, so a
  //    full-tile reader is exact.
  for (int i = wave; i < L; i += kWaves) {
    for (int c = lane; c < K; c += 64)
      am::gptr(s.w)[i * K + c] = aG[i * RS + c];
    for (int c = lane; c < V; c += 64)
      am::gptr(s.u)[i * V + c] = aU[i * RS + c];
  }
  for (int e = L * K + tid; e < C * K; e += kThreads)
    am::gptr(s.w)[e] = am::gptr(s.qg)[e] = am::gptr(s.kd)[e] = 0.f;
  for (int e = L * V + tid; e < C * V; e += kThreads)
    am::gptr(s.u)[e] = 0.f;
  am::syncThreads(); // LDS is reused by the next chunk
}

/// Phase 0 for one (chunk, head), plain path: the host's algorithm with
/// q, k, G (then qg, kd, w) and u in the slot's own regions, lm and beta in
/// LDS, runtime loops (any C <= 64, K, V).
template <int kThreads, typename T>
__device__ __forceinline__ void
kdaIntraChunkPlain(const KdaDev<T> &p, const KdaChunk &ch, int h,
                   const KdaSlotT<float> &s, char *lds) {
  const int tid = int(am::threadId());
  const int K = int(p.dimK), V = int(p.dimV), C = int(p.chunkSize);
  const int L = int(ch.len);
  float *lm = reinterpret_cast<float *>(lds); // [C][C]
  float *beta = lm + C * C;                   // [C]
  float *qs = s.qg, *kds = s.kd, *ws = s.w, *us = s.u;

  kdaLoadRows<kThreads>(
      p, ch, h, L, beta, [&](int i, int c) -> float & { return qs[i * K + c]; },
      [&](int i, int c) -> float & { return kds[i * K + c]; },
      [&](int i, int c) -> float & { return ws[i * K + c]; });
  am::syncThreads();
  for (int c = tid; c < K; c += kThreads) { // prefix sum; eg = raw G_last
    float run = 0.f;
    for (int i = 0; i < L; ++i) {
      run += ws[i * K + c];
      ws[i * K + c] = run;
    }
    am::gptr(s.eg)[c] = run;
  }
  am::syncThreads();
  for (int item = tid; item < L * (L + 1) / 2; item += kThreads) {
    int i, j;
    kdaTriangle(item, i, j);
    float sumK = 0.f, sumQ = 0.f;
    if (j < i) {
      for (int c = 0; c < K; ++c) {
        const float kf =
            kds[j * K + c] * am::expAcc(ws[i * K + c] - ws[j * K + c]);
        sumK += kds[i * K + c] * kf;
        sumQ += qs[i * K + c] * kf;
      }
      lm[i * C + j] = beta[i] * sumK;
    } else {
      for (int c = 0; c < K; ++c)
        sumQ += qs[i * K + c] * kds[i * K + c];
    }
    am::gptr(s.aqk)[i * C + j] = p.scale * sumQ;
  }
  for (int e = tid; e < C * C; e += kThreads)
    if (e % C > e / C || e / C >= L)
      am::gptr(s.aqk)[e] = 0.f;
  am::syncThreads();
  for (int e = tid; e < L * K; e += kThreads) {
    const int i = e / K, c = e % K;
    const float G = ws[e], ex = am::expAcc(G), kv = kds[e];
    qs[e] = qs[e] * (p.scale * ex);
    ws[e] = beta[i] * kv * ex;
    kds[e] = kv * am::expAcc(am::gptr(s.eg)[c] - G);
  }
  for (int e = tid; e < L * V; e += kThreads)
    us[e] = beta[e / V] *
            am::ldF(p.v, ((ch.start + e / V) * p.numHeads + h) * V + e % V);
  am::syncThreads();
  for (int c = tid; c < K; c += kThreads)
    am::gptr(s.eg)[c] = am::expAcc(am::gptr(s.eg)[c]);
  for (int col = tid; col < K + V; col += kThreads) {
    float *X = col < K ? ws + col : us + (col - K);
    const int st = col < K ? K : V;
    for (int i = 1; i < L; ++i) {
      float v = X[i * st];
      for (int m = 0; m < i; ++m)
        v -= lm[i * C + m] * X[m * st];
      X[i * st] = v;
    }
  }
  for (int e = L * K + tid; e < C * K; e += kThreads)
    ws[e] = qs[e] = kds[e] = 0.f;
  for (int e = L * V + tid; e < C * V; e += kThreads)
    us[e] = 0.f;
  am::syncThreads();
}

} // namespace detail

/// Phase 0 task: global chunks [c0, c1) of head h (indices at or past the
/// run-time chunk count are skipped).
template <int kThreads, typename T>
__device__ __forceinline__ int32_t kdaIntraChunk(const KdaParams<T> &p,
                                                 int64_t c0, int64_t c1,
                                                 int64_t h, float *workspace,
                                                 char *lds) {
  // Opaque inputs (am::opaque): an emitted loop around this call must not
  // hoist the body's invariants out of it.
  am::opaque(c0);
  am::opaque(c1);
  am::opaque(h);
  am::opaque(workspace);
  const int64_t C = p.chunkSize, K = p.dimK, V = p.dimV;
  const int64_t have = am::dynamicLdsBytes();
  const int64_t need = kdaIntraLdsBytes(C, K, V);
  const bool mfma = need > 0 && have >= need;
  if (!mfma && have < kdaIntraMinLdsBytes(C, K))
    return am::kBodyLdsTooSmall;
  c1 = imin(c1, p.maxChunks);
  const detail::KdaDev<T> d = detail::kdaDev(p);
  workspace = am::toVgpr(workspace);
  KdaChunk ch;
  for (int64_t c = c0; c < c1; ++c) {
    int cs = int(C);
    am::opaque(cs);
    if (!kdaLocateChunk(p.cuSeqlens, p.numSeqs, cs, c, ch))
      return am::kBodyOk; // chunk indices only grow: the rest are past too
    // Everything below is computed from per-iteration opaque copies (see
    // am::opaque), the slot address included.
    detail::KdaDev<T> dc = d;
    detail::kdaOpaque(dc);
    int hc = int(h);
    am::opaque(hc);
    const KdaSlotT<float> s =
        kdaSlot(workspace, c, hc, dc.numHeads, dc.chunkSize, dc.dimK, dc.dimV);
    if (mfma)
      detail::kdaIntraChunkMfma<kThreads>(dc, ch, hc, s, lds);
    else
      detail::kdaIntraChunkPlain<kThreads>(dc, ch, hc, s, lds);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// Phase 1: state scan
//===----------------------------------------------------------------------===//

namespace detail {

/// The per-chunk operands of the MFMA scan in LDS, and their staging
/// through registers: each thread owns the float4 chunks tid + kThreads q
/// (q < kMax) of a [rows][cols] matrix (cols % 4 == 0). Indices past the
/// matrix are clamped to its last chunk instead of masked: the load stays
/// in bounds and the store rewrites that chunk with its own value, and no
/// lane mask (an SGPR pair each) is needed.
template <int kThreads, int kMax> struct KdaStage {
  am::f32x4 v[kMax];
  /// Loads rows x cols floats at src (row stride = cols).
  __device__ __forceinline__ void load(const float *src, int rows, int cols) {
    const int last = rows * (cols / 4) - 1;
#pragma unroll
    for (int q = 0; q < kMax; ++q) {
      const int e = imin(int(am::threadId()) + kThreads * q, last);
      v[q] = __builtin_bit_cast(am::f32x4, am::ldGlobal16(src + 4 * e));
    }
  }
  /// Stores them at dst with row stride `stride` (floats).
  __device__ __forceinline__ void store(float *dst, int rows, int cols,
                                        int stride) const {
    const int per = cols / 4, last = rows * per - 1;
#pragma unroll
    for (int q = 0; q < kMax; ++q) {
      const int e = imin(int(am::threadId()) + kThreads * q, last);
      float *d = dst + (e / per) * stride + 4 * (e % per);
#pragma unroll
      for (int x = 0; x < 4; ++x)
        d[x] = v[q][x];
    }
  }
};

/// One V sub-block [vs, vs + nv) (nv <= 64) of sequence n, head h, on MFMA,
/// in the fixed LDS layout (kKdaSW ...). MFMA operand layouts (lane =
/// 16 g + i16): A[row][k] is lane (row = i16, k-slot g); B[k][col] is lane
/// (col = i16, k-slot g); D register rr is (row 4 g + rr, col i16).
template <int kThreads, typename T>
__device__ __forceinline__ void
kdaScanBlockMfma(const KdaDev<T> &p, int h, int64_t seqStart, int len,
                 int64_t firstChunk, int numChunks, float *state,
                 const float *init, int64_t vs, int nv, const float *workspace,
                 char *lds) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  constexpr int RS = kKdaRowStride, CS = kKdaCStride;
  constexpr int KD = kKdaKdStride, SS = kKdaColStride;
  constexpr int kStageKxC = (kKdaMaxC * kKdaMaxK / 4 + kThreads - 1) / kThreads;
  constexpr int kStageCxC = (kKdaMaxC * kKdaMaxC / 4 + kThreads - 1) / kThreads;
  constexpr int kStageK = (kKdaMaxK / 4 + kThreads - 1) / kThreads;
  const int tid = int(am::threadId()), lane = am::laneId(), wave = am::waveId();
  const int i16 = lane & 15, g = lane >> 4;
  const int H = int(p.numHeads), K = int(p.dimK), V = int(p.dimV),
            C = int(p.chunkSize);
  const int CP = int(kdaPadRows(C)), KP = (K + 15) / 16 * 16;
  float *f = reinterpret_cast<float *>(lds);
  float *sWK = f + kKdaSW;    // w [CP][RS], then kd [CP][KD]
  float *sQg = f + kKdaSQg;   // qg [CP][RS]
  float *sAqk = f + kKdaSAqk; // aqk [CP][CS]
  float *sS = f + kKdaSS;     // S [KP][SS], the state block
  float *sVn = f + kKdaSVn;   // v_new [CP][SS]
  float *sEg = f + kKdaSEg;   // eg [KP]
  const int nJT = (nv + 15) / 16;

  // Zero everything once: padding rows / channels stay zero for the whole
  // scan (the staging writes rows < C, channels < K only).
  for (int e = tid; e < kKdaScanFloats; e += kThreads)
    f[e] = 0.f;
  am::syncThreads();
  for (int e = tid; e < K * nv; e += kThreads) {
    const int c = e / nv, j = e % nv;
    sS[c * SS + j] = init ? init[int64_t(c) * V + vs + j] : 0.f;
  }

  auto slotOf = [&](int ci) {
    return kdaSlot(workspace, firstChunk + ci, h, H, C, K, V);
  };
  KdaStage<kThreads, kStageKxC> stW, stQg, stKd;
  KdaStage<kThreads, kStageCxC> stAqk;
  KdaStage<kThreads, kStageK> stEg;
  auto loadFront = [&](const KdaSlotT<const float> &s) {
    stW.load(s.w, C, K);
    stQg.load(s.qg, C, K);
    stAqk.load(s.aqk, C, C);
    stEg.load(s.eg, 1, K);
  };
  auto storeFront = [&]() {
    stW.store(sWK, C, K, RS);
    stQg.store(sQg, C, K, RS);
    stAqk.store(sAqk, C, C, CS);
    stEg.store(sEg, 1, K, K);
  };
  if (numChunks > 0) {
    loadFront(slotOf(0));
    storeFront();
  }
  am::syncThreads();

  for (int ci = 0; ci < numChunks; ++ci) {
    const KdaSlotT<const float> s = slotOf(ci);
    const int L = imin(C, len - ci * C);
    const int64_t t0 = seqStart + int64_t(ci) * C;
    int kp = KP, cp = CP, nj = nJT, hh = h;
    am::opaque(kp); // per-iteration bounds: nothing of the steps is hoisted
    am::opaque(cp);
    am::opaque(nj);
    am::opaque(hh);

    // A. v_new = u - w S, tiles (it, jt); all CP rows (rows >= L give 0).
    for (int item = wave; item < (cp / 16) * nj; item += kWaves) {
      const int it = item / nj, jt = item % nj;
      const int col = 16 * jt + i16;
      float u[4];
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        const int row = 16 * it + 4 * g + rr;
        u[rr] = row < C && col < nv ? am::gptr(s.u)[int64_t(row) * V + vs + col]
                                    : 0.f;
      }
      const float *aRow = sWK + (16 * it + i16) * RS + g; // w[i][c4 + g]
      const float *bCol = sS + g * SS + col;              // S[c4 + g][col]
      am::f32x4 acc = am::zero4();
      for (int c4 = 0; c4 < kp; c4 += 4)
        acc = am::mfma16x16x4f32(aRow[c4], bCol[c4 * SS], acc);
#pragma unroll
      for (int rr = 0; rr < 4; ++rr)
        sVn[(16 * it + 4 * g + rr) * SS + col] = u[rr] - acc[rr];
    }
    stKd.load(s.kd, C, K); // in flight during step B
    am::syncThreads();

    // B. o = qg S + Aqk v_new for rows < L, columns < nv.
    for (int item = wave; item < (cp / 16) * nj; item += kWaves) {
      const int it = item / nj, jt = item % nj;
      const int col = 16 * jt + i16;
      const float *aRow = sQg + (16 * it + i16) * RS + g; // qg[i][c4 + g]
      const float *bCol = sS + g * SS + col;
      am::f32x4 acc = am::zero4();
      for (int c4 = 0; c4 < kp; c4 += 4)
        acc = am::mfma16x16x4f32(aRow[c4], bCol[c4 * SS], acc);
      const float *qRow = sAqk + (16 * it + i16) * CS + g; // aqk[i][m4 + g]
      const float *vCol = sVn + g * SS + col;              // v_new[m4 + g][col]
      for (int m4 = 0; m4 < 16 * (it + 1); m4 += 4) // aqk[i][m] = 0 for m > i
        acc = am::mfma16x16x4f32(qRow[m4], vCol[m4 * SS], acc);
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        const int row = 16 * it + 4 * g + rr;
        if (row < L && col < nv)
          am::stF(p.o, ((t0 + row) * p.numHeads + hh) * V + vs + col, acc[rr]);
      }
    }
    am::syncThreads(); // w and qg are free
    stKd.store(sWK, C, K, KD);
    if (ci + 1 < numChunks)
      loadFront(slotOf(ci + 1)); // in flight during step C
    am::syncThreads();

    // C. S = diag(eg) S + kd^T v_new, tiles (ct, jt); each S element is
    //    read and written by the lane that owns it.
    for (int item = wave; item < (kp / 16) * nj; item += kWaves) {
      const int ct = item / nj, jt = item % nj;
      const int col = 16 * jt + i16;
      am::f32x4 acc;
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        const int c = 16 * ct + 4 * g + rr;
        acc[rr] = sEg[c] * sS[c * SS + col];
      }
      const float *aCol = sWK + g * KD + 16 * ct + i16; // kd[m4 + g][c]
      const float *bCol = sVn + g * SS + col;           // v_new[m4 + g][col]
      for (int m4 = 0; m4 < cp; m4 += 4)
        acc = am::mfma16x16x4f32(aCol[m4 * KD], bCol[m4 * SS], acc);
#pragma unroll
      for (int rr = 0; rr < 4; ++rr)
        sS[(16 * ct + 4 * g + rr) * SS + col] = acc[rr];
    }
    am::syncThreads(); // kd, eg, v_new are free
    if (ci + 1 < numChunks)
      storeFront();
    am::syncThreads();
  }

  for (int e = tid; e < K * nv; e += kThreads) {
    const int c = e / nv, j = e % nv;
    state[int64_t(c) * V + vs + j] = sS[c * SS + j];
  }
  am::syncThreads(); // the next sub-block rewrites the LDS
}

/// Plain path (any K, C, alignment): the host's loops for one column per
/// thread of the sub-block, the state in final_state itself, v_new in LDS.
template <int kThreads, typename T>
__device__ __forceinline__ void
kdaScanBlockPlain(const KdaDev<T> &p, int h, int64_t seqStart, int len,
                  int64_t firstChunk, int numChunks, float *state,
                  const float *init, int64_t vs, int nv, const float *workspace,
                  char *lds) {
  const int H = int(p.numHeads), K = int(p.dimK), V = int(p.dimV),
            C = int(p.chunkSize);
  const int j = int(am::threadId());
  float *vnew = reinterpret_cast<float *>(lds); // [C][64], column j
  if (j < nv) {
    for (int c = 0; c < K; ++c)
      state[int64_t(c) * V + vs + j] =
          init ? init[int64_t(c) * V + vs + j] : 0.f;
    for (int ci = 0; ci < numChunks; ++ci) {
      const int L = imin(C, len - ci * C);
      const int64_t t0 = seqStart + int64_t(ci) * C;
      const KdaSlotT<const float> s =
          kdaSlot(workspace, firstChunk + ci, h, H, C, K, V);
      for (int i = 0; i < L; ++i) {
        float v = am::gptr(s.u)[int64_t(i) * V + vs + j];
        for (int c = 0; c < K; ++c)
          v -= am::gptr(s.w)[int64_t(i) * K + c] *
               state[int64_t(c) * V + vs + j];
        vnew[i * kKdaScanCols + j] = v;
      }
      for (int i = 0; i < L; ++i) {
        float acc = 0.f;
        for (int c = 0; c < K; ++c)
          acc += am::gptr(s.qg)[int64_t(i) * K + c] *
                 state[int64_t(c) * V + vs + j];
        for (int m = 0; m <= i; ++m)
          acc += am::gptr(s.aqk)[i * C + m] * vnew[m * kKdaScanCols + j];
        am::stF(p.o, ((t0 + i) * H + h) * V + vs + j, acc);
      }
      for (int c = 0; c < K; ++c) {
        float sc = state[int64_t(c) * V + vs + j] * am::gptr(s.eg)[c];
        for (int i = 0; i < L; ++i)
          sc += am::gptr(s.kd)[int64_t(i) * K + c] * vnew[i * kKdaScanCols + j];
        state[int64_t(c) * V + vs + j] = sc;
      }
    }
  }
  am::syncThreads();
}

} // namespace detail

/// Phase 1 task: sequence n (skipped when n >= the run-time N), head h,
/// columns [v0, v1) in sub-blocks of 64. Writes o for those columns and
/// final_state[n, h, :, v0:v1]; initial_state may alias final_state (each
/// sub-block reads its initial columns before writing them).
template <int kThreads, typename T>
__device__ __forceinline__ int32_t kdaStateScan(const KdaParams<T> &p,
                                                int64_t n, int64_t h,
                                                int64_t v0, int64_t v1,
                                                const float *workspace,
                                                char *lds) {
  // Opaque inputs (am::opaque): an emitted loop around this call must not
  // hoist the body's invariants out of it.
  am::opaque(n);
  am::opaque(h);
  am::opaque(v0);
  am::opaque(v1);
  am::opaque(workspace);
  if (n >= p.numSeqs)
    return am::kBodyOk;
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  const int64_t have = am::dynamicLdsBytes();
  const int64_t seqStart = p.cuSeqlens[n];
  const int len = int(int64_t(p.cuSeqlens[n + 1]) - seqStart);
  const int64_t firstChunk = kdaFirstChunkOfSeq(p.cuSeqlens, n, C);
  const int numChunks = int(kdaCeilDiv(len, C));
  float *state = am::toVgpr(p.finalState + (n * H + h) * K * V);
  const float *init = p.initialState
                          ? am::toVgpr(p.initialState + (n * H + h) * K * V)
                          : nullptr;
  // The MFMA path stages float4s of the slot (C, K multiples of 4 and a
  // 16-byte aligned workspace keep every slot region 16-byte aligned) and
  // shares one LDS region between w and kd at different strides, which is
  // exact when neither has padding rows or channels: C, K multiples of 16
  // (the op's chunk sizes are 64 and 16; Kimi-Linear has K = 128).
  const int64_t need = kdaScanLdsBytes(C, K);
  const bool mfma = need > 0 && have >= need && K % 16 == 0 && C % 16 == 0 &&
                    am::isAligned16(workspace);
  if (!mfma &&
      (kThreads < detail::kKdaScanCols || have < kdaScanMinLdsBytes(C)))
    return am::kBodyLdsTooSmall;
  const detail::KdaDev<T> d = detail::kdaDev(p);
  workspace = am::toVgpr(workspace);
  for (int64_t vs = v0; vs < v1; vs += detail::kKdaScanCols) {
    const int nv = int(imin(detail::kKdaScanCols, v1 - vs));
    detail::KdaDev<T> dv = d;
    detail::kdaOpaque(dv);
    if (mfma)
      detail::kdaScanBlockMfma<kThreads>(dv, int(h), seqStart, len, firstChunk,
                                         numChunks, state, init, vs, nv,
                                         workspace, lds);
    else
      detail::kdaScanBlockPlain<kThreads>(dv, int(h), seqStart, len, firstChunk,
                                          numChunks, state, init, vs, nv,
                                          workspace, lds);
  }
  return am::kBodyOk;
}

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_KDABODIES_H
