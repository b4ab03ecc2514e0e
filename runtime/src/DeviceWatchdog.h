//===- DeviceWatchdog.h - Watching a GPU kernel through its status -*- C++ -*-//
//
// Shared by the GPU backends (runtime/cuda, runtime/hip): nothing here calls
// a vendor API. A running kernel cannot be asked what it is doing, so each
// worker block publishes a LoomWorkerStatus (kernels/common/DeviceAbi.h) in
// host-mapped memory, and the host reads it while the kernel runs and after
// it ends:
//
//   task >= 0, event >= 0   waiting for `event` to reach `needed` (last read:
//                           `seen`)
//   task >= 0, event == -1  running the body of `task`
//   task == -1              finished its tasks
//   task == -2              not started yet (written by the runtime before
//                           each launch; the kernel overwrites it)
//   error != 0              the body of `task` failed with that code
//
// A worker that leaves because of the abort flag or its own wait timeout
// keeps its record as it was: that record is the report.
//
// Progress is any change in any record: a worker moved to another task or
// event, or saw a count move. Nothing changing for the watchdog timeout means
// the launch is stuck, as on the host (so the timeout must exceed the longest
// single task body).
//
// The backend polls its stream through watchLaunch() and turns what it saw
// into a Status with the describe*/…Status helpers below, so every GPU
// backend reports a stuck or failed launch in the same words.
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

/// How synchronize polls a stream: back to back first (a short kernel is
/// noticed within microseconds), then sleeps doubling up to 100 us, which
/// bounds how late synchronize returns for a long kernel.
class StreamPoller {
public:
  void pause();

private:
  int polls_ = 0;
  int sleepUs_ = 5;
};

bool allWorkersDone(const std::vector<LoomWorkerStatus> &status);
bool anyTaskFailed(const std::vector<LoomWorkerStatus> &status);

/// One line per waiting or running worker (first 16), then counts of the
/// finished and not started ones. Task and event ids the kernel wrote are
/// checked before they index the table.
std::string describeWorkers(const ProgramTable &table,
                            const std::vector<LoomWorkerStatus> &status);

/// The host watchdog's report:
///   program 'p' launch 3 stopped by the watchdog: no worker's status
///   changed for 200 ms
///     worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, needs 1
std::string describeStall(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &status,
                          uint64_t epoch, uint32_t timeoutMs);

/// The kernel ended but workers did not finish: their own wait timeout.
std::string describeDeviceTimeout(const ProgramTable &table,
                                  const std::vector<LoomWorkerStatus> &status,
                                  uint64_t epoch, uint64_t timeoutCycles);

/// "program 'p' launch 2: task 'x' (id 3) on worker 1 failed with code 42",
/// one line per failed worker (first 16).
std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch);

/// What the watchdog saw while a kernel ran.
struct LaunchWatch {
  bool aborted = false;      // the abort flag was raised
  bool stillRunning = false; // ... and the kernel did not exit in time
  std::string stallReport;   // set when the watchdog raised the flag
};

/// What watchLaunch needs from the backend.
struct WatchHooks {
  /// Queries the launch's stream: true while the kernel runs, false once it
  /// ended (successfully or not: the backend keeps the answer).
  std::function<bool()> busy;
  /// Raises the kernel's abort flag (host-mapped memory).
  std::function<void()> raiseAbort;
};

/// Polls until the kernel ends. A failed task body (its triggers will never
/// come) or `watchdogMs` without any record changing raises the abort flag;
/// a kernel still running `watchdogMs` after that is given up on
/// (stillRunning: only a task body ignoring the flag can do that).
LaunchWatch watchLaunch(const ProgramTable &table,
                        const volatile LoomWorkerStatus *status,
                        uint64_t epoch, uint32_t watchdogMs,
                        const WatchHooks &hooks);

/// A launch whose kernel ended without an API error, from the workers' last
/// records: success when every worker finished, else the failed tasks
/// (LOOMRT_ERROR_TASK_FAILED), the watchdog's report, or the device's own
/// wait timeout (LOOMRT_ERROR_TIMEOUT).
Status endedLaunchStatus(const ProgramTable &table,
                         const std::vector<LoomWorkerStatus> &last,
                         uint64_t epoch, const LaunchWatch &watch,
                         uint64_t timeoutCycles);

/// A kernel that did not exit `watchdogMs` after its abort flag. `why` gets
/// the sentence the backend records as the reason its device is wedged.
Status wedgedLaunchStatus(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          uint64_t epoch, const LaunchWatch &watch,
                          uint32_t watchdogMs, const std::string &device,
                          const std::string &what, std::string *why);

/// The stream reported an error for the launch: "<device>: <what> failed:
/// <error text>[; the device's context is unusable now (restart the
/// process)]" and the workers' records when it stopped.
Status failedLaunchStatus(loomrt_status code, const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          const std::string &device, const std::string &what,
                          const std::string &errorText, bool sticky);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_DEVICEWATCHDOG_H
