//===- DeviceWatchdog.cpp - Watching a GPU kernel through its status ------===//

#include "runtime/src/DeviceWatchdog.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace loom {
namespace rt {

namespace {

/// Workers named one per line before a report summarises the rest.
constexpr int kMaxListedWorkers = 16;
/// Reads of a record before taking the last one even if it keeps changing.
constexpr int kMaxReadsPerRecord = 4;
/// StreamPoller: polls back to back, then the longest sleep between polls.
constexpr int kSpinPolls = 64;
constexpr int kMaxSleepUs = 100;

// The device writes these records while the host reads them. Atomic loads
// (relaxed: each field is a value of its own; snapshots retry until stable)
// say so to the compiler and to ThreadSanitizer, whose fake-GPU tests run
// the "kernel" on host threads.
template <typename T> T loadRelaxed(const volatile T &field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}
template <typename T> void storeRelaxed(volatile T &field, T value) {
  __atomic_store_n(&field, value, __ATOMIC_RELAXED);
}

LoomWorkerStatus readOnce(const volatile LoomWorkerStatus &r) {
  LoomWorkerStatus s;
  s.task = loadRelaxed(r.task);
  s.event = loadRelaxed(r.event);
  s.seen = loadRelaxed(r.seen);
  s.needed = loadRelaxed(r.needed);
  s.error = loadRelaxed(r.error);
  s.pad = 0;
  return s;
}

bool same(const LoomWorkerStatus &a, const LoomWorkerStatus &b) {
  return a.task == b.task && a.event == b.event && a.seen == b.seen &&
         a.needed == b.needed && a.error == b.error;
}

bool sameAll(const std::vector<LoomWorkerStatus> &a,
             const std::vector<LoomWorkerStatus> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i]))
      return false;
  return true;
}

/// "task 'x' (id 3)", or the raw id when the kernel wrote one out of range.
std::string taskName(const ProgramTable &table, int32_t task) {
  if (task >= 0 && task < table.numTasks())
    return "task " + table.describeTask(task);
  return "task id " + std::to_string(task) + " (not a task of this program)";
}

std::string eventName(const ProgramTable &table, int32_t event) {
  if (event >= 0 && event < table.numEvents())
    return "event " + std::to_string(event);
  return "event id " + std::to_string(event) +
         " (not an event of this program)";
}

} // namespace

void resetWorkerStatus(volatile LoomWorkerStatus *live, int32_t numWorkers) {
  for (int32_t w = 0; w < numWorkers; ++w) {
    storeRelaxed(live[w].task, kWorkerNotStarted);
    storeRelaxed(live[w].event, int32_t{-1});
    storeRelaxed(live[w].seen, uint64_t{0});
    storeRelaxed(live[w].needed, uint64_t{0});
    storeRelaxed(live[w].error, int32_t{0});
    storeRelaxed(live[w].pad, int32_t{0});
  }
}

void snapshotWorkerStatus(const volatile LoomWorkerStatus *live,
                          int32_t numWorkers,
                          std::vector<LoomWorkerStatus> *out) {
  out->resize(numWorkers);
  for (int32_t w = 0; w < numWorkers; ++w) {
    LoomWorkerStatus a = readOnce(live[w]);
    for (int i = 1; i < kMaxReadsPerRecord; ++i) {
      LoomWorkerStatus b = readOnce(live[w]);
      if (same(a, b))
        break;
      a = b;
    }
    (*out)[w] = a;
  }
}

void StallDetector::arm(uint32_t timeoutMs,
                        const std::vector<LoomWorkerStatus> &now,
                        Clock::time_point at) {
  timeoutMs_ = timeoutMs;
  last_ = now;
  lastChange_ = at;
}

bool StallDetector::stalled(const std::vector<LoomWorkerStatus> &now,
                            Clock::time_point at) {
  if (!sameAll(now, last_)) {
    last_ = now;
    lastChange_ = at;
    return false;
  }
  return at - lastChange_ >= std::chrono::milliseconds(timeoutMs_);
}

void StreamPoller::pause() {
  if (polls_++ < kSpinPolls)
    return;
  std::this_thread::sleep_for(std::chrono::microseconds(sleepUs_));
  sleepUs_ = std::min(sleepUs_ * 2, kMaxSleepUs);
}

bool allWorkersDone(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (s.task != kWorkerDone || s.error != 0)
      return false;
  return true;
}

bool anyTaskFailed(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (s.error != 0)
      return true;
  return false;
}

std::string describeWorkers(const ProgramTable &table,
                            const std::vector<LoomWorkerStatus> &status) {
  std::ostringstream os;
  int listed = 0, unlisted = 0, finished = 0, notStarted = 0;
  for (size_t w = 0; w < status.size(); ++w) {
    const LoomWorkerStatus &s = status[w];
    if (s.task == kWorkerDone && s.error == 0) {
      ++finished;
      continue;
    }
    if (s.task == kWorkerNotStarted && s.error == 0) {
      ++notStarted;
      continue;
    }
    if (listed == kMaxListedWorkers) {
      ++unlisted;
      continue;
    }
    ++listed;
    os << "\n  worker " << w << ": ";
    if (s.error != 0)
      os << taskName(table, s.task) << " failed with code " << s.error;
    else if (s.event < 0)
      os << "running " << taskName(table, s.task);
    else
      os << taskName(table, s.task) << " waits for "
         << eventName(table, s.event) << ": count " << s.seen << ", needs "
         << s.needed;
  }
  if (unlisted)
    os << "\n  ... and " << unlisted << " more workers waiting or running";
  if (finished)
    os << "\n  (" << finished << " other worker" << (finished == 1 ? "" : "s")
       << " finished " << (finished == 1 ? "its" : "their") << " tasks)";
  if (notStarted)
    os << "\n  (" << notStarted << " worker" << (notStarted == 1 ? "" : "s")
       << " had not started)";
  return os.str();
}

