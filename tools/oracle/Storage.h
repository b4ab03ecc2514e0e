//===- Storage.h - Rounding to a buffer's element type ---------*- C++ -*-===//
//
// The decoder oracle's storage-faithful mode (DecoderOracle.h) rounds each
// op's fp64 result to the element type of the buffer the graph stores it in.
// This is the oracle's own rounding, written from the IEEE 754 definition
// (round to nearest, ties to even, with the format's precision, subnormal
// range and overflow to infinity), not the check harness's or the kernels'
// conversion code.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_ORACLE_STORAGE_H
#define LOOM_TOOLS_ORACLE_STORAGE_H

#include <vector>

namespace loom::oracle {

/// What an activation buffer holds. Exact: nothing is rounded (the pure fp64
/// reference).
enum class Storage { Exact, BF16, F16, F32 };

const char *storageName(Storage s);

/// x rounded to nearest-even in `s` (x itself for Exact, NaN and +-inf).
double roundTo(double x, Storage s);

/// Every element of v rounded with roundTo.
void roundAll(std::vector<double> &v, Storage s);

} // namespace loom::oracle

#endif // LOOM_TOOLS_ORACLE_STORAGE_H
