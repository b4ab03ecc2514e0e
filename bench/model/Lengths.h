//===- Lengths.h - Request / sequence lengths of a workload -----*- C++ -*-===//
//
// The workload files give lengths as a list or as a generator string. The
// generators are expanded *deterministically*, so the model's bytes and
// FLOPs do not depend on a random seed and the bench matrix can reproduce the
// exact lengths (README.md says how, in a line of Python):
//
//   uniform:N                   every request N            (MLA tiers)
//   uniform:COUNTxLEN           COUNT sequences of LEN     (KDA)
//   lognormal:MEDIAN:SIGMA:CLIP request i of B at the quantile p_i = (i+0.5)/B:
//                               round(MEDIAN * exp(SIGMA * z(p_i))), in [1, CLIP]
//   normal:MEAN:STD             round(MEAN + STD * z(p_i)), at least 1
//
// where z is the standard normal quantile. Quantiles instead of draws: the
// set has exactly the distribution's shape, sorted ascending.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_BENCH_MODEL_LENGTHS_H
#define LOOM_BENCH_MODEL_LENGTHS_H

#include <cstdint>
#include <string>
#include <vector>

namespace loom::model {

/// The standard normal quantile z(p) for 0 < p < 1 (bisection on erfc, to
/// double precision).
double normalQuantile(double p);

/// Expands an MLA tier generator for `batch` requests. Returns false and
/// sets `error` (a sentence without position) on a malformed string.
bool expandRequestLengths(const std::string &generator, int64_t batch,
                          std::vector<int64_t> &lengths, std::string &error);

/// Expands a KDA generator ("uniform:COUNTxLEN").
bool expandSequenceLengths(const std::string &generator,
                           std::vector<int64_t> &lengths, std::string &error);

} // namespace loom::model

#endif // LOOM_BENCH_MODEL_LENGTHS_H
