//===- Program.h - A loaded program: table, bindings, epochs ----*- C++ -*-===//
//
// The backend-neutral half of a program. It keeps the bindings (checked when
// made), counts epochs, refuses to launch with unbound buffers, and turns a
// failed launch into a sticky state: after a failure the event counters no
// longer equal epoch * needs, so launching again would let waits through
// early or never.
//
// Launches on the caller's stream (loomrt_launch_on_stream) are numbered by
// the kernel from its control words, and a CUDA graph may replay captured
// ones at any time, unseen. So the first of them hands the device the count
// of the core's own launches so far (which touch no control word), and from
// then on the core's own launches are numbered on the device too: the
// control words always hold the true count. The core reads them back, with
// the outcome of the launches it did not watch, at loomrt_program_check and
// before each launch of its own; that is where a failed stream launch is
// found. It is not sticky: the executable resets the counters and the next
// launch is launch 1.
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

  /// loomrt_launch_on_stream: queues one launch on `stream` and returns.
  /// The first after launches of the core's own waits for the one in
  /// flight and hands its count to the device.
  Status launchOnStream(void *stream);
  /// loomrt_program_check: how the launches on a stream went (the caller
  /// has synchronized the stream); success if the program never made one.
  Status check();

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

  /// What every launch needs: no failed launch before, every buffer bound.
  Status checkLaunchable() const;
  /// Reads the device's count and the outcome of the launches the core did
  /// not watch (Executable::checkStreamLaunches): epoch_ becomes that count,
  /// or 0 after a failure the executable reset.
  Status settleStreamLaunches();

  std::shared_ptr<const ProgramTable> table_;
  std::unique_ptr<Executable> executable_;
  std::vector<LoomBinding> bindings_;
  std::vector<bool> bound_;
  uint32_t watchdogMs_;
  bool queued_ = false;
  uint64_t epoch_ = 0;
  uint64_t completedLaunches_ = 0;
  // Set by the first launch on a stream: from then on every launch is
  // numbered by the kernel from its control words, the core's own too.
  bool deviceNumbered_ = false;
  // Launches queued on a stream (not captured into a graph) since the
  // control words were last read: at least these have completed by the
  // next read, or the stream was not synchronized.
  uint64_t streamQueued_ = 0;
  // Set by the first failed launch; later launches repeat it.
  Status failure_;
  uint64_t failedEpoch_ = 0;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_PROGRAM_H
