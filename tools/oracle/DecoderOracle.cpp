//===- DecoderOracle.cpp - fp64 reference of the decoder-layer ops --------===//
//
// Each function is the op's definition written out as loops in double, in
// the most direct order; nothing is tiled, split or fused. Each output is
// one sum in the definition's order; linear and gqaDecode only share out
// whole outputs between threads (Parallel.h).
//
//===----------------------------------------------------------------------===//
#include "tools/oracle/DecoderOracle.h"
#include "tools/oracle/Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace loom {
namespace oracle {

Vec rmsnorm(const Vec &x, const Vec &w, int64_t D, double eps) {
  int64_t rows = int64_t(x.size()) / D;
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sumSq = 0.0;
    for (int64_t i = 0; i < D; ++i)
      sumSq += x[r * D + i] * x[r * D + i];
    double rms = std::sqrt(sumSq / double(D) + eps);
    for (int64_t i = 0; i < D; ++i)
      y[r * D + i] = x[r * D + i] / rms * w[i];
  }
  return y;
}

Vec linear(const Vec &x, const Vec &w, int64_t M, int64_t K, int64_t N,
           const Vec *residual) {
  Vec y(M * N);
  // Four output columns per work item: their four weight rows (walked
  // contiguously) are read from memory once for all M rows of x, and the
  // four sums are independent, so they overlap in the FPU. Each sum is still
  // x[m, 0..K) . w[n, 0..K) accumulated in order, as the plain loop does.
  constexpr int64_t kCols = 4;
  parallelFor((N + kCols - 1) / kCols, [&](int64_t block) {
    const int64_t n0 = block * kCols, cols = std::min(kCols, N - n0);
    for (int64_t m = 0; m < M; ++m) {
      const double *xr = x.data() + m * K;
      double sum[kCols] = {0.0, 0.0, 0.0, 0.0};
      if (cols == kCols) {
        const double *w0 = w.data() + n0 * K, *w1 = w0 + K, *w2 = w1 + K,
                     *w3 = w2 + K;
        for (int64_t k = 0; k < K; ++k) {
          sum[0] += xr[k] * w0[k];
          sum[1] += xr[k] * w1[k];
          sum[2] += xr[k] * w2[k];
          sum[3] += xr[k] * w3[k];
        }
      } else {
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t k = 0; k < K; ++k)
            sum[c] += xr[k] * w[(n0 + c) * K + k];
      }
      for (int64_t c = 0; c < cols; ++c)
        y[m * N + n0 + c] =
            (residual ? (*residual)[m * N + n0 + c] : 0.0) + sum[c];
    }
  });
  return y;
}

/// The inverse frequency of pair i, scaled as transformers'
/// _compute_llama3_parameters does.
static double ropeInvFreq(int64_t i, int64_t rotaryDim, double theta,
                          const RopeScaling &s) {
  const double inv = std::pow(theta, -2.0 * double(i) / double(rotaryDim));
  if (s.factor <= 0)
    return inv;
  const double lowWavelen = s.originalMaxPosition / s.lowFreqFactor;
  const double highWavelen = s.originalMaxPosition / s.highFreqFactor;
  const double wavelen = 2.0 * M_PI / inv;
  const double llama = wavelen > lowWavelen ? inv / s.factor : inv;
  const bool medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
  if (!medium)
    return llama;
  const double smooth = (s.originalMaxPosition / wavelen - s.lowFreqFactor) /
                        (s.highFreqFactor - s.lowFreqFactor);
  return (1.0 - smooth) * llama / s.factor + smooth * llama;
}

Vec rope(const Vec &x, const IVec &positions, int64_t H, int64_t D,
         int64_t rotaryDim, double theta, const RopeScaling &scaling) {
  int64_t T = int64_t(positions.size()), half = rotaryDim / 2;
  Vec y = x; // dims past rotaryDim are copied
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const double *xr = x.data() + (t * H + h) * D;
      double *yr = y.data() + (t * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        double f = double(positions[t]) *
                   ropeInvFreq(i, rotaryDim, theta, scaling);
        yr[i] = xr[i] * std::cos(f) - xr[i + half] * std::sin(f);
        yr[i + half] = xr[i + half] * std::cos(f) + xr[i] * std::sin(f);
      }
    }
  }
  return y;
}

