//===- KdaOracle.cpp - fp64 reference for KDA prefill ---------------------===//
//
// Straight loops in double over the recurrence; see KdaOracle.h.
//
//===----------------------------------------------------------------------===//
#include "tools/oracle/KdaOracle.h"

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

/// x / sqrt(sum x^2 + 1e-6), or x unchanged.
std::vector<double> normalised(const float *x, int64_t n, bool l2norm) {
  std::vector<double> out(x, x + n);
  if (!l2norm)
    return out;
  double sumSq = 0;
  for (double e : out)
    sumSq += e * e;
  double norm = std::sqrt(sumSq + 1e-6);
  for (double &e : out)
    e /= norm;
  return out;
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
  std::vector<double> S(K * V), g(K), kvRow(V);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      const size_t stateBase = size_t((n * H + h) * K * V);
      for (int64_t i = 0; i < K * V; ++i)
        S[i] = initialState.empty() ? 0.0 : initialState[stateBase + i];
      const double a = std::exp(double(aLog[h]));
      for (int64_t t = cuSeqlens[n]; t < cuSeqlens[n + 1]; ++t) {
        const int64_t row = t * H + h;
        std::vector<double> qt = normalised(&q[row * K], K, shape.qkL2norm);
        std::vector<double> kt = normalised(&k[row * K], K, shape.qkL2norm);
        for (int64_t c = 0; c < K; ++c) {
          double x = double(gRaw[row * K + c]) + double(dtBias[h * K + c]);
          g[c] = shape.boundedGate ? shape.lowerBound * sigmoid(a * x)
                                   : -a * softplus(x);
        }
        const double beta = sigmoid(double(betaRaw[row]));
        // S = exp(g)[:, None] * S
        for (int64_t c = 0; c < K; ++c) {
          const double e = std::exp(g[c]);
          for (int64_t j = 0; j < V; ++j)
            S[c * V + j] *= e;
        }
        // S += beta * outer(k, v - S^T k)
        for (int64_t j = 0; j < V; ++j)
          kvRow[j] = 0;
        for (int64_t c = 0; c < K; ++c)
          for (int64_t j = 0; j < V; ++j)
            kvRow[j] += S[c * V + j] * kt[c]; // (S^T k)[j]
        for (int64_t j = 0; j < V; ++j)
          kvRow[j] = beta * (double(v[row * V + j]) - kvRow[j]);
        for (int64_t c = 0; c < K; ++c)
          for (int64_t j = 0; j < V; ++j)
            S[c * V + j] += kt[c] * kvRow[j];
        // o = S^T (scale * q)
        double *oRow = &result.o[row * V];
        for (int64_t c = 0; c < K; ++c) {
          const double sq = shape.scale * qt[c];
          for (int64_t j = 0; j < V; ++j)
            oRow[j] += S[c * V + j] * sq;
        }
      }
      for (int64_t i = 0; i < K * V; ++i)
        result.finalState[stateBase + i] = S[i];
    }
  }
  return result;
}

} // namespace loom::oracle
