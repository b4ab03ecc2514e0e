//===- KdaOracle.h - fp64 reference for KDA prefill -------------*- C++ -*-===//
//
// An op-level reference for loom.kda_prefill, independent of the task
// bodies: no chunks, no WY/UT transform, no workspace. Per sequence and head
// it runs the per-token recurrence of DESIGN.md "KDA (recurrent form)" in
// double, literally: normalise, gate, beta, then S = e^g (.) S;
// S += beta k (v - S^T k)^T; o = S^T (scale q).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_ORACLE_KDAORACLE_H
#define LOOM_TOOLS_ORACLE_KDAORACLE_H

#include <cstdint>
#include <vector>

namespace loom::oracle {

/// Shapes and attributes of one kda_prefill call.
struct KdaShape {
  int64_t numHeads = 0;     ///< H
  int64_t dimK = 0;         ///< K
  int64_t dimV = 0;         ///< V
  bool boundedGate = false; ///< false: unbounded (softplus) gate
  double lowerBound = -5.0; ///< bounded gate only
  double scale = 0.0;
  bool qkL2norm = true;
};

/// o: [cuSeqlens[N], H, V], row t for token t (rows before cuSeqlens[0]
/// are zero); finalState: [N, H, K, V].
struct KdaOracleResult {
  std::vector<double> o;
  std::vector<double> finalState;
};

/// Inputs are the values the kernel sees (already rounded to the storage
/// type), row-major: q, k, gRaw [T,H,K]; v [T,H,V]; betaRaw [T,H];
/// aLog [H]; dtBias [H,K]; cuSeqlens [N+1] (packed sequences, N >= 0);
/// initialState [N,H,K,V] or empty for zeros. Token rows are absolute
/// (row t of the buffers is token t). Throws std::invalid_argument on
/// decreasing cuSeqlens or inputs too short for the shapes.
KdaOracleResult kdaPrefillOracle(
    const std::vector<float> &q, const std::vector<float> &k,
    const std::vector<float> &v, const std::vector<float> &gRaw,
    const std::vector<float> &betaRaw, const std::vector<float> &aLog,
    const std::vector<float> &dtBias, const std::vector<int32_t> &cuSeqlens,
    const std::vector<float> &initialState, const KdaShape &shape);

} // namespace loom::oracle

#endif // LOOM_TOOLS_ORACLE_KDAORACLE_H
