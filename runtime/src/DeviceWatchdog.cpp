//===- DeviceWatchdog.cpp - Watching a GPU kernel through its status ------===//

#include "runtime/src/DeviceWatchdog.h"
#include "runtime/src/MetaFault.h"

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
/// StreamPoller: polls back to back this long, then sleeps at most this.
constexpr std::chrono::milliseconds kSpinFor{2};
constexpr int kMaxSleepUs = 200;
/// watchLaunch reads every record (about a microsecond per hundred workers)
/// this often: plenty for the watchdog and failed tasks, and it keeps the
/// back-to-back polls of a short kernel cheap.
constexpr std::chrono::milliseconds kLookEvery{1};

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
  s.meta_reason = loadRelaxed(r.meta_reason);
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

/// The counters for a report, or null when they could not be read.
const std::vector<uint64_t> *orNull(const std::vector<uint64_t> &counts) {
  return counts.empty() ? nullptr : &counts;
}

std::vector<uint64_t> readCounts(const WatchHooks &hooks) {
  return hooks.readCounts ? hooks.readCounts() : std::vector<uint64_t>();
}

} // namespace

void resetWorkerStatus(volatile LoomWorkerStatus *live, int32_t numWorkers) {
  for (int32_t w = 0; w < numWorkers; ++w) {
    storeRelaxed(live[w].task, kWorkerNotStarted);
    storeRelaxed(live[w].event, int32_t{-1});
    storeRelaxed(live[w].seen, uint64_t{0});
    storeRelaxed(live[w].needed, uint64_t{0});
    storeRelaxed(live[w].error, int32_t{0});
    storeRelaxed(live[w].meta_reason, int32_t{0});
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
  if (Clock::now() - start_ < kSpinFor) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(sleepUs_));
  sleepUs_ = std::min(sleepUs_ * 2, kMaxSleepUs);
}

bool anyWorkerLeft(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (s.error != 0)
      return true;
  return false;
}

/// "code N", with what DeviceAbi.h's LOOM_BODY_* codes mean.
static std::string bodyCode(int32_t code) {
  const char *what = nullptr;
  switch (code) {
  case LOOM_BODY_BAD_INDEX:
    what = "a meta value out of range";
    break;
  case LOOM_BODY_SMEM_TOO_SMALL:
    what = "less shared memory than the body needs";
    break;
  case LOOM_BODY_WAIT_TIMED_OUT:
    what = "its wait for other workers ran out: one of them failed or never "
           "came";
    break;
  default:
    break;
  }
  return "code " + std::to_string(code) +
         (what ? std::string(" (") + what + ")" : std::string());
}

bool bodyFailed(const LoomWorkerStatus &status) {
  return status.error != 0 && status.event < 0;
}

bool anyTaskFailed(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (bodyFailed(s))
      return true;
  return false;
}

/// What a failed body said: its code, or the meta value it refused.
static std::string bodyFailure(const ProgramTable &table,
                               const LoomWorkerStatus &s,
                               const std::vector<LoomBinding> *bindings) {
  if (s.error != LOOM_BODY_BAD_INDEX || s.meta_reason == 0)
    return "failed with " + bodyCode(s.error);
  LoomMetaFault fault{};
  fault.where = reinterpret_cast<const void *>(static_cast<uintptr_t>(s.seen));
  fault.value = static_cast<int64_t>(s.needed);
  fault.reason = s.meta_reason;
  return describeMetaFault(table, bindings ? *bindings : std::vector<LoomBinding>(),
                           fault);
}

