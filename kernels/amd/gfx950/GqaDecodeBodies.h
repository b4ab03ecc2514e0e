//===- GqaDecodeBodies.h - gfx950 task bodies for gqa_decode -- -*- C++ -*-===//
//
// gqaDecodeSplit and gqaDecodeMerge of DecoderBodies.h (which includes this
// file; its header says what every decoder body shares, the LDS each takes
// and which meta values the split checks).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_GQADECODEBODIES_H
#define LOOM_KERNELS_AMD_GFX950_GQADECODEBODIES_H

#include "kernels/amd/MetaFault.h"
#include "kernels/amd/gfx950/DecoderCommon.h"
#include "kernels/common/GqaSplits.h"

#include <cstdint>

namespace loom {
namespace gfx950 {

//===----------------------------------------------------------------------===//
// gqa_decode: split-KV, two phases, N = maxBatch * Hkv * S split tasks
// mapped to work at run time as the host's (kernels/common/GqaSplits.h).
// Workspace (float), as the host's (group = Hq / Hkv):
//   o partials   [N * group][Dv]   at workspace + 0 (task n: rows n*group..)
//   lse partials [N * group]       at workspace + N * group * Dv
// Each partial o is normalised by its own softmax denominator; its lse is
// the natural-log log-sum-exp of its scaled scores (-inf if empty).
//
// Fast path (D == Dv in {64, 128, 256}, 16-byte aligned, bf16/f16/float
// rows): a "row group" of L = D / 8 lanes holds one K/V row, 8 elements per
// lane (16-byte loads for 16-bit types); a wave holds 64 / L row groups and
// each row group walks its own strided share of the split's tokens, 4
// tokens per step (their page ids loaded a step ahead, so the K/V loads of
// a step never wait on a page-id load). Every row group keeps, for each of
// the (up to 8) query heads of the KV group, an online softmax in base 2:
// m, l and acc[8] for its 8 dims. Scores: per-lane 8-element dot, summed
// over the row group by DPP. At the end the row groups' states meet in LDS
// and one thread per (head, dim) merges them in a fixed order.
//===----------------------------------------------------------------------===//

/// LDS of the fast split path for head dim D and `group` query heads per
/// KV head (states of every row group of the workgroup: m, l, acc[D]).
template <int kThreads>
__host__ __device__ constexpr int64_t gqaSplitLdsBytes(int64_t D,
                                                       int64_t group) {
  // Row groups of D / 8 lanes; head slots per row group as instantiated
  // (1, 2, 4 or 8: the group size rounded up, at most 8 per pass).
  const int64_t groups = D >= 8 ? kThreads / (D / 8) : 0;
  const int64_t slots = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
  return 4 * groups * slots * (D + 2);
}

namespace detail {

/// Tokens per row group per step: 4 (2 with 8 heads, for registers).
template <int kG> constexpr int kGqaUnroll = kG >= 8 ? 2 : 4;

/// The query heads of one split, pre-offset: query rows of the group's
/// heads, K/V of KV head hk (element offset of token row `row` is
/// row * rowStride), the split's output rows and lse slots of those heads.
/// Token numbers and page ids fit in 32 bits. The heads are processed in
/// batches of kG (the group size rounded up to 1, 2, 4 or 8).
template <typename TQ, typename TK, typename TV, typename TInd>
struct GqaFastArgs {
  const TQ *q;              ///< q[b, h0, :], heads D apart
  const TK *k;              ///< kCache + hk * D
  const TV *v;              ///< vCache + hk * D
  CheckedPages<TInd> pages; ///< this request's page ids, checked as read
  float *out;        ///< workspace + (task's first row) * D, heads D apart
  float *lse;        ///< lse partials + task's first row, heads 1 apart
  int64_t rowStride; ///< Hkv * D elements per token row
  int D, P, tBegin, tEnd;
  int group;    ///< query heads of the KV group
  float scale2; ///< smScale * log2(e)
};

template <int kThreads, int kL, int kG, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFastBatch(const GqaFastArgs<TQ, TK, TV, TInd> &a, int h0, int nh,
                  char *lds) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  constexpr int kRowsPerWave = am::kWaveSize / kL;
  constexpr int kGroups = kWaves * kRowsPerWave; // row groups per workgroup
  constexpr int kU = kGqaUnroll<kG>;
  const int lane = am::laneId(), wave = am::waveId();
  const int sub = lane % kL;                      // lane in its row group
  const int rg = wave * kRowsPerWave + lane / kL; // row group id
  const int D = a.D, P = a.P;
  const int d0 = sub * 8; // this lane's 8 dims

