//===- DecoderBodies.h - gfx950 task bodies of the decoder ops  -*- C++ -*-===//
//
// Workgroup-cooperative versions of kernels/host/DecoderBodies.h for MI350X
// (gfx950, wave64). Each body takes the host body's parameters, in the same
// order, plus the workgroup's dynamic LDS `lds` last, and is called by all
// kThreads threads of the workgroup (a multiple of 64; Loom uses 256 = one
// wave per SIMD). Tile semantics, aliasing rules and workspace layouts are
// the host bodies'; the same generated task table drives both. The linear
// bodies live in LinearBodies.h and gqa_decode's in GqaDecodeBodies.h, both
// included here, with what they all share in DecoderCommon.h.
//
// Every body returns int32_t 0 (a status code of HipDevice.h; none of these
// fails), except embedding, which returns the host's bool (false: an id was
// out of range). Control flow around barriers depends only on
// workgroup-uniform values. Bodies are __forceinline__: on AMDGPU a real
// call would save callee-saved VGPRs to scratch; the emitted runTask switch
// inlines every body into the kernel, whose register count is the largest
// body's (tests/amd/check-isa.sh checks there is no scratch).
//
// Memory-bound bodies move 16-byte vectors (8 bf16 per lane, global_load_
// dwordx4), coalesced across the wave, whenever types, alignment and sizes
// allow, and fall back to a scalar loop with the same results otherwise.
//
// linear (decode: M <= 32 rows, weight-bandwidth bound) uses MFMA
// v_mfma_f32_16x16x32_{bf16,f16} as a wide dot-product engine: y^T = W x^T
// with A = 16 weight rows (output columns), B = 16 rows of x, so one pass
// over a weight tile serves up to 32 rows of x; every lane streams 64
// contiguous bytes of its weight row per 128-k block (non-temporal loads)
// and the fp32 accumulators stay in registers. x and W both bf16 (or both
// f16), K % 8 == 0, 16-byte aligned bases; otherwise a wave-per-column
// VALU path (fp32 accumulate, wave reduction).
//
// LDS (dynamic) per body, kThreads = 256: linearTile / linearPartial
// linearLdsBytes = 8 KB (only when a tile has fewer 16-column groups than
// waves: the K split meets in LDS, added in wave order); rope
// ropeLdsBytes(D) = 4 D B (cos/sin of one token; less: per-element angles);
// gqaDecodeSplit gqaSplitLdsBytes(D, group) (online-softmax states of the 16
// row groups; 66 KB at D = 128, 8 heads; less: the plain path); the others
// use only a few words of static LDS.
//
// Meta values (kernels/common/MetaGuard.h, as the NVIDIA bodies): kvAppend
// refuses a slot past the `numPages` pages of the caches (negative: padding,
// skipped) and writes nothing for it; gqaDecodeSplit checks its request's
// kv_indptr / kv_lens (pagedRequest: a refused request reads no token) and
// every page id it loads (CheckedPages: a compare and a select per id, a
// refused id reads page 0 and is recorded once at the end of the split). A
// refused value fails the task (Interpreter.h).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H
#define LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H

#include "kernels/amd/MetaFault.h"
#include "kernels/amd/gfx950/DecoderCommon.h"
#include "kernels/amd/gfx950/GqaDecodeBodies.h"
#include "kernels/amd/gfx950/LinearBodies.h"
#include "kernels/common/Rope.h"

#include <cstdint>

