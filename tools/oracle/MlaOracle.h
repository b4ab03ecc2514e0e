//===- MlaOracle.h - fp64 reference for MLA paged decode --------*- C++ -*-===//
//
// An op-level reference for loom.mla_decode, independent of the task bodies:
// no slots, no pieces, no online softmax. Per request, per head, it scores
// every token in double, takes the softmax and the weighted sum of the
// latent rows, exactly as DESIGN.md "Reference math" writes it.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_ORACLE_MLAORACLE_H
#define LOOM_TOOLS_ORACLE_MLAORACLE_H

#include <cstdint>
#include <vector>

namespace loom::oracle {

/// Shapes of one mla_decode call. `batch` is the run-time B.
struct MlaShape {
  int64_t batch = 0;
  int64_t numHeads = 0; ///< H
  int64_t dimCkv = 0;   ///< Dc
  int64_t dimKpe = 0;   ///< Dp
  int64_t pageSize = 0; ///< P
  double smScale = 0;
};

/// o: [B, H, Dc]; lse: [B, H], base 2 (-inf for an empty request).
struct MlaOracleResult {
  std::vector<double> o;
  std::vector<double> lse;
};

/// Inputs are the values the kernel sees (already rounded to the storage
/// type), row-major: qNope [B,H,Dc], qPe [B,H,Dp], ckvCache [pages,P,Dc],
/// kpeCache [pages,P,Dp]; kvIndptr [B+1], kvIndices page ids, kvLens [B].
/// Throws std::invalid_argument when the page table does not cover kv_lens
/// or names a page outside the cache, and std::out_of_range on short inputs.
MlaOracleResult mlaDecodeOracle(
    const std::vector<float> &qNope, const std::vector<float> &qPe,
    const std::vector<float> &ckvCache, const std::vector<float> &kpeCache,
    const std::vector<int32_t> &kvIndptr, const std::vector<int32_t> &kvIndices,
    const std::vector<int32_t> &kvLens, const MlaShape &shape);

} // namespace loom::oracle

#endif // LOOM_TOOLS_ORACLE_MLAORACLE_H