  // Query chunks of the batch's heads (zeros past nh).
  float qv[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    if (h < nh) {
      am::load8(a.q + (h0 + h) * D + d0, qv[h]);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        qv[h][e] = 0.f;
    }
  }
  float m[kG], l[kG], acc[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    m[h] = am::kNegInf;
    l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc[h][e] = 0.f;
  }

  // Row group rg takes tokens tBegin + rg + kGroups * j (j < perGroup), kU
  // per step: step st covers j = st * kU + u. The step count is
  // workgroup-uniform, so every lane runs every step (the DPP reductions
  // need their whole row group) and invalid slots are masked.
  const int len = a.tEnd - a.tBegin;
  const int perGroup = len > rg ? (len - rg + kGroups - 1) / kGroups : 0;
  const int steps = (len + kGroups * kU - 1) / (kGroups * kU);
  int page[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int t = a.tBegin + rg + kGroups * u;
    page[u] = u < perGroup ? int(a.pages[t / P]) : 0;
  }
  for (int st = 0; st < steps; ++st) {
    float kv[kU][8], vv[kU][8];
    bool valid[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int j = st * kU + u;
      const int t = a.tBegin + rg + kGroups * j;
      valid[u] = j < perGroup;
      if (valid[u]) {
        const int64_t row = int64_t(page[u]) * P + t % P;
        am::load8(a.k + row * a.rowStride + d0, kv[u]);
        am::load8(a.v + row * a.rowStride + d0, vv[u]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          kv[u][e] = vv[u][e] = 0.f;
      }
    }
    // Page ids of the next step, issued after this step's K/V loads, so
    // waiting for the K/V never waits for them.
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int j = (st + 1) * kU + u;
      const int t = a.tBegin + rg + kGroups * j;
      page[u] = j < perGroup ? int(a.pages[t / P]) : 0;
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          dot += qv[h][e] * kv[u][e];
        const float s2 = am::groupReduce<kL>(dot, am::SumOp{}) * a.scale2;
        // An invalid slot leaves the state as it is (alpha = 1, p = 0).
        const float mNew = valid[u] ? __builtin_fmaxf(m[h], s2) : m[h];
        const float alpha = valid[u] ? am::rescale2(m[h], mNew) : 1.f;
        const float p = valid[u] ? am::fastExp2(s2 - mNew) : 0.f;
        m[h] = mNew;
        l[h] = l[h] * alpha + p;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          acc[h][e] = acc[h][e] * alpha + p * vv[u][e];
      }
    }
  }

  // States to LDS: [rg][h] {m, l, acc[D]} (stride D + 2 floats).
  float *states = reinterpret_cast<float *>(lds);
  const int stride = D + 2;
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    float *mine = states + (rg * kG + h) * stride;
    if (sub == 0) {
      mine[0] = m[h];
      mine[1] = l[h];
    }
#pragma unroll
    for (int e = 0; e < 8; ++e)
      mine[2 + d0 + e] = acc[h][e];
  }
  am::syncThreads();
  // Merge: a thread per (head, dim), row groups in order 0..kGroups-1.
  for (int e = int(am::threadId()); e < nh * D; e += kThreads) {
    const int h = e / D, d = e % D;
    float mx = am::kNegInf;
    for (int g = 0; g < kGroups; ++g)
      mx = __builtin_fmaxf(mx, states[(g * kG + h) * stride]);
    if (mx == am::kNegInf) { // no token in this split: o = 0, lse = -inf
      a.out[(h0 + h) * D + d] = 0.f;
      if (d == 0)
        a.lse[h0 + h] = am::kNegInf;
      continue;
    }
    float L = 0.f, O = 0.f;
    for (int g = 0; g < kGroups; ++g) {
      const float *sg = states + (g * kG + h) * stride;
      const float w = am::rescale2(sg[0], mx);
      L += sg[1] * w;
      O += sg[2 + d] * w;
    }
    a.out[(h0 + h) * D + d] = O / L;
    if (d == 0)
      a.lse[h0 + h] = (mx + am::fastLog2(L)) * am::kLn2; // natural log
  }
  am::syncThreads(); // the states are rewritten by the next head batch
}

/// All heads of the split, in batches of kG.
template <int kThreads, int kL, int kG, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFast(const GqaFastArgs<TQ, TK, TV, TInd> &a, char *lds) {
  for (int h0 = 0; h0 < a.group; h0 += kG)
    gqaSplitFastBatch<kThreads, kL, kG>(
        a, h0, a.group - h0 < kG ? a.group - h0 : kG, lds);
}

