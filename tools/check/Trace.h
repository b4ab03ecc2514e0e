//===- Trace.h - Per-task timing as Chrome trace JSON and a summary -*- C++ -*-===//
//
// What loom-run --trace does with a launch's per-task timing
// (loomrt_program_profile): a Chrome trace (chrome://tracing, Perfetto) with
// one row per worker and one complete event per task, named by the task
// table ("linear#3.p0[12]": op kind, op id, phase, tile), and a text summary
// per (op, phase): tasks, body time (total, mean, max), time spent waiting
// for inputs, and the share of the launch's critical path spent in that
// phase's bodies.
//
// The critical path is walked back from the task that ended last: each
// task's predecessor is whichever finished last of the previous task on its
// worker and the producers (triggering tasks) of the events it waited on,
// i.e. what actually let it start. The path's bodies against the launch's
// span says how much of the time is work and how much is waiting,
// signalling and launch latency between them.
//
// No device or runtime handle: the functions take the program's task table
// and the records, so tests feed them made-up timings.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_CHECK_TRACE_H
#define LOOM_TOOLS_CHECK_TRACE_H

#include "loom/loomrt.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace loom::check {

/// One launch's timing with the task table it belongs to.
struct LaunchTiming {
  const LoomProgramDesc *desc = nullptr;
  std::vector<loomrt_task_timing> tasks;   ///< num_tasks, by task id
  std::vector<loomrt_task_timing> workers; ///< num_workers
  std::string title;  ///< e.g. "deepseek_v3_tp8 on cuda device 0 (...)"
  uint64_t epoch = 0; ///< the launch the records are from
};

/// Per (op, phase): the task name without its "[tile]".
struct PhaseSummary {
  std::string name;       ///< "mla_decode#0.p1"
  int64_t tasks = 0;
  uint64_t bodyNs = 0;    ///< sum of end - start
  uint64_t maxBodyNs = 0;
  uint64_t waitNs = 0;    ///< sum of start - pick
  uint64_t criticalNs = 0;///< body time of this phase's tasks on the critical path
  int64_t criticalTasks = 0;
};

struct TraceSummary {
  std::vector<PhaseSummary> phases; ///< in order of their first task id
  uint64_t spanNs = 0;     ///< first worker entry to last worker exit
  uint64_t bodyNs = 0, waitNs = 0;
  int32_t workers = 0;
  std::vector<int32_t> criticalPath; ///< task ids, first to last
  uint64_t criticalBodyNs = 0;
  /// Smallest positive difference between two distinct timestamps: the
  /// timer's step (or finer) as this launch saw it.
  uint64_t timerStepNs = 0;
};

/// "linear#3.p0[12]" -> "linear#3.p0".
std::string phaseOf(const std::string &taskName);

TraceSummary summarize(const LaunchTiming &timing);

/// A few lines: span, utilization, the critical path, then a table of the
/// phases (with "crit %" = the phase's bodies on the path / span).
std::string formatSummary(const TraceSummary &summary);

/// Chrome trace JSON: per worker a thread row; per task a complete ("X")
/// event of category "task" from start to end with args {task, worker,
/// wait_ns, pick_us}; a "wait" event from pick to start where the task
/// waited; metadata naming the process and rows. Times in microseconds
/// from the launch's origin.
void writeChromeTrace(std::ostream &os, const LaunchTiming &timing);

} // namespace loom::check

#endif // LOOM_TOOLS_CHECK_TRACE_H