void kvAppend(const Vec &k, const Vec &v, const IVec &slotMapping, int64_t Hkv,
              int64_t D, int64_t Dv, int64_t P, Vec &kCache, Vec &vCache) {
  for (size_t t = 0; t < slotMapping.size(); ++t) {
    int64_t slot = slotMapping[t];
    if (slot < 0)
      continue;
    int64_t page = slot / P, inPage = slot % P;
    for (int64_t h = 0; h < Hkv; ++h) {
      for (int64_t d = 0; d < D; ++d)
        kCache.at(((page * P + inPage) * Hkv + h) * D + d) =
            k[(int64_t(t) * Hkv + h) * D + d];
      for (int64_t d = 0; d < Dv; ++d)
        vCache.at(((page * P + inPage) * Hkv + h) * Dv + d) =
            v[(int64_t(t) * Hkv + h) * Dv + d];
    }
  }
}

Vec gqaDecode(const Vec &q, const Vec &kCache, const Vec &vCache,
              const PageTable &table, int64_t B, int64_t Hq, int64_t Hkv,
              int64_t D, int64_t Dv, int64_t P, double smScale) {
  Vec o(B * Hq * Dv, 0.0);
  int64_t group = Hq / Hkv;
  // Flat cache row (page, slot) of every token of every request, checked
  // against the caches' sizes here so the loops below index directly.
  const int64_t cacheRows =
      std::min(int64_t(kCache.size()) / (Hkv * D),
               int64_t(vCache.size()) / (Hkv * Dv));
  std::vector<IVec> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = table.lens[b];
    int64_t pages = table.indptr[b + 1] - table.indptr[b];
    if (len > pages * P)
      throw std::invalid_argument("request " + std::to_string(b) + ": " +
                                  std::to_string(len) + " tokens in " +
                                  std::to_string(pages) + " pages");
    rows[b].resize(size_t(std::max<int64_t>(len, 0)));
    for (int64_t t = 0; t < len; ++t) {
      int64_t r = table.indices[table.indptr[b] + t / P] * P + t % P;
      if (r < 0 || r >= cacheRows)
        throw std::out_of_range("request " + std::to_string(b) + ": token " +
                                std::to_string(t) + " in cache row " +
                                std::to_string(r) + " of " +
                                std::to_string(cacheRows));
      rows[b][t] = r;
    }
  }
  // One (request, query head) per work item; an empty request gives 0.
  parallelFor(B * Hq, [&](int64_t bh) {
    const int64_t b = bh / Hq, h = bh % Hq, hk = h / group;
    const int64_t len = int64_t(rows[b].size());
    const double *qr = q.data() + (b * Hq + h) * D;
    double *orow = o.data() + (b * Hq + h) * Dv;
    Vec scores(len);
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t t = 0; t < len; ++t) {
      const double *kr = kCache.data() + (rows[b][t] * Hkv + hk) * D;
      double dot = 0.0;
      for (int64_t d = 0; d < D; ++d)
        dot += qr[d] * kr[d];
      scores[t] = smScale * dot;
      mx = std::max(mx, scores[t]);
    }
    double denom = 0.0;
    for (int64_t t = 0; t < len; ++t)
      denom += std::exp(scores[t] - mx);
    for (int64_t t = 0; t < len; ++t) {
      double p = std::exp(scores[t] - mx) / denom;
      const double *vr = vCache.data() + (rows[b][t] * Hkv + hk) * Dv;
      for (int64_t d = 0; d < Dv; ++d)
        orow[d] += p * vr[d];
    }
  });
  return o;
}

Vec siluMul(const Vec &gate, const Vec &up) {
  Vec y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i)
    y[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
  return y;
}

