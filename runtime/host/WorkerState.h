//===- WorkerState.h - What each host worker publishes ----------*- C++ -*-===//
//
// The watchdog must say which worker waits for what without stopping anyone,
// so each worker publishes its phase, task, awaited event and target count in
// atomics that any thread may read at any time. Each record and each event
// counter has its own cache line: workers write them constantly.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_WORKERSTATE_H
#define LOOM_RUNTIME_HOST_WORKERSTATE_H

#include <atomic>
#include <cstdint>

namespace loom {
namespace rt {

enum WorkerPhase : int32_t {
  kWorkerIdle = 0,    // parked, or not yet at its first task
  kWorkerWaiting = 1, // polling `event` until it reaches `target`
  kWorkerRunning = 2, // inside the body of `task`
  kWorkerDone = 3,    // finished its part of the launch
};

struct alignas(64) WorkerState {
  /// Tasks finished, over all launches. The watchdog's progress measure:
  /// nothing finishing anywhere for the timeout means the launch is stuck.
  std::atomic<uint64_t> completed{0};
  std::atomic<int32_t> phase{kWorkerIdle};
  std::atomic<int32_t> task{-1};
  std::atomic<int32_t> event{-1};
  std::atomic<uint64_t> target{0};
};

/// An event: arrivals over all launches. Only grows.
struct alignas(64) EventCounter {
  std::atomic<uint64_t> count{0};
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_WORKERSTATE_H
