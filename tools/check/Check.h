//===- Check.h - Run a compiled Loom program and check it against the oracles ===//
//
// LoomCheck loads a compiled Loom program (host: <name>.host.so) through
// loomrt, binds every graph argument (names, roles and shapes as
// tools/frontend/BuildGraph.cpp declares them), launches it several times in
// a row with fresh random inputs and poisoned outputs, and compares each
// launch's outputs with the fp64 oracles of tools/oracle (DESIGN.md
// "Reference math").
//
// Plain C++17 with exceptions; links loomrt, LoomOracle and LoomSpec, no
// LLVM/MLIR.
//
// Errors. Problems of the setup throw std::runtime_error with a message that
// says what is wrong: the program cannot be loaded, it does not match the
// spec (a buffer missing, another dtype or shape, e.g. a decoder compiled
// with another number of layers), the sizes in RunOptions do not fit the
// program's bounds. A launch that fails (the watchdog stops it, a task body
// returns an error) is a result, not a setup error: runAndCheck returns
// ok = false with a failed "launch" check whose message is in `text`, and
// stops launching (loomrt refuses to launch a failed program again).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_CHECK_CHECK_H
#define LOOM_TOOLS_CHECK_CHECK_H

#include "tools/spec/Spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::check {

struct RunOptions {
  /// 0: draw one from std::random_device. Always printed in the report.
  uint64_t seed = 0;
  /// Launches in a row (epochs 1..n of one loaded program); every launch
  /// gets fresh random inputs and page tables, and poisoned outputs.
  int launches = 3;
  /// mla_decode / decoder: context length per request (decoder: including
  /// the new token, so each must be >= 1). Empty: a per-family default,
  /// clipped to max_batch.
  std::vector<int64_t> kvLens;
  /// kda_prefill: packed sequence lengths. Empty: a default, clipped to
  /// max_seqs / max_tokens.
  std::vector<int64_t> seqLens;
  /// loomrt device kind: "host" (CPU threads), "cuda", "hip".
  std::string device = "host";
  /// > 0: the watchdog timeout of the program; 0: the runtime's default
  /// (LOOM_WATCHDOG_MS or 10 s).
  int64_t watchdogMs = 0;
};

/// One comparison, worst over all launches.
struct Check {
  std::string name;   ///< e.g. "o", "lse", "hidden_out", "k_cache new rows"
  double error = 0;   ///< the worst measured value (NaN/inf: output broken)
  double bound = 0;   ///< passes when error <= bound
  std::string metric; ///< how `error` is measured, e.g. "max |d|/(1e-2+1e-2|ref|)"
  bool ok = false;
};

struct RunReport {
  bool ok = false;          ///< every check passed and every launch ran
  uint64_t seed = 0;        ///< the seed used (drawn when options.seed == 0)
  std::vector<Check> checks;
  double launchMs = 0;      ///< median of the launches' wall times (loomrt)
  std::string text;         ///< a short human-readable table of all of it
};

/// Runs `programPath` (compiled from `spec`; pass the spec exactly as the
/// program was compiled, e.g. with the reduced `layers` of a host build) and
/// checks it. Throws std::runtime_error on setup errors (see above).
RunReport runAndCheck(const loom::spec::Spec &spec,
                      const std::string &programPath,
                      const RunOptions &options);

} // namespace loom::check

#endif // LOOM_TOOLS_CHECK_CHECK_H
