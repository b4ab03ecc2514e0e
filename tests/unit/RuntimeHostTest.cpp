//===- RuntimeHostTest.cpp - The runtime's C API on the host backend ------===//
//
// Task tables are built by hand here (no compiler): a prefix-sum chain whose
// every step crosses workers, a fan-out/fan-in diamond, both in static and
// dynamic mode and over several launches without resets; then what must fail
// and how it must say so: deadlocks and missing triggers (watchdog), a
// failing and a hanging task body, bindings, device kinds, program files.
//
// The same source builds as loom-runtime-tsan-tests with -fsanitize=thread
// (runtime compiled in): the bodies read across workers what other workers
// wrote, so a hole in the event protocol shows up as a race report.
//
//===----------------------------------------------------------------------===//
#include "loom/loomrt.h"
#include "loom/loomrt.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

//===----------------------------------------------------------------------===//
// Building task tables
//===----------------------------------------------------------------------===//

/// A task table in vectors; desc() flattens it into a LoomProgramDesc whose
/// pointers stay valid while this object lives.
struct Table {
  std::string name = "test";
  int32_t mode = LOOM_SCHEDULE_STATIC;
  int32_t numWorkers = 1;
  std::vector<LoomBufferDesc> buffers;
  int64_t workspaceBytes = 0;
  /// Static mode: each worker's list. Dynamic mode: ignored; the queue is
  /// the tasks in id order, which the tables here make dependency order (a
  /// queue that is not would deadlock once every worker holds a task whose
  /// producer sits behind it in the queue).
  std::vector<std::vector<int32_t>> lists;
  std::vector<std::vector<int32_t>> waits;    // per task
  std::vector<std::vector<int32_t>> triggers; // per task
  std::vector<int32_t> needs;                 // per event
  std::vector<std::string> taskNames;
  LoomRunTaskFn run = nullptr;

  int32_t addTask(const std::string &taskName, int32_t worker,
                  std::vector<int32_t> waitOn, std::vector<int32_t> trigger) {
    int32_t id = static_cast<int32_t>(waits.size());
    if (lists.size() < static_cast<size_t>(numWorkers))
      lists.resize(numWorkers);
    lists[worker].push_back(id);
    waits.push_back(std::move(waitOn));
    triggers.push_back(std::move(trigger));
    taskNames.push_back(taskName);
    return id;
  }

  const LoomProgramDesc &desc() {
    lists.resize(numWorkers);
    workerBegin_.assign(1, 0);
    workerTasks_.clear();
    if (mode == LOOM_SCHEDULE_DYNAMIC) {
      for (int32_t t = 0; t < static_cast<int32_t>(waits.size()); ++t)
        workerTasks_.push_back(t);
    } else {
      for (const auto &list : lists) {
        workerTasks_.insert(workerTasks_.end(), list.begin(), list.end());
        workerBegin_.push_back(static_cast<int32_t>(workerTasks_.size()));
      }
    }
    flatten(waits, waitBegin_, waitEvents_);
    flatten(triggers, triggerBegin_, triggerEvents_);
    namePtrs_.clear();
    for (const std::string &n : taskNames)
      namePtrs_.push_back(n.c_str());
    desc_ = LoomProgramDesc{};
    desc_.abi_version = LOOM_PROGRAM_ABI_VERSION;
    desc_.name = name.c_str();
    desc_.target = "host";
    desc_.mode = mode;
    desc_.num_workers = numWorkers;
    desc_.num_tasks = static_cast<int32_t>(waits.size());
    desc_.num_events = static_cast<int32_t>(needs.size());
    desc_.num_buffers = static_cast<int32_t>(buffers.size());
    desc_.buffers = buffers.data();
    desc_.workspace_bytes = workspaceBytes;
    // Dynamic mode needs no worker_begin; leave it out to prove it.
    desc_.worker_begin =
        mode == LOOM_SCHEDULE_DYNAMIC ? nullptr : workerBegin_.data();
    desc_.worker_tasks = workerTasks_.data();
    desc_.task_wait_begin = waitBegin_.data();
    desc_.wait_events = waitEvents_.data();
    desc_.task_trigger_begin = triggerBegin_.data();
    desc_.trigger_events = triggerEvents_.data();
    desc_.event_needs = needs.data();
    desc_.task_names = namePtrs_.data();
    desc_.run_task = run;
    return desc_;
  }

private:
  static void flatten(const std::vector<std::vector<int32_t>> &lists,
                      std::vector<int32_t> &begin, std::vector<int32_t> &flat) {
    begin.assign(1, 0);
    flat.clear();
    for (const auto &list : lists) {
      flat.insert(flat.end(), list.begin(), list.end());
      begin.push_back(static_cast<int32_t>(flat.size()));
    }
  }

  LoomProgramDesc desc_{};
  std::vector<int32_t> workerBegin_, workerTasks_, waitBegin_, waitEvents_,
      triggerBegin_, triggerEvents_;
  std::vector<const char *> namePtrs_;
};

LoomBufferDesc bufferDesc(const char *name, int32_t role, int32_t elem,
                          std::vector<int64_t> dims, int64_t bound = 0) {
  LoomBufferDesc b{};
  b.name = name;
  b.role = role;
  b.elem = elem;
  b.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    b.dims[i] = dims[i];
  b.bound = bound;
  return b;
}

/// Expects `status` to be `expected` and the last error to be `message`.
#define EXPECT_ERROR(call, expected, message)                                  \
  do {                                                                         \
    loomrt_status status_ = (call);                                            \
    EXPECT_EQ(status_, expected)                                               \
        << loomrt_status_name(status_) << ": " << loomrt_last_error();         \
    EXPECT_EQ(std::string(loomrt_last_error()), std::string(message));         \
  } while (false)

/// Runs `body` expecting a loomrt::Error; returns it.
template <typename Body> loomrt::Error expectThrow(Body &&body) {
  try {
    body();
  } catch (const loomrt::Error &e) {
    return e;
  }
  ADD_FAILURE() << "no loomrt::Error thrown";
  return loomrt::Error(LOOMRT_SUCCESS, "");
}

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

