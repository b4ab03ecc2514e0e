//===- Program.cpp - A loaded program: table, bindings, epochs ------------===//

#include "runtime/src/Program.h"

#include "runtime/src/Binding.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace loom {
namespace rt {

namespace {

/// The watchdog timeout from LOOM_WATCHDOG_MS, or the default. A value that
/// is set but unusable is an error rather than silently ignored: someone set
/// it to debug a hang and would otherwise wait 10 s for nothing.
Status watchdogFromEnv(uint32_t *ms) {
  *ms = LOOMRT_DEFAULT_WATCHDOG_MS;
  const char *text = std::getenv("LOOM_WATCHDOG_MS");
  if (!text)
    return Status();
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-' || value == 0 ||
      value > std::numeric_limits<uint32_t>::max())
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT,
                     "LOOM_WATCHDOG_MS=", quoted(text),
                     " is not a timeout in milliseconds (1 to ",
                     std::numeric_limits<uint32_t>::max(), ")");
  *ms = static_cast<uint32_t>(value);
  return Status();
}

} // namespace

Status Program::create(std::shared_ptr<const ProgramTable> table,
                       std::unique_ptr<Executable> executable,
                       std::unique_ptr<Program> *out) {
  uint32_t ms = 0;
  if (Status s = watchdogFromEnv(&ms); !s.ok())
    return s;
  out->reset(new Program(std::move(table), std::move(executable), ms));
  return Status();
}

Program::Program(std::shared_ptr<const ProgramTable> table,
                 std::unique_ptr<Executable> executable, uint32_t watchdogMs)
    : table_(std::move(table)), executable_(std::move(executable)),
      bindings_(table_->numBuffers()), bound_(table_->numBuffers(), false),
      watchdogMs_(watchdogMs) {}

Program::~Program() {
  // Errors of a launch nobody synchronized are dropped here: there is no
  // caller left to tell. The executable still stops its workers.
  if (executable_->inFlight())
    (void)executable_->synchronize();
}

Status Program::checkBufferIndex(int32_t index) const {
  if (index < 0 || index >= table_->numBuffers())
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "program ",
                     quoted(table_->name()), ": buffer index ", index,
                     " out of range (", table_->numBuffers(), " buffers)");
  return Status();
}

Status Program::findBuffer(const char *name, int32_t *index) const {
  if (!name)
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "program ",
                     quoted(table_->name()), ": buffer name is null");
  *index = table_->findBuffer(name);
  if (*index >= 0)
    return Status();
  std::string names;
  for (int32_t i = 0; i < table_->numBuffers(); ++i)
    names += (i ? ", " : "") + quoted(table_->buffer(i).name);
  return makeError(LOOMRT_ERROR_NOT_FOUND, "program ", quoted(table_->name()),
                   " has no buffer named ", quoted(name),
                   " (buffers: ", names.empty() ? "none" : names, ")");
}

Status Program::bind(int32_t index, void *data, const int64_t *dims,
                     int32_t rank) {
  if (Status s = checkBufferIndex(index); !s.ok())
    return s;
  LoomBinding binding;
  if (Status s = checkBinding(*table_, index, data, dims, rank, &binding);
      !s.ok())
    return s;
  bindings_[index] = binding;
  bound_[index] = true;
  return Status();
}

Status Program::bindByName(const char *name, void *data, const int64_t *dims,
                           int32_t rank) {
  int32_t index = -1;
  if (Status s = findBuffer(name, &index); !s.ok())
    return s;
  return bind(index, data, dims, rank);
}

Status Program::setWatchdogMs(uint32_t ms) {
  if (ms == 0)
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "program ",
                     quoted(table_->name()),
                     ": the watchdog timeout must be at least 1 ms");
  watchdogMs_ = ms;
  return Status();
}

Status Program::setQueuedLaunch(bool queued) {
  if (queued && !queued_) {
    // The executable's check queues work on the launch's stream: the launch
    // in flight ends first, under the watchdog.
    if (executable_->inFlight())
      if (Status s = synchronize(); !s.ok())
        return s;
    if (Status s = executable_->prepareQueuedLaunch(); !s.ok())
      return s;
  }
  queued_ = queued;
  return Status();
}

