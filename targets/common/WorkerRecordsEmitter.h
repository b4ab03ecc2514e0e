//===- WorkerRecordsEmitter.h - The schedule as packed records --*- C++ -*-===//
//
// The NVIDIA engine reads each worker's schedule as packed records
// (kernels/common/WorkerRecords.h): per task its tile function, tile,
// waits with their counts, triggers, first runtime row and, with a prefetch
// budget, the weight ranges it reads whatever the events say. This builds
// them from the task table and prints them as `dRecords` / `dQueueOffsets`.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_COMMON_WORKERRECORDSEMITTER_H
#define LOOM_TARGETS_COMMON_WORKERRECORDSEMITTER_H

#include "ir/LoomOps.h"
#include "targets/common/TaskTable.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {

/// What the kernel's EngineSchedule and loop template need.
struct EmittedRecords {
  int64_t windowWords = 0;    ///< the shared-memory window (a multiple of 4)
  int64_t stride = 0;         ///< static mode: words per worker
  int64_t maxRecordWords = 0; ///< the longest record
  int64_t prefetchBudget = 0; ///< 0 when no task has a range to prefetch
};

/// Prints `__device__` arrays dRecords (one record per line, each worker's
/// list under a comment) and dQueueOffsets. `taskFunction[t]` is task t's
/// runTask case; prefetch ranges are recorded when `prefetchBudget` > 0.
/// Fails with a diagnostic on a task a record cannot hold.
LogicalResult emitWorkerRecords(GraphOp graph, const TaskTable &table,
                                llvm::ArrayRef<int64_t> taskFunction,
                                int64_t prefetchBudget, llvm::raw_ostream &os,
                                EmittedRecords &out);

} // namespace mlir::loom

#endif // LOOM_TARGETS_COMMON_WORKERRECORDSEMITTER_H
