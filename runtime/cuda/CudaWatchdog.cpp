//===- CudaWatchdog.cpp - Watching a kernel through its status ------------===//

#include "runtime/cuda/CudaWatchdog.h"

#include <cstring>
#include <sstream>

namespace loom {
namespace rt {
namespace cuda {

namespace {

/// Workers named one per line before a report summarises the rest.
constexpr int kMaxListedWorkers = 16;
/// Reads of a record before taking the last one even if it keeps changing.
constexpr int kMaxReadsPerRecord = 4;

LoomWorkerStatus readOnce(const volatile LoomWorkerStatus &r) {
  LoomWorkerStatus s;
  s.task = r.task;
  s.event = r.event;
  s.seen = r.seen;
  s.needed = r.needed;
  s.error = r.error;
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

void resetStatus(volatile LoomWorkerStatus *live, int32_t numWorkers) {
  for (int32_t w = 0; w < numWorkers; ++w) {
    live[w].task = kStatusNotStarted;
    live[w].event = -1;
    live[w].seen = 0;
    live[w].needed = 0;
    live[w].error = 0;
    live[w].pad = 0;
  }
}

void snapshotStatus(const volatile LoomWorkerStatus *live, int32_t numWorkers,
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

bool allWorkersDone(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (s.task != kStatusDone || s.error != 0)
      return false;
  return true;
}

bool noWorkerReported(const std::vector<LoomWorkerStatus> &status) {
  for (const LoomWorkerStatus &s : status)
    if (s.task != kStatusNotStarted || s.error != 0)
      return false;
  return true;
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

std::string describeWorkers(const ProgramTable &table,
                            const std::vector<LoomWorkerStatus> &status,
                            const std::vector<uint64_t> *counts) {
  std::ostringstream os;
  int listed = 0, unlisted = 0, finished = 0, silent = 0;
  for (size_t w = 0; w < status.size(); ++w) {
    const LoomWorkerStatus &s = status[w];
    if (s.task == kStatusDone && s.error == 0) {
      ++finished;
      continue;
    }
    if (s.task == kStatusNotStarted && s.error == 0) {
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
      os << taskName(table, s.task) << " failed with code " << s.error;
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
       << " not reported: not started, or running tasks that needed no "
          "wait)";
  return os.str();
}

std::string describeStall(const ProgramTable &table,
                          const std::vector<LoomWorkerStatus> &status,
                          uint64_t epoch, uint32_t timeoutMs,
                          const std::vector<uint64_t> *counts) {
  std::ostringstream os;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " stopped by the watchdog: no worker's status changed for " << timeoutMs
     << " ms" << describeWorkers(table, status, counts);
  return os.str();
}

std::string describeDeviceTimeout(const ProgramTable &table,
                                  const std::vector<LoomWorkerStatus> &status,
                                  uint64_t epoch, uint64_t timeoutCycles,
                                  const std::vector<uint64_t> *counts) {
  std::ostringstream os;
  if (!status.empty() && noWorkerReported(status)) {
    // Most likely a kernel that does not write the records at all; a launch
    // it finished cannot be told from one it gave up on.
    os << "program " << quoted(table.name()) << " launch " << epoch
       << ": the kernel ended without writing any worker's LoomWorkerStatus; "
          "each worker must set its task to -1 when it finishes "
          "(kernels/common/DeviceAbi.h, runtime/README.md)";
    return os.str();
  }
  int unfinished = 0;
  for (const LoomWorkerStatus &s : status)
    unfinished += s.task != kStatusDone;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " ended with " << unfinished << " worker"
     << (unfinished == 1 ? "" : "s")
     << " unfinished: a wait gave up after timeout_cycles (" << timeoutCycles
     << " cycles)" << describeWorkers(table, status, counts);
  return os.str();
}

std::string describeFailures(const ProgramTable &table,
                             const std::vector<LoomWorkerStatus> &status,
                             uint64_t epoch) {
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
       << taskName(table, s.task) << " on worker " << w << " failed with code "
       << s.error;
  }
  if (unlisted)
    os << "\n... and " << unlisted << " more failed workers";
  return os.str();
}

} // namespace cuda
} // namespace rt
} // namespace loom
