//===- Program.h - A loaded program: table, bindings, epochs ----*- C++ -*-===//
//
// The backend-neutral half of a program. It keeps the bindings (checked when
// made), counts epochs, refuses to launch with unbound buffers, and turns a
// failed launch into a sticky state: after a failure the event counters no
// longer equal epoch * needs, so launching again would let waits through
// early or never.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_PROGRAM_H
#define LOOM_RUNTIME_SRC_PROGRAM_H

#include "runtime/src/Backend.h"
#include "runtime/src/ProgramTable.h"

#include <memory>
#include <vector>

namespace loom {
namespace rt {

class Program {
public:
  /// Reads LOOM_WATCHDOG_MS for the initial watchdog; fails if it is set
  /// but is not a positive integer.
  static Status create(std::shared_ptr<const ProgramTable> table,
                       std::unique_ptr<Executable> executable,
                       std::unique_ptr<Program> *out);

  /// Waits for the launch in flight.
  ~Program();

  const ProgramTable &table() const { return *table_; }

  Status bind(int32_t index, void *data, const int64_t *dims, int32_t rank);
  Status bindByName(const char *name, void *data, const int64_t *dims,
                    int32_t rank);
  Status findBuffer(const char *name, int32_t *index) const;
  Status checkBufferIndex(int32_t index) const;

  Status setWatchdogMs(uint32_t ms);
  uint32_t watchdogMs() const { return watchdogMs_; }

  /// loomrt_program_set_queued_launch: turning it on waits for the launch
  /// in flight, then asks the executable whether it can
  /// (Executable::prepareQueuedLaunch).
  Status setQueuedLaunch(bool queued);
  bool queuedLaunch() const { return queued_; }

  Status launch();
  Status synchronize();

  Status lastLaunchNs(uint64_t *ns) const;
  uint64_t epoch() const { return epoch_; }
  Status eventCount(int32_t event, uint64_t *count) const;

  bool profiled() const { return executable_->profiled(); }
  /// loomrt_program_profile: the last completed launch's records, checked
  /// (every record of that launch, pick <= start <= end) and converted to
  /// ns from the first worker's entry. Either output may be null.
  Status profile(loomrt_task_timing *tasks, int32_t numTasks,
                 loomrt_task_timing *workers, int32_t numWorkers) const;

private:
  Program(std::shared_ptr<const ProgramTable> table,
          std::unique_ptr<Executable> executable, uint32_t watchdogMs);

  std::shared_ptr<const ProgramTable> table_;
  std::unique_ptr<Executable> executable_;
  std::vector<LoomBinding> bindings_;
  std::vector<bool> bound_;
  uint32_t watchdogMs_;
  bool queued_ = false;
  uint64_t epoch_ = 0;
  uint64_t completedLaunches_ = 0;
  // Set by the first failed launch; later launches repeat it.
  Status failure_;
  uint64_t failedEpoch_ = 0;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_PROGRAM_H
