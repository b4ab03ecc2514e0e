//===- ProfileTest.cpp - Per-task timing: runtime records and the trace ---===//
//
// The host backend records every launch's per-task timing
// (loomrt_program_profile); these tests check the records against what the
// schedule forces (a task cannot start before the task it waits on has
// ended, each task runs on its scheduled worker) and what the API promises
// (errors before a launch, for wrong counts, times from the first worker's
// entry). Then tools/check/Trace on made-up timings: the critical path, the
// per-phase sums, and the Chrome trace's events.
//
//===----------------------------------------------------------------------===//
#include "loom/loomrt.h"
#include "loom/loomrt.hpp"
#include "tools/check/Trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using loom::check::LaunchTiming;
using loom::check::TraceSummary;

/// A task table built by hand: tasks with (worker, waits, triggers).
struct Table {
  int32_t numWorkers = 1;
  int32_t mode = LOOM_SCHEDULE_STATIC;
  std::vector<std::vector<int32_t>> lists, waits, triggers;
  std::vector<int32_t> needs;
  std::vector<std::string> names;

  int32_t add(const std::string &name, int32_t worker,
              std::vector<int32_t> waitOn, std::vector<int32_t> trigger) {
    int32_t id = static_cast<int32_t>(names.size());
    lists.resize(static_cast<size_t>(numWorkers));
    lists[size_t(worker)].push_back(id);
    waits.push_back(std::move(waitOn));
    triggers.push_back(std::move(trigger));
    names.push_back(name);
    return id;
  }

  const LoomProgramDesc &desc(LoomRunTaskFn run) {
    lists.resize(static_cast<size_t>(numWorkers));
    begin_.assign(1, 0);
    tasks_.clear();
    if (mode == LOOM_SCHEDULE_DYNAMIC) {
      for (int32_t t = 0; t < int32_t(names.size()); ++t)
        tasks_.push_back(t);
      begin_ = {0, int32_t(names.size())};
    } else {
      for (const auto &l : lists) {
        tasks_.insert(tasks_.end(), l.begin(), l.end());
        begin_.push_back(int32_t(tasks_.size()));
      }
    }
    flatten(waits, waitBegin_, waitEvents_);
    flatten(triggers, triggerBegin_, triggerEvents_);
    namePtrs_.clear();
    for (const std::string &n : names)
      namePtrs_.push_back(n.c_str());
    d_ = LoomProgramDesc{};
    d_.abi_version = LOOM_PROGRAM_ABI_VERSION;
    d_.name = "profiled";
    d_.target = "host";
    d_.mode = mode;
    d_.num_workers = numWorkers;
    d_.num_tasks = int32_t(names.size());
    d_.num_events = int32_t(needs.size());
    d_.worker_begin = begin_.data();
    d_.worker_tasks = tasks_.data();
    d_.task_wait_begin = waitBegin_.data();
    d_.wait_events = waitEvents_.data();
    d_.task_trigger_begin = triggerBegin_.data();
    d_.trigger_events = triggerEvents_.data();
    d_.event_needs = needs.data();
    d_.task_names = namePtrs_.data();
    d_.run_task = run;
    return d_;
  }

private:
  static void flatten(const std::vector<std::vector<int32_t>> &lists,
                      std::vector<int32_t> &begin, std::vector<int32_t> &flat) {
    begin.assign(1, 0);
    flat.clear();
    for (const auto &l : lists) {
      flat.insert(flat.end(), l.begin(), l.end());
      begin.push_back(int32_t(flat.size()));
    }
  }
  LoomProgramDesc d_{};
  std::vector<int32_t> begin_, tasks_, waitBegin_, waitEvents_, triggerBegin_,
      triggerEvents_;
  std::vector<const char *> namePtrs_;
};

/// Bodies take long enough (1 ms) that the clock separates them clearly.
int32_t sleepyBody(int32_t, const LoomBinding *, void *) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 0;
}