std::string describeStall(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &status,
                          uint64_t epoch, uint32_t timeoutMs) {
  std::ostringstream os;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " stopped by the watchdog: no worker's status changed for "
     << timeoutMs << " ms" << describeWorkers(table, status);
  return os.str();
}

std::string describeDeviceTimeout(const ProgramTable &table,
                                  const std::vector<LoomWorkerStatus> &status,
                                  uint64_t epoch, uint64_t timeoutCycles) {
  int unfinished = 0;
  for (const LoomWorkerStatus &s : status)
    unfinished += s.task != kWorkerDone;
  std::ostringstream os;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " ended with " << unfinished << " worker"
     << (unfinished == 1 ? "" : "s")
     << " unfinished: a wait gave up after timeout_cycles (" << timeoutCycles
     << " cycles)" << describeWorkers(table, status);
  return os.str();
}

std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch) {
  std::ostringstream os;
  int listed = 0, unlisted = 0;
  for (size_t w = 0; w < status.size(); ++w) {
    const LoomWorkerStatus &s = status[w];
    if (s.error == 0)
      continue;
    if (listed == kMaxListedWorkers) {
      ++unlisted;
      continue;
    }
    if (listed++)
      os << "\n";
    os << "program " << quoted(table.name()) << " launch " << epoch << ": "
       << taskName(table, s.task) << " on worker " << w
       << " failed with code " << s.error;
  }
  if (unlisted)
    os << "\n... and " << unlisted << " more failed workers";
  return os.str();
}

LaunchWatch watchLaunch(const ProgramTable &table,
                        const volatile LoomWorkerStatus *status,
                        uint64_t epoch, uint32_t watchdogMs,
                        const WatchHooks &hooks) {
  using Clock = StallDetector::Clock;
  const int32_t numWorkers = table.numWorkers();
  LaunchWatch w;
  std::vector<LoomWorkerStatus> now;
  snapshotWorkerStatus(status, numWorkers, &now);
  StallDetector detector;
  detector.arm(watchdogMs, now, Clock::now());
  Clock::time_point abortedAt;
  StreamPoller poller;
  auto abort = [&](Clock::time_point at) {
    hooks.raiseAbort();
    w.aborted = true;
    abortedAt = at;
  };
  for (;;) {
    if (!hooks.busy())
      return w;
    poller.pause();
    Clock::time_point at = Clock::now();
    if (w.aborted) {
      // Waits leave at their next poll of the flag; only a task body can
      // keep a worker longer. After another timeout, stop waiting for it.
      if (at - abortedAt >= std::chrono::milliseconds(watchdogMs)) {
        w.stillRunning = true;
        return w;
      }
      continue;
    }
    snapshotWorkerStatus(status, numWorkers, &now);
    // A failed body leaves its triggers undone: stop the workers waiting for
    // them instead of letting the watchdog find them later.
    if (anyTaskFailed(now)) {
      abort(at);
      continue;
    }
    if (detector.stalled(now, at)) {
      // The report is what the workers were doing when the flag went up.
      w.stallReport = describeStall(table, now, epoch, watchdogMs);
      abort(at);
    }
  }
}

Status endedLaunchStatus(const ProgramTable &table,
                         const std::vector<LoomWorkerStatus> &last,
                         uint64_t epoch, const LaunchWatch &watch,
                         uint64_t timeoutCycles) {
  if (anyTaskFailed(last))
    return Status(LOOMRT_ERROR_TASK_FAILED,
                  describeFailures(table, last, epoch));
  // Every worker finished: a success, even if the flag went up just as the
  // last task ended (no worker left early, so every count advanced).
  if (allWorkersDone(last))
    return Status();
  if (watch.aborted)
    return Status(LOOMRT_ERROR_TIMEOUT, watch.stallReport);
  return Status(LOOMRT_ERROR_TIMEOUT,
                describeDeviceTimeout(table, last, epoch, timeoutCycles));
}

Status wedgedLaunchStatus(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          uint64_t epoch, const LaunchWatch &watch,
                          uint32_t watchdogMs, const std::string &device,
                          const std::string &what, std::string *why) {
  std::string still = "the kernel did not exit within " +
                      std::to_string(watchdogMs) +
                      " ms of the abort flag; still inside:" +
                      describeWorkers(table, last);
  *why = what + " " + still;
  const bool failed = anyTaskFailed(last);
  std::string head =
      failed ? describeFailures(table, last, epoch) : watch.stallReport;
  return makeError(failed ? LOOMRT_ERROR_TASK_FAILED : LOOMRT_ERROR_TIMEOUT,
                   head, "\n", still, "\n", device,
                   " is left running it: the program's memory is not freed "
                   "and the device refuses memory calls (restart the "
                   "process)");
}

Status failedLaunchStatus(loomrt_status code, const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          const std::string &device, const std::string &what,
                          const std::string &errorText, bool sticky) {
  return makeError(code, device, ": ", what, " failed: ", errorText,
                   sticky ? "; the device's context is unusable now "
                            "(restart the process)"
                          : "",
                   "\n  workers when it stopped:",
                   describeWorkers(table, last));
}

} // namespace rt
} // namespace loom
