//===- Watchdog.cpp - Noticing and describing a stuck launch --------------===//

#include "runtime/host/Watchdog.h"

#include <sstream>

namespace loom {
namespace rt {

namespace {
/// Workers named one per line before the report summarises the rest.
constexpr int kMaxListedWorkers = 16;
} // namespace

void Watchdog::arm(uint32_t timeoutMs, uint64_t progress) {
  std::lock_guard<std::mutex> lock(mu_);
  timeoutMs_ = timeoutMs;
  lastProgress_ = progress;
  lastChange_ = Clock::now();
  tripped_ = false;
}

bool Watchdog::stalled(uint64_t progress) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || tripped_)
    return false;
  Clock::time_point now = Clock::now();
  if (progress != lastProgress_) {
    lastProgress_ = progress;
    lastChange_ = now;
    return false;
  }
  if (now - lastChange_ < std::chrono::milliseconds(timeoutMs_))
    return false;
  tripped_ = true;
  return true;
}

uint32_t Watchdog::timeoutMs() {
  std::lock_guard<std::mutex> lock(mu_);
  return timeoutMs_;
}

std::string describeStall(const ProgramTable &table, const WorkerState *workers,
                          const EventCounter *counters, uint64_t epoch,
                          uint32_t timeoutMs) {
  std::ostringstream os;
  os << "program " << quoted(table.name()) << " launch " << epoch
     << " stopped by the watchdog: no task finished for " << timeoutMs << " ms";
  int listed = 0, unlisted = 0, finished = 0, notStarted = 0;
  for (int32_t w = 0; w < table.numWorkers(); ++w) {
    const WorkerState &state = workers[w];
    // Phase last written, first read: the fields it describes were stored
    // before it.
    int32_t phase = state.phase.load(std::memory_order_acquire);
    if (phase == kWorkerDone) {
      ++finished;
      continue;
    }
    if (phase == kWorkerIdle) {
      ++notStarted;
      continue;
    }
    if (listed == kMaxListedWorkers) {
      ++unlisted;
      continue;
    }
    ++listed;
    int32_t task = state.task.load(std::memory_order_relaxed);
    os << "\n  worker " << w << ": ";
    if (phase == kWorkerRunning) {
      os << "running task " << table.describeTask(task);
      continue;
    }
    int32_t event = state.event.load(std::memory_order_relaxed);
    os << "task " << table.describeTask(task) << " waits for event " << event
       << ": count " << counters[event].count.load(std::memory_order_relaxed)
       << ", needs " << state.target.load(std::memory_order_relaxed);
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

} // namespace rt
} // namespace loom