/// 6 tasks on 3 workers: a chain a0 -> a1 -> a2 (on workers 0, 1, 2) and
/// three independent tasks b (one per worker, each after its worker's a).
Table chainTable() {
  Table t;
  t.numWorkers = 3;
  t.needs = {1, 1, 1};
  t.add("a#0.p0[0]", 0, {}, {0});
  t.add("a#0.p0[1]", 1, {0}, {1});
  t.add("a#0.p0[2]", 2, {1}, {2});
  for (int32_t w = 0; w < 3; ++w)
    t.add("b#1.p0[" + std::to_string(w) + "]", w, {}, {});
  return t;
}

#define EXPECT_ERROR(call, expected, message)                                  \
  do {                                                                         \
    loomrt_status status_ = (call);                                            \
    EXPECT_EQ(status_, expected) << loomrt_last_error();                       \
    EXPECT_EQ(std::string(loomrt_last_error()), std::string(message));         \
  } while (false)

void expectConsistent(const Table &t, const std::vector<loomrt_task_timing> &tasks,
                      const std::vector<loomrt_task_timing> &workers,
                      bool staticMode) {
  uint64_t origin = UINT64_MAX;
  for (size_t w = 0; w < workers.size(); ++w) {
    EXPECT_EQ(workers[w].worker, int32_t(w));
    EXPECT_EQ(workers[w].pick_ns, workers[w].start_ns);
    EXPECT_LE(workers[w].start_ns, workers[w].end_ns);
    origin = std::min(origin, workers[w].start_ns);
  }
  EXPECT_EQ(origin, 0u);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const loomrt_task_timing &r = tasks[i];
    ASSERT_GE(r.worker, 0);
    ASSERT_LT(r.worker, t.numWorkers);
    if (staticMode) {
      const auto &list = t.lists[size_t(r.worker)];
      EXPECT_NE(std::find(list.begin(), list.end(), int32_t(i)), list.end())
          << "task " << i << " ran on worker " << r.worker;
    }
    EXPECT_LE(r.pick_ns, r.start_ns) << "task " << i;
    EXPECT_LE(r.start_ns, r.end_ns) << "task " << i;
    // The body slept 1 ms.
    EXPECT_GE(r.end_ns - r.start_ns, 1000000u) << "task " << i;
    EXPECT_GE(r.pick_ns, workers[size_t(r.worker)].start_ns);
    EXPECT_LE(r.end_ns, workers[size_t(r.worker)].end_ns);
    EXPECT_EQ(r.reserved, 0);
  }
  // The chain: a1 starts after a0 ended, a2 after a1.
  EXPECT_GE(tasks[1].start_ns, tasks[0].end_ns);
  EXPECT_GE(tasks[2].start_ns, tasks[1].end_ns);
}

TEST(HostProfile, EveryLaunchRecordsEveryTask) {
  Table t = chainTable();
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(t.desc(sleepyBody));
  EXPECT_TRUE(program.profiled());
  loomrt_task_timing one[6];
  EXPECT_ERROR(loomrt_program_profile(program.get(), one, 6, nullptr, 0),
               LOOMRT_ERROR_NOT_READY,
               "program 'profiled' has not completed a launch yet");
  for (int launch = 1; launch <= 3; ++launch) {
    program.run();
    std::vector<loomrt_task_timing> tasks, workers;
    program.profile(&tasks, &workers);
    ASSERT_EQ(tasks.size(), 6u);
    ASSERT_EQ(workers.size(), 3u);
    expectConsistent(t, tasks, workers, /*staticMode=*/true);
  }
  // Either array alone.
  EXPECT_EQ(loomrt_program_profile(program.get(), one, 6, nullptr, 0),
            LOOMRT_SUCCESS);
  loomrt_task_timing w[3];
  EXPECT_EQ(loomrt_program_profile(program.get(), nullptr, 0, w, 3),
            LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_program_profile(program.get(), one, 5, nullptr, 0),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'profiled': asked for 5 task and 0 worker records; it "
               "has 6 tasks and 3 workers (pass those counts, or a null array "
               "and 0)");
  EXPECT_ERROR(loomrt_program_profile(program.get(), nullptr, 6, nullptr, 0),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'profiled': asked for 6 task and 0 worker records; it "
               "has 6 tasks and 3 workers (pass those counts, or a null array "
               "and 0)");
  int profiled = 0;
  EXPECT_EQ(loomrt_program_profiled(program.get(), &profiled), LOOMRT_SUCCESS);
  EXPECT_EQ(profiled, 1);
  EXPECT_EQ(loomrt_program_profiled(nullptr, &profiled),
            LOOMRT_ERROR_INVALID_ARGUMENT);
}

