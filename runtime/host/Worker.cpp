//===- Worker.cpp - What a host worker thread does ------------------------===//
//
// The host version of the device execution model: a worker walks its task
// list (static) or takes tasks from one queue (dynamic); a task waits until
// each input event's counter reaches epoch * needs (relaxed polls, then an
// acquire load), runs its body, and triggers its output events with release
// increments. Counters and the queue only grow, so launches need no reset.
//
//===----------------------------------------------------------------------===//

#include "runtime/host/LaunchState.h"
#include "runtime/host/Spin.h"
#include "runtime/src/MetaFault.h"

namespace loom {
namespace rt {

void LaunchState::workerMain(int32_t worker) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t launchEpoch;
    {
      std::unique_lock<std::mutex> lock(mu);
      startCv.wait(lock, [&] { return shutdown || generation != seen; });
      if (shutdown)
        return;
      seen = generation;
      launchEpoch = epoch;
    }
    runEpoch(worker, launchEpoch);
    workers[worker].phase.store(kWorkerDone, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu);
    if (--active == 0) {
      endTime = Clock::now();
      doneCv.notify_all();
    }
  }
}

void LaunchState::runEpoch(int32_t worker, uint64_t launchEpoch) {
  const ProgramTable &t = *table;
  // This worker's own record: its entry and exit (also on failure, so a
  // partial launch still has consistent records).
  LoomTaskTiming &me = timings[static_cast<size_t>(t.numTasks() + worker)];
  me.pick = me.start = nowNs();
  me.end = me.start;
  me.worker = worker;
  me.epoch = static_cast<uint32_t>(launchEpoch);
  struct Exit {
    LoomTaskTiming &record;
    ~Exit() { record.end = nowNs(); }
  } exit{me};

  const int32_t *tasks = t.workerTasks();
  if (!t.isDynamic()) {
    for (int32_t i = t.workerBegin(worker), end = t.workerBegin(worker + 1);
         i < end; ++i)
      if (!runTask(worker, tasks[i], launchEpoch))
        return;
    return;
  }
  // Every worker ends its part of a launch with exactly one ticket past the
  // end, so each launch takes exactly num_tasks + num_workers tickets and
  // launch e's tickets start at (e - 1) * (num_tasks + num_workers): the
  // queue, like the events, is never reset. Ticket order only hands out
  // work; the events order the data, so relaxed is enough.
  const uint64_t numTasks = static_cast<uint64_t>(t.numTasks());
  const uint64_t base = (launchEpoch - 1) * (numTasks + numWorkers);
  for (;;) {
    uint64_t ticket = queue.fetch_add(1, std::memory_order_relaxed) - base;
    if (ticket >= numTasks)
      return;
    if (!runTask(worker, tasks[ticket], launchEpoch))
      return;
  }
}

bool LaunchState::runTask(int32_t worker, int32_t task, uint64_t launchEpoch) {
  const ProgramTable &t = *table;
  const uint64_t pick = nowNs();
  for (const int32_t *e = t.waitsBegin(task), *end = t.waitsEnd(task); e != end;
       ++e)
    if (!await(worker, task, *e, launchEpoch * t.eventNeeds(*e), launchEpoch))
      return false;
  if (abort.load(std::memory_order_relaxed))
    return false;

  const uint64_t start = nowNs();
  WorkerState &me = workers[worker];
  me.task.store(task, std::memory_order_relaxed);
  me.phase.store(kWorkerRunning, std::memory_order_release);
  int32_t code = t.desc().run_task(task, bindings.data(), workspace);
  if (code != 0) {
    // The fault is the calling thread's (this one's) last.
    const LoomMetaFault *fault = metaFault ? metaFault() : nullptr;
    if (code == LOOM_BODY_BAD_INDEX && fault && fault->reason != 0)
      fail(makeError(LOOMRT_ERROR_TASK_FAILED, "program ", quoted(t.name()),
                     " launch ", launchEpoch, ": task ", t.describeTask(task),
                     " on worker ", worker, " ",
                     describeMetaFault(t, bindings, *fault)));
    else
      fail(makeError(LOOMRT_ERROR_TASK_FAILED, "program ", quoted(t.name()),
                     " launch ", launchEpoch, ": task ", t.describeTask(task),
                     " on worker ", worker, " returned ", code));
    return false;
  }
  // The body's end, before the triggers (as on the GPU): a consumer they
  // release starts after it.
  LoomTaskTiming &timing = timings[static_cast<size_t>(task)];
  timing.pick = pick;
  timing.start = start;
  timing.end = nowNs();
  timing.worker = worker;
  timing.epoch = static_cast<uint32_t>(launchEpoch);
  // Release: whoever sees the new count also sees the body's writes.
  for (const int32_t *e = t.triggersBegin(task), *end = t.triggersEnd(task);
       e != end; ++e)
    counters[*e].count.fetch_add(1, std::memory_order_release);
  me.completed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool LaunchState::await(int32_t worker, int32_t task, int32_t event,
                        uint64_t target, uint64_t launchEpoch) {
  std::atomic<uint64_t> &count = counters[event].count;
  if (count.load(std::memory_order_acquire) >= target)
    return true;

  WorkerState &me = workers[worker];
  me.task.store(task, std::memory_order_relaxed);
  me.event.store(event, std::memory_order_relaxed);
  me.target.store(target, std::memory_order_relaxed);
  me.phase.store(kWorkerWaiting, std::memory_order_release);
  Backoff backoff;
  while (count.load(std::memory_order_relaxed) < target) {
    if (abort.load(std::memory_order_relaxed))
      return false;
    backoff.pause();
    if (backoff.due())
      checkWatchdog(launchEpoch);
  }
  // The relaxed poll saw enough arrivals. This acquire load reads at least
  // as much (coherence), and every arrival is a release increment, so it
  // makes all the producers' writes visible. An acquire load rather than a
  // fence: ThreadSanitizer models loads, not fences.
  (void)count.load(std::memory_order_acquire);
  return true;
}

uint64_t LaunchState::progress() const {
  uint64_t total = 0;
  for (int32_t w = 0; w < numWorkers; ++w)
    total += workers[w].completed.load(std::memory_order_relaxed);
  return total;
}

void LaunchState::fail(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (failure.ok())
      failure = std::move(status);
  }
  abort.store(true, std::memory_order_release);
}

void LaunchState::checkWatchdog(uint64_t launchEpoch) {
  if (!watchdog.stalled(progress()))
    return;
  fail(Status(LOOMRT_ERROR_TIMEOUT,
              describeStall(*table, workers.get(), counters.get(), launchEpoch,
                            watchdog.timeoutMs())));
}

} // namespace rt
} // namespace loom
