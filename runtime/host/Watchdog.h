//===- Watchdog.h - Noticing and describing a stuck launch ------*- C++ -*-===//
//
// A launch is stuck when no task finishes anywhere for the timeout. Progress
// is global rather than per wait: a worker may legitimately wait a long time
// for a deep chain, as long as the chain moves. Checks come from the waiting
// workers themselves (so a launch stops even if nobody synchronizes) and from
// the synchronizing thread (so a launch whose workers are all inside task
// bodies is covered too).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_WATCHDOG_H
#define LOOM_RUNTIME_HOST_WATCHDOG_H

#include "runtime/host/WorkerState.h"
#include "runtime/src/ProgramTable.h"

#include <chrono>
#include <mutex>
#include <string>

namespace loom {
namespace rt {

class Watchdog {
public:
  /// Starts watching a launch; `progress` is the finished-task total now.
  void arm(uint32_t timeoutMs, uint64_t progress);

  /// Called now and then with the current finished-task total. True exactly
  /// once per launch: when the total has not moved for the timeout. Returns
  /// false at once when another thread is checking.
  bool stalled(uint64_t progress);

  uint32_t timeoutMs();

private:
  using Clock = std::chrono::steady_clock;
  std::mutex mu_;
  uint32_t timeoutMs_ = 0;
  uint64_t lastProgress_ = 0;
  Clock::time_point lastChange_;
  bool tripped_ = false;
};

/// The watchdog's report: one line per waiting worker (task, event, count,
/// needed count) and per worker inside a task body, at most a screenful.
std::string describeStall(const ProgramTable &table, const WorkerState *workers,
                          const EventCounter *counters, uint64_t epoch,
                          uint32_t timeoutMs);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_WATCHDOG_H
