//===- LaunchBench.cpp - loomrt launch overhead on the host backend -------===//
//
// Programs made in this process (loomrt_program_from_desc) whose task bodies
// do nothing, so a launch + synchronize measures only the runtime: waking the
// persistent worker threads, walking their task lists, the event protocol
// (wait for `epoch x needs` arrivals, trigger) and the completion wait.
//
//   launch/empty/workers:W      no tasks at all: wake W workers, wait for them
//   launch/tasks/workers:W      one no-op task per worker, no events
//   launch/phases:P/workers:W   P phases of one task per worker; each phase
//                               waits for the whole previous one (one event of
//                               W arrivals per phase boundary), like the
//                               phases of an emitted schedule
//
// Wall time (UseRealTime): the work happens on the workers, not on the
// calling thread. `runtime_us` is loomrt's own time of the last launch
// (start to last worker done), averaged over the iterations.
//
//===----------------------------------------------------------------------===//
#include "loom/loomrt.hpp"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

int32_t noOpTask(int32_t, const LoomBinding *, void *) { return 0; }

/// The arrays of a descriptor, kept alive with it.
struct SyntheticProgram {
  std::vector<int32_t> workerBegin, workerTasks, taskWaitBegin, waitEvents,
      taskTriggerBegin, triggerEvents, eventNeeds;
  std::vector<std::string> names;
  std::vector<const char *> namePtrs;
  LoomProgramDesc desc{};

  /// `phases` phases of one task per worker (0 phases: no tasks). Task
  /// p * W + w runs on worker w; phase p > 0 waits on event p - 1, which
  /// every task of phase p - 1 triggers.
  SyntheticProgram(int32_t workers, int32_t phases) {
    const int32_t tasks = workers * phases;
    const int32_t events = phases > 1 ? phases - 1 : 0;
    workerBegin.push_back(0);
    for (int32_t w = 0; w < workers; ++w) {
      for (int32_t p = 0; p < phases; ++p)
        workerTasks.push_back(p * workers + w);
      workerBegin.push_back(int32_t(workerTasks.size()));
    }
    taskWaitBegin.push_back(0);
    taskTriggerBegin.push_back(0);
    for (int32_t t = 0; t < tasks; ++t) {
      int32_t p = t / workers;
      if (p > 0)
        waitEvents.push_back(p - 1);
      if (p < events)
        triggerEvents.push_back(p);
      taskWaitBegin.push_back(int32_t(waitEvents.size()));
      taskTriggerBegin.push_back(int32_t(triggerEvents.size()));
      names.push_back("noop#" + std::to_string(p) + "[" +
                      std::to_string(t % workers) + "]");
    }
    for (const std::string &n : names)
      namePtrs.push_back(n.c_str());
    eventNeeds.assign(size_t(events), workers);

    desc.abi_version = LOOM_PROGRAM_ABI_VERSION;
    desc.name = "bench_noop";
    desc.target = "host";
    desc.mode = LOOM_SCHEDULE_STATIC;
    desc.num_workers = workers;
    desc.num_tasks = tasks;
    desc.num_events = events;
    desc.num_buffers = 0;
    desc.buffers = nullptr;
    desc.workspace_bytes = 0;
    desc.worker_begin = workerBegin.data();
    desc.worker_tasks = workerTasks.data();
    desc.task_wait_begin = taskWaitBegin.data();
    desc.wait_events = waitEvents.data();
    desc.task_trigger_begin = taskTriggerBegin.data();
    desc.trigger_events = triggerEvents.data();
    desc.event_needs = eventNeeds.data();
    desc.task_names = namePtrs.data();
    desc.run_task = noOpTask;
  }
};

void launchSynthetic(benchmark::State &state, int32_t workers, int32_t phases) {
  try {
    SyntheticProgram synthetic(workers, phases);
    loomrt::Device device("host");
    loomrt::Program program = device.fromDesc(synthetic.desc);
    program.run(); // the first launch wakes fresh threads: not timed
    double runtimeNs = 0;
    for (auto _ : state) {
      program.launch();
      program.synchronize();
      runtimeNs += double(program.lastLaunchNs());
    }
    state.counters["runtime_us"] = benchmark::Counter(
        runtimeNs / 1e3 / double(state.iterations()));
    state.counters["tasks"] = double(workers * phases);
  } catch (const loomrt::Error &e) {
    state.SkipWithError(e.what());
  }
}

void registerAll() {
  for (int32_t workers : {1, 2, 4, 8}) {
    std::string w = "/workers:" + std::to_string(workers);
    benchmark::RegisterBenchmark(("launch/empty" + w).c_str(), launchSynthetic,
                                 workers, 0)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("launch/tasks" + w).c_str(), launchSynthetic,
                                 workers, 1)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    for (int32_t phases : {4, 16})
      benchmark::RegisterBenchmark(
          ("launch/phases:" + std::to_string(phases) + w).c_str(),
          launchSynthetic, workers, phases)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  }
}

const bool registered = (registerAll(), true);

} // namespace
