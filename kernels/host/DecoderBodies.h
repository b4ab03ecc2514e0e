//===- DecoderBodies.h - Host task bodies of the decoder-layer ops --------===//
//
// One function per tile task of a Llama/Qwen-style decoder layer, for the
// host (CPU threads) target. The emitted host code calls these with pointers
// already offset to the buffer bases, shapes as int64_t, the task's tile range
// and the step's runtime counts. Contract shared by every body:
//
//  * math and accumulation in fp32; a value is rounded only when it is
//    stored to an activation buffer of type bf16/f16 (or kept, for float);
//  * tasks of one phase write disjoint memory, so bodies run concurrently on
//    different threads without locks; they never allocate on the heap
//    (only small fixed-size stack arrays and caller-provided workspace);
//  * tile ranges are half-open, and the caller clamps row/token/element
//    ranges to the runtime counts (a task wholly past them is not called or
//    gets an empty range). gqa_decode takes the runtime batch and kv_lens
//    and maps its tasks to work itself (kernels/common/GqaSplits.h).
//
// The storage types are template parameters (bf16, f16, float for
// activations; int32_t or int64_t for meta tensors) so one header serves
// every dtype a spec asks for.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_HOST_DECODERBODIES_H
#define LOOM_KERNELS_HOST_DECODERBODIES_H

#include "kernels/common/GqaSplits.h"
#include "kernels/common/Numerics.h"
#include "kernels/common/Rope.h"
#include "kernels/host/MetaFault.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace loom {
namespace host {

namespace detail {
/// Keeps a parameter out of template argument deduction, so `nullptr` can be
/// passed for an optional buffer whose type follows another argument.
template <typename T> struct NoDeduce { using type = T; };
template <typename T> using NoDeduceT = typename NoDeduce<T>::type;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
} // namespace detail

//===----------------------------------------------------------------------===//
// rmsnorm: x viewed as [R, D]; task = rows [r0, r1).
//===----------------------------------------------------------------------===//

/// y[r, i] = x[r, i] / sqrt(mean(x[r, :]^2) + eps) * w[i] for r in [r0, r1).
/// `y` may alias `x`: each row's sum of squares is taken before any store.
/// Serves both hidden-state rows and Qwen3's per-head q/k norm (R = T * H).
template <typename TX, typename TW, typename TY>
void rmsnormRows(const TX *x, const TW *w, TY *y, int64_t D, float eps,
                 int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const TX *xr = x + r * D;
    TY *yr = y + r * D;
    float sumSq = 0.0f;
    for (int64_t i = 0; i < D; ++i) {
      float v = load(xr, i);
      sumSq += v * v;
    }
    float inv = 1.0f / std::sqrt(sumSq / float(D) + eps);
    for (int64_t i = 0; i < D; ++i)
      store(yr, i, load(xr, i) * inv * load(w, i));
  }
}

//===----------------------------------------------------------------------===//
// linear: x [M, K], w [N, K], y [M, N] (trailing dims flattened).
//===----------------------------------------------------------------------===//

