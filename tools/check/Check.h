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
  /// true (--timing=queued): every launch is queued behind a gate
  /// (loomrt_program_set_queued_launch), so launch times leave the host's
  /// submission out; false: timed as issued.
  bool queued = false;

  /// false (loom-run --check=none): the outputs are not compared with the
  /// oracle (for stacks whose fp64 oracle is too slow). Every launch still
  /// gets fresh inputs and poisoned outputs, and the cheap checks still run:
  /// guards past the outputs, read-only buffers kept, no NaN (poison) left
  /// in the outputs. The report says plainly that nothing was checked
  /// against the oracle.
  bool oracle = true;

  /// > 0 (--bench N): after the launches above, warm up (at least
  /// warmupLaunches launches and warmupMs of them, so the GPU leaves its
  /// idle clocks), then time `bench` back-to-back launches on the last
  /// launch's inputs (Bench.cpp).
  int bench = 0;
  int warmupLaunches = 20;
  double warmupMs = 200;
  /// >= 2 (--rotate K): bind K copies of every input, cache and meta buffer
  /// round-robin during warm-up and timing, so the L2 does not keep one
  /// launch's inputs for the next. Weights are not copied (every spec's are
  /// many times the L2), outputs are not either.
  int rotate = 1;

  /// Non-empty (--trace FILE): write the last launch's per-task timing as
  /// Chrome trace JSON there and add a per-(op, phase) summary to the
  /// report (Trace.h). Needs a profiled program (loomrt_program_profiled:
  /// host programs always are; GPU artifacts with loomc --profile).
  std::string tracePath;

  /// --set-meta NAME[I]=V: after each launch's inputs are written, entry I
  /// of meta buffer NAME becomes V. Such a run checks that the program
  /// refuses bad meta values: it passes when the first launch fails with a
  /// task that says what it refused (kernels/common/MetaGuard.h), and
  /// fails when the launch succeeds or fails some other way.
  struct MetaEdit {
    std::string buffer;
    int64_t index = 0;
    int64_t value = 0;
  };
  std::vector<MetaEdit> metaEdits;
};

/// min / median / p90 / mean of a set of times, in ms.
struct TimeStats {
  int count = 0;
  double min = 0, median = 0, p90 = 0, mean = 0;
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
  bool oracleChecked = true; ///< false: --check=none, outputs not compared
  /// --bench: device time per launch (loomrt_program_last_launch_ns) and
  /// the host's wall time from one launch to the next (rebind, launch,
  /// synchronize); count 0 without --bench.
  TimeStats benchDevice, benchWall;
  int warmupLaunches = 0;   ///< launches before the timed ones
  double warmupMs = 0;
  std::string text;         ///< a short human-readable table of all of it
  /// One line of JSON (no newline) with the run's facts and numbers, which
  /// loom-run prints as `RESULT {...}` for scripts to tabulate.
  std::string resultJson;
};

/// Runs `programPath` (compiled from `spec`; pass the spec exactly as the
/// program was compiled, e.g. with the reduced `layers` of a host build) and
/// checks it. Throws std::runtime_error on setup errors (see above).
RunReport runAndCheck(const loom::spec::Spec &spec,
                      const std::string &programPath,
                      const RunOptions &options);

} // namespace loom::check

#endif // LOOM_TOOLS_CHECK_CHECK_H
