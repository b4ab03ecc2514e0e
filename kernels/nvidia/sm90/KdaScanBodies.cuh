//===- KdaScanBodies.cuh - KDA prefill phase 1 (state scan) ----*- CUDA -*-===//
//
// kdaStateScan of KdaBodies.cuh (which includes this file; its header
// describes both phases' paths): per (sequence, head, column block), the
// state carried across the sequence's chunks (from phase 0's slots) and o,
// on the tensor cores where the fast path applies (kdaStateScanFast), else
// with FFMA (kdaStateScanGeneric).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDASCANBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDASCANBODIES_CUH

#include "kernels/nvidia/sm90/KdaCommon.cuh"
#include "kernels/nvidia/sm90/KdaTf32.cuh"

#include <cstdint>

namespace loom {
namespace sm90 {

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

#endif // LOOM_KERNELS_NVIDIA_SM90_KDASCANBODIES_CUH