TEST(HostProfile, DynamicModeRecordsWhoTookEachTask) {
  Table t = chainTable();
  t.mode = LOOM_SCHEDULE_DYNAMIC;
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(t.desc(sleepyBody));
  program.run();
  program.run();
  std::vector<loomrt_task_timing> tasks, workers;
  program.profile(&tasks, &workers);
  expectConsistent(t, tasks, workers, /*staticMode=*/false);
}

TEST(HostProfile, TraceOfARealLaunch) {
  Table t = chainTable();
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(t.desc(sleepyBody));
  program.run();
  LaunchTiming timing;
  timing.desc = &program.desc();
  timing.epoch = program.epoch();
  program.profile(&timing.tasks, &timing.workers);
  TraceSummary s = loom::check::summarize(timing);
  // Normally a0 -> a1 -> a2 -> b2 (b2 runs after a2 on worker 2). Whatever
  // the machine's load made of it, the path ends at the last task to end,
  // starts at a0 (the only task that can start at once and is first on its
  // worker), and each step is a producer or the task before on the worker.
  ASSERT_FALSE(s.criticalPath.empty());
  EXPECT_EQ(s.criticalPath.front(), 0);
  uint64_t lastEnd = 0;
  for (const loomrt_task_timing &r : timing.tasks)
    lastEnd = std::max(lastEnd, r.end_ns);
  EXPECT_EQ(timing.tasks[size_t(s.criticalPath.back())].end_ns, lastEnd);
  for (size_t i = 1; i < s.criticalPath.size(); ++i) {
    int32_t from = s.criticalPath[i - 1], to = s.criticalPath[i];
    bool sameWorker = timing.tasks[size_t(from)].worker ==
                      timing.tasks[size_t(to)].worker;
    bool producer = to >= 1 && to <= 2 && from == to - 1; // a(i-1) -> a(i)
    EXPECT_TRUE(sameWorker || producer) << from << " -> " << to;
    EXPECT_LE(timing.tasks[size_t(from)].end_ns,
              timing.tasks[size_t(to)].start_ns);
  }
  ASSERT_EQ(s.phases.size(), 2u);
  EXPECT_EQ(s.phases[0].name, "a#0.p0");
  EXPECT_EQ(s.phases[0].tasks, 3);
  EXPECT_EQ(s.phases[1].name, "b#1.p0");
  EXPECT_GE(s.spanNs, 3000000u);
  EXPECT_LE(s.criticalBodyNs, s.spanNs);
}

//--- Trace on made-up timings ----------------------------------------------//

loomrt_task_timing rec(uint64_t pick, uint64_t start, uint64_t end,
                       int32_t worker) {
  loomrt_task_timing r{};
  r.pick_ns = pick;
  r.start_ns = start;
  r.end_ns = end;
  r.worker = worker;
  return r;
}

TEST(Trace, PhaseOfDropsTheTile) {
  EXPECT_EQ(loom::check::phaseOf("linear#3.p0[12]"), "linear#3.p0");
  EXPECT_EQ(loom::check::phaseOf("mla_decode#0.p1[0]"), "mla_decode#0.p1");
  EXPECT_EQ(loom::check::phaseOf("plain"), "plain");
}