Status Program::checkLaunchable() const {
  if (!failure_.ok())
    return makeError(
        LOOMRT_ERROR_PROGRAM_FAILED, "program ", quoted(table_->name()),
        " cannot launch after launch ", failedEpoch_,
        " failed; load it again. That failure: ", failure_.message());
  std::string unbound;
  for (int32_t i = 0; i < table_->numBuffers(); ++i)
    if (!bound_[i])
      unbound += (unbound.empty() ? "" : ", ") +
                 quoted(table_->buffer(i).name) + " (index " +
                 std::to_string(i) + ")";
  if (!unbound.empty())
    return makeError(LOOMRT_ERROR_NOT_BOUND, "program ", quoted(table_->name()),
                     " cannot launch: buffers not bound: ", unbound);
  return Status();
}

Status Program::launch() {
  if (executable_->inFlight())
    if (Status s = synchronize(); !s.ok())
      return s;
  if (Status s = checkLaunchable(); !s.ok())
    return s;
  LaunchParams params;
  if (deviceNumbered_) {
    // The caller has synchronized its stream (loomrt.h): a launch of
    // theirs that failed is reported now, and the count read is what the
    // kernel will number this launch after.
    if (Status s = settleStreamLaunches(); !s.ok())
      return s;
    params.numberedOnDevice = true;
  }
  params.bindings = bindings_.data();
  params.epoch = epoch_ + 1;
  params.watchdogMs = watchdogMs_;
  params.queued = queued_;
  if (Status s = executable_->launch(params); !s.ok())
    return s;
  epoch_ = params.epoch;
  return Status();
}

Status Program::launchOnStream(void *stream) {
  if (Status s = executable_->streamLaunchSupport(); !s.ok())
    return s;
  // The launch in flight ends first, under the watchdog; its failure is
  // this call's, as for loomrt_launch.
  if (executable_->inFlight())
    if (Status s = synchronize(); !s.ok())
      return s;
  if (Status s = checkLaunchable(); !s.ok())
    return s;
  if (!deviceNumbered_) {
    // The control words are zero (nothing numbered on the device yet); the
    // core's own launches so far must count.
    if (epoch_ > 0)
      if (Status s = executable_->beginStreamLaunches(epoch_, stream); !s.ok())
        return s;
    deviceNumbered_ = true;
  }
  LaunchParams params;
  params.bindings = bindings_.data();
  params.epoch = 0; // the kernel numbers it
  params.numberedOnDevice = true;
  params.watchdogMs = watchdogMs_;
  bool captured = false;
  if (Status s = executable_->launchOnStream(params, stream, &captured);
      !s.ok())
    return s;
  if (!captured)
    ++streamQueued_;
  return Status();
}

Status Program::check() {
  if (!deviceNumbered_)
    return Status();
  // A launch of the core's own still running would move the counts.
  if (executable_->inFlight())
    if (Status s = synchronize(); !s.ok())
      return s;
  return settleStreamLaunches();
}

Status Program::settleStreamLaunches() {
  StreamCheck found;
  Status s = executable_->checkStreamLaunches(epoch_ + streamQueued_, &found);
  if (s.code() == LOOMRT_ERROR_NOT_READY)
    return s; // the caller may synchronize and ask again
  streamQueued_ = 0;
  if (s.ok()) {
    completedLaunches_ += found.completed - epoch_;
    epoch_ = found.completed;
    return s;
  }
  if (found.reset) {
    // The counters start over, the control words with them.
    epoch_ = 0;
    return s;
  }
  // The counters could not be read or reset (a fault): nothing can be
  // trusted any more.
  if (failure_.ok()) {
    failure_ = s;
    failedEpoch_ = epoch_ + 1;
  }
  return s;
}

Status Program::synchronize() {
  if (!executable_->inFlight())
    return Status();
  Status s = executable_->synchronize();
  if (!s.ok()) {
    if (failure_.ok()) {
      failure_ = s;
      failedEpoch_ = epoch_;
    }
    return s;
  }
  ++completedLaunches_;
  return Status();
}

Status Program::lastLaunchNs(uint64_t *ns) const {
  if (completedLaunches_ == 0)
    return makeError(LOOMRT_ERROR_NOT_READY, "program ", quoted(table_->name()),
                     " has not completed a launch yet");
  *ns = executable_->lastLaunchNs();
  return Status();
}