namespace loom {
namespace gfx950 {

//===----------------------------------------------------------------------===//
// rmsnorm: x viewed as [R, D]; task = rows [r0, r1).
//===----------------------------------------------------------------------===//

/// None: the workgroup reduction's scratch is static LDS.
template <int kThreads>
__host__ __device__ constexpr int64_t rmsnormLdsBytes() {
  return 0;
}

namespace detail {
/// Sum of squares of the `stride`-strided share of row xr owned by `idx`
/// (8-element vectors when `vec`).
template <typename TX>
__device__ __forceinline__ float rowSumSq(const TX *xr, int64_t D, bool vec,
                                          int idx, int stride) {
  float ss = 0.f;
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += int64_t(stride) * 8) {
      float v[8];
      am::load8(xr + i, v);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        ss += v[e] * v[e];
    }
  } else {
    for (int64_t i = idx; i < D; i += stride) {
      const float v = am::ldF(xr, i);
      ss += v * v;
    }
  }
  return ss;
}

/// yr = xr * inv * w over the same share as rowSumSq (so y may alias x:
/// every element is rewritten by the thread that read it, after the whole
/// row's sum is known).
template <typename TX, typename TW, typename TY>
__device__ __forceinline__ void rowScale(const TX *xr, const TW *w, TY *yr,
                                         int64_t D, float inv, bool vec,
                                         int idx, int stride) {
  if (vec) {
    for (int64_t i = int64_t(idx) * 8; i < D; i += int64_t(stride) * 8) {
      float v[8], g[8];
      am::load8(xr + i, v);
      am::load8(w + i, g);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = v[e] * inv * g[e]; // the host's (x * inv) * w
      am::store8(yr + i, v);
    }
  } else {
    for (int64_t i = idx; i < D; i += stride)
      am::stF(yr, i, am::ldF(xr, i) * inv * am::ldF(w, i));
  }
}
} // namespace detail

/// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w for r in [r0, r1).
/// A wave per row when the tile has at least one row per wave (Qwen3's
/// per-head norm, many rows), the whole workgroup per row otherwise (a few
/// hidden-state rows of decode).
template <int kThreads, typename TX, typename TW, typename TY>
__device__ __forceinline__ int32_t rmsnormRows(const TX *x, const TW *w, TY *y,
                                               int64_t D, float eps, int64_t r0,
                                               int64_t r1, char *lds) {
  (void)lds;
  constexpr int kWaves = kThreads / am::kWaveSize;
  const bool vec = D % 8 == 0 && am::isAligned16(x) && am::isAligned16(w) &&
                   am::isAligned16(y);
  if (r1 - r0 >= kWaves) {
    const int lane = am::laneId();
    for (int64_t r = r0 + am::waveId(); r < r1; r += kWaves) {
      const float ss =
          am::waveSum(detail::rowSumSq(x + r * D, D, vec, lane, 64));
      const float inv = 1.0f / am::sqrtAcc(ss / float(D) + eps);
      detail::rowScale(x + r * D, w, y + r * D, D, inv, vec, lane, 64);
    }
    return am::kBodyOk;
  }
  __shared__ float scratch[kWaves];
  const int tid = int(am::threadId());
  for (int64_t r = r0; r < r1; ++r) {
    const float ss = am::blockSum<kThreads>(
        detail::rowSumSq(x + r * D, D, vec, tid, kThreads), scratch);
    const float inv = 1.0f / am::sqrtAcc(ss / float(D) + eps);
    detail::rowScale(x + r * D, w, y + r * D, D, inv, vec, tid, kThreads);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// rope: x, y [T, H, D]; task = flattened rows [r0, r1) over T * H.
//
// The host takes each angle and its cos/sin in double. Without device
// libraries this is done by hand, as accurately: inv_freq_i =
// theta^(-2 i / rotaryDim) = rho^i with rho = theta^(-2 / rotaryDim) found
// by Newton's method in double (rho^rotaryDim = theta^-2) and rho^i by
// squaring; angle = pos * inv_freq_i in double; Cody-Waite reduction by
// pi/2 in double (fdlibm's three-part pi/2); the reduced |r| <= pi/4 in
// fp32 through Cephes' sinf/cosf polynomials (~1 ulp). Against the host's
// float(std::cos(angle)) this is within a couple of fp32 ulps even at
// positions of 10^6.
//===----------------------------------------------------------------------===//

template <int kThreads>
__host__ __device__ constexpr int64_t ropeLdsBytes(int64_t D) {
  return 4 * D; // cos and sin of rotaryDim / 2 <= D / 2 pairs
}

namespace detail {

/// x^n for n >= 0 by squaring, in double.
__device__ __forceinline__ double powInt(double x, int64_t n) {
  double r = 1.0;
  while (n > 0) {
    if (n & 1)
      r *= x;
    x *= x;
    n >>= 1;
  }
  return r;
}

/// rho = theta^(-2 / rotaryDim) to double precision.
__device__ __forceinline__ double ropeRho(float theta, int64_t rotaryDim) {
  const double c = 1.0 / (double(theta) * double(theta)); // rho^rd = c
  double y =
      double(am::fastExp2(-2.f * am::fastLog2(theta) / float(rotaryDim)));
#pragma unroll
  for (int it = 0; it < 4; ++it) { // quadratic: 1e-6 -> 1e-12 -> 1e-16
    const double q = powInt(y, rotaryDim);
    y = y * (1.0 - (q - c) / (double(rotaryDim) * q));
  }
  return y;
}

/// cos and sin of a double angle, returned as floats.
__device__ __forceinline__ void sinCosD(double angle, float &cosOut,
                                        float &sinOut) {
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  constexpr double kPio2_1 = 1.57079632673412561417e+00;  // 33 bits of pi/2
  constexpr double kPio2_1t = 6.07710050650619224932e-11; // pi/2 - kPio2_1
  constexpr double kPio2_2 = 6.07710050630396597660e-11;  // 33 more bits
  constexpr double kPio2_2t = 2.02226624879595063154e-21; // the rest
  const double k = __builtin_rint(angle * kTwoOverPi);
  // r = angle - k pi/2, exactly enough for |k| < 2^20 (positions < ~1.6e6
  // radians; beyond, the error grows like k * 2e-21).
  double r = __builtin_fma(-k, kPio2_1, angle);
  r = __builtin_fma(-k, kPio2_2, r);
  r = __builtin_fma(-k, kPio2_2t, r);
  (void)kPio2_1t;
  const float x = float(r), z = x * x;
  const float s =
      ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z *
          x +
      x;
  const float c = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z +
                   4.166664568298827e-2f) *
                      z * z -
                  0.5f * z + 1.0f;
  switch (int64_t(k) & 3) {
  case 0:
    cosOut = c, sinOut = s;
    break;
  case 1:
    cosOut = -s, sinOut = c;
    break;
  case 2:
    cosOut = -c, sinOut = -s;
    break;
  default:
    cosOut = s, sinOut = -c;
    break;
  }
}

/// cos / sin of pair j of a token at `pos` (its frequency scaled by
/// `scaling`, kernels/common/Rope.h).
__device__ __forceinline__ void ropeAngle(double rho, const RopeScaling &scaling,
                                          double pos, int64_t j, float &c,
                                          float &s) {
  sinCosD(pos * ropeScaledInvFreq(powInt(rho, j), scaling), c, s);
}

} // namespace detail

/// NeoX-halves rotary embedding of rows [r0, r1) (row = t * H + h): pair
/// i < rotaryDim/2 rotates (x[i], x[i + rotaryDim/2]) by angle
/// positions[t] * theta^(-2i/rotaryDim) (that frequency scaled by
/// `scaling`); dims past rotaryDim are copied.
/// `y` may alias `x` (each element pair is read and written by one thread).
template <int kThreads, typename TX, typename TPos, typename TY>
__device__ __forceinline__ int32_t rope(const TX *x, const TPos *positions,
                                        TY *y, int64_t H, int64_t D,
                                        int64_t rotaryDim, float theta,
                                        RopeScaling scaling, int64_t r0,
                                        int64_t r1, char *lds) {
  const int tid = int(am::threadId());
  const int64_t half = rotaryDim / 2;
  const double rho = detail::ropeRho(theta, rotaryDim);
  const bool table = am::dynamicLdsBytes() >= uint32_t(8 * half);
  float *sCos = reinterpret_cast<float *>(lds);
  float *sSin = sCos + half;
  for (int64_t r = r0; r < r1;) {
    // Rows [r, rEnd) share token t and hence all angles.
    const int64_t t = r / H;
    const int64_t rEnd = imin(r1, (t + 1) * H);
    const double pos = double(positions[t]);
    if (table) {
      for (int64_t j = tid; j < half; j += kThreads)
        detail::ropeAngle(rho, scaling, pos, j, sCos[j], sSin[j]);
      am::syncThreads();
    }
    const int64_t rows = rEnd - r;
    for (int64_t e = tid; e < rows * half; e += kThreads) {
      const int64_t row = r + e / half, j = e % half;
      float c, s;
      if (table) {
        c = sCos[j];
        s = sSin[j];
      } else {
        detail::ropeAngle(rho, scaling, pos, j, c, s);
      }
      const float a = am::ldF(x, row * D + j);
      const float b = am::ldF(x, row * D + j + half);
      am::stF(y, row * D + j, a * c - b * s);
      am::stF(y, row * D + j + half, b * c + a * s);
    }
    const int64_t tailDims = D - rotaryDim;
    for (int64_t e = tid; e < rows * tailDims; e += kThreads) {
      const int64_t row = r + e / tailDims, i = rotaryDim + e % tailDims;
      am::stF(y, row * D + i, am::ldF(x, row * D + i));
    }
    if (table)
      am::syncThreads(); // the table is rewritten for the next token
    r = rEnd;
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// kv_append: task = tokens [t0, t1).
//===----------------------------------------------------------------------===//

/// Copies token t's K row [Hkv, D] and V row [Hkv, Dv] to page
/// slotMapping[t] / P, slot slotMapping[t] % P of the [pages, P, Hkv, D|Dv]
/// caches; a negative slot (padding token) is skipped, a slot past the
/// `numPages` pages refused (MetaGuard.h) and nothing written for it.
template <int kThreads, typename TK, typename TV, typename TSlot, typename TKC,
          typename TVC>
__device__ __forceinline__ int32_t
kvAppend(const TK *k, const TV *v, const TSlot *slotMapping, TKC *kCache,
         TVC *vCache, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
         int64_t numPages, int64_t t0, int64_t t1, char *lds) {
  (void)lds;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t slot = int64_t(slotMapping[t]);
    if (slot < 0 ||
        !writableIndex(slotMapping + t, numPages * P, LOOM_META_SLOT))
      continue;
    const int64_t page = slot / P, inPage = slot % P;
    detail::copyRow<kThreads>(k + t * Hkv * D,
                              kCache + (page * P + inPage) * Hkv * D, Hkv * D);
    detail::copyRow<kThreads>(
        v + t * Hkv * Dv, vCache + (page * P + inPage) * Hkv * Dv, Hkv * Dv);
  }
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// Elementwise: task = element range [e0, e1) of the flattened buffers.
//===----------------------------------------------------------------------===//

namespace detail {
/// y[e] = f(a[e], b[e]) for e in [e0, e1): 8-element vectors over the
/// 8-aligned middle when all three bases allow it, scalars elsewhere. Each
/// element is read and written by one thread, so y may alias a or b.
template <int kThreads, typename TA, typename TB, typename TY, typename F>
__device__ __forceinline__ void elementwise2(const TA *a, const TB *b, TY *y,
                                             int64_t e0, int64_t e1, F f) {
  const int tid = int(am::threadId());
  int64_t v0 = e1, v1 = e1; // the vectorised part [v0, v1)
  if (am::isAligned16(a) && am::isAligned16(b) && am::isAligned16(y)) {
    v0 = imin(roundUp(e0, 8), e1);
    v1 = imax(v0, e1 & ~int64_t(7));
  }
  for (int64_t e = v0 + int64_t(tid) * 8; e < v1; e += kThreads * 8) {
    float va[8], vb[8];
    am::load8(a + e, va);
    am::load8(b + e, vb);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      va[i] = f(va[i], vb[i]);
    am::store8(y + e, va);
  }
  for (int64_t e = e0 + tid; e < v0; e += kThreads)
    am::stF(y, e, f(am::ldF(a, e), am::ldF(b, e)));
  for (int64_t e = v1 + tid; e < e1; e += kThreads)
    am::stF(y, e, f(am::ldF(a, e), am::ldF(b, e)));
}
} // namespace detail

/// y = silu(gate) * up = gate / (1 + exp(-gate)) * up.
template <int kThreads, typename TG, typename TU, typename TY>
__device__ __forceinline__ int32_t siluMul(const TG *gate, const TU *up, TY *y,
                                           int64_t e0, int64_t e1, char *lds) {
  (void)lds;
  detail::elementwise2<kThreads>(gate, up, y, e0, e1, [](float g, float u) {
    return g / (1.0f + am::expAcc(-g)) * u;
  });
  return am::kBodyOk;
}

/// y = a + b.
template <int kThreads, typename TA, typename TB, typename TY>
__device__ __forceinline__ int32_t add(const TA *a, const TB *b, TY *y,
                                       int64_t e0, int64_t e1, char *lds) {
  (void)lds;
  detail::elementwise2<kThreads>(a, b, y, e0, e1,
                                 [](float u, float v) { return u + v; });
  return am::kBodyOk;
}

//===----------------------------------------------------------------------===//
// embedding / argmax: task = rows [b0, b1).
//===----------------------------------------------------------------------===//

/// y[b] = table[ids[b]]; an id outside [0, vocab) is not read: its row is
/// zeroed and the body returns false (every thread reads every id, so the
/// result is workgroup-uniform).
template <int kThreads, typename TT, typename TId, typename TY>
__device__ __forceinline__ bool embedding(const TT *table, const TId *ids,
                                          TY *y, int64_t vocab, int64_t D,
                                          int64_t b0, int64_t b1, char *lds) {
  (void)lds;
  bool ok = true;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t id = int64_t(ids[b]);
    if (id < 0 || id >= vocab) {
      recordMetaFault(ids + b, id, LOOM_META_TOKEN_ID);
      ok = false;
      for (int64_t i = am::threadId(); i < D; i += kThreads)
        am::stF(y, b * D + i, 0.f);
      continue;
    }
    detail::copyRow<kThreads>(table + id * D, y + b * D, D);
  }
  return ok;
}

namespace detail {
/// True when (va, ia) comes before (vb, ib) in the host's argmax order: a
/// NaN beats any number, larger beats smaller, and among equals (or NaNs)
/// the lower index wins.
__device__ __forceinline__ bool argBefore(float va, int64_t ia, float vb,
                                          int64_t ib) {
  const bool na = am::isNan(va), nb = am::isNan(vb);
  if (na != nb)
    return na;
  if (!na && va != vb)
    return va > vb;
  return ia < ib;
}
} // namespace detail

/// indices[b] = argmax_v x[b, v] (lowest index among equal maxima; the
/// first NaN if the row has one). A workgroup per row: strided scans, then
/// a wave reduction of (value, index) pairs and one across waves in LDS.
template <int kThreads, typename TX, typename TIdx>
__device__ __forceinline__ int32_t argmaxRows(const TX *x, TIdx *indices,
                                              int64_t V, int64_t b0, int64_t b1,
                                              char *lds) {
  (void)lds;
  constexpr int kWaves = kThreads / am::kWaveSize;
  __shared__ float sVal[kWaves];
  __shared__ int64_t sIdx[kWaves];
  const int tid = int(am::threadId()), lane = am::laneId();
  for (int64_t b = b0; b < b1; ++b) {
    const TX *row = x + b * V;
    float best = am::kNegInf;
    int64_t bestIdx = V; // "none": loses to every real element
    for (int64_t v = tid; v < V; v += kThreads) {
      const float val = am::ldF(row, v);
      if (bestIdx == V || detail::argBefore(val, v, best, bestIdx)) {
        best = val;
        bestIdx = v;
      }
    }
#pragma unroll
    for (int off = 1; off < 64; off *= 2) {
      const float ov = am::shuffle(best, lane ^ off);
      const int lo =
          am::shuffle(int(uint64_t(bestIdx) & 0xffffffffu), lane ^ off);
      const int hi = am::shuffle(int(uint64_t(bestIdx) >> 32), lane ^ off);
      const int64_t oi = int64_t((uint64_t(uint32_t(hi)) << 32) | uint32_t(lo));
      if (oi != V &&
          (bestIdx == V || detail::argBefore(ov, oi, best, bestIdx))) {
        best = ov;
        bestIdx = oi;
      }
    }
    if (lane == 0) {
      sVal[am::waveId()] = best;
      sIdx[am::waveId()] = bestIdx;
    }
    am::syncThreads();
    if (tid == 0) {
      float bv = sVal[0];
      int64_t bi = sIdx[0];
      for (int w = 1; w < kWaves; ++w)
        if (sIdx[w] != V &&
            (bi == V || detail::argBefore(sVal[w], sIdx[w], bv, bi))) {
          bv = sVal[w];
          bi = sIdx[w];
        }
      indices[b] = TIdx(bi);
    }
    am::syncThreads(); // sVal / sIdx are rewritten for the next row
  }
  return am::kBodyOk;
}

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_DECODERBODIES_H
