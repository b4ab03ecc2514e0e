//===- DecoderBodies.cuh - Device task bodies of the decoder ops -*- CUDA
//-*-===//
//
// Block-cooperative versions of kernels/host/DecoderBodies.h for sm_90a (they
// also build for sm_100a). Each body takes the host body's parameters, in the
// same order, plus the block's dynamic shared memory `smem` last, and is
// called by all kThreads threads of the block (blockDim.x == kThreads, a
// multiple of 32). Tile semantics, aliasing rules and workspace layouts are
// the host bodies'; the same generated task table drives both. The linear
// bodies live in LinearBodies.cuh and gqa_decode's in GqaDecodeBodies.cuh,
// both included here.
//
// Every body returns int32_t 0 (a status code of Numerics.cuh; none of these
// fails), except embedding, which returns the host's bool (false: an id was
// out of range). Control flow around barriers depends only on block-uniform
// values.
//
// Speed: the memory-bound bodies move 16-byte vectors (8 bf16) coalesced
// across the warp; linear uses mma.sync tensor cores with x as the narrow
// operand, so one pass over a weight tile serves up to 32 rows of x. Each
// fast path checks its preconditions (types, alignment, shapes) at run time
// and falls back to a plain loop with the same results otherwise.
//
// Dynamic shared memory per body (kThreads = 256), see the *SmemBytes
// functions: linearTile/linearPartial 32 KB (up to 32 rows of x stream the
// weights through a ring in whatever the launch gives, at least
// linearRingSmemBytes(3, rows): LinearRing.cuh), rope 2 KB, gqaDecodeSplit
// 33 KB (D = 128) / 66 KB (D = 256), its tensor-core path at least 128 KB
// (D = 128: GqaSplitMma.cuh), the others none (rmsnormRows and
// argmaxRows use 32 B / 96 B of static shared memory). Each body checks
// what the launch gave (%dynamic_smem_size) and with less takes a slower
// path that needs none, with the same results.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH

#include "kernels/common/Rope.h"
#include "kernels/nvidia/MetaFault.cuh"
#include "kernels/nvidia/sm90/DecoderCommon.cuh"
#include "kernels/nvidia/sm90/GqaDecodeBodies.cuh"
#include "kernels/nvidia/sm90/LinearBodies.cuh"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace sm90 {

//===----------------------------------------------------------------------===//
// rmsnorm
//===----------------------------------------------------------------------===//

/// None: the block reduction's scratch is static shared memory.
template <int kThreads>
__host__ __device__ constexpr int64_t rmsnormSmemBytes() {
  return 0;
}

namespace detail {
/// Sum of squares of the `stride`-strided share of row xr owned by `idx`.
template <int kStride, typename TX>
__device__ __forceinline__ float rowSumSq(const TX *xr, int64_t D, bool vec,
                                          int idx) {
  float ss = 0.f;
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += kStride * 8) {
      float v[8];
      nv::load8(xr + i, v);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        ss += v[e] * v[e];
    }
  } else {
    for (int64_t i = idx; i < D; i += kStride) {
      float v = nv::ldF(xr, i);
      ss += v * v;
    }
  }
  return ss;
}

/// yr = xr * inv * w over the same share (so y may alias x).
template <int kStride, typename TX, typename TW, typename TY>
__device__ __forceinline__ void rowScale(const TX *xr, const TW *w, TY *yr,
                                         int64_t D, float inv, bool vec,
                                         int idx) {
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += kStride * 8) {
      float v[8], g[8];
      nv::load8(xr + i, v);
      nv::load8(w + i, g);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = v[e] * inv * g[e];
      nv::store8(yr + i, v);
    }
  } else {
    for (int64_t i = idx; i < D; i += kStride)
      nv::stF(yr, i, nv::ldF(xr, i) * inv * nv::ldF(w, i));
  }
}
} // namespace detail

/// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for r in [r0, r1).
/// A warp per row for D <= 1024 (Qwen3's per-head norm), the whole block
/// per row above (hidden states).
template <int kThreads, typename TX, typename TW, typename TY>
__device__ __noinline__ int32_t rmsnormRows(const TX *x, const TW *w, TY *y, int64_t D,
                               float eps, int64_t r0, int64_t r1, char *smem) {
  constexpr int kWarps = kThreads / 32;
  const bool vec = D % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(w) &&
                   nv::isAligned16(y);
  if (D <= 1024) {
    const int lane = detail::laneId();
    for (int64_t r = r0 + detail::warpId(); r < r1; r += kWarps) {
      float ss = nv::warpSum(detail::rowSumSq<32>(x + r * D, D, vec, lane));
      float inv = 1.0f / sqrtf(ss / float(D) + eps);
      detail::rowScale<32>(x + r * D, w, y + r * D, D, inv, vec, lane);
    }
    return nv::kBodyOk;
  }
  __shared__ float scratch[kWarps];
  for (int64_t r = r0; r < r1; ++r) {
    float ss = nv::blockSum<kThreads>(
        detail::rowSumSq<kThreads>(x + r * D, D, vec, threadIdx.x), scratch);
    float inv = 1.0f / sqrtf(ss / float(D) + eps);
    detail::rowScale<kThreads>(x + r * D, w, y + r * D, D, inv, vec,
                               threadIdx.x);
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// rope (NeoX halves)
//===----------------------------------------------------------------------===//

namespace detail {
/// Pairs whose cos/sin sit in shared memory at once.
constexpr int64_t kRopePairs = 256;

/// Without shared memory: a thread per pair, each computing its angle.
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ void ropeDirect(const TX *x, const TPos *positions, TY *y, int64_t H,
                           int64_t D, int64_t rotaryDim, float theta,
                           const RopeScaling &scaling, int64_t r0, int64_t r1) {
  const int64_t half = rotaryDim / 2, tail = D - rotaryDim;
  const int64_t per = half + tail;
  for (int64_t idx = threadIdx.x; idx < (r1 - r0) * per; idx += kThreads) {
    const int64_t row = r0 + idx / per, j = idx % per;
    if (j >= half) { // past the rotary dims: copied
      const int64_t off = row * D + rotaryDim + (j - half);
      nv::stF(y, off, nv::ldF(x, off));
      continue;
    }
    const double invFreq = ropeScaledInvFreq(
        pow(double(theta), -2.0 * double(j) / double(rotaryDim)), scaling);
    const double angle = double(positions[row / H]) * invFreq;
    const float c = float(cos(angle)), sn = float(sin(angle));
    const int64_t off = row * D + j;
    const float a = nv::ldF(x, off), b = nv::ldF(x, off + half);
    nv::stF(y, off, a * c - b * sn);
    nv::stF(y, off + half, b * c + a * sn);
  }
}
} // namespace detail

/// The cos/sin table; with less, each element computes its own angle.
template <int kThreads> __host__ __device__ constexpr int64_t ropeSmemBytes() {
  return 2 * detail::kRopePairs * 4;
}

/// Rows [r0, r1) of the flattened [T * H] rows. Each token's cos/sin are
/// computed once (in double, as the host does, then cast to float) into
/// shared memory and applied to all its heads. `y` may alias `x`.
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ __noinline__ int32_t rope(const TX *x, const TPos *positions, TY *y, int64_t H,
                        int64_t D, int64_t rotaryDim, float theta,
                        RopeScaling scaling, int64_t r0, int64_t r1,
                        char *smem) {
  using detail::kRopePairs;
  if (nv::dynamicSmemBytes() < ropeSmemBytes<kThreads>()) {
    detail::ropeDirect<kThreads>(x, positions, y, H, D, rotaryDim, theta,
                                 scaling, r0, r1);
    return nv::kBodyOk;
  }
  float *cosv = reinterpret_cast<float *>(smem);
  float *sinv = cosv + kRopePairs;
  const int64_t half = rotaryDim / 2;
  const bool vec =
      half % 8 == 0 && D % 8 == 0 && nv::isAligned16(x) && nv::isAligned16(y);
  // theta^e as 2^(e log2 theta), and sin and cos from one reduction: a
  // third of pow + cos + sin, the same floats (the double results differ
  // in their last bits at most).
  const double log2Theta = log2(double(theta));
  for (int64_t r = r0; r < r1;) {
    const int64_t t = r / H;
    const int64_t rEnd = imin(r1, (t + 1) * H), rows = rEnd - r;
    const double pos = double(positions[t]);
    for (int64_t i0 = 0; i0 < half; i0 += kRopePairs) {
      const int64_t cnt = imin(kRopePairs, half - i0);
      __syncthreads(); // the previous table's readers are done
      for (int64_t j = threadIdx.x; j < cnt; j += kThreads) {
        const double invFreq = ropeScaledInvFreq(
            exp2(-2.0 * double(i0 + j) / double(rotaryDim) * log2Theta),
            scaling);
        double sn, cs;
        sincos(pos * invFreq, &sn, &cs);
        cosv[j] = float(cs);
        sinv[j] = float(sn);
      }
      __syncthreads();
      if (vec) {
        const int64_t groups = cnt / 8;
        for (int64_t idx = threadIdx.x; idx < rows * groups; idx += kThreads) {
          const int64_t row = r + idx / groups, j = (idx % groups) * 8;
          const int64_t off = row * D + i0 + j;
          float a[8], b[8], ya[8], yb[8];
          nv::load8(x + off, a);
          nv::load8(x + off + half, b);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            ya[e] = a[e] * cosv[j + e] - b[e] * sinv[j + e];
            yb[e] = b[e] * cosv[j + e] + a[e] * sinv[j + e];
          }
          nv::store8(y + off, ya);
          nv::store8(y + off + half, yb);
        }
      } else {
        for (int64_t idx = threadIdx.x; idx < rows * cnt; idx += kThreads) {
          const int64_t row = r + idx / cnt, j = idx % cnt;
          const int64_t off = row * D + i0 + j;
          const float a = nv::ldF(x, off), b = nv::ldF(x, off + half);
          nv::stF(y, off, a * cosv[j] - b * sinv[j]);
          nv::stF(y, off + half, b * cosv[j] + a * sinv[j]);
        }
      }
    }
    const int64_t tail = D - rotaryDim;
    for (int64_t idx = threadIdx.x; idx < rows * tail; idx += kThreads) {
      const int64_t off = (r + idx / tail) * D + rotaryDim + idx % tail;
      nv::stF(y, off, nv::ldF(x, off));
    }
    r = rEnd;
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// kv_append
//===----------------------------------------------------------------------===//

/// Tokens [t0, t1): K row [Hkv, D] and V row [Hkv, Dv] of token t go to slot
/// slotMapping[t] of the [pages, P, Hkv, D|Dv] caches; negative slots are
/// padding and skipped, slots past the `numPages` pages refused.
template <int kThreads, typename TK, typename TV, typename TSlot, typename TKC,
          typename TVC>
__device__ __noinline__ int32_t kvAppend(const TK *k, const TV *v, const TSlot *slotMapping,
                            TKC *kCache, TVC *vCache, int64_t Hkv, int64_t D,
                            int64_t Dv, int64_t P, int64_t numPages, int64_t t0,
                            int64_t t1, char *smem) {
  for (int64_t t = t0; t < t1; ++t) {
    // page slot / P, entry slot % P; a slot past the caches is refused
    // (MetaGuard.h) and nothing written.
    const int64_t row = int64_t(slotMapping[t]);
    if (row < 0 || !writableIndex(slotMapping + t, numPages * P, LOOM_META_SLOT))
      continue;
    detail::copyRow<kThreads>(k + t * Hkv * D, kCache + row * Hkv * D, Hkv * D);
    detail::copyRow<kThreads>(v + t * Hkv * Dv, vCache + row * Hkv * Dv,
                              Hkv * Dv);
  }
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// Elementwise: element range [e0, e1)
//===----------------------------------------------------------------------===//

namespace detail {
template <int kThreads, typename TA, typename TB, typename TY, typename F>
__device__ void elementwise2(const TA *a, const TB *b, TY *y, int64_t e0,
                             int64_t e1, const F &f) {
  int64_t vecEnd = e0;
  if (e0 % 8 == 0 && nv::isAligned16(a) && nv::isAligned16(b) &&
      nv::isAligned16(y)) {
    vecEnd = e0 + (e1 - e0) / 8 * 8;
    for (int64_t e = e0 + threadIdx.x * 8; e < vecEnd; e += kThreads * 8) {
      float va[8], vb[8];
      nv::load8(a + e, va);
      nv::load8(b + e, vb);
#pragma unroll
      for (int i = 0; i < 8; ++i)
        va[i] = f(va[i], vb[i]);
      nv::store8(y + e, va);
    }
  }
  for (int64_t e = vecEnd + threadIdx.x; e < e1; e += kThreads)
    nv::stF(y, e, f(nv::ldF(a, e), nv::ldF(b, e)));
}

struct SiluMulOp {
  __device__ float operator()(float g, float u) const {
    return g * nv::sigmoid(g) * u;
  }
};
struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
} // namespace detail

/// y = silu(gate) * up. `y` may alias either input.
template <int kThreads, typename TG, typename TU, typename TY>
__device__ __noinline__ int32_t siluMul(const TG *gate, const TU *up, TY *y, int64_t e0,
                           int64_t e1, char *smem) {
  detail::elementwise2<kThreads>(gate, up, y, e0, e1, detail::SiluMulOp{});
  return nv::kBodyOk;
}

/// y = a + b. `y` may alias either input.
template <int kThreads, typename TA, typename TB, typename TY>
__device__ __noinline__ int32_t add(const TA *a, const TB *b, TY *y, int64_t e0, int64_t e1,
                       char *smem) {
  detail::elementwise2<kThreads>(a, b, y, e0, e1, detail::AddOp{});
  return nv::kBodyOk;
}

//===----------------------------------------------------------------------===//
// embedding / argmax: rows [b0, b1)
//===----------------------------------------------------------------------===//

/// y[b] = table[ids[b]]. As the host body, returns false when an id is
/// outside [0, vocab): that id is not read and its row is zeroed (the other
/// rows are still copied).
template <int kThreads, typename TT, typename TId, typename TY>
__device__ __noinline__ bool embedding(const TT *table, const TId *ids, TY *y, int64_t vocab,
                          int64_t D, int64_t b0, int64_t b1, char *smem) {
  bool ok = true;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t id = int64_t(ids[b]);
    if (id < 0 || id >= vocab) {
      recordMetaFault(ids + b, id, LOOM_META_TOKEN_ID);
      detail::fillRow<kThreads>(y + b * D, D, 0.f);
      ok = false;
      continue;
    }
    detail::copyRow<kThreads>(table + id * D, y + b * D, D);
  }
  return ok;
}

/// None: the per-warp candidates sit in static shared memory.
template <int kThreads>
__host__ __device__ constexpr int64_t argmaxSmemBytes() {
  return 0;
}

namespace detail {
/// Is (va, ia) ahead of (vb, ib)? NaN beats numbers; then larger; ties go
/// to the lower index: the host's "first NaN, else first maximum".
__device__ __forceinline__ bool argBefore(float va, int64_t ia, float vb,
                                          int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb)
    return na;
  if (!na && va != vb)
    return va > vb;
  return ia < ib;
}
} // namespace detail

/// indices[b] = argmax_v x[b, v], one row at a time across the block.
template <int kThreads, typename TX, typename TIdx>
__device__ __noinline__ int32_t argmaxRows(const TX *x, TIdx *indices, int64_t V, int64_t b0,
                              int64_t b1, char *smem) {
  constexpr int kWarps = kThreads / 32;
  __shared__ float sVal[kWarps];
  __shared__ int64_t sIdx[kWarps];
  const int lane = detail::laneId(), warp = detail::warpId();
  const bool vec = V % 8 == 0 && nv::isAligned16(x);
  for (int64_t b = b0; b < b1; ++b) {
    const TX *row = x + b * V;
    // The sentinel loses to every element, -inf included (index order).
    float best = nv::kNegInf;
    int64_t bestIdx = INT64_MAX;
    auto consider = [&](float v, int64_t i) {
      if (detail::argBefore(v, i, best, bestIdx)) {
        best = v;
        bestIdx = i;
      }
    };
    if (vec) {
      for (int64_t i = threadIdx.x * 8; i < V; i += kThreads * 8) {
        float v[8];
        nv::load8(row + i, v);
#pragma unroll
        for (int e = 0; e < 8; ++e)
          consider(v[e], i + e);
      }
    } else {
      for (int64_t i = threadIdx.x; i < V; i += kThreads)
        consider(nv::ldF(row, i), i);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
      float v = __shfl_xor_sync(0xffffffffu, best, off);
      int64_t i = __shfl_xor_sync(0xffffffffu, bestIdx, off);
      consider(v, i);
    }
    if (lane == 0) {
      sVal[warp] = best;
      sIdx[warp] = bestIdx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w)
        consider(sVal[w], sIdx[w]);
      indices[b] = TIdx(bestIdx);
    }
    __syncthreads(); // the scratch is reused by the next row
  }
  return nv::kBodyOk;
}

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_DECODERBODIES_CUH