namespace detail {
/// Rows of x handled together so each weight element is loaded once per
/// block: decode is weight-bandwidth bound and M is small.
constexpr int64_t kLinearRowBlock = 4;

/// Independent partial sums per row, a fixed-size inner loop the compiler
/// can vectorise; they are added pairwise at the end, a fixed order, so
/// results do not depend on the compiler or the task order.
constexpr int64_t kLinearLanes = 8;

/// x[m, k], or with a norm scale g the product x[m, k] * g[k] rounded to
/// x's type: what a device body feeds its tensor cores (the rows' 1/rms
/// multiplies the finished sums instead).
template <typename TIn>
inline float normedX(const TIn *xr, const TIn *g, int64_t k) {
  if (!g)
    return load(xr, k);
  TIn v;
  store(&v, 0, load(xr, k) * load(g, k));
  return load(&v, 0);
}

/// acc[j] = sum_{k in [k0, k1)} x[m0 + j, k] * w[n, k] for j < rows (x
/// through normedX with the scale g, when not null).
template <typename TIn, typename TW>
inline void dotRows(const TIn *x, const TIn *g, const TW *w, int64_t K,
                    int64_t m0, int64_t rows, int64_t n, int64_t k0,
                    int64_t k1, float *acc) {
  float part[kLinearRowBlock][kLinearLanes] = {};
  const TW *wr = w + n * K;
  int64_t k = k0;
  for (; k + kLinearLanes <= k1; k += kLinearLanes) {
    float wv[kLinearLanes];
    for (int64_t l = 0; l < kLinearLanes; ++l)
      wv[l] = load(wr, k + l);
    for (int64_t j = 0; j < rows; ++j) {
      const TIn *xr = x + (m0 + j) * K;
      for (int64_t l = 0; l < kLinearLanes; ++l)
        part[j][l] += normedX(xr, g, k + l) * wv[l];
    }
  }
  // The last k1 - k (< kLinearLanes) products go to the first lanes.
  for (int64_t j = 0; j < rows; ++j) {
    const TIn *xr = x + (m0 + j) * K;
    for (int64_t l = 0; l < k1 - k; ++l)
      part[j][l] += normedX(xr, g, k + l) * load(wr, k + l);
  }
  for (int64_t j = 0; j < rows; ++j) {
    float *p = part[j];
    for (int64_t half = kLinearLanes / 2; half > 0; half /= 2)
      for (int64_t l = 0; l < half; ++l)
        p[l] += p[l + half];
    acc[j] = p[0];
  }
}

/// 1 / sqrt(mean(x[m, :K]^2) + eps), as rmsnormRows takes it.
template <typename TIn>
inline float inverseRms(const TIn *xr, int64_t K, float eps) {
  float sumSq = 0.0f;
  for (int64_t i = 0; i < K; ++i) {
    float v = load(xr, i);
    sumSq += v * v;
  }
  return 1.0f / std::sqrt(sumSq / float(K) + eps);
}

/// The linear tile's loop over row blocks and columns: out(m, n, sum) for
/// the sums over [k0, k1), each times its row's 1/rms when g is not null.
template <typename TIn, typename TW, typename Out>
inline void linearColumns(const TIn *x, const TIn *g, float eps, const TW *w,
                          int64_t M, int64_t K, int64_t n0, int64_t n1,
                          int64_t k0, int64_t k1, const Out &out) {
  float acc[kLinearRowBlock], inv[kLinearRowBlock];
  // Row block outer, so its 1/rms is taken once; column inner: the block's
  // rows of x stay in L1 across the columns.
  for (int64_t m0 = 0; m0 < M; m0 += kLinearRowBlock) {
    int64_t rows = std::min(kLinearRowBlock, M - m0);
    for (int64_t j = 0; j < rows; ++j)
      inv[j] = g ? inverseRms(x + (m0 + j) * K, K, eps) : 1.0f;
    for (int64_t n = n0; n < n1; ++n) {
      dotRows(x, g, w, K, m0, rows, n, k0, k1, acc);
      for (int64_t j = 0; j < rows; ++j)
        out(m0 + j, n, acc[j] * inv[j]);
    }
  }
}
} // namespace detail

/// linearTile (below) of the rows of x RMS-normalised with the scale `norm` [K]
/// (null: as they are) and eps: y = residual + rmsnorm(x) . w^T.
template <typename TIn, typename TW, typename TOut>
void linearNormTile(const TIn *x, const detail::NoDeduceT<TIn> *norm,
                    float eps, const TW *w,
                    const detail::NoDeduceT<TOut> *residual, TOut *y,
                    int64_t M, int64_t K, int64_t N, int64_t n0, int64_t n1) {
  detail::linearColumns(x, norm, eps, w, M, K, n0, n1, 0, K,
                        [&](int64_t m, int64_t n, float v) {
                          int64_t idx = m * N + n;
                          float base = residual ? load(residual, idx) : 0.0f;
                          store(y, idx, base + v);
                        });
}

/// Output-column tile: y[m, n] = residual[m, n] + x[m, :] . w[n, :] for all
/// m < M (runtime rows) and n in [n0, n1). `residual` may be null, or alias
/// `y` (in place: each element is read just before it is overwritten).
template <typename TIn, typename TW, typename TOut>
void linearTile(const TIn *x, const TW *w,
                const detail::NoDeduceT<TOut> *residual, TOut *y, int64_t M,
                int64_t K, int64_t N, int64_t n0, int64_t n1) {
  linearNormTile(x, static_cast<const TIn *>(nullptr), 0.0f, w, residual, y,
                 M, K, N, n0, n1);
}

