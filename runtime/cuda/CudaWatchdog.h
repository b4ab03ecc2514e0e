//===- CudaWatchdog.h - Watching a kernel through its status ----*- C++ -*-===//
//
// A running kernel cannot be asked what it is doing, so each worker block
// publishes a LoomWorkerStatus (DeviceAbi.h) in host-mapped memory, and the
// host reads it while the kernel runs and after it ends:
//
//   task >= 0, event >= 0   waiting for `event` to reach `needed` (last read:
//                           `seen`)
//   task >= 0, event == -1  running the body of `task`
//   task == -1              finished its tasks
//   task == -2              not started yet (written by the runtime before
//                           each launch; the kernel overwrites it)
//   error != 0, event == -1 the body of `task` failed with code `error`
//   error != 0, event >= 0  the worker left that wait: -1 because the abort
//                           flag was up, -2 because its own timeout_cycles
//                           ran out (kernels/nvidia/Interpreter.cuh)
//
// A worker that leaves a wait keeps the wait in its record: that record is
// the report. The kernel raises the abort flag itself when a body fails or a
// wait times out, so the other workers leave too.
//
// Progress is any change in any record: a worker moved to another task or
// event, or saw a count move. Nothing changing for the watchdog timeout means
// the launch is stuck, as on the host (so the timeout must exceed the longest
// single task body).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDAWATCHDOG_H
#define LOOM_RUNTIME_CUDA_CUDAWATCHDOG_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/src/ProgramTable.h"

#include <chrono>
#include <string>
#include <vector>

namespace loom {
namespace rt {
namespace cuda {

constexpr int32_t kStatusDone = -1;
constexpr int32_t kStatusNotStarted = -2;
/// LoomWorkerStatus::error of a worker that left a wait (event >= 0).
constexpr int32_t kWaitAborted = -1;
constexpr int32_t kWaitTimedOut = -2;

/// Marks every worker not started, no error. Called before each launch.
void resetStatus(volatile LoomWorkerStatus *live, int32_t numWorkers);

/// Copies the records the device is writing. Each record is read until two
/// reads agree, so a record caught halfway through an update is not
/// reported as a mix of two states.
void snapshotStatus(const volatile LoomWorkerStatus *live, int32_t numWorkers,
                    std::vector<LoomWorkerStatus> *out);

/// Says when the records have not changed for the timeout.
class StallDetector {
public:
  using Clock = std::chrono::steady_clock;
  void arm(uint32_t timeoutMs, const std::vector<LoomWorkerStatus> &now,
           Clock::time_point at);
  /// True when `now` equals what was seen `timeoutMs` or more ago.
  bool stalled(const std::vector<LoomWorkerStatus> &now, Clock::time_point at);

private:
  uint32_t timeoutMs_ = 0;
  std::vector<LoomWorkerStatus> last_;
  Clock::time_point lastChange_;
};

bool allWorkersDone(const std::vector<LoomWorkerStatus> &status);
/// Every record still as the runtime wrote it before the launch.
bool noWorkerReported(const std::vector<LoomWorkerStatus> &status);
/// A task body failed (error set while running a body, not while waiting).
bool bodyFailed(const LoomWorkerStatus &status);
bool anyTaskFailed(const std::vector<LoomWorkerStatus> &status);

/// One line per waiting, running, failed or departed worker (first 16), then
/// counts of the finished and silent ones. Task and event ids the kernel
/// wrote are checked before they index the table. `counts`, when given, are
/// the event counters read as the report is made: the kernel publishes waits
/// but (by default) not the bodies after them, so a record whose wait the
/// counters show satisfied is stale and is reported as such.
std::string describeWorkers(const ProgramTable &table,
                            const std::vector<LoomWorkerStatus> &status,
                            const std::vector<uint64_t> *counts = nullptr);

/// The host watchdog's report:
///   program 'p' launch 3 stopped by the watchdog: no worker's status
///   changed for 200 ms
///     worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, needs 1
std::string describeStall(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &status,
                          uint64_t epoch, uint32_t timeoutMs,
                          const std::vector<uint64_t> *counts = nullptr);

/// The kernel ended but workers did not finish: their own wait timeout (or,
/// when no record was ever written, a kernel that ignores the protocol).
std::string
describeDeviceTimeout(const ProgramTable &table,
                      const std::vector<LoomWorkerStatus> &status,
                      uint64_t epoch, uint64_t timeoutCycles,
                      const std::vector<uint64_t> *counts = nullptr);

/// "program 'p' launch 2: task 'x' (id 3) on worker 1 failed with code 42",
/// one line per failed worker (first 16).
std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch);

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDAWATCHDOG_H
