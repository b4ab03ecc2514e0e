//===- Executor.cpp - Running a program on host threads -------------------===//

#include "runtime/host/Executor.h"

#include "runtime/host/AbandonedWorkers.h"

#include "runtime/host/LaunchState.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace loom {
namespace rt {

namespace {

/// Task bodies keep fixed scratch on the stack; give every worker the same
/// generous stack whatever `ulimit -s` says.
constexpr size_t kWorkerStackBytes = size_t(8) << 20;
constexpr size_t kWorkspaceAlignment = 256;

struct WorkerStart {
  std::shared_ptr<LaunchState> state;
  int32_t worker;
};

void *workerEntry(void *arg) {
  std::unique_ptr<WorkerStart> start(static_cast<WorkerStart *>(arg));
  start->state->workerMain(start->worker);
  // Abandoned (stopWorkers counted it before it could leave): the bound
  // memory it might have read may go now.
  if (start->state->abandoned.load(std::memory_order_acquire))
    AbandonedWorkers::get().leave();
  return nullptr;
}

/// How often the synchronizing thread looks at the watchdog: often enough to
/// report close to the timeout, rarely enough to cost nothing.
std::chrono::milliseconds pollPeriod(uint32_t timeoutMs) {
  return std::chrono::milliseconds(std::clamp<uint32_t>(timeoutMs / 8, 1, 100));
}

} // namespace

LaunchState::LaunchState(std::shared_ptr<const ProgramTable> tableIn,
                         std::shared_ptr<const void> libraryIn)
    : table(std::move(tableIn)), library(std::move(libraryIn)),
      numWorkers(table->numWorkers()),
      counters(new EventCounter[table->numEvents()]),
      workers(new WorkerState[table->numWorkers()]),
      timings(new LoomTaskTiming[table->numTasks() + table->numWorkers()]()),
      bindings(table->numBuffers()) {}

LaunchState::~LaunchState() { std::free(workspace); }

Status Executor::create(std::shared_ptr<const ProgramTable> table,
                        std::shared_ptr<const void> library,
                        LoomGetMetaFaultFn metaFault,
                        const DeviceAllocations *allocations,
                        std::string device, std::unique_ptr<Executable> *out) {
  auto state = std::make_shared<LaunchState>(table, std::move(library));
  state->metaFault = metaFault;
  if (int64_t bytes = table->desc().workspace_bytes; bytes > 0) {
    size_t rounded = (static_cast<size_t>(bytes) + kWorkspaceAlignment - 1) /
                     kWorkspaceAlignment * kWorkspaceAlignment;
    if (posix_memalign(&state->workspace, kWorkspaceAlignment, rounded) != 0)
      return makeError(LOOMRT_ERROR_OUT_OF_MEMORY, "program ",
                       quoted(table->name()), ": cannot allocate its ", bytes,
                       "-byte workspace");
  }
  std::unique_ptr<Executor> executor(new Executor(std::move(state)));
  executor->allocations_ = allocations;
  executor->device_ = std::move(device);
  if (Status s = executor->startWorkers(); !s.ok())
    return s;
  *out = std::move(executor);
  return Status();
}

Executor::Executor(std::shared_ptr<LaunchState> state)
    : state_(std::move(state)) {}

Status Executor::startWorkers() {
  const ProgramTable &table = *state_->table;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kWorkerStackBytes);
  int error = 0;
  int32_t w = 0;
  for (; w < table.numWorkers(); ++w) {
    auto *start = new WorkerStart{state_, w};
    pthread_t thread;
    error = pthread_create(&thread, &attr, workerEntry, start);
    if (error) {
      delete start;
      break;
    }
    threads_.push_back(thread);
#if defined(__linux__)
    // Names show up in debuggers and top; best effort.
    std::string name = "loom-w" + std::to_string(w);
    pthread_setname_np(thread, name.substr(0, 15).c_str());
#endif
  }
  pthread_attr_destroy(&attr);
  if (!error)
    return Status();
  stopWorkers();
  return makeError(LOOMRT_ERROR_RESOURCES, "program ", quoted(table.name()),
                   " needs ", table.numWorkers(),
                   " worker threads, but creating thread ", w,
                   " failed: ", std::strerror(error));
}

void Executor::stopWorkers() {
  LaunchState &s = *state_;
  bool abandon;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    // Still active after synchronize gave up: a worker is inside a task body
    // that does not return. Joining would hang the process.
    abandon = s.active > 0;
    if (abandon) {
      // Counted before any of them can see `shutdown` and leave.
      AbandonedWorkers::get().add(threads_.size());
      s.abandoned.store(true, std::memory_order_release);
    }
    s.shutdown = true;
    s.startCv.notify_all();
  }
  for (pthread_t thread : threads_)
    abandon ? pthread_detach(thread) : pthread_join(thread, nullptr);
  threads_.clear();
}