template <int kThreads, int kL, typename TQ, typename TK, typename TV,
          typename TInd>
__device__ __forceinline__ void
gqaSplitFastGroup(const GqaFastArgs<TQ, TK, TV, TInd> &a, char *lds) {
  if (a.group <= 1)
    gqaSplitFast<kThreads, kL, 1>(a, lds);
  else if (a.group <= 2)
    gqaSplitFast<kThreads, kL, 2>(a, lds);
  else if (a.group <= 4)
    gqaSplitFast<kThreads, kL, 4>(a, lds);
  else
    gqaSplitFast<kThreads, kL, 8>(a, lds);
}

/// CheckedPages::report, forced inline: the compiler left the member
/// function out of line, and a call brings the stack ABI and scratch.
template <typename TInd>
__device__ __forceinline__ void
reportPages(const CheckedPages<TInd> &pages, int64_t from, int64_t to) {
  if (kCheckMeta && pages.bad)
    reportBadPage(pages.ids, from, to, pages.numPages);
}

/// Plain split (any D, Dv, types): a wave per query head, lanes over dims,
/// tokens in order; the running output lives in the head's own workspace
/// row (each element owned by one lane), as in the host body.
template <int kThreads, typename TQ, typename TK, typename TV, typename TInd>
__device__ __forceinline__ void
gqaSplitPlain(const TQ *q, const TK *kCache, const TV *vCache,
              const CheckedPages<TInd> &pages, float *workspace,
              float *lsePart, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
              int64_t P, float smScale, int64_t b, int64_t hk, int64_t slot0,
              int64_t tBegin, int64_t tEnd) {
  constexpr int kWaves = kThreads / am::kWaveSize;
  const int lane = am::laneId();
  const int64_t group = Hq / Hkv;
  for (int64_t h = hk * group + am::waveId(); h < (hk + 1) * group;
       h += kWaves) {
    const int64_t slotIdx = slot0 + h - hk * group;
    float *acc = workspace + slotIdx * Dv;
    const TQ *qh = q + (b * Hq + h) * D;
    for (int64_t d = lane; d < Dv; d += 64)
      acc[d] = 0.f;
    float m = am::kNegInf, l = 0.f;
    for (int64_t t = tBegin; t < tEnd; ++t) {
      const int64_t row = (pages[t / P] * P + t % P) * Hkv + hk;
      float part = 0.f;
      for (int64_t d = lane; d < D; d += 64)
        part += am::ldF(qh, d) * am::ldF(kCache, row * D + d);
      const float score = am::waveSum(part) * smScale;
      const float mNew = __builtin_fmaxf(m, score);
      const float c = m == am::kNegInf ? 0.f : am::expAcc(m - mNew);
      const float p = am::expAcc(score - mNew);
      l = l * c + p;
      m = mNew;
      for (int64_t d = lane; d < Dv; d += 64)
        acc[d] = acc[d] * c + p * am::ldF(vCache, row * Dv + d);
    }
    if (tEnd > tBegin) {
      const float inv = 1.0f / l;
      for (int64_t d = lane; d < Dv; d += 64)
        acc[d] *= inv;
      if (lane == 0)
        lsePart[slotIdx] = m + am::logAcc(l);
    } else if (lane == 0) {
      lsePart[slotIdx] = am::kNegInf;
    }
  }
}

} // namespace detail

/// Floats of gqa_decode workspace; D is the value head dim (Dv).
__host__ __device__ inline int64_t
gqaWorkspaceFloats(int64_t maxBatch, int64_t S, int64_t Hq, int64_t D) {
  return maxBatch * S * Hq * (D + 1);
}

/// Phase 0, split task n = (b * Hkv + hk) * S + s of N = maxBatch * Hkv * S
/// (the host body's mapping, kernels/common/GqaSplits.h): the query heads of
/// the KV head gqaSplitTask picks attend to its token range of its request
/// (token t in page kvIndices[kvIndptr[r] + t/P], slot t % P) and write
/// workspace rows n * group onwards. Tasks past the batch's share do nothing.
/// Every request has a split task, which checks its meta values
/// (MetaGuard.h: `numIndices` entries of kv_indices, page ids below
/// `numPages`); a refused request reads no token.
template <int kThreads, typename TQ, typename TK, typename TV, typename TPtr,
          typename TInd, typename TLen>