Status Program::profile(loomrt_task_timing *tasks, int32_t numTasks,
                        loomrt_task_timing *workers,
                        int32_t numWorkers) const {
  const std::string who = "program " + quoted(table_->name());
  if ((tasks && numTasks != table_->numTasks()) || (!tasks && numTasks != 0) ||
      (workers && numWorkers != table_->numWorkers()) ||
      (!workers && numWorkers != 0))
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, who, ": asked for ",
                     numTasks, " task and ", numWorkers,
                     " worker records; it has ", table_->numTasks(),
                     " tasks and ", table_->numWorkers(),
                     " workers (pass those counts, or a null array and 0)");
  if (!executable_->profiled())
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, who,
                     " records no per-task timing (build it with loomc "
                     "--profile)");
  if (executable_->inFlight())
    return makeError(LOOMRT_ERROR_NOT_READY, who,
                     ": a launch is in flight; synchronize before reading "
                     "its timing");
  if (streamQueued_ > 0)
    return makeError(LOOMRT_ERROR_NOT_READY, who,
                     ": its launches on a stream are not checked yet; "
                     "synchronize the stream and call loomrt_program_check "
                     "before reading their timing");
  if (!failure_.ok())
    return makeError(LOOMRT_ERROR_PROGRAM_FAILED, who, ": launch ",
                     failedEpoch_, " failed, so its timing is incomplete");
  if (completedLaunches_ == 0)
    return makeError(LOOMRT_ERROR_NOT_READY, who,
                     " has not completed a launch yet");

  std::vector<LoomTaskTiming> raw;
  double nsPerTick = 1;
  if (Status s = executable_->readProfile(&raw, &nsPerTick); !s.ok())
    return s;
  const size_t nt = static_cast<size_t>(table_->numTasks());
  const size_t nw = static_cast<size_t>(table_->numWorkers());
  if (raw.size() != nt + nw)
    return makeError(LOOMRT_ERROR_INTERNAL, who, ": the backend returned ",
                     raw.size(), " timing records, expected ", nt + nw);
  // Every record must be this launch's and in order; a stale or torn one
  // would put a task where it never ran.
  const uint32_t epoch = static_cast<uint32_t>(epoch_);
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < raw.size(); ++i) {
    const LoomTaskTiming &r = raw[i];
    auto what = [&] {
      return i < nt ? "task " + table_->describeTask(static_cast<int32_t>(i))
                    : "worker " + std::to_string(i - nt);
    };
    if (r.epoch != epoch)
      return makeError(LOOMRT_ERROR_INTERNAL, who, ": the timing record of ",
                       what(), " is from launch ", r.epoch, ", not launch ",
                       epoch, " (the kernel did not record it)");
    if (r.worker < 0 || r.worker >= table_->numWorkers() ||
        (i >= nt && static_cast<size_t>(r.worker) != i - nt))
      return makeError(LOOMRT_ERROR_INTERNAL, who, ": the timing record of ",
                       what(), " names worker ", r.worker);
    if (r.start < r.pick || r.end < r.start)
      return makeError(LOOMRT_ERROR_INTERNAL, who, ": the timing record of ",
                       what(), " is out of order (pick ", r.pick, ", start ",
                       r.start, ", end ", r.end, ")");
    if (i >= nt)
      origin = std::min(origin, r.pick);
  }
  auto convert = [&](const LoomTaskTiming &r) {
    // A task picked before the first worker record cannot be: workers
    // record their entry before their first pick.
    auto ns = [&](uint64_t t) {
      return t <= origin ? uint64_t(0)
                         : static_cast<uint64_t>(
                               static_cast<double>(t - origin) * nsPerTick +
                               0.5);
    };
    loomrt_task_timing out{};
    out.pick_ns = ns(r.pick);
    out.start_ns = ns(r.start);
    out.end_ns = ns(r.end);
    out.worker = r.worker;
    return out;
  };
  for (size_t i = 0; tasks && i < nt; ++i)
    tasks[i] = convert(raw[i]);
  for (size_t i = 0; workers && i < nw; ++i)
    workers[i] = convert(raw[nt + i]);
  return Status();
}

Status Program::eventCount(int32_t event, uint64_t *count) const {
  if (event < 0 || event >= table_->numEvents())
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "program ",
                     quoted(table_->name()), ": event ", event,
                     " out of range (", table_->numEvents(), " events)");
  *count = executable_->eventCount(event);
  return Status();
}

} // namespace rt
} // namespace loom