Executor::~Executor() {
  if (inFlight())
    (void)synchronize();
  stopWorkers();
}

Status Executor::prepareQueuedLaunch() {
  return makeError(LOOMRT_ERROR_UNSUPPORTED, "program ",
                   quoted(state_->table->name()),
                   ": the host device cannot queue launches (there is no "
                   "device queue: its workers start when the launch wakes "
                   "them)");
}

Status Executor::streamLaunchSupport() const {
  return makeError(LOOMRT_ERROR_UNSUPPORTED, "program ",
                   quoted(state_->table->name()),
                   " cannot launch on a stream: the host device has none (its "
                   "workers are threads that loomrt_launch wakes); use "
                   "loomrt_launch and loomrt_synchronize");
}

Status Executor::launch(const LaunchParams &params) {
  LaunchState &s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.inFlight || s.active > 0)
    return makeError(LOOMRT_ERROR_INTERNAL, "program ", quoted(s.table->name()),
                     ": launch while workers are still running");
  // Memory from loomrt_malloc must hold the bound dims; other host memory
  // cannot be checked.
  if (allocations_)
    if (Status c = bindingChecker_.check(
            *s.table, params.epoch, params.bindings, *allocations_,
            [](const void *) { return std::string(); }, "host runtime",
            device_);
        !c.ok())
      return c;
  std::copy(params.bindings, params.bindings + s.bindings.size(),
            s.bindings.begin());
  s.epoch = params.epoch;
  s.active = s.numWorkers;
  s.inFlight = true;
  for (int32_t w = 0; w < s.numWorkers; ++w)
    s.workers[w].phase.store(kWorkerIdle, std::memory_order_relaxed);
  s.watchdog.arm(params.watchdogMs, s.progress());
  s.startTime = LaunchState::Clock::now();
  ++s.generation;
  s.startCv.notify_all();
  return Status();
}

Status Executor::synchronize() {
  LaunchState &s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (!s.inFlight)
    return Status();
  const uint32_t timeoutMs = s.watchdog.timeoutMs();
  const auto period = pollPeriod(timeoutMs);
  bool stopping = false;
  LaunchState::Clock::time_point giveUpAt;
  while (s.active > 0) {
    if (s.doneCv.wait_for(lock, period, [&] { return s.active == 0; }))
      break;
    if (!s.abort.load(std::memory_order_acquire)) {
      // Workers check the watchdog while they wait; this covers launches
      // whose workers are all inside task bodies.
      uint64_t epoch = s.epoch;
      lock.unlock();
      s.checkWatchdog(epoch);
      lock.lock();
      continue;
    }
    // Aborted: waiting workers leave at their next poll. Only a task body
    // can keep a worker longer; after another timeout, stop waiting for it.
    LaunchState::Clock::time_point now = LaunchState::Clock::now();
    if (!stopping) {
      stopping = true;
      giveUpAt = now + std::chrono::milliseconds(timeoutMs);
      continue;
    }
    if (now < giveUpAt)
      continue;
    std::string stuck;
    for (int32_t w = 0; w < s.numWorkers; ++w) {
      const WorkerState &state = s.workers[w];
      if (state.phase.load(std::memory_order_acquire) != kWorkerRunning)
        continue;
      stuck +=
          "\n  worker " + std::to_string(w) + " is still inside task " +
          s.table->describeTask(state.task.load(std::memory_order_relaxed)) +
          "; its thread is abandoned";
    }
    s.failure = Status(s.failure.code(), s.failure.message() + stuck);
    break;
  }
  s.inFlight = false;
  if (!s.failure.ok())
    return s.failure;
  s.lastLaunchNs = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(s.endTime -
                                                           s.startTime)
          .count());
  return Status();
}

bool Executor::inFlight() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->inFlight;
}

uint64_t Executor::lastLaunchNs() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->lastLaunchNs;
}

uint64_t Executor::eventCount(int32_t event) const {
  return state_->counters[event].count.load(std::memory_order_acquire);
}

Status Executor::readProfile(std::vector<LoomTaskTiming> *records,
                             double *nsPerTick) const {
  const LaunchState &s = *state_;
  // The workers' writes happen before their last decrement of `active`
  // under mu, which synchronize waited for.
  std::lock_guard<std::mutex> lock(state_->mu);
  const size_t n = static_cast<size_t>(s.table->numTasks() + s.numWorkers);
  records->assign(s.timings.get(), s.timings.get() + n);
  *nsPerTick = 1;
  return Status();
}

} // namespace rt
} // namespace loom