std::string describeWorkers(const ProgramTable &table,
                            const std::vector<LoomWorkerStatus> &status,
                            const std::vector<uint64_t> *counts,
                            const std::vector<LoomBinding> *bindings) {
  std::ostringstream os;
  int listed = 0, unlisted = 0, finished = 0, silent = 0;
  for (size_t w = 0; w < status.size(); ++w) {
    const LoomWorkerStatus &s = status[w];
    if (s.task == kWorkerDone && s.error == 0) {
      ++finished;
      continue;
    }
    if (s.task == kWorkerNotStarted && s.error == 0) {
      ++silent;
      continue;
    }
    if (listed == kMaxListedWorkers) {
      ++unlisted;
      continue;
    }
    ++listed;
    os << "\n  worker " << w << ": ";
    if (bodyFailed(s)) {
      os << taskName(table, s.task) << " " << bodyFailure(table, s, bindings);
      continue;
    }
    if (s.event < 0) {
      os << "running " << taskName(table, s.task);
      continue;
    }
    const bool known = s.event < table.numEvents() && counts &&
                       static_cast<size_t>(s.event) < counts->size();
    const uint64_t count = known ? (*counts)[s.event] : s.seen;
    if (known && s.error == 0 && count >= s.needed) {
      // The wait is over; the kernel did not say what came after it.
      os << "running " << taskName(table, s.task)
         << " or a later task that needed no wait (its wait for "
         << eventName(table, s.event) << " is over: count " << count
         << ", needs " << s.needed << ")";
      continue;
    }
    os << taskName(table, s.task) << " waits for " << eventName(table, s.event)
       << ": count " << count << ", needs " << s.needed;
    if (s.error == kWaitAborted)
      os << " (left: abort flag)";
    else if (s.error == kWaitTimedOut)
      os << " (gave up: timeout_cycles)";
    else if (s.error != 0)
      os << " (left with code " << s.error << ")";
  }
  if (unlisted)
    os << "\n  ... and " << unlisted << " more workers waiting or running";
  if (finished)
    os << "\n  (" << finished << " other worker" << (finished == 1 ? "" : "s")
       << " finished " << (finished == 1 ? "its" : "their") << " tasks)";
  if (silent)
    os << "\n  (" << silent << " worker" << (silent == 1 ? " has" : "s have")
       << " not reported: running, finished or not started; a worker "
          "writes its record after a long wait or a failure)";
  return os.str();
}

std::string describeStall(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &status,
                          uint64_t epoch, uint32_t timeoutMs,
                          const std::vector<uint64_t> *counts) {
  std::ostringstream os;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " stopped by the watchdog: no worker's status and no event count "
        "changed for "
     << timeoutMs << " ms" << describeWorkers(table, status, counts);
  return os.str();
}

std::string describeDeviceTimeout(const ProgramTable &table,
                                  const std::vector<LoomWorkerStatus> &status,
                                  uint64_t epoch, uint64_t timeoutCycles,
                                  const std::vector<uint64_t> *counts) {
  std::ostringstream os;
  int left = 0;
  for (const LoomWorkerStatus &s : status)
    left += s.error != 0;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " ended with " << left << " worker" << (left == 1 ? "" : "s")
     << " unfinished: a wait gave up after timeout_cycles (" << timeoutCycles
     << " cycles)" << describeWorkers(table, status, counts);
  return os.str();
}

std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch,
                             const std::vector<LoomBinding> *bindings) {
  std::ostringstream os;
  int listed = 0, unlisted = 0;
  for (size_t w = 0; w < status.size(); ++w) {
    const LoomWorkerStatus &s = status[w];
    if (!bodyFailed(s))
      continue;
    if (listed == kMaxListedWorkers) {
      ++unlisted;
      continue;
    }
    if (listed++)
      os << "\n";
    os << "program " << quoted(table.name()) << " launch " << epoch << ": "
       << taskName(table, s.task) << " on worker " << w << " "
       << bodyFailure(table, s, bindings);
  }
  if (unlisted)
    os << "\n... and " << unlisted << " more failed workers";
  return os.str();
}