/// linearPartial (below) of the normalised rows (linearNormTile): each split's sum
/// already carries its row's 1/rms, taken over all of K.
template <typename TIn, typename TW>
void linearNormPartial(const TIn *x, const detail::NoDeduceT<TIn> *norm,
                       float eps, const TW *w, float *partial, int64_t M,
                       int64_t K, int64_t N, int64_t n0, int64_t n1,
                       int64_t k0, int64_t k1) {
  detail::linearColumns(x, norm, eps, w, M, K, n0, n1, k0, k1,
                        [&](int64_t m, int64_t n, float v) {
                          partial[m * N + n] = v;
                        });
}

/// Split-K phase 0: the fp32 partial product over K range [k0, k1) for
/// columns [n0, n1) and all m < M. `partial` points at this split's
/// [M_max, N] float slab; element (m, n) is partial[m * N + n].
template <typename TIn, typename TW>
void linearPartial(const TIn *x, const TW *w, float *partial, int64_t M,
                   int64_t K, int64_t N, int64_t n0, int64_t n1, int64_t k0,
                   int64_t k1) {
  linearNormPartial(x, static_cast<const TIn *>(nullptr), 0.0f, w, partial, M,
                    K, N, n0, n1, k0, k1);
}

/// Split-K phase 1: y[m, n] = residual[m, n] + sum_s partials[s][m, n] for
/// m < M and n in [n0, n1), with split s's slab at partials + s * sliceStride.
/// Splits are summed in order 0..splits-1, so the result is deterministic.
template <typename TOut>
void linearReduce(const float *partials, int64_t splits, int64_t sliceStride,
                  const detail::NoDeduceT<TOut> *residual, TOut *y, int64_t M,
                  int64_t N, int64_t n0, int64_t n1) {
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = n0; n < n1; ++n) {
      int64_t idx = m * N + n;
      float sum = 0.0f;
      for (int64_t s = 0; s < splits; ++s)
        sum += partials[s * sliceStride + idx];
      float base = residual ? load(residual, idx) : 0.0f;
      store(y, idx, base + sum);
    }
  }
}

/// Floats of split-K workspace: one [maxM, N] slab per split
/// (sliceStride = maxM * N).
inline int64_t linearSplitKWorkspaceFloats(int64_t maxM, int64_t N,
                                           int64_t splits) {
  return splits * maxM * N;
}

//===----------------------------------------------------------------------===//
// rope: x, y [T, H, D]; task = flattened rows [r0, r1) over T * H.
//===----------------------------------------------------------------------===//

namespace detail {
/// Pairs whose cos/sin are computed at once and reused by all heads of a
/// token: bounds the stack use for any rotary_dim.
constexpr int64_t kRopeChunk = 32;
} // namespace detail

/// NeoX-halves rotary embedding. Pair i < rotaryDim/2 of row (t, h) rotates
/// (x[i], x[i + rotaryDim/2]) by angle positions[t] * theta^(-2i/rotaryDim)
/// (that frequency scaled by `scaling`, kernels/common/Rope.h); dims past
/// rotaryDim are copied. The angle and its cos/sin are computed in
/// double and cast to float, so long positions lose no accuracy to an fp32
/// angle. `y` may alias `x`.
template <typename TX, typename TPos, typename TY>
void rope(const TX *x, const TPos *positions, TY *y, int64_t H, int64_t D,
          int64_t rotaryDim, float theta, RopeScaling scaling, int64_t r0,
          int64_t r1) {
  const int64_t half = rotaryDim / 2;
  float cosv[detail::kRopeChunk], sinv[detail::kRopeChunk];
  for (int64_t r = r0; r < r1;) {
    // Rows [r, rEnd) share token t and hence all angles.
    int64_t t = r / H;
    int64_t rEnd = std::min(r1, (t + 1) * H);
    double pos = double(positions[t]);
    for (int64_t i0 = 0; i0 < half; i0 += detail::kRopeChunk) {
      int64_t cnt = std::min(detail::kRopeChunk, half - i0);
      for (int64_t j = 0; j < cnt; ++j) {
        double invFreq = ropeScaledInvFreq(
            std::pow(double(theta), -2.0 * double(i0 + j) / double(rotaryDim)),
            scaling);
        double angle = pos * invFreq;
        cosv[j] = float(std::cos(angle));
        sinv[j] = float(std::sin(angle));
      }
      for (int64_t row = r; row < rEnd; ++row) {
        const TX *xr = x + row * D;
        TY *yr = y + row * D;
        for (int64_t j = 0; j < cnt; ++j) {
          int64_t i = i0 + j;
          float a = load(xr, i), b = load(xr, i + half);
          store(yr, i, a * cosv[j] - b * sinv[j]);
          store(yr, i + half, b * cosv[j] + a * sinv[j]);
        }
      }
    }
    for (int64_t row = r; row < rEnd; ++row)
      for (int64_t i = rotaryDim; i < D; ++i)
        store(y + row * D, i, load(x + row * D, i));
    r = rEnd;
  }
}

