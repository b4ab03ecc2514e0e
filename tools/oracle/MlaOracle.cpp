//===- MlaOracle.cpp - fp64 reference for MLA paged decode ----------------===//
//
// Straight loops in double; see MlaOracle.h. The (request, head) pairs are
// independent: they are shared out whole between threads (Parallel.h), so
// results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "tools/oracle/MlaOracle.h"
#include "tools/oracle/Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace loom::oracle {

namespace {

/// Cache row (page * P + slot) of token t of request b, checked against the
/// page table so a bad test setup fails loudly instead of reading garbage.
int64_t cacheRow(const std::vector<int32_t> &kvIndptr,
                 const std::vector<int32_t> &kvIndices, int64_t b, int64_t t,
                 int64_t pageSize, int64_t numPages) {
  int64_t first = kvIndptr.at(b), last = kvIndptr.at(b + 1);
  int64_t k = first + t / pageSize;
  if (k >= last)
    throw std::invalid_argument("mla oracle: request " + std::to_string(b) +
                                " has too few pages for token " +
                                std::to_string(t));
  int64_t page = kvIndices.at(k);
  if (page < 0 || page >= numPages)
    throw std::invalid_argument("mla oracle: page id " + std::to_string(page) +
                                " out of range");
  return page * pageSize + t % pageSize;
}

} // namespace

MlaOracleResult mlaDecodeOracle(
    const std::vector<float> &qNope, const std::vector<float> &qPe,
    const std::vector<float> &ckvCache, const std::vector<float> &kpeCache,
    const std::vector<int32_t> &kvIndptr, const std::vector<int32_t> &kvIndices,
    const std::vector<int32_t> &kvLens, const MlaShape &shape) {
  const int64_t B = shape.batch, H = shape.numHeads, Dc = shape.dimCkv,
                Dp = shape.dimKpe, P = shape.pageSize;
  const int64_t numPages = int64_t(ckvCache.size()) / (P * Dc);
  if (int64_t(kpeCache.size()) != numPages * P * Dp)
    throw std::invalid_argument("mla oracle: ckv/kpe caches disagree on pages");

  MlaOracleResult result;
  result.o.assign(B * H * Dc, 0.0);
  result.lse.assign(B * H, -std::numeric_limits<double>::infinity());

  // Cache rows of every request's tokens, checked against the page table
  // and the caches before any thread starts.
  if (int64_t(qNope.size()) < B * H * Dc || int64_t(qPe.size()) < B * H * Dp)
    throw std::out_of_range("mla oracle: q shorter than batch x heads");
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = kvLens.at(b);
    if (len < 0)
      throw std::invalid_argument("mla oracle: negative kv_len");
    rows[b].resize(size_t(len));
    for (int64_t t = 0; t < len; ++t)
      rows[b][t] = cacheRow(kvIndptr, kvIndices, b, t, P, numPages);
  }

  parallelFor(B * H, [&](int64_t bh) {
    const int64_t b = bh / H, h = bh % H;
    const std::vector<int64_t> &rb = rows[b];
    const int64_t len = int64_t(rb.size());
    if (len == 0)
      return; // o = 0, lse = -inf
    const float *qn = qNope.data() + (b * H + h) * Dc;
    const float *qp = qPe.data() + (b * H + h) * Dp;
    // s[t] = sm_scale * (q_nope . Kc[t] + q_pe . Kp[t])
    std::vector<double> s(size_t(len), 0.0);
    for (int64_t t = 0; t < len; ++t) {
      const float *kc = ckvCache.data() + rb[t] * Dc;
      const float *kp = kpeCache.data() + rb[t] * Dp;
      double dot = 0.0;
      for (int64_t d = 0; d < Dc; ++d)
        dot += double(qn[d]) * double(kc[d]);
      for (int64_t d = 0; d < Dp; ++d)
        dot += double(qp[d]) * double(kp[d]);
      s[t] = shape.smScale * dot;
    }
    double m = -std::numeric_limits<double>::infinity();
    for (double v : s)
      m = std::max(m, v);
    double sum = 0.0;
    for (double v : s)
      sum += std::exp(v - m);

    // o = sum_t softmax(s)[t] * Kc[t]
    double *o = result.o.data() + (b * H + h) * Dc;
    for (int64_t t = 0; t < len; ++t) {
      double p = std::exp(s[t] - m) / sum;
      const float *kc = ckvCache.data() + rb[t] * Dc;
      for (int64_t d = 0; d < Dc; ++d)
        o[d] += p * double(kc[d]);
    }
    result.lse[b * H + h] = (m + std::log(sum)) / std::log(2.0);
  });
  return result;
}

} // namespace loom::oracle
