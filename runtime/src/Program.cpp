//===- Program.cpp - A loaded program: table, bindings, epochs ------------===//

#include "runtime/src/Program.h"

#include "runtime/src/Binding.h"

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

Status Program::launch() {
  if (executable_->inFlight())
    if (Status s = synchronize(); !s.ok())
      return s;
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
  LaunchParams params;
  params.bindings = bindings_.data();
  params.epoch = epoch_ + 1;
  params.watchdogMs = watchdogMs_;
  if (Status s = executable_->launch(params); !s.ok())
    return s;
  epoch_ = params.epoch;
  return Status();
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
