//===- DecoderOracle.cpp - fp64 reference of the decoder-layer ops --------===//
//
// Each function is the op's definition written out as loops in double, in
// the most direct order; nothing is tiled, split or fused.
//
//===----------------------------------------------------------------------===//
#include "tools/oracle/DecoderOracle.h"

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
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double sum = 0.0;
      for (int64_t k = 0; k < K; ++k)
        sum += x[m * K + k] * w[n * K + k];
      y[m * N + n] = (residual ? (*residual)[m * N + n] : 0.0) + sum;
    }
  }
  return y;
}

Vec rope(const Vec &x, const IVec &positions, int64_t H, int64_t D,
         int64_t rotaryDim, double theta) {
  int64_t T = int64_t(positions.size()), half = rotaryDim / 2;
  Vec y = x; // dims past rotaryDim are copied
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const double *xr = x.data() + (t * H + h) * D;
      double *yr = y.data() + (t * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        double f = double(positions[t]) *
                   std::pow(theta, -2.0 * double(i) / double(rotaryDim));
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
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = table.lens[b];
    int64_t pages = table.indptr[b + 1] - table.indptr[b];
    if (len > pages * P)
      throw std::invalid_argument("request " + std::to_string(b) + ": " +
                                  std::to_string(len) + " tokens in " +
                                  std::to_string(pages) + " pages");
    if (len == 0)
      continue;
    // Flat cache row (page, slot) of every token of the request.
    IVec rows(len);
    for (int64_t t = 0; t < len; ++t)
      rows[t] = table.indices[table.indptr[b] + t / P] * P + t % P;
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t hk = h / group;
      Vec scores(len);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < len; ++t) {
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d)
          dot +=
              q[(b * Hq + h) * D + d] * kCache.at((rows[t] * Hkv + hk) * D + d);
        scores[t] = smScale * dot;
        mx = std::max(mx, scores[t]);
      }
      double denom = 0.0;
      for (int64_t t = 0; t < len; ++t)
        denom += std::exp(scores[t] - mx);
      for (int64_t t = 0; t < len; ++t) {
        double p = std::exp(scores[t] - mx) / denom;
        for (int64_t d = 0; d < Dv; ++d)
          o[(b * Hq + h) * Dv + d] +=
              p * vCache.at((rows[t] * Hkv + hk) * Dv + d);
      }
    }
  }
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

Vec decoderLayer(const DecoderShape &s, const LayerWeights &w, const Vec &x,
                 const StepMeta &meta, LayerCache &cache) {
  const int64_t B = meta.batch, hid = s.hidden, hd = s.headDim;
  const int64_t qDim = s.qHeads * hd, kvDim = s.kvHeads * hd;

  // Attention block.
  Vec h = rmsnorm(x, w.attnNorm, hid, s.rmsEps);
  Vec q = linear(h, w.wq, B, hid, qDim);
  Vec k = linear(h, w.wk, B, hid, kvDim);
  Vec v = linear(h, w.wv, B, hid, kvDim);
  if (s.qkNorm) {
    q = rmsnorm(q, w.qNorm, hd, s.rmsEps);
    k = rmsnorm(k, w.kNorm, hd, s.rmsEps);
  }
  q = rope(q, meta.positions, s.qHeads, hd, hd, s.ropeTheta);
  k = rope(k, meta.positions, s.kvHeads, hd, hd, s.ropeTheta);
  kvAppend(k, v, meta.slotMapping, s.kvHeads, hd, hd, s.pageSize, cache.k,
           cache.v);
  Vec attn = gqaDecode(q, cache.k, cache.v, meta.table, B, s.qHeads, s.kvHeads,
                       hd, hd, s.pageSize, 1.0 / std::sqrt(double(hd)));
  Vec x1 = linear(attn, w.wo, B, qDim, hid, &x);

  // MLP block.
  Vec h2 = rmsnorm(x1, w.ffnNorm, hid, s.rmsEps);
  Vec gate = linear(h2, w.wGate, B, hid, s.ffn);
  Vec up = linear(h2, w.wUp, B, hid, s.ffn);
  Vec act = siluMul(gate, up);
  return linear(act, w.wDown, B, s.ffn, hid, &x1);
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
  r.logits = linear(hf, head.lmHead, meta.batch, shape.hidden, head.vocab);
  r.tokens = argmax(r.logits, head.vocab);
  return r;
}

} // namespace oracle
} // namespace loom
