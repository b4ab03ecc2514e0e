//===- DeviceWatchdog.h - Watching a GPU kernel through its status -*- C++ -*-//
//
// Shared by the GPU backends (runtime/cuda, runtime/hip): nothing here calls
// a vendor API. A running kernel cannot be asked what it is doing, so each
// worker block publishes a LoomWorkerStatus (kernels/common/DeviceAbi.h) in
// host-mapped memory, and the host reads it while the kernel runs and after
// it ends:
//
//   task >= 0, event >= 0   waiting for `event` to reach `needed` (last read:
//                           `seen`), or was: a record stays until the next
//   task >= 0, event == -1  running the body of `task`
//   task == -1              finished its tasks
//   task == -2              nothing to report (written by the runtime before
//                           each launch)
//
// The NVIDIA kernel writes a record only after a wait has lasted about half
// a millisecond and when a worker fails, so a healthy launch costs no PCIe
// traffic; the AMD kernel also at each unsatisfied wait and at exit. A
// launch succeeded when its kernel ended and no record has error != 0.
//   error != 0, event == -1 the body of `task` failed with code `error`
//   error != 0, event >= 0  the worker left that wait: -1 because the abort
//                           flag was up, -2 because its own timeout_cycles
//                           ran out (kernels/nvidia/Interpreter.cuh)
//
// A worker that leaves a wait keeps the wait in its record: that record is
// the report. The kernel raises the abort flag itself when a body fails or a
// wait times out, so the other workers leave too.
//
// Progress is any change in any record, or in the event counters (read
// while the kernel runs when the records have been quiet a while). Nothing
// changing for the watchdog timeout means the launch is stuck, as on the
// host (so the timeout must exceed the longest single task body).
//
// A backend polls its stream through watchLaunch() and turns what it saw into
// a Status with the …LaunchStatus helpers, so every GPU backend reports a
// stuck or failed launch in the same words.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_DEVICEWATCHDOG_H
#define LOOM_RUNTIME_SRC_DEVICEWATCHDOG_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/src/ProgramTable.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace loom {
namespace rt {

constexpr int32_t kWorkerDone = -1;
constexpr int32_t kWorkerNotStarted = -2;
/// LoomWorkerStatus::error of a worker that left a wait (event >= 0).
constexpr int32_t kWaitAborted = -1;
constexpr int32_t kWaitTimedOut = -2;

/// Marks every worker not started, no error. Called before each launch,
/// while no kernel of the program runs.
void resetWorkerStatus(volatile LoomWorkerStatus *live, int32_t numWorkers);

/// Copies the records the device is writing (each field read atomically,
/// relaxed). Each record is read until two reads agree, so a record caught
/// halfway through an update is not reported as a mix of two states.
void snapshotWorkerStatus(const volatile LoomWorkerStatus *live,
                          int32_t numWorkers,
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

/// How synchronize polls a stream. Back to back for the first 2 ms, so a
/// decode-sized kernel (tens of microseconds to a few milliseconds) is seen
/// done within a microsecond or two and back-to-back launches stay tight;
/// then sleeps, doubling from 10 up to 200 us, which bounds how late
/// synchronize returns for a long kernel without keeping a core busy.
class StreamPoller {
public:
  using Clock = std::chrono::steady_clock;
  void pause();

private:
  Clock::time_point start_ = Clock::now();
  int sleepUs_ = 10;
};

/// A worker left the launch early: its body failed or it left a wait.
bool anyWorkerLeft(const std::vector<LoomWorkerStatus> &status);
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
                            const std::vector<uint64_t> *counts = nullptr,
                            const std::vector<LoomBinding> *bindings = nullptr);

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
/// A task that refused a meta value names it (describeMetaFault, from the
/// launch's `bindings` when given).
std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch,
                             const std::vector<LoomBinding> *bindings = nullptr);

/// What the backend lends the watchdog.
struct WatchHooks {
  /// Queries the launch's stream: true while the kernel runs, false once it
  /// ended, successfully or not (the backend keeps the answer).
  std::function<bool()> busy;
  /// Raises the kernel's abort flag (host-mapped memory).
  std::function<void()> raiseAbort;
  /// The event counters now (the memory stream does not wait for the
  /// kernel); empty when they cannot be read, e.g. after a fault. Read only
  /// for reports.
  std::function<std::vector<uint64_t>()> readCounts;
  /// The launch's bindings, to name a meta value a body refused (the
  /// executor's; null: none).
  const std::vector<LoomBinding> *bindings = nullptr;
};

/// What the watchdog saw while a kernel ran.
struct LaunchWatch {
  bool aborted = false;      // the abort flag was raised
  bool stillRunning = false; // ... and the kernel did not exit in time
  std::string stallReport;   // set when the watchdog raised it
};

/// Polls `hooks.busy` (StreamPoller) until the kernel ends, reading the
/// records once a millisecond. A failed task body (its triggers will never
/// come) or `watchdogMs` without any record or event count changing raises
/// the abort flag
/// (the stall report is taken then, with the counters); a kernel still
/// running `watchdogMs` after that is given up on (stillRunning: only a task
/// body ignoring the flag can do that).
LaunchWatch watchLaunch(const ProgramTable &table,
                        const volatile LoomWorkerStatus *status, uint64_t epoch,
                        uint32_t watchdogMs, const WatchHooks &hooks);

/// A launch whose kernel ended without an API error, from the workers' last
/// records: success when no worker left early (even if the flag went up as
/// the last task ended), else the failed tasks (LOOMRT_ERROR_TASK_FAILED),
/// the watchdog's report, or the device's own wait timeout
/// (LOOMRT_ERROR_TIMEOUT).
Status endedLaunchStatus(const ProgramTable &table,
                         const std::vector<LoomWorkerStatus> &last,
                         uint64_t epoch, const LaunchWatch &watch,
                         uint64_t timeoutCycles, const WatchHooks &hooks);

/// A kernel that did not exit `watchdogMs` after its abort flag. `why` gets
/// "<what>: the kernel did not exit within …", the reason the backend
/// records for refusing memory calls from now on.
Status wedgedLaunchStatus(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          uint64_t epoch, const LaunchWatch &watch,
                          uint32_t watchdogMs, const std::string &device,
                          const std::string &what, const WatchHooks &hooks,
                          std::string *why);

/// The stream reported an error for the launch: "<device>: <what> failed:
/// <error text>[; the device's context is unusable now (restart the
/// process)]" and what each worker was doing (the counters are not read
/// after a sticky error).
Status failedLaunchStatus(loomrt_status code, const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          const std::string &device, const std::string &what,
                          const std::string &errorText, bool sticky,
                          const WatchHooks &hooks);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_DEVICEWATCHDOG_H