/// Prefix sum, one element per task: y[t] = y[t-1] + x[t]. Task t runs on
/// worker t % W and reads what task t-1 (another worker) wrote; event t-1
/// (one arrival) orders them.
int32_t prefixTask(int32_t t, const LoomBinding *b, void *) {
  const auto *x = static_cast<const int64_t *>(b[0].data);
  auto *y = static_cast<int64_t *>(b[1].data);
  y[t] = (t ? y[t - 1] : 0) + x[t];
  return 0;
}

Table prefixTable(int32_t numWorkers, int32_t numTasks,
                  int32_t mode = LOOM_SCHEDULE_STATIC) {
  Table table;
  table.name = "prefix";
  table.mode = mode;
  table.numWorkers = numWorkers;
  table.buffers = {
      bufferDesc("x", LOOM_ROLE_INPUT, LOOM_ELEM_I64, {numTasks}),
      bufferDesc("y", LOOM_ROLE_OUTPUT, LOOM_ELEM_I64, {numTasks})};
  table.run = prefixTask;
  for (int32_t t = 0; t < numTasks; ++t) {
    std::vector<int32_t> waitOn, trigger;
    if (t > 0)
      waitOn.push_back(t - 1);
    if (t + 1 < numTasks) {
      trigger.push_back(t);
      table.needs.push_back(1);
    }
    table.addTask("scan#0[" + std::to_string(t) + "]", t % numWorkers, waitOn,
                  trigger);
  }
  return table;
}

/// Runs the prefix program `launches` times with fresh inputs and poisoned
/// outputs, checking every element each time and the counters at the end.
void checkPrefix(Table table, int launches) {
  const int32_t n = static_cast<int32_t>(table.waits.size());
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(table.desc());
  loomrt::Memory x = device.alloc(n * sizeof(int64_t));
  loomrt::Memory y = device.alloc(n * sizeof(int64_t));
  program.bind("x", x.get());
  program.bind("y", y.get());
  for (int launch = 1; launch <= launches; ++launch) {
    auto *xs = x.as<int64_t>();
    for (int32_t i = 0; i < n; ++i)
      xs[i] = (i * 7 + launch * 13) % 101 - 50;
    device.fill(y.get(), 0xFF, n * sizeof(int64_t)); // poison: -1
    program.run();
    int64_t sum = 0;
    for (int32_t i = 0; i < n; ++i) {
      sum += xs[i];
      ASSERT_EQ(y.as<int64_t>()[i], sum)
          << "launch " << launch << ", element " << i;
    }
    EXPECT_EQ(program.epoch(), static_cast<uint64_t>(launch));
  }
  // Counters grew by exactly their needs per launch: nothing was reset.
  for (int32_t e = 0; e + 1 < n; ++e)
    EXPECT_EQ(program.eventCount(e), static_cast<uint64_t>(launches));
  EXPECT_GT(program.lastLaunchNs(), 0u);
}

/// Diamond: a source task, K fan-out tasks that each need the source, and a
/// sink that needs all K. Source: ws[0] = 3 * in[0]. Fan-out k (1..K):
/// mid[k-1] = ws[0] + k. Sink: out[0] = sum(mid). Event 0 (1 arrival) has K
/// waiters; event 1 has K arrivals and one waiter.
constexpr int32_t kFanOut = 6;

int32_t diamondTask(int32_t t, const LoomBinding *b, void *workspace) {
  const auto *in = static_cast<const int64_t *>(b[0].data);
  auto *mid = static_cast<int64_t *>(b[1].data);
  auto *out = static_cast<int64_t *>(b[2].data);
  auto *ws = static_cast<int64_t *>(workspace);
  if (t == 0) {
    ws[0] = 3 * in[0];
  } else if (t <= kFanOut) {
    mid[t - 1] = ws[0] + t;
  } else {
    int64_t sum = 0;
    for (int32_t k = 0; k < kFanOut; ++k)
      sum += mid[k];
    out[0] = sum;
  }
  return 0;
}

Table diamondTable(int32_t numWorkers, int32_t mode = LOOM_SCHEDULE_STATIC) {
  Table table;
  table.name = "diamond";
  table.mode = mode;
  table.numWorkers = numWorkers;
  table.workspaceBytes = sizeof(int64_t);
  table.buffers = {
      bufferDesc("in", LOOM_ROLE_INPUT, LOOM_ELEM_I64, {1}),
      bufferDesc("mid", LOOM_ROLE_OUTPUT, LOOM_ELEM_I64, {kFanOut}),
      bufferDesc("out", LOOM_ROLE_OUTPUT, LOOM_ELEM_I64, {1})};
  table.needs = {1, kFanOut};
  table.run = diamondTask;
  table.addTask("src#0[0]", 0, {}, {0});
  for (int32_t k = 1; k <= kFanOut; ++k)
    table.addTask("fan#1[" + std::to_string(k - 1) + "]", k % numWorkers, {0},
                  {1});
  table.addTask("sink#2[0]", numWorkers - 1, {1}, {});
  return table;
}

void checkDiamond(Table table, int launches) {
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(table.desc());
  EXPECT_EQ(program.workspaceBytes(), 8);
  loomrt::Memory in = device.alloc(sizeof(int64_t));
  loomrt::Memory mid = device.alloc(kFanOut * sizeof(int64_t));
  loomrt::Memory out = device.alloc(sizeof(int64_t));
  program.bind("in", in.get());
  program.bind("mid", mid.get());
  program.bind("out", out.get());
  for (int launch = 1; launch <= launches; ++launch) {
    int64_t input = launch * 7 + 1;
    *in.as<int64_t>() = input;
    device.fill(mid.get(), 0xFF, kFanOut * sizeof(int64_t));
    device.fill(out.get(), 0xFF, sizeof(int64_t));
    program.run();
    EXPECT_EQ(*out.as<int64_t>(),
              kFanOut * 3 * input + kFanOut * (kFanOut + 1) / 2)
        << "launch " << launch;
  }
  EXPECT_EQ(program.eventCount(0), static_cast<uint64_t>(launches));
  EXPECT_EQ(program.eventCount(1), static_cast<uint64_t>(launches) * kFanOut);
}

int32_t nopTask(int32_t, const LoomBinding *, void *) { return 0; }

