//===- KdaOracle.cpp - fp64 reference for KDA prefill ---------------------===//
//
// Straight loops in double over the recurrence; see KdaOracle.h. The
// (sequence, head) recurrences are independent: they are shared out whole
// between threads (Parallel.h), each one run by one thread in token order,
// so results do not depend on the thread count. Each token walks the state
// twice (decay with S^T k, then the update with the output) instead of four
// times; every element still sees the same operations in the same order.
//
//===----------------------------------------------------------------------===//
#include "tools/oracle/KdaOracle.h"
#include "tools/oracle/Parallel.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace loom::oracle {

namespace {

double softplus(double x) { return x > 30.0 ? x : std::log1p(std::exp(x)); }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void requireSize(const std::vector<float> &buf, size_t need, const char *name) {
  if (buf.size() < need)
    throw std::invalid_argument(std::string("kdaPrefillOracle: ") + name +
                                " has " + std::to_string(buf.size()) +
                                " elements, needs " + std::to_string(need));
}

/// out = x / sqrt(sum x^2 + 1e-6), or x unchanged.
void normalised(const float *x, int64_t n, bool l2norm, double *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i];
  if (!l2norm)
    return;
  double sumSq = 0;
  for (int64_t i = 0; i < n; ++i)
    sumSq += out[i] * out[i];
  double norm = std::sqrt(sumSq + 1e-6);
  for (int64_t i = 0; i < n; ++i)
    out[i] /= norm;
}

} // namespace

KdaOracleResult kdaPrefillOracle(
    const std::vector<float> &q, const std::vector<float> &k,
    const std::vector<float> &v, const std::vector<float> &gRaw,
    const std::vector<float> &betaRaw, const std::vector<float> &aLog,
    const std::vector<float> &dtBias, const std::vector<int32_t> &cuSeqlens,
    const std::vector<float> &initialState, const KdaShape &shape) {
  const int64_t H = shape.numHeads, K = shape.dimK, V = shape.dimV;
  if (cuSeqlens.empty())
    throw std::invalid_argument("kdaPrefillOracle: cuSeqlens is empty");
  const int64_t N = int64_t(cuSeqlens.size()) - 1;
  for (int64_t n = 0; n < N; ++n)
    if (cuSeqlens[n + 1] < cuSeqlens[n] || cuSeqlens[n] < 0)
      throw std::invalid_argument("kdaPrefillOracle: bad cuSeqlens");
  const size_t rows = size_t(cuSeqlens[N]);
  requireSize(q, rows * H * K, "q");
  requireSize(k, rows * H * K, "k");
  requireSize(gRaw, rows * H * K, "gRaw");
  requireSize(v, rows * H * V, "v");
  requireSize(betaRaw, rows * H, "betaRaw");
  requireSize(aLog, H, "aLog");
  requireSize(dtBias, H * K, "dtBias");
  if (!initialState.empty())
    requireSize(initialState, size_t(N * H * K * V), "initialState");

  KdaOracleResult result;
  result.o.assign(rows * H * V, 0.0);
  result.finalState.assign(size_t(N * H * K * V), 0.0);
  parallelFor(N * H, [&](int64_t nh) {
    const int64_t n = nh / H, h = nh % H;
    std::vector<double> S(K * V), g(K), qt(K), kt(K), e(K), kvRow(V);
    const size_t stateBase = size_t((n * H + h) * K * V);
    for (int64_t i = 0; i < K * V; ++i)
      S[i] = initialState.empty() ? 0.0 : initialState[stateBase + i];
    const double a = std::exp(double(aLog[h]));
    for (int64_t t = cuSeqlens[n]; t < cuSeqlens[n + 1]; ++t) {
      const int64_t row = t * H + h;
      normalised(&q[row * K], K, shape.qkL2norm, qt.data());
      normalised(&k[row * K], K, shape.qkL2norm, kt.data());
      for (int64_t c = 0; c < K; ++c) {
        double x = double(gRaw[row * K + c]) + double(dtBias[h * K + c]);
        g[c] = shape.boundedGate ? shape.lowerBound * sigmoid(a * x)
                                 : -a * softplus(x);
        e[c] = std::exp(g[c]);
      }
      const double beta = sigmoid(double(betaRaw[row]));
      // S = exp(g)[:, None] * S, and (S^T k)[j] = sum_c S[c, j] k[c] of the
      // decayed S, accumulated over c in order.
      for (int64_t j = 0; j < V; ++j)
        kvRow[j] = 0;
      for (int64_t c = 0; c < K; ++c) {
        double *Sc = &S[c * V];
        for (int64_t j = 0; j < V; ++j) {
          Sc[j] *= e[c];
          kvRow[j] += Sc[j] * kt[c];
        }
      }
      // S += beta * outer(k, v - S^T k), and o = S^T (scale * q) of the
      // updated S, accumulated over c in order.
      for (int64_t j = 0; j < V; ++j)
        kvRow[j] = beta * (double(v[row * V + j]) - kvRow[j]);
      double *oRow = &result.o[row * V];
      for (int64_t c = 0; c < K; ++c) {
        double *Sc = &S[c * V];
        const double sq = shape.scale * qt[c];
        for (int64_t j = 0; j < V; ++j) {
          Sc[j] += kt[c] * kvRow[j];
          oRow[j] += Sc[j] * sq;
        }
      }
    }
    for (int64_t i = 0; i < K * V; ++i)
      result.finalState[stateBase + i] = S[i];
  });
  return result;
}

} // namespace loom::oracle
