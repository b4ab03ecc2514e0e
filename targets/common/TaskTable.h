//===- TaskTable.h - The scheduled program as plain data ---------*- C++ -*-===//
//
// Every emitter (host, CUDA, HIP) writes the same task table: buffers, tasks
// with their waits and triggers, events, worker lists. This collects it from
// a scheduled graph once and prints it as the C arrays ProgramAbi.h reads.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_COMMON_TASKTABLE_H
#define LOOM_TARGETS_COMMON_TASKTABLE_H

#include "ir/LoomOps.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::loom {

struct TableBuffer {
  std::string name;
  Role role;
  std::string elem;           ///< LOOM_ELEM_* name
  std::vector<int64_t> dims;  ///< -1 for dynamic
  int64_t bound = 0;          ///< bound of a dynamic leading dimension
};

struct TableTask {
  Operation *op;
  int64_t phase, tile;
  std::vector<int64_t> waits, triggers;
  std::string name; ///< "linear#3.p0[12]"
};

struct TaskTable {
  std::string graphName, target;
  bool dynamic = false;
  int64_t workers = 0;
  int64_t workspaceBytes = 0;
  std::vector<TableBuffer> buffers;
  std::vector<TableTask> tasks;           ///< by task id
  std::vector<int64_t> eventNeeds;        ///< by event id
  std::vector<std::vector<int64_t>> workerLists; ///< static mode
  std::vector<int64_t> queue;             ///< dynamic mode: task order

  /// Fails with a diagnostic unless `graph` went through the pipeline.
  static FailureOr<TaskTable> build(GraphOp graph);

  /// `static const` C arrays named kBuffers, kWorkerBegin, kWorkerTasks,
  /// kTaskWaitBegin, kWaitEvents, kTaskTriggerBegin, kTriggerEvents,
  /// kEventNeeds, kTaskNames.
  void printArrays(llvm::raw_ostream &os) const;

  /// The integer arrays again, with `qualifier` (e.g. `__device__ const`)
  /// and `prefix` on their names: the device's copy of the schedule.
  void printScheduleArrays(llvm::raw_ostream &os, llvm::StringRef qualifier,
                           llvm::StringRef prefix) const;

  /// The LoomProgramDesc initializer using those arrays and `runTask`.
  void printDescriptor(llvm::raw_ostream &os, llvm::StringRef runTask) const;

  /// The metadata: symbol, target, buffers (the argument layout),
  /// workspace, grid (workers), and the task table (per task: name, waits,
  /// triggers; event needs; worker lists or the queue). GPU emitters add
  /// their launch fields before printing.
  llvm::json::Object metadataJson() const;

  /// metadataJson(), printed (printMetadataJson below).
  void printMetadataJson(llvm::raw_ostream &os) const;
};

/// Prints metadata JSON readably at any size: objects indented, arrays of
/// scalars on one line, and the elements of other arrays (buffers, tasks,
/// worker lists: a 32-layer decoder has 10^5 tasks) one per line.
void printMetadataJson(llvm::raw_ostream &os, const llvm::json::Value &metadata);

/// LOOM_ELEM_* for an element type ("" if unsupported).
std::string elemEnumName(Type type);

} // namespace mlir::loom

#endif // LOOM_TARGETS_COMMON_TASKTABLE_H