Vec add(const Vec &a, const Vec &b) {
  Vec y(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    y[i] = a[i] + b[i];
  return y;
}

Vec embedding(const Vec &table, const IVec &ids, int64_t D) {
  int64_t vocab = int64_t(table.size()) / D;
  Vec y(ids.size() * D);
  for (size_t b = 0; b < ids.size(); ++b) {
    if (ids[b] < 0 || ids[b] >= vocab)
      throw std::out_of_range("token id " + std::to_string(ids[b]));
    for (int64_t i = 0; i < D; ++i)
      y[b * D + i] = table[ids[b] * D + i];
  }
  return y;
}

IVec argmax(const Vec &x, int64_t V) {
  int64_t rows = int64_t(x.size()) / V;
  IVec idx(rows);
  for (int64_t b = 0; b < rows; ++b) {
    // First NaN wins; otherwise the first occurrence of the maximum.
    int64_t best = -1;
    for (int64_t v = 0; v < V && best < 0; ++v)
      if (std::isnan(x[b * V + v]))
        best = v;
    if (best < 0) {
      best = 0;
      for (int64_t v = 1; v < V; ++v)
        if (x[b * V + v] > x[b * V + best])
          best = v;
    }
    idx[b] = best;
  }
  return idx;
}

namespace {

/// v as the graph's buffer holds it: each call is one op of BuildGraph's
/// buildDecoder writing one buffer (in-place ops, e.g. RoPE on q, write it
/// again). With Storage::Exact nothing is rounded.
Vec stored(Vec v, Storage storage) {
  roundAll(v, storage);
  return v;
}

/// The cache side of the attention block from h = rmsnorm(x): K and V
/// projections, (Qwen3's k-norm), RoPE on K, append. The caches have the
/// activations' element type: k and v are copied as they are stored.
void appendKv(const DecoderShape &s, const LayerWeights &w, const Vec &h,
              const StepMeta &meta, LayerCache &cache) {
  const int64_t B = meta.batch, hd = s.headDim, kvDim = s.kvHeads * hd;
  Vec k = stored(linear(h, w.wk, B, s.hidden, kvDim), s.storage);
  Vec v = stored(linear(h, w.wv, B, s.hidden, kvDim), s.storage);
  if (s.qkNorm)
    k = stored(rmsnorm(k, w.kNorm, hd, s.rmsEps), s.storage);
  k = stored(rope(k, meta.positions, s.kvHeads, hd, hd, s.ropeTheta,
                  s.ropeScaling),
             s.storage);
  kvAppend(k, v, meta.slotMapping, s.kvHeads, hd, hd, s.pageSize, cache.k,
           cache.v);
}

} // namespace

Vec decoderLayer(const DecoderShape &s, const LayerWeights &w, const Vec &x,
                 const StepMeta &meta, LayerCache &cache) {
  const int64_t B = meta.batch, hid = s.hidden, hd = s.headDim;
  const int64_t qDim = s.qHeads * hd;
  const Storage st = s.storage;

  // Attention block.
  Vec h = stored(rmsnorm(x, w.attnNorm, hid, s.rmsEps), st);
  appendKv(s, w, h, meta, cache);
  Vec q = stored(linear(h, w.wq, B, hid, qDim), st);
  if (s.qkNorm)
    q = stored(rmsnorm(q, w.qNorm, hd, s.rmsEps), st);
  q = stored(rope(q, meta.positions, s.qHeads, hd, hd, s.ropeTheta,
                  s.ropeScaling),
             st);
  Vec attn = stored(gqaDecode(q, cache.k, cache.v, meta.table, B, s.qHeads,
                              s.kvHeads, hd, hd, s.pageSize,
                              1.0 / std::sqrt(double(hd))),
                    st);
  Vec x1 = stored(linear(attn, w.wo, B, qDim, hid, &x), st);

  // MLP block.
  Vec h2 = stored(rmsnorm(x1, w.ffnNorm, hid, s.rmsEps), st);
  Vec gate = stored(linear(h2, w.wGate, B, hid, s.ffn), st);
  Vec up = stored(linear(h2, w.wUp, B, hid, s.ffn), st);
  Vec act = stored(siluMul(gate, up), st);
  return stored(linear(act, w.wDown, B, s.ffn, hid, &x1), st);
}

void decoderLayerKv(const DecoderShape &s, const LayerWeights &w, const Vec &x,
                    const StepMeta &meta, LayerCache &cache) {
  appendKv(s, w, stored(rmsnorm(x, w.attnNorm, s.hidden, s.rmsEps), s.storage),
           meta, cache);
}

Vec decoderStack(const DecoderShape &shape,
                 const std::vector<LayerWeights> &layers, const Vec &x,
                 const StepMeta &meta, std::vector<LayerCache> &caches) {
  Vec cur = x;
  for (size_t l = 0; l < layers.size(); ++l)
    cur = decoderLayer(shape, layers[l], cur, meta, caches.at(l));
  return cur;
}

HeadResult decoderWithHead(const DecoderShape &shape,
                           const std::vector<LayerWeights> &layers,
                           const HeadWeights &head, const IVec &tokenIds,
                           const StepMeta &meta,
                           std::vector<LayerCache> &caches) {
  HeadResult r;
  Vec x = embedding(head.embed, tokenIds, shape.hidden);
  r.hidden = decoderStack(shape, layers, x, meta, caches);
  Vec hf = rmsnorm(r.hidden, head.finalNorm, shape.hidden, shape.rmsEps);
  roundAll(hf, shape.storage);
  r.logits = linear(hf, head.lmHead, meta.batch, shape.hidden, head.vocab);
  // BuildGraph keeps the logits in an f32 buffer whatever the activations'
  // type.
  roundAll(r.logits,
           shape.storage == Storage::Exact ? Storage::Exact : Storage::F32);
  r.tokens = argmax(r.logits, head.vocab);
  return r;
}

} // namespace oracle
} // namespace loom