/// Two workers, each waiting for the event only the other triggers after
/// its wait.
Table deadlockTable() {
  Table table;
  table.name = "deadlock";
  table.numWorkers = 2;
  table.needs = {1, 1};
  table.run = nopTask;
  table.addTask("a#0[0]", 0, {1}, {0});
  table.addTask("b#1[0]", 1, {0}, {1});
  return table;
}

/// RAII for an environment variable.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    setenv(name, value, 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

private:
  const char *name_;
};

//===----------------------------------------------------------------------===//
// Correct programs
//===----------------------------------------------------------------------===//

TEST(RuntimeHost, PrefixChainAcrossWorkers) {
  checkPrefix(prefixTable(4, 32), 5);
}

TEST(RuntimeHost, PrefixChainOneWorker) { checkPrefix(prefixTable(1, 8), 3); }

TEST(RuntimeHost, PrefixChainOversubscribed) {
  // More workers than this machine has cores: spinning must yield.
  checkPrefix(prefixTable(16, 128), 5);
}

TEST(RuntimeHost, PrefixChainDynamic) {
  checkPrefix(prefixTable(4, 32, LOOM_SCHEDULE_DYNAMIC), 5);
  checkPrefix(prefixTable(8, 64, LOOM_SCHEDULE_DYNAMIC), 5);
}

TEST(RuntimeHost, Diamond) {
  checkDiamond(diamondTable(3), 5);
  checkDiamond(diamondTable(kFanOut + 1), 5);
}

TEST(RuntimeHost, DiamondDynamic) {
  checkDiamond(diamondTable(3, LOOM_SCHEDULE_DYNAMIC), 5);
}

TEST(RuntimeHost, ManyLaunches) {
  // Enough back-to-back launches that a lost wake-up or a stale epoch would
  // show.
  checkDiamond(diamondTable(4), 200);
  checkDiamond(diamondTable(4, LOOM_SCHEDULE_DYNAMIC), 200);
}

TEST(RuntimeHost, LaunchWithoutSynchronizeWaitsForThePrevious) {
  Table table = diamondTable(3);
  loomrt::Device device("host");
  loomrt::Program program = device.fromDesc(table.desc());
  loomrt::Memory in = device.alloc(8), mid = device.alloc(8 * kFanOut),
                 out = device.alloc(8);
  *in.as<int64_t>() = 5;
  program.bind("in", in.get());
  program.bind("mid", mid.get());
  program.bind("out", out.get());
  for (int i = 0; i < 3; ++i)
    program.launch();
  program.synchronize();
  program.synchronize(); // nothing in flight: a no-op
  EXPECT_EQ(program.epoch(), 3u);
  EXPECT_EQ(program.eventCount(1), 3u * kFanOut);
  EXPECT_EQ(*out.as<int64_t>(), kFanOut * 15 + kFanOut * (kFanOut + 1) / 2);
}

TEST(RuntimeHost, EmptyProgram) {
  Table table;
  table.name = "empty";
  table.numWorkers = 3;
  table.run = nopTask;
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  program.run();
  program.run();
  EXPECT_EQ(program.epoch(), 2u);
}

TEST(RuntimeHost, DescriptorIsCopied) {
  loomrt::Device device;
  loomrt::Program program;
  {
    Table table = prefixTable(2, 4);
    program = device.fromDesc(table.desc());
  } // the table's storage is gone; the program must not care
  const LoomProgramDesc &desc = program.desc();
  EXPECT_STREQ(desc.name, "prefix");
  EXPECT_EQ(desc.num_tasks, 4);
  EXPECT_STREQ(desc.task_names[3], "scan#0[3]");
  loomrt::Memory x = device.alloc(32), y = device.alloc(32);
  for (int i = 0; i < 4; ++i)
    x.as<int64_t>()[i] = i + 1;
  program.bind("x", x.get());
  program.bind("y", y.get());
  program.run();
  EXPECT_EQ(y.as<int64_t>()[3], 10);
}

//===----------------------------------------------------------------------===//
// Hangs and failures
//===----------------------------------------------------------------------===//

TEST(RuntimeHost, DeadlockIsReportedByTheWatchdog) {
  Table table = deadlockTable();
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  program.setWatchdogMs(200);
  Clock::time_point start = Clock::now();
  ASSERT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(program.get()), LOOMRT_ERROR_TIMEOUT,
               "program 'deadlock' launch 1 stopped by the watchdog: no task "
               "finished for 200 ms\n"
               "  worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, "
               "needs 1\n"
               "  worker 1: task 'b#1[0]' (id 1) waits for event 0: count 0, "
               "needs 1");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));

  // The counters no longer match the epoch: the program refuses to go on.
  loomrt_status status = loomrt_launch(program.get());
  EXPECT_EQ(status, LOOMRT_ERROR_PROGRAM_FAILED);
  EXPECT_EQ(std::string(loomrt_last_error())
                .rfind("program 'deadlock' cannot launch after launch 1 "
                       "failed; load it again. That failure: program "
                       "'deadlock' launch 1 stopped by the watchdog",
                       0),
            0u)
      << loomrt_last_error();
}

TEST(RuntimeHost, WatchdogFromEnvironment) {
  ScopedEnv env("LOOM_WATCHDOG_MS", "150");
  Table table = deadlockTable();
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  EXPECT_EQ(program.watchdogMs(), 150u);
  loomrt::Error error = expectThrow([&] { program.run(); });
  EXPECT_EQ(error.status(), LOOMRT_ERROR_TIMEOUT);
  EXPECT_NE(std::string(error.what()).find("no task finished for 150 ms"),
            std::string::npos)
      << error.what();
}

TEST(RuntimeHost, BadWatchdogSettings) {
  Table table = deadlockTable();
  loomrt::Device device;
  {
    ScopedEnv env("LOOM_WATCHDOG_MS", "soon");
    loomrt_program *program = nullptr;
    EXPECT_ERROR(
        loomrt_program_from_desc(device.get(), &table.desc(), 0, &program),
        LOOMRT_ERROR_INVALID_ARGUMENT,
        "LOOM_WATCHDOG_MS='soon' is not a timeout in milliseconds (1 to "
        "4294967295)");
    EXPECT_EQ(program, nullptr);
  }
  loomrt::Program program = device.fromDesc(table.desc());
  EXPECT_EQ(program.watchdogMs(), LOOMRT_DEFAULT_WATCHDOG_MS);
  EXPECT_ERROR(loomrt_program_set_watchdog_ms(program.get(), 0),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'deadlock': the watchdog timeout must be at least 1 "
               "ms");
}