/// Worker 0: x0 [0,100], then y0 waits for x1 until 300, runs [300,400].
/// Worker 1: x1 [10,300]. Worker 2: z [0,50] (independent).
/// The critical path is x1 -> y0: y0 was released by x1, not by x0.
struct MadeUp {
  Table t;
  LaunchTiming timing;
  MadeUp() {
    t.numWorkers = 3;
    t.needs = {1};
    t.add("x#0.p0[0]", 0, {}, {});
    t.add("x#0.p0[1]", 1, {}, {0});
    t.add("y#1.p0[0]", 0, {0}, {});
    t.add("z#2.p0[0]", 2, {}, {});
    timing.desc = &t.desc(sleepyBody);
    timing.tasks = {rec(0, 0, 100, 0), rec(10, 10, 300, 1),
                    rec(100, 300, 400, 0), rec(0, 0, 50, 2)};
    timing.workers = {rec(0, 0, 400, 0), rec(10, 10, 300, 1),
                      rec(0, 0, 50, 2)};
    timing.title = "made up";
    timing.epoch = 7;
  }
};

TEST(Trace, CriticalPathFollowsWhatReleasedEachTask) {
  MadeUp m;
  TraceSummary s = loom::check::summarize(m.timing);
  EXPECT_EQ(s.spanNs, 400u);
  EXPECT_EQ(s.criticalPath, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(s.criticalBodyNs, 290u + 100u);
  ASSERT_EQ(s.phases.size(), 3u);
  EXPECT_EQ(s.phases[0].name, "x#0.p0");
  EXPECT_EQ(s.phases[0].tasks, 2);
  EXPECT_EQ(s.phases[0].bodyNs, 100u + 290u);
  EXPECT_EQ(s.phases[0].maxBodyNs, 290u);
  EXPECT_EQ(s.phases[0].criticalNs, 290u);
  EXPECT_EQ(s.phases[1].waitNs, 200u);
  EXPECT_EQ(s.phases[1].criticalNs, 100u);
  EXPECT_EQ(s.phases[2].criticalTasks, 0);
  EXPECT_EQ(s.waitNs, 200u);
  EXPECT_EQ(s.timerStepNs, 10u);
  std::string text = loom::check::formatSummary(s);
  EXPECT_NE(text.find("critical path: 2 tasks"), std::string::npos) << text;
  EXPECT_NE(text.find("x#0.p0"), std::string::npos) << text;
  // 290 of 400 ns on the path are x's.
  EXPECT_NE(text.find("72.5%"), std::string::npos) << text;
}

TEST(Trace, WithoutAWaitThePathStaysOnTheWorker) {
  MadeUp m;
  // y0 did not wait: x1 ended before y0 was picked, so worker 0's x0
  // (which ended later than x1 here) is what y0 ran after.
  m.timing.tasks[1] = rec(10, 10, 60, 1);
  m.timing.tasks[2] = rec(100, 100, 400, 0);
  TraceSummary s = loom::check::summarize(m.timing);
  EXPECT_EQ(s.criticalPath, (std::vector<int32_t>{0, 2}));
}

TEST(Trace, ChromeTraceHasOneCompleteEventPerTask) {
  MadeUp m;
  std::ostringstream os;
  loom::check::writeChromeTrace(os, m.timing);
  const std::string json = os.str();
  auto count = [&](const std::string &needle) {
    size_t n = 0;
    for (size_t at = json.find(needle); at != std::string::npos;
         at = json.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("\"cat\":\"task\""), 4u);
  EXPECT_EQ(count("\"cat\":\"wait\""), 1u); // only y0 waited
  EXPECT_EQ(count("\"name\":\"thread_name\""), 3u);
  EXPECT_NE(json.find("\"name\":\"y#1.p0[0]\",\"cat\":\"task\",\"ph\":\"X\","
                      "\"pid\":0,\"tid\":0,\"ts\":0.300,\"dur\":0.100,"
                      "\"args\":{\"task\":2,\"worker\":0,\"wait_ns\":200,"
                      "\"pick_us\":0.100}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"launch\":7"), std::string::npos);
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.substr(json.size() - 3), "]}\n");
}

} // namespace