//===----------------------------------------------------------------------===//
// kv_append: task = tokens [t0, t1).
//===----------------------------------------------------------------------===//

/// Copies token t's K row [Hkv, D] and V row [Hkv, Dv] to page
/// slotMapping[t] / P, slot slotMapping[t] % P of the [pages, P, Hkv, D|Dv]
/// caches. A negative slot marks a padding token and is skipped (vLLM's
/// convention); a slot past the `numPages` pages is refused (MetaGuard.h).
/// The copy is exact when the cache type equals the row type.
template <typename TK, typename TV, typename TSlot, typename TKC, typename TVC>
void kvAppend(const TK *k, const TV *v, const TSlot *slotMapping, TKC *kCache,
              TVC *vCache, int64_t Hkv, int64_t D, int64_t Dv, int64_t P,
              int64_t numPages, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t slot = int64_t(slotMapping[t]);
    if (slot < 0 || !writableIndex(slotMapping + t, numPages * P, LOOM_META_SLOT))
      continue;
    int64_t page = slot / P, inPage = slot % P;
    int64_t kBase = (page * P + inPage) * Hkv * D;
    int64_t vBase = (page * P + inPage) * Hkv * Dv;
    for (int64_t i = 0; i < Hkv * D; ++i)
      store(kCache, kBase + i, load(k, t * Hkv * D + i));
    for (int64_t i = 0; i < Hkv * Dv; ++i)
      store(vCache, vBase + i, load(v, t * Hkv * Dv + i));
  }
}

//===----------------------------------------------------------------------===//
// gqa_decode: split-KV, two phases.
//
// N = maxBatch * Hkv * S split tasks, mapped to (request, kv head, token
// range) at run time from the runtime batch and kv_lens, so the work spreads
// over all N tasks whatever the batch (kernels/common/GqaSplits.h, shared
// with the device bodies). Workspace (float), Hq query heads, value head
// dim Dv, group = Hq / Hkv:
//   o partials   [N * group][Dv]   at workspace + 0 (task n: rows n*group..)
//   lse partials [N * group]       at workspace + N * group * Dv
// (N * group = maxBatch * S * Hq). Each partial o is already normalised by
// its own softmax denominator; its lse is the natural-log log-sum-exp of its
// scaled scores (-inf if empty).
//===----------------------------------------------------------------------===//

/// Floats of gqa_decode workspace; D is the value head dim (Dv).
inline int64_t gqaWorkspaceFloats(int64_t maxBatch, int64_t S, int64_t Hq,
                                  int64_t D) {
  return maxBatch * S * Hq * (D + 1);
}

/// Phase 0, split task n = (b * Hkv + hk) * S + s of N = maxBatch * Hkv * S
/// (the emitted code's decomposition of the tile; (b, hk, s) name the task,
/// not its work): gqaSplitTask gives the request, KV head and token range;
/// the query heads of that KV head's group attend to those tokens. Token t
/// of request r lives in page kvIndices[kvIndptr[r] + t/P], slot t % P.
/// Tasks past the batch's share do nothing. Every request has a split task,
/// which checks its meta values (MetaGuard.h: `numIndices` entries of
/// kv_indices, page ids below `numPages`).
template <typename TQ, typename TK, typename TV, typename TPtr, typename TInd,
          typename TLen>