TEST(RuntimeHost, LaunchesCannotBeQueued) {
  Table table = deadlockTable();
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  EXPECT_FALSE(program.queuedLaunch());
  EXPECT_ERROR(loomrt_program_set_queued_launch(program.get(), 1),
               LOOMRT_ERROR_UNSUPPORTED,
               "program 'deadlock': the host device cannot queue launches "
               "(there is no device queue: its workers start when the launch "
               "wakes them)");
  EXPECT_FALSE(program.queuedLaunch());
  program.setQueuedLaunch(false); // off is always possible
  EXPECT_EQ(loomrt_program_set_queued_launch(nullptr, 1),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(loomrt_program_queued_launch(program.get(), nullptr),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(loomrt_status_name(LOOMRT_ERROR_UNSUPPORTED),
               "LOOMRT_ERROR_UNSUPPORTED");
}

TEST(RuntimeHost, LaunchesOnAStreamAreNotSupported) {
  Table table = deadlockTable();
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  EXPECT_ERROR(loomrt_launch_on_stream(program.get(), nullptr),
               LOOMRT_ERROR_UNSUPPORTED,
               "program 'deadlock' cannot launch on a stream: the host device "
               "has none (its workers are threads that loomrt_launch wakes); "
               "use loomrt_launch and loomrt_synchronize");
  EXPECT_EQ(loomrt_program_check(program.get()), LOOMRT_SUCCESS); // none made
  EXPECT_EQ(loomrt_launch_on_stream(nullptr, nullptr),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(loomrt_program_check(nullptr), LOOMRT_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeHost, MissingTriggerIsRejectedAtLoad) {
  Table table;
  table.name = "missing";
  table.numWorkers = 2;
  table.needs = {2};
  table.run = nopTask;
  table.addTask("produce#0[0]", 0, {}, {0});
  table.addTask("consume#1[0]", 1, {0}, {});
  loomrt::Device device;
  loomrt_program *program = nullptr;
  EXPECT_ERROR(
      loomrt_program_from_desc(device.get(), &table.desc(), 0, &program),
      LOOMRT_ERROR_INVALID_PROGRAM,
      "invalid program 'missing' (in-process descriptor): event 0 needs 2 "
      "arrivals per launch but has 1 trigger ('produce#0[0]' (id 0))");
}

TEST(RuntimeHost, MissingTriggerIsReportedByTheWatchdog) {
  Table table;
  table.name = "missing";
  table.numWorkers = 2;
  table.needs = {2};
  table.run = nopTask;
  table.addTask("produce#0[0]", 0, {}, {0});
  table.addTask("consume#1[0]", 1, {0}, {});
  loomrt::Device device;
  loomrt::Program program =
      device.fromDesc(table.desc(), LOOMRT_PROGRAM_SKIP_ARRIVAL_CHECK);
  program.setWatchdogMs(200);
  ASSERT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(program.get()), LOOMRT_ERROR_TIMEOUT,
               "program 'missing' launch 1 stopped by the watchdog: no task "
               "finished for 200 ms\n"
               "  worker 1: task 'consume#1[0]' (id 1) waits for event 0: "
               "count 1, needs 2\n"
               "  (1 other worker finished its tasks)");
}

TEST(RuntimeHost, WatchdogReportIsBounded) {
  Table table;
  table.name = "crowd";
  table.numWorkers = 20;
  table.needs = {1};
  table.run = nopTask;
  for (int32_t w = 0; w < 20; ++w)
    table.addTask("wait#0[" + std::to_string(w) + "]", w, {0}, {});
  loomrt::Device device;
  loomrt::Program program =
      device.fromDesc(table.desc(), LOOMRT_PROGRAM_SKIP_ARRIVAL_CHECK);
  program.setWatchdogMs(500); // time for 20 threads to start on 2 cores
  loomrt::Error error = expectThrow([&] { program.run(); });
  std::string message = error.what();
  EXPECT_NE(message.find("  worker 15: task 'wait#0[15]' (id 15) waits for "
                         "event 0: count 0, needs 1\n"
                         "  ... and 4 more workers waiting or running"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("worker 16:"), std::string::npos) << message;
}

TEST(RuntimeHost, DynamicQueueOutOfOrderIsReported) {
  // The queue hands out tasks 0 and 1 first; both need task 2, which no
  // worker is left to take.
  Table table;
  table.name = "queue";
  table.mode = LOOM_SCHEDULE_DYNAMIC;
  table.numWorkers = 2;
  table.needs = {2};
  table.run = nopTask;
  table.addTask("early#0[0]", 0, {0}, {});
  table.addTask("early#0[1]", 1, {0}, {});
  table.addTask("late#1[0]", 0, {}, {0, 0});
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  program.setWatchdogMs(200);
  loomrt::Error error = expectThrow([&] { program.run(); });
  EXPECT_EQ(error.status(), LOOMRT_ERROR_TIMEOUT);
  std::string message = error.what();
  for (const char *line : {"task 'early#0[0]' (id 0) waits for event 0: "
                           "count 0, needs 2",
                           "task 'early#0[1]' (id 1) waits for event 0: "
                           "count 0, needs 2"})
    EXPECT_NE(message.find(line), std::string::npos) << message;
}

int32_t failingTask(int32_t t, const LoomBinding *, void *) {
  return t == 1 ? 7 : 0;
}

TEST(RuntimeHost, FailingTaskIsReported) {
  Table table;
  table.name = "fail";
  table.numWorkers = 2;
  table.needs = {1, 1};
  table.run = failingTask;
  table.addTask("ok#0[0]", 0, {}, {0});
  table.addTask("boom#1[0]", 1, {0}, {1});
  table.addTask("after#2[0]", 0, {1}, {});
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  program.setWatchdogMs(20000);
  Clock::time_point start = Clock::now();
  ASSERT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(program.get()), LOOMRT_ERROR_TASK_FAILED,
               "program 'fail' launch 1: task 'boom#1[0]' (id 1) on worker 1 "
               "returned 7");
  // The waiting worker left at once; nobody waited for the watchdog.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

std::atomic<bool> releaseSpinner{false};

int32_t spinningTask(int32_t t, const LoomBinding *, void *) {
  if (t == 0)
    while (!releaseSpinner.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 0;
}

TEST(RuntimeHost, HangingTaskBodyIsReportedNotWaitedFor) {
  Table table;
  table.name = "wedged";
  table.numWorkers = 2;
  table.needs = {1};
  table.run = spinningTask;
  table.addTask("spin#0[0]", 0, {}, {0});
  table.addTask("after#1[0]", 1, {0}, {});
  loomrt::Device device;
  loomrt::Program program = device.fromDesc(table.desc());
  program.setWatchdogMs(100);
  releaseSpinner = false;
  ASSERT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_synchronize(program.get()), LOOMRT_ERROR_TIMEOUT,
               "program 'wedged' launch 1 stopped by the watchdog: no task "
               "finished for 100 ms\n"
               "  worker 0: running task 'spin#0[0]' (id 0)\n"
               "  worker 1: task 'after#1[0]' (id 1) waits for event 0: "
               "count 0, needs 1\n"
               "  worker 0 is still inside task 'spin#0[0]' (id 0); its "
               "thread is abandoned");
  releaseSpinner = true;
  program.reset(); // must not hang, whether or not the body has returned
}

// A body abandoned by the watchdog reads its bound buffer after the caller,
// told the launch failed, has freed it (and destroyed the device): the free
// waits for the thread (AbandonedWorkers), so the body still finds its data.
// Without that, the 4 MiB allocation goes back to the system and the read
// faults.
std::atomic<bool> releaseReader{false};
std::atomic<int> readerResult{-1}; // -1: not done, 1: data intact, 0: not

int32_t lateReaderTask(int32_t t, const LoomBinding *bindings, void *) {
  if (t != 0)
    return 0;
  while (!releaseReader.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto *bytes = static_cast<const unsigned char *>(bindings[0].data);
  bool intact = true;
  for (size_t i = 0; i < (size_t(4) << 20); i += 4096)
    intact = intact && bytes[i] == 0xAB;
  readerResult = intact ? 1 : 0;
  return 0;
}

TEST(RuntimeHost, AbandonedBodyOutlivesTheFreeOfItsBuffer) {
  Table table;
  table.name = "late";
  table.numWorkers = 2;
  table.needs = {1};
  table.buffers = {bufferDesc("x", LOOM_ROLE_INPUT, LOOM_ELEM_F32, {1 << 20})};
  table.run = lateReaderTask;
  table.addTask("read#0[0]", 0, {}, {0});
  table.addTask("after#1[0]", 1, {0}, {});
  releaseReader = false;
  readerResult = -1;
  {
    loomrt::Device device;
    loomrt::Program program = device.fromDesc(table.desc());
    loomrt::Memory memory = device.alloc(size_t(4) << 20);
    device.fill(memory.get(), 0xAB, size_t(4) << 20);
    int64_t dims[] = {1 << 20};
    ASSERT_EQ(loomrt_program_bind_by_name(program.get(), "x", memory.get(),
                                          dims, 1),
              LOOMRT_SUCCESS);
    program.setWatchdogMs(50);
    ASSERT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS);
    EXPECT_EQ(loomrt_synchronize(program.get()), LOOMRT_ERROR_TIMEOUT);
    program.reset();
    memory.reset(); // the buffer the abandoned body is about to read
  }                 // and the device
  releaseReader = true;
  for (int i = 0; i < 5000 && readerResult.load() < 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(readerResult.load(), 1);
}

//===----------------------------------------------------------------------===//
// Buffers and bindings
//===----------------------------------------------------------------------===//

class Bindings : public ::testing::Test {
protected:
  void SetUp() override {
    table.name = "bind";
    table.numWorkers = 1;
    table.buffers = {
        bufferDesc("x", LOOM_ROLE_INPUT, LOOM_ELEM_F32, {-1, 8}, 16),
        bufferDesc("w", LOOM_ROLE_WEIGHT, LOOM_ELEM_BF16, {4, 8})};
    table.run = nopTask;
    table.addTask("t#0[0]", 0, {}, {});
    program = device.fromDesc(table.desc());
    memory = device.alloc(1024);
  }

  loomrt_status bindX(std::vector<int64_t> dims, void *data = nullptr) {
    return loomrt_program_bind_by_name(program.get(), "x",
                                       data ? data : memory.get(), dims.data(),
                                       static_cast<int32_t>(dims.size()));
  }

  Table table;
  loomrt::Device device;
  loomrt::Program program;
  loomrt::Memory memory;
};

TEST_F(Bindings, Queries) {
  EXPECT_EQ(program.numBuffers(), 2);
  const LoomBufferDesc &x = program.buffer(0);
  EXPECT_STREQ(x.name, "x");
  EXPECT_EQ(x.role, LOOM_ROLE_INPUT);
  EXPECT_EQ(x.elem, LOOM_ELEM_F32);
  EXPECT_EQ(x.rank, 2);
  EXPECT_EQ(x.dims[0], -1);
  EXPECT_EQ(x.dims[1], 8);
  EXPECT_EQ(x.bound, 16);
  EXPECT_EQ(program.findBuffer("w"), 1);
  EXPECT_EQ(program.bufferBytes("x"), 16u * 8 * 4);
  EXPECT_EQ(program.bufferBytes("w"), 4u * 8 * 2);
  EXPECT_EQ(program.workspaceBytes(), 0);
  const LoomBufferDesc *none = nullptr;
  EXPECT_ERROR(loomrt_program_buffer(program.get(), 2, &none),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'bind': buffer index 2 out of range (2 buffers)");
}

TEST_F(Bindings, Errors) {
  const std::string x = "program 'bind': cannot bind buffer 'x' (index 0, "
                        "f32[?<=16, 8]): ";
  int64_t dims[] = {4, 8};
  EXPECT_ERROR(
      loomrt_program_bind_by_name(program.get(), "x", nullptr, dims, 2),
      LOOMRT_ERROR_BINDING, x + "data is null");
  EXPECT_ERROR(bindX({4}), LOOMRT_ERROR_BINDING,
               x + "rank 1 given, declared rank 2");
  EXPECT_ERROR(bindX({4, 7}), LOOMRT_ERROR_BINDING,
               x + "dim 1 is 7, declared 8");
  EXPECT_ERROR(bindX({17, 8}), LOOMRT_ERROR_BINDING,
               x + "dim 0 is 17, above its bound 16");
  EXPECT_ERROR(bindX({-3, 8}), LOOMRT_ERROR_BINDING,
               x + "dim 0 is -3, must be >= 0");
  EXPECT_ERROR(loomrt_program_bind(program.get(), 0, memory.get(), nullptr, 0),
               LOOMRT_ERROR_BINDING,
               x + "dim 0 is dynamic, so its dims must be given");
  int64_t wrongW[] = {4, 9};
  EXPECT_ERROR(loomrt_program_bind(program.get(), 1, memory.get(), wrongW, 2),
               LOOMRT_ERROR_BINDING,
               "program 'bind': cannot bind buffer 'w' (index 1, bf16[4, 8]): "
               "dim 1 is 9, declared 8");
  EXPECT_ERROR(
      loomrt_program_bind_by_name(program.get(), "nope", memory.get(), dims, 2),
      LOOMRT_ERROR_NOT_FOUND,
      "program 'bind' has no buffer named 'nope' (buffers: 'x', "
      "'w')");
  EXPECT_ERROR(loomrt_program_bind(program.get(), -1, memory.get(), dims, 2),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "program 'bind': buffer index -1 out of range (2 buffers)");
}

TEST_F(Bindings, LaunchNeedsEveryBuffer) {
  EXPECT_ERROR(loomrt_launch(program.get()), LOOMRT_ERROR_NOT_BOUND,
               "program 'bind' cannot launch: buffers not bound: 'x' (index "
               "0), 'w' (index 1)");
  EXPECT_EQ(bindX({0, 8}), LOOMRT_SUCCESS); // an empty batch is fine
  EXPECT_ERROR(loomrt_launch(program.get()), LOOMRT_ERROR_NOT_BOUND,
               "program 'bind' cannot launch: buffers not bound: 'w' (index "
               "1)");
  program.bind("w", memory.get());
  EXPECT_EQ(bindX({16, 8}), LOOMRT_SUCCESS);
  program.run();
}

TEST_F(Bindings, LastLaunchTimeNeedsALaunch) {
  uint64_t ns = 0;
  EXPECT_ERROR(loomrt_program_last_launch_ns(program.get(), &ns),
               LOOMRT_ERROR_NOT_READY,
               "program 'bind' has not completed a launch yet");
}

//===----------------------------------------------------------------------===//
// Devices and memory
//===----------------------------------------------------------------------===//

TEST(RuntimeDevice, Kinds) {
  loomrt_device *device = nullptr;
  EXPECT_ERROR(loomrt_device_create("tpu", 0, &device),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "unknown device kind 'tpu' (known kinds: host, cuda, hip)");
  EXPECT_EQ(device, nullptr);
  // The GPU backends are built in; they answer with a device where one is
  // present, else with why they cannot (no driver here).
  for (const char *gpu : {"cuda", "hip"}) {
    loomrt_status s = loomrt_device_create(gpu, 0, &device);
    if (s == LOOMRT_SUCCESS) {
      EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
      device = nullptr;
      continue;
    }
    EXPECT_TRUE(s == LOOMRT_ERROR_BACKEND_UNAVAILABLE ||
                s == LOOMRT_ERROR_UNKNOWN_DEVICE)
        << loomrt_last_error();
    EXPECT_NE(std::string(loomrt_last_error()).find(gpu), std::string::npos)
        << "the error names the device kind: " << loomrt_last_error();
    EXPECT_EQ(device, nullptr);
  }
  EXPECT_ERROR(loomrt_device_create(nullptr, 0, &device),
               LOOMRT_ERROR_INVALID_ARGUMENT, "device kind is null");
  EXPECT_ERROR(loomrt_device_create("host", 1, &device),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "host device ordinal 1 out of range (there is one host "
               "device, 0)");
  EXPECT_ERROR(loomrt_device_create("host", 0, nullptr),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "loomrt_device_create: device is null");
  int count = 0;
  EXPECT_EQ(loomrt_device_count("host", &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 1);
  ASSERT_EQ(loomrt_device_create("host", 0, &device), LOOMRT_SUCCESS);
  EXPECT_STREQ(loomrt_device_kind(device), "host");
  EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
}

TEST(RuntimeDevice, DeviceOutlivesItsPrograms) {
  Table table = prefixTable(2, 4);
  loomrt_device *device = nullptr;
  ASSERT_EQ(loomrt_device_create("host", 0, &device), LOOMRT_SUCCESS);
  loomrt_program *program = nullptr;
  ASSERT_EQ(loomrt_program_from_desc(device, &table.desc(), 0, &program),
            LOOMRT_SUCCESS);
  EXPECT_ERROR(loomrt_device_destroy(device), LOOMRT_ERROR_BUSY,
               "cannot destroy host device 0: 1 program(s) still loaded on "
               "it");
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
}

TEST(RuntimeDevice, Memory) {
  loomrt::Device device;
  loomrt::Memory a = device.alloc(100), b = device.alloc(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 256, 0u);
  device.fill(a.get(), 0x5A, 100);
  device.copy(b.get(), a.get(), 100);
  EXPECT_EQ(b.as<unsigned char>()[99], 0x5A);
  void *raw = nullptr;
  EXPECT_ERROR(loomrt_malloc(device.get(), 0, &raw),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               "loomrt_malloc: cannot allocate 0 bytes");
  int local = 0;
  EXPECT_EQ(loomrt_free(device.get(), &local), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error())
                .find("was not allocated by this device (or was freed)"),
            std::string::npos);
  EXPECT_EQ(loomrt_free(device.get(), nullptr), LOOMRT_SUCCESS);
}

TEST(RuntimeDevice, LastErrorIsPerThread) {
  loomrt_device *device = nullptr;
  EXPECT_EQ(loomrt_device_create("tpu", 0, &device),
            LOOMRT_ERROR_UNKNOWN_DEVICE);
  std::string other;
  std::thread([&] { other = loomrt_last_error(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(loomrt_last_error()), "");
  EXPECT_STREQ(loomrt_status_name(LOOMRT_ERROR_TIMEOUT),
               "LOOMRT_ERROR_TIMEOUT");
  EXPECT_EQ(loomrt_program_abi_version(), LOOM_PROGRAM_ABI_VERSION);
  EXPECT_EQ(loomrt_elem_bytes(LOOM_ELEM_BF16), 2u);
  EXPECT_EQ(loomrt_elem_bytes(LOOM_ELEM_I64), 8u);
  EXPECT_EQ(loomrt_elem_bytes(42), 0u);
}

//===----------------------------------------------------------------------===//
// Table checks
//===----------------------------------------------------------------------===//

class TableChecks : public ::testing::Test {
protected:
  void SetUp() override {
    table.name = "bad";
    table.numWorkers = 2;
    table.needs = {1};
    table.run = nopTask;
    table.addTask("a#0[0]", 0, {}, {0});
    table.addTask("b#1[0]", 1, {0}, {});
  }

  void expectInvalid(loomrt_status expected, const std::string &message) {
    loomrt_program *program = nullptr;
    EXPECT_ERROR(
        loomrt_program_from_desc(device.get(), &table.desc(), 0, &program),
        expected, message);
    EXPECT_EQ(program, nullptr);
  }

  Table table;
  loomrt::Device device;
};

TEST_F(TableChecks, Valid) {
  loomrt::Program program = device.fromDesc(table.desc());
  program.run();
}

TEST_F(TableChecks, AbiVersion) {
  LoomProgramDesc desc = table.desc();
  desc.abi_version = 7;
  loomrt_program *program = nullptr;
  EXPECT_ERROR(loomrt_program_from_desc(device.get(), &desc, 0, &program),
               LOOMRT_ERROR_ABI_MISMATCH,
               "program (in-process descriptor) has ABI version 7; this "
               "runtime reads version 1");
}

TEST_F(TableChecks, EventOutOfRange) {
  table.waits[1] = {5};
  expectInvalid(LOOMRT_ERROR_INVALID_PROGRAM,
                "invalid program 'bad' (in-process descriptor): task "
                "'b#1[0]' (id 1) waits on event 5, but there are 1 events");
}

TEST_F(TableChecks, TaskListedTwice) {
  // Three entries for two tasks: worker_begin ends at 3.
  table.lists[0].push_back(1);
  expectInvalid(LOOMRT_ERROR_INVALID_PROGRAM,
                "invalid program 'bad' (in-process descriptor): "
                "worker_begin[2] is 3, not num_tasks (2)");
  // Two entries, but task 1 twice and task 0 never.
  table.lists[0] = {1};
  expectInvalid(LOOMRT_ERROR_INVALID_PROGRAM,
                "invalid program 'bad' (in-process descriptor): task "
                "'b#1[0]' (id 1) is listed twice in worker_tasks (at 0 and "
                "1)");
}

TEST_F(TableChecks, NoWorkers) {
  table.numWorkers = 0;
  table.lists.clear();
  expectInvalid(LOOMRT_ERROR_INVALID_PROGRAM,
                "invalid program 'bad' (in-process descriptor): num_workers "
                "is 0; a program needs at least one worker");
}

TEST_F(TableChecks, DynamicDimWithoutBound) {
  table.buffers = {bufferDesc("x", LOOM_ROLE_INPUT, LOOM_ELEM_F32, {-1, 4})};
  expectInvalid(LOOMRT_ERROR_INVALID_PROGRAM,
                "invalid program 'bad' (in-process descriptor): buffer 'x' "
                "(index 0) has a dynamic dimension but bound 0");
}

//===----------------------------------------------------------------------===//
// Program libraries
//===----------------------------------------------------------------------===//

TEST(RuntimeLoad, MissingFile) {
  loomrt::Device device;
  loomrt_program *program = nullptr;
  EXPECT_ERROR(
      loomrt_program_load(device.get(), "/nonexistent/prog.so", 0, &program),
      LOOMRT_ERROR_LOAD_FAILED,
      "cannot load host program '/nonexistent/prog.so': No such "
      "file or directory");
}

TEST(RuntimeLoad, NotASharedLibrary) {
  char path[] = "/tmp/loomrt-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  loomrt::Device device;
  loomrt_program *program = nullptr;
  EXPECT_EQ(loomrt_program_load(device.get(), path, 0, &program),
            LOOMRT_ERROR_LOAD_FAILED);
  std::string prefix = "cannot load host program '" + std::string(path) + "': ";
  EXPECT_EQ(std::string(loomrt_last_error()).rfind(prefix, 0), 0u)
      << loomrt_last_error();
  std::remove(path);
}

#ifdef LOOM_RT_TESTPROG_NOSYMBOL
TEST(RuntimeLoad, MissingSymbol) {
  loomrt::Device device;
  loomrt_program *program = nullptr;
  EXPECT_ERROR(
      loomrt_program_load(device.get(), LOOM_RT_TESTPROG_NOSYMBOL, 0, &program),
      LOOMRT_ERROR_LOAD_FAILED,
      "host program '" LOOM_RT_TESTPROG_NOSYMBOL
      "' does not export 'loom_host_program' (not a Loom host program?)");
}
#endif

#ifdef LOOM_RT_TESTPROG_BADABI
TEST(RuntimeLoad, WrongAbiVersion) {
  loomrt::Device device;
  loomrt_program *program = nullptr;
  EXPECT_ERROR(
      loomrt_program_load(device.get(), LOOM_RT_TESTPROG_BADABI, 0, &program),
      LOOMRT_ERROR_ABI_MISMATCH,
      "host program '" LOOM_RT_TESTPROG_BADABI
      "' has program ABI version 2; this runtime reads version 1 (rebuild "
      "it)");
}
#endif

#ifdef LOOM_RT_TESTPROG_GOOD
TEST(RuntimeLoad, RunsALibraryProgram) {
  loomrt::Device device;
  loomrt::Program program = device.load(LOOM_RT_TESTPROG_GOOD);
  EXPECT_STREQ(program.desc().name, "affine");
  EXPECT_EQ(program.workspaceBytes(), 8 * 4 * 4);
  size_t bytes = program.bufferBytes("x");
  ASSERT_EQ(bytes, 8u * 4 * 4);
  loomrt::Memory x = device.alloc(bytes), y = device.alloc(bytes);
  program.bind("y", y.get(), {8, 4});
  for (int64_t rows : {8, 5, 1, 0}) {
    for (int64_t i = 0; i < 8 * 4; ++i)
      x.as<float>()[i] = static_cast<float>(i % 13) - 6.0f + rows;
    device.fill(y.get(), 0xFF, bytes); // NaN
    program.bind("x", x.get(), {rows, 4});
    program.bind("y", y.get(), {rows, 4});
    program.run();
    for (int64_t i = 0; i < rows * 4; ++i)
      ASSERT_EQ(y.as<float>()[i], 2.0f * x.as<float>()[i] + 1.0f)
          << "rows " << rows << ", element " << i;
    for (int64_t i = rows * 4; i < 8 * 4; ++i)
      ASSERT_TRUE(std::isnan(y.as<float>()[i])) << "wrote past the rows";
  }
  // Two programs from one library have their own counters.
  loomrt::Program again = device.load(LOOM_RT_TESTPROG_GOOD);
  again.bind("x", x.get(), {8, 4});
  again.bind("y", y.get(), {8, 4});
  again.run();
  EXPECT_EQ(again.eventCount(0), 2u);
  EXPECT_EQ(program.eventCount(0), 8u);
}
#endif

} // namespace

// Handles that are not alive are refused before they are read: destroying
// twice, or using a destroyed handle, is an error and not heap damage.
TEST(RuntimeHost, DeadHandlesAreRefused) {
  loomrt_device *device = nullptr;
  ASSERT_EQ(loomrt_device_create("host", 0, &device), LOOMRT_SUCCESS);
  Table table = deadlockTable();
  loomrt_program *program = nullptr;
  ASSERT_EQ(loomrt_program_from_desc(device, &table.desc(), 0, &program),
            LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);
  const std::string dead =
      " is not a live loomrt_program (destroyed already, or not made by this "
      "loomrt)";
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error()).find(dead), std::string::npos)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_launch(program), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error()).find("loomrt_launch: program ("),
            std::string::npos)
      << loomrt_last_error();
  int32_t buffers = 0;
  EXPECT_EQ(loomrt_program_num_buffers(program, &buffers),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  // A device handle is not a program handle, nor the other way round.
  EXPECT_EQ(loomrt_program_destroy(reinterpret_cast<loomrt_program *>(device)),
            LOOMRT_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error())
                .find(" is not a live loomrt_device (destroyed already"),
            std::string::npos)
      << loomrt_last_error();
  void *ptr = nullptr;
  EXPECT_EQ(loomrt_malloc(device, 64, &ptr), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(loomrt_device_kind(device), "");
  EXPECT_STREQ(loomrt_device_describe(device), "");
}

// Copies and fills of memory from loomrt_malloc stay inside the allocation.
TEST(RuntimeHost, CopiesStayInsideTheirAllocation) {
  loomrt::Device device;
  void *small = nullptr;
  ASSERT_EQ(loomrt_malloc(device.get(), 64, &small), LOOMRT_SUCCESS);
  std::vector<char> host(4096, 7);
  auto *bytes = static_cast<char *>(small);
  // Inside: whole, and the last byte.
  EXPECT_EQ(loomrt_memcpy(device.get(), small, host.data(), 64),
            LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_memset(device.get(), bytes + 63, 1, 1), LOOMRT_SUCCESS);
  EXPECT_EQ(bytes[63], 1);
  EXPECT_EQ(bytes[0], 7);
  // Past the end, on either side of the copy, and a fill.
  const std::string past = " run past the end of its allocation (64 bytes from ";
  EXPECT_EQ(loomrt_memcpy(device.get(), small, host.data(), 4096),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error()).find("loomrt_memcpy: 4096 bytes to "),
            std::string::npos)
      << loomrt_last_error();
  EXPECT_NE(std::string(loomrt_last_error()).find(past), std::string::npos)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_memcpy(device.get(), host.data(), bytes + 32, 33),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error()).find("33 bytes from "),
            std::string::npos)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_memcpy_kind(device.get(), bytes + 1, host.data(), 64,
                               LOOMRT_COPY_HOST_TO_DEVICE),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(loomrt_memset(device.get(), bytes + 60, 0, 5),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(loomrt_last_error()).find("loomrt_memset: 5 bytes at "),
            std::string::npos)
      << loomrt_last_error();
  // Nothing was written by the refused calls.
  EXPECT_EQ(bytes[60], 7);
  EXPECT_EQ(bytes[1], 7);
  // Memory the device did not allocate is not its to check.
  std::vector<char> other(16);
  EXPECT_EQ(loomrt_memcpy(device.get(), other.data(), host.data(), 16),
            LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_free(device.get(), small), LOOMRT_SUCCESS);
}

// Memory from loomrt_malloc must hold what it is bound as, checked at the
// launch as the GPU backends check it (other host memory cannot be).
TEST_F(Bindings, LaunchChecksTheAllocationHoldsTheDims) {
  loomrt::Memory small = device.alloc(100); // x at [4, 8] f32 needs 128
  ASSERT_EQ(bindX({4, 8}, small.get()), LOOMRT_SUCCESS)
      << loomrt_last_error();
  ASSERT_EQ(loomrt_program_bind_by_name(program.get(), "w", memory.get(),
                                        nullptr, 0),
            LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_launch(program.get()), LOOMRT_ERROR_BINDING);
  const std::string message = loomrt_last_error();
  EXPECT_NE(message.find("program 'bind' launch 1: buffer 'x' (index 0, "
                         "f32[?<=16, 8]) bound to "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(" with dims [4, 8] (128 bytes) runs past the end of "
                         "its allocation (100 bytes from "),
            std::string::npos)
      << message;
  // Within it, and ordinary host memory, launch.
  ASSERT_EQ(bindX({3, 8}, small.get()), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_EQ(loomrt_synchronize(program.get()), LOOMRT_SUCCESS);
  std::vector<float> host(16 * 8);
  ASSERT_EQ(bindX({16, 8}, host.data()), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_launch(program.get()), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_EQ(loomrt_synchronize(program.get()), LOOMRT_SUCCESS);
}