__device__ __forceinline__ int32_t gqaDecodeSplit(
    const TQ *q, const TK *kCache, const TV *vCache, const TPtr *kvIndptr,
    const TInd *kvIndices, const TLen *kvLens, float *workspace, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
    int64_t numPages, int64_t numIndices, int64_t S, float smScale, int64_t b,
    int64_t hk, int64_t s, char *lds) {
  const int64_t numTasks = maxBatch * Hkv * S, n = (b * Hkv + hk) * S + s;
  // Every thread computes the same mapping: the branches stay block-uniform.
  const GqaSplitTask task = gqaCheckedSplitTask(
      kvIndptr, kvLens, batch, Hkv, numTasks, n, numIndices, P);
  if (!task.active)
    return am::kBodyOk;
  b = task.b;
  hk = task.hk;
  const int64_t tBegin = task.tBegin, tEnd = task.tEnd;
  const CheckedPages<TInd> pages{kvIndices + task.first, numPages};
  // The ids the split reads, those of its tokens: a refused one reads as
  // page 0 (a select in the token loop) and is recorded by report() at the
  // end (MetaGuard.h).
  const int64_t idFrom = tBegin / P;
  const int64_t idTo = tEnd > tBegin ? (tEnd - 1) / P + 1 : idFrom;
  const int64_t group = Hq / Hkv;
  const int64_t slot0 = n * group;
  float *lsePart = workspace + numTasks * group * Dv;
  const bool fastShape =
      D == Dv && (D == 64 || D == 128 || D == 256) && am::isAligned16(q) &&
      am::isAligned16(kCache) && am::isAligned16(vCache) &&
      am::dynamicLdsBytes() >= gqaSplitLdsBytes<kThreads>(D, group);
  if (fastShape) {
    const detail::GqaFastArgs<TQ, TK, TV, TInd> a{
        q + (b * Hq + hk * group) * D,
        kCache + hk * D,
        vCache + hk * D,
        pages,
        workspace + slot0 * D,
        lsePart + slot0,
        Hkv * D,
        int(D),
        int(P),
        int(tBegin),
        int(tEnd),
        int(group),
        smScale * am::kLog2e};
    if (D == 64)
      detail::gqaSplitFastGroup<kThreads, 8>(a, lds);
    else if (D == 128)
      detail::gqaSplitFastGroup<kThreads, 16>(a, lds);
    else
      detail::gqaSplitFastGroup<kThreads, 32>(a, lds);
    detail::reportPages(a.pages, idFrom, idTo); // this thread's ids: a's
    return am::kBodyOk;
  }
  detail::gqaSplitPlain<kThreads>(q, kCache, vCache, pages, workspace, lsePart,
                                  Hq, Hkv, D, Dv, P, smScale, b, hk, slot0,
                                  tBegin, tEnd);
  detail::reportPages(pages, idFrom, idTo);
  return am::kBodyOk;
}

/// Phase 1, task (b, hk): o[b, h] = sum_i w_i o_i / sum_i w_i with
/// w_i = exp(lse_i - max lse) over the pair's split tasks (gqaPairTasks), a
/// thread per (head, dim), splits in order (the host's arithmetic). A
/// request with no tokens gets o = 0.
template <int kThreads, typename TO, typename TLen>
__device__ __forceinline__ int32_t gqaDecodeMerge(
    const float *workspace, const TLen *kvLens, TO *o, int64_t batch,
    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t Dv, int64_t S,
    int64_t b, int64_t hk, char *lds) {
  (void)lds;
  if (b >= batch)
    return am::kBodyOk;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  const GqaPairTasks pair = gqaPairTasks(kvLens, batch, Hkv, numTasks, b, hk);
  const float *lsePart = workspace + numTasks * group * Dv;
  for (int64_t e = am::threadId(); e < group * Dv; e += kThreads) {
    const int64_t j = e / Dv, d = e % Dv;
    float mx = am::kNegInf;
    for (int64_t i = 0; i < pair.count; ++i)
      mx = __builtin_fmaxf(mx, lsePart[(pair.first + i) * group + j]);
    TO *oh = o + (b * Hq + hk * group + j) * Dv;
    if (mx == am::kNegInf) {
      am::stF(oh, d, 0.f);
      continue;
    }
    float wsum = 0.f;
    for (int64_t i = 0; i < pair.count; ++i)
      wsum += am::expAcc(lsePart[(pair.first + i) * group + j] - mx);
    float acc = 0.f;
    for (int64_t i = 0; i < pair.count; ++i) {
      const int64_t slotIdx = (pair.first + i) * group + j;
      acc += am::expAcc(lsePart[slotIdx] - mx) * workspace[slotIdx * Dv + d];
    }
    am::stF(oh, d, acc / wsum);
  }
  return am::kBodyOk;
}

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_GQADECODEBODIES_H