void gqaDecodeSplit(const TQ *q, const TK *kCache, const TV *vCache,
                    const TPtr *kvIndptr, const TInd *kvIndices,
                    const TLen *kvLens, float *workspace, int64_t batch,
                    int64_t maxBatch, int64_t Hq, int64_t Hkv, int64_t D,
                    int64_t Dv, int64_t P, int64_t numPages, int64_t numIndices,
                    int64_t S, float smScale, int64_t b, int64_t hk,
                    int64_t s) {
  const int64_t numTasks = maxBatch * Hkv * S, n = (b * Hkv + hk) * S + s;
  const GqaSplitTask task = gqaCheckedSplitTask(
      kvIndptr, kvLens, batch, Hkv, numTasks, n, numIndices, P);
  if (!task.active)
    return;
  b = task.b;
  hk = task.hk;
  const int64_t tBegin = task.tBegin, tEnd = task.tEnd;
  const int64_t group = Hq / Hkv;
  const TInd *pages = kvIndices + task.first;
  float *lsePart = workspace + numTasks * group * Dv;
  // One head at a time, accumulating straight into this task's own
  // workspace row: no stack buffer sized by Dv or the group.
  for (int64_t j = 0; j < group; ++j) {
    const int64_t h = hk * group + j, slotIdx = n * group + j;
    float *acc = workspace + slotIdx * Dv;
    const TQ *qh = q + (b * Hq + h) * D;
    for (int64_t d = 0; d < Dv; ++d)
      acc[d] = 0.0f;
    float m = detail::kNegInf, l = 0.0f;
    for (int64_t t = tBegin; t < tEnd; ++t) {
      int64_t row =
          (checkedIndex(pages + t / P, numPages, LOOM_META_PAGE_ID) * P +
           t % P) *
              Hkv +
          hk;
      const TK *kr = kCache + row * D;
      const TV *vr = vCache + row * Dv;
      float score = 0.0f;
      for (int64_t d = 0; d < D; ++d)
        score += load(qh, d) * load(kr, d);
      score *= smScale;
      if (score > m) { // new running max: rescale what is accumulated
        float c = m == detail::kNegInf ? 0.0f : std::exp(m - score);
        l *= c;
        for (int64_t d = 0; d < Dv; ++d)
          acc[d] *= c;
        m = score;
      }
      float p = std::exp(score - m);
      l += p;
      for (int64_t d = 0; d < Dv; ++d)
        acc[d] += p * load(vr, d);
    }
    if (tEnd > tBegin) {
      float inv = 1.0f / l;
      for (int64_t d = 0; d < Dv; ++d)
        acc[d] *= inv;
      lsePart[slotIdx] = m + std::log(l);
    } else {
      lsePart[slotIdx] = detail::kNegInf;
    }
  }
}

namespace detail {
/// Output elements merged at once: bounds the stack accumulator for any Dv.
constexpr int64_t kMergeChunk = 64;
} // namespace detail

