//===- LaunchState.h - State shared by a program's host workers -*- C++ -*-===//
//
// One object per loaded program, shared (by shared_ptr) between the Executor
// that starts launches and the worker threads that run them. Shared
// ownership is what lets a program be destroyed while a worker is stuck in a
// task body that never returns: the thread is abandoned, and it keeps this
// state (and the program library's code) alive until it leaves.
//
// Launch protocol:
//   control (Executor::launch, under mu): copy bindings, set epoch, active =
//     num_workers, ++generation, wake workers.
//   worker: sees the new generation, runs its tasks (no lock), then under mu
//     decrements active; the last one wakes the synchronizer.
// The mutex hand-offs order everything between launches (bindings, the
// workspace, the bodies' writes); within a launch only the event counters
// order the workers, exactly as on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_LAUNCHSTATE_H
#define LOOM_RUNTIME_HOST_LAUNCHSTATE_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/host/Watchdog.h"
#include "runtime/host/WorkerState.h"
#include "runtime/src/ProgramTable.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace loom {
namespace rt {

struct LaunchState {
  using Clock = std::chrono::steady_clock;

  LaunchState(std::shared_ptr<const ProgramTable> table,
              std::shared_ptr<const void> library);
  ~LaunchState();
  LaunchState(const LaunchState &) = delete;
  LaunchState &operator=(const LaunchState &) = delete;

  //--- Fixed at creation --------------------------------------------------//
  const std::shared_ptr<const ProgramTable> table;
  /// Keeps the program library (and so run_task's code) loaded.
  const std::shared_ptr<const void> library;
  /// The library's LOOM_HOST_META_FAULT_SYMBOL (null: none).
  LoomGetMetaFaultFn metaFault = nullptr;
  const int32_t numWorkers;
  void *workspace = nullptr;
  std::unique_ptr<EventCounter[]> counters;
  std::unique_ptr<WorkerState[]> workers;
  /// Per-task timing of the launch (steady_clock ns): num_tasks task
  /// records, then one per worker. Each record is written by the one worker
  /// that runs the task (or is that worker) and read only between launches.
  std::unique_ptr<LoomTaskTiming[]> timings;

  //--- Lock-free during a launch ------------------------------------------//
  /// Dynamic-mode tickets; grows across launches like the events.
  std::atomic<uint64_t> queue{0};
  /// Set by the first failure; every worker leaves at its next check.
  std::atomic<bool> abort{false};
  Watchdog watchdog;

  //--- Guarded by mu ------------------------------------------------------//
  std::mutex mu;
  std::condition_variable startCv; // workers park here between launches
  std::condition_variable doneCv;  // the last worker out signals this
  uint64_t generation = 0;         // bumped once per launch
  bool shutdown = false;
  /// Set (under mu, with shutdown) when the threads are detached while one
  /// is still inside a body: each thread then reports its exit to
  /// AbandonedWorkers, which holds back frees until the last has left.
  std::atomic<bool> abandoned{false};
  bool inFlight = false;
  int32_t active = 0; // workers still inside the launch
  uint64_t epoch = 0;
  /// One per buffer; resized once, rewritten only between launches, so
  /// workers read it without the lock.
  std::vector<LoomBinding> bindings;
  Clock::time_point startTime;
  Clock::time_point endTime;
  uint64_t lastLaunchNs = 0;
  Status failure;

  //--- Worker side (Worker.cpp) -------------------------------------------//
  /// A worker thread's whole life: park, run a launch, report, repeat.
  void workerMain(int32_t worker);
  /// Finished-task total over all workers: the watchdog's progress measure.
  uint64_t progress() const;
  /// Records the first failure and tells every worker to stop.
  void fail(Status status);
  /// Trips the watchdog if the launch has not progressed for the timeout.
  void checkWatchdog(uint64_t epoch);

private:
  void runEpoch(int32_t worker, uint64_t epoch);
  bool runTask(int32_t worker, int32_t task, uint64_t epoch);
  static uint64_t nowNs() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            Clock::now().time_since_epoch())
            .count());
  }
  bool await(int32_t worker, int32_t task, int32_t event, uint64_t target,
             uint64_t epoch);
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_LAUNCHSTATE_H