LaunchWatch watchLaunch(const ProgramTable &table,
                        const volatile LoomWorkerStatus *status, uint64_t epoch,
                        uint32_t watchdogMs, const WatchHooks &hooks) {
  using Clock = StallDetector::Clock;
  const int32_t numWorkers = table.numWorkers();
  LaunchWatch w;
  std::vector<LoomWorkerStatus> now;
  snapshotWorkerStatus(status, numWorkers, &now);
  // Workers write their records only after long waits, so quiet records
  // are no stall while the event counts move: after half the timeout with
  // no record changing the counts are read, and a stall is a further half
  // with neither changing.
  const uint32_t halfMs = std::max<uint32_t>(1, watchdogMs / 2);
  StallDetector detector;
  detector.arm(halfMs, now, Clock::now());
  bool haveCounts = false;
  std::vector<uint64_t> lastCounts;
  Clock::time_point abortedAt;
  Clock::time_point nextLook = Clock::now() + kLookEvery;
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
    if (at < nextLook)
      continue;
    nextLook = at + kLookEvery;
    snapshotWorkerStatus(status, numWorkers, &now);
    // A failed body leaves its triggers undone: stop the workers waiting for
    // them instead of letting the watchdog find them later.
    if (anyTaskFailed(now)) {
      abort(at);
      continue;
    }
    if (detector.stalled(now, at)) {
      std::vector<uint64_t> counts = readCounts(hooks);
      if (!haveCounts || counts != lastCounts) {
        haveCounts = true;
        lastCounts = std::move(counts);
        detector.arm(halfMs, now, at);
        continue;
      }
      // The report is what the workers were doing when the flag went up; as
      // they leave they keep their records, but take it now regardless.
      w.stallReport =
          describeStall(table, now, epoch, watchdogMs, orNull(counts));
      abort(at);
    }
  }
}

Status endedLaunchStatus(const ProgramTable &table,
                         const std::vector<LoomWorkerStatus> &last,
                         uint64_t epoch, const LaunchWatch &watch,
                         uint64_t timeoutCycles, const WatchHooks &hooks) {
  if (anyTaskFailed(last))
    return Status(LOOMRT_ERROR_TASK_FAILED,
                  describeFailures(table, last, epoch, hooks.bindings));
  // No worker left early: a success, even if the flag went up just as the
  // last task ended (every count advanced).
  if (!anyWorkerLeft(last))
    return Status();
  if (watch.aborted)
    return Status(LOOMRT_ERROR_TIMEOUT, watch.stallReport);
  // Only failures read the counters (a report's accuracy, not worth a copy
  // on every successful launch).
  std::vector<uint64_t> counts = readCounts(hooks);
  return Status(
      LOOMRT_ERROR_TIMEOUT,
      describeDeviceTimeout(table, last, epoch, timeoutCycles, orNull(counts)));
}

Status wedgedLaunchStatus(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          uint64_t epoch, const LaunchWatch &watch,
                          uint32_t watchdogMs, const std::string &device,
                          const std::string &what, const WatchHooks &hooks,
                          std::string *why) {
  std::vector<uint64_t> counts = readCounts(hooks);
  std::string still = "the kernel did not exit within " +
                      std::to_string(watchdogMs) +
                      " ms of the abort flag; its workers now:" +
                      describeWorkers(table, last, orNull(counts), hooks.bindings);
  *why = what + ": " + still;
  const bool failed = anyTaskFailed(last);
  std::string head =
      failed ? describeFailures(table, last, epoch, hooks.bindings)
             : watch.stallReport;
  return makeError(failed ? LOOMRT_ERROR_TASK_FAILED : LOOMRT_ERROR_TIMEOUT,
                   head, "\n", still, "\n", device,
                   " is left running it: the program's memory is not freed "
                   "and the device refuses memory calls (restart the "
                   "process)");
}

Status failedLaunchStatus(loomrt_status code, const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &last,
                          const std::string &device, const std::string &what,
                          const std::string &errorText, bool sticky,
                          const WatchHooks &hooks) {
  // After a fault the counters usually cannot be read; the records can.
  std::vector<uint64_t> counts =
      sticky ? std::vector<uint64_t>() : readCounts(hooks);
  return makeError(code, device, ": ", what, " failed: ", errorText,
                   sticky ? "; the device's context is unusable now "
                            "(restart the process)"
                          : "",
                   "\n  workers when it stopped:",
                   describeWorkers(table, last, orNull(counts)));
}

} // namespace rt
} // namespace loom