/// Phase 1, task (b, hk): o[b, h] = sum_i w_i o_i / sum_i w_i with
/// w_i = exp(lse_i - max lse) over the split tasks gqaPairTasks gives the
/// pair, for the heads h of group hk. A request with no tokens (every lse
/// -inf) gets o = 0. Requests b >= batch are skipped.
template <typename TO, typename TLen>
void gqaDecodeMerge(const float *workspace, const TLen *kvLens, TO *o,
                    int64_t batch, int64_t maxBatch, int64_t Hq, int64_t Hkv,
                    int64_t Dv, int64_t S, int64_t b, int64_t hk) {
  if (b >= batch)
    return;
  const int64_t group = Hq / Hkv, numTasks = maxBatch * Hkv * S;
  const GqaPairTasks pair = gqaPairTasks(kvLens, batch, Hkv, numTasks, b, hk);
  const float *lsePart = workspace + numTasks * group * Dv;
  float acc[detail::kMergeChunk];
  for (int64_t j = 0; j < group; ++j) {
    TO *oh = o + (b * Hq + hk * group + j) * Dv;
    auto slot = [&](int64_t i) { return (pair.first + i) * group + j; };
    float mx = detail::kNegInf;
    for (int64_t i = 0; i < pair.count; ++i)
      mx = std::max(mx, lsePart[slot(i)]);
    if (mx == detail::kNegInf) {
      for (int64_t d = 0; d < Dv; ++d)
        store(oh, d, 0.0f);
      continue;
    }
    float wsum = 0.0f;
    for (int64_t i = 0; i < pair.count; ++i)
      wsum += std::exp(lsePart[slot(i)] - mx);
    for (int64_t d0 = 0; d0 < Dv; d0 += detail::kMergeChunk) {
      int64_t cnt = std::min(detail::kMergeChunk, Dv - d0);
      for (int64_t k = 0; k < cnt; ++k)
        acc[k] = 0.0f;
      for (int64_t i = 0; i < pair.count; ++i) {
        float ws = std::exp(lsePart[slot(i)] - mx);
        const float *part = workspace + slot(i) * Dv + d0;
        for (int64_t k = 0; k < cnt; ++k)
          acc[k] += ws * part[k];
      }
      for (int64_t k = 0; k < cnt; ++k)
        store(oh, d0 + k, acc[k] / wsum);
    }
  }
}

//===----------------------------------------------------------------------===//
// Elementwise: task = element range [e0, e1) of the flattened buffers.
//===----------------------------------------------------------------------===//

/// y = silu(gate) * up = gate / (1 + exp(-gate)) * up. `y` may alias either.
template <typename TG, typename TU, typename TY>
void siluMul(const TG *gate, const TU *up, TY *y, int64_t e0, int64_t e1) {
  for (int64_t e = e0; e < e1; ++e) {
    float g = load(gate, e);
    store(y, e, g / (1.0f + std::exp(-g)) * load(up, e));
  }
}

/// y = a + b. `y` may alias either.
template <typename TA, typename TB, typename TY>
void add(const TA *a, const TB *b, TY *y, int64_t e0, int64_t e1) {
  for (int64_t e = e0; e < e1; ++e)
    store(y, e, load(a, e) + load(b, e));
}

//===----------------------------------------------------------------------===//
// embedding / argmax: task = rows [b0, b1).
//===----------------------------------------------------------------------===//

/// y[b] = table[ids[b]] for b in [b0, b1); table is [vocab, D]. An id
/// outside [0, vocab) is refused (MetaGuard.h) and not read: its row is
/// zeroed and the function returns false.
template <typename TT, typename TId, typename TY>
bool embedding(const TT *table, const TId *ids, TY *y, int64_t vocab, int64_t D,
               int64_t b0, int64_t b1) {
  bool ok = true;
  for (int64_t b = b0; b < b1; ++b) {
    int64_t id = int64_t(ids[b]);
    if (id < 0 || id >= vocab) {
      recordMetaFault(ids + b, id, LOOM_META_TOKEN_ID);
      ok = false;
      for (int64_t i = 0; i < D; ++i)
        store(y, b * D + i, 0.0f);
      continue;
    }
    for (int64_t i = 0; i < D; ++i)
      store(y, b * D + i, load(table, id * D + i));
  }
  return ok;
}

/// indices[b] = argmax_v x[b, v] over a row of V >= 1 entries: the lowest index
/// among equal maxima, and the first NaN if the row has one (NaN counts as
/// the largest value).
template <typename TX, typename TIdx>
void argmaxRows(const TX *x, TIdx *indices, int64_t V, int64_t b0, int64_t b1) {
  for (int64_t b = b0; b < b1; ++b) {
    const TX *row = x + b * V;
    int64_t best = 0;
    float bestVal = load(row, 0);
    if (!std::isnan(bestVal)) {
      for (int64_t v = 1; v < V; ++v) {
        float val = load(row, v);
        if (std::isnan(val)) {
          best = v;
          break;
        }
        if (val > bestVal) {
          best = v;
          bestVal = val;
        }
      }
    }
    indices[b] = TIdx(best);
  }
}

} // namespace host
} // namespace loom

#endif // LOOM_KERNELS_HOST_DECODERBODIES_H
