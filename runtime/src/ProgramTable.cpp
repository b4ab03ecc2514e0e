//===- ProgramTable.cpp - A checked, owned copy of a task table -----------===//

#include "runtime/src/ProgramTable.h"

#include <cstring>
#include <unordered_set>

namespace loom {
namespace rt {

namespace {

/// Largest number of tasks an arrival-count message lists by name.
constexpr int kMaxListedTriggers = 8;

const char *orEmpty(const char *text) { return text ? text : ""; }

} // namespace

Status ProgramTable::create(const LoomProgramDesc &desc,
                            const std::string &origin, uint32_t flags,
                            std::shared_ptr<const ProgramTable> *out) {
  // The version decides the layout of everything after it, so check it
  // before reading any other field.
  if (desc.abi_version != LOOM_PROGRAM_ABI_VERSION)
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, "program (", origin,
                     ") has ABI version ", desc.abi_version,
                     "; this runtime reads version ", LOOM_PROGRAM_ABI_VERSION);
  std::shared_ptr<ProgramTable> table(new ProgramTable());
  table->origin_ = origin;
  if (Status s = table->copyAndCheck(desc, flags); !s.ok())
    return s;
  *out = std::move(table);
  return Status();
}

int32_t ProgramTable::findBuffer(const char *name) const {
  for (int32_t i = 0; i < numBuffers(); ++i)
    if (bufferNames_[i] == name)
      return i;
  return -1;
}

std::string ProgramTable::describeTask(int32_t task) const {
  return quoted(taskNames_[task]) + " (id " + std::to_string(task) + ")";
}

Status ProgramTable::copyAndCheck(const LoomProgramDesc &d, uint32_t flags) {
  name_ = orEmpty(d.name);
  target_ = orEmpty(d.target);
  desc_ = d;
  if (d.mode != LOOM_SCHEDULE_STATIC && d.mode != LOOM_SCHEDULE_DYNAMIC)
    return invalid("mode is ", d.mode, " (0: static, 1: dynamic)");
  if (d.num_workers < 1)
    return invalid("num_workers is ", d.num_workers,
                   "; a program needs at least one worker");
  if (d.num_tasks < 0 || d.num_events < 0 || d.num_buffers < 0)
    return invalid("negative count (num_tasks ", d.num_tasks, ", num_events ",
                   d.num_events, ", num_buffers ", d.num_buffers, ")");
  if (d.workspace_bytes < 0)
    return invalid("workspace_bytes is ", d.workspace_bytes);
  if (!d.run_task)
    return invalid("run_task is null");

  // Names first: every later message names tasks.
  taskNames_.resize(d.num_tasks);
  for (int32_t t = 0; t < d.num_tasks; ++t)
    taskNames_[t] =
        d.task_names && d.task_names[t] ? d.task_names[t] : "unnamed";

  if (d.num_buffers > 0 && !d.buffers)
    return invalid("buffers is null but num_buffers is ", d.num_buffers);
  buffers_.assign(d.buffers, d.buffers + d.num_buffers);
  if (Status s = checkBuffers(); !s.ok())
    return s;
  if (Status s = checkWorkers(); !s.ok())
    return s;
  if (Status s = checkEdges("waits on", d.task_wait_begin, d.wait_events,
                            taskWaitBegin_, waitEvents_);
      !s.ok())
    return s;
  if (Status s = checkEdges("triggers", d.task_trigger_begin, d.trigger_events,
                            taskTriggerBegin_, triggerEvents_);
      !s.ok())
    return s;

  if (d.num_events > 0 && !d.event_needs)
    return invalid("event_needs is null but num_events is ", d.num_events);
  eventNeeds_.assign(d.event_needs, d.event_needs + d.num_events);
  for (int32_t e = 0; e < d.num_events; ++e)
    if (eventNeeds_[e] < 0)
      return invalid("event ", e, " needs ", eventNeeds_[e], " arrivals");
  if (!(flags & LOOMRT_PROGRAM_SKIP_ARRIVAL_CHECK))
    if (Status s = checkArrivals(); !s.ok())
      return s;
  fillDesc();
  return Status();
}

Status ProgramTable::checkBuffers() {
  bufferNames_.resize(buffers_.size());
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    LoomBufferDesc &b = buffers_[i];
    if (!b.name)
      return invalid("buffer ", i, " has no name");
    bufferNames_[i] = b.name;
    std::string who =
        "buffer " + quoted(b.name) + " (index " + std::to_string(i) + ")";
    if (!seen.insert(b.name).second)
      return invalid("two buffers are named ", quoted(b.name));
    if (b.role < LOOM_ROLE_INPUT || b.role > LOOM_ROLE_META)
      return invalid(who, " has role ", b.role);
    if (loomrt_elem_bytes(b.elem) == 0)
      return invalid(who, " has element type ", b.elem);
    if (b.rank < 0 || b.rank > LOOM_MAX_RANK)
      return invalid(who, " has rank ", b.rank, " (at most ", LOOM_MAX_RANK,
                     ")");
    bool dynamic = false;
    for (int32_t k = 0; k < b.rank; ++k)
      dynamic |= b.dims[k] < 0;
    if (dynamic && b.bound <= 0)
      return invalid(who, " has a dynamic dimension but bound ", b.bound);
    // Dims past the rank are not part of the shape; zero them so copies and
    // comparisons never see stale values.
    for (int32_t k = b.rank; k < LOOM_MAX_RANK; ++k)
      b.dims[k] = 0;
  }
  return Status();
}

Status ProgramTable::checkWorkers() {
  const LoomProgramDesc &d = desc_;
  if (d.num_tasks > 0 && !d.worker_tasks)
    return invalid("worker_tasks is null");
  workerTasks_.assign(d.worker_tasks, d.worker_tasks + d.num_tasks);
  // worker_begin only matters in static mode; a dynamic program may leave
  // it out.
  if (!isDynamic()) {
    if (!d.worker_begin)
      return invalid("worker_begin is null in static mode");
    workerBegin_.assign(d.worker_begin, d.worker_begin + d.num_workers + 1);
    if (workerBegin_[0] != 0)
      return invalid("worker_begin[0] is ", workerBegin_[0], ", not 0");
    for (int32_t w = 0; w < d.num_workers; ++w)
      if (workerBegin_[w + 1] < workerBegin_[w])
        return invalid("worker_begin decreases: worker_begin[", w + 1,
                       "] = ", workerBegin_[w + 1], " after ", workerBegin_[w]);
    if (workerBegin_[d.num_workers] != d.num_tasks)
      return invalid("worker_begin[", d.num_workers, "] is ",
                     workerBegin_[d.num_workers], ", not num_tasks (",
                     d.num_tasks, ")");
  }
  // Every task runs exactly once per launch; the epoch arithmetic of the
  // event counters depends on it.
  std::vector<int32_t> where(d.num_tasks, -1);
  for (int32_t i = 0; i < d.num_tasks; ++i) {
    int32_t t = workerTasks_[i];
    if (t < 0 || t >= d.num_tasks)
      return invalid("worker_tasks[", i, "] is ", t, ", not a task (",
                     d.num_tasks, " tasks)");
    if (where[t] >= 0)
      return invalid("task ", describeTask(t),
                     " is listed twice in worker_tasks (at ", where[t], " and ",
                     i, ")");
    where[t] = i;
  }
  return Status();
}

Status ProgramTable::checkEdges(const char *what, const int32_t *begin,
                                const int32_t *events,
                                std::vector<int32_t> &beginCopy,
                                std::vector<int32_t> &eventsCopy) {
  const LoomProgramDesc &d = desc_;
  if (!begin) {
    if (d.num_tasks > 0)
      return invalid("the task ", what, " offsets are null");
    beginCopy.assign(1, 0);
    return Status();
  }
  beginCopy.assign(begin, begin + d.num_tasks + 1);
  if (beginCopy[0] != 0)
    return invalid("the task ", what, " offsets start at ", beginCopy[0],
                   ", not 0");
  for (int32_t t = 0; t < d.num_tasks; ++t)
    if (beginCopy[t + 1] < beginCopy[t])
      return invalid("the task ", what, " offsets decrease at task ",
                     describeTask(t));
  int32_t total = beginCopy[d.num_tasks];
  if (total > 0 && !events)
    return invalid("the ", what, " event list is null");
  eventsCopy.assign(events, events + total);
  for (int32_t t = 0; t < d.num_tasks; ++t)
    for (int32_t i = beginCopy[t]; i < beginCopy[t + 1]; ++i)
      if (eventsCopy[i] < 0 || eventsCopy[i] >= d.num_events)
        return invalid("task ", describeTask(t), " ", what, " event ",
                       eventsCopy[i], ", but there are ", d.num_events,
                       " events");
  return Status();
}

Status ProgramTable::checkArrivals() const {
  // Each task runs once per launch, so event e gains exactly its number of
  // trigger entries per launch; that must equal what its waiters expect.
  std::vector<std::vector<int32_t>> triggeredBy(desc_.num_events);
  for (int32_t t = 0; t < desc_.num_tasks; ++t)
    for (int32_t i = taskTriggerBegin_[t]; i < taskTriggerBegin_[t + 1]; ++i)
      triggeredBy[triggerEvents_[i]].push_back(t);
  for (int32_t e = 0; e < desc_.num_events; ++e) {
    const std::vector<int32_t> &from = triggeredBy[e];
    if (static_cast<int64_t>(from.size()) == eventNeeds_[e])
      continue;
    std::string list;
    for (size_t i = 0; i < from.size() && i < kMaxListedTriggers; ++i)
      list += (i ? ", " : "") + describeTask(from[i]);
    if (from.size() > kMaxListedTriggers)
      list += ", ...";
    return invalid("event ", e, " needs ", eventNeeds_[e],
                   " arrivals per launch but has ", from.size(),
                   from.size() == 1 ? " trigger" : " triggers",
                   from.empty() ? std::string() : " (" + list + ")");
  }
  return Status();
}

void ProgramTable::fillDesc() {
  desc_.name = name_.c_str();
  desc_.target = target_.c_str();
  for (size_t i = 0; i < buffers_.size(); ++i)
    buffers_[i].name = bufferNames_[i].c_str();
  desc_.buffers = buffers_.data();
  desc_.worker_begin = workerBegin_.empty() ? nullptr : workerBegin_.data();
  desc_.worker_tasks = workerTasks_.data();
  desc_.task_wait_begin = taskWaitBegin_.data();
  desc_.wait_events = waitEvents_.data();
  desc_.task_trigger_begin = taskTriggerBegin_.data();
  desc_.trigger_events = triggerEvents_.data();
  desc_.event_needs = eventNeeds_.data();
  taskNamePtrs_.resize(taskNames_.size());
  for (size_t t = 0; t < taskNames_.size(); ++t)
    taskNamePtrs_[t] = taskNames_[t].c_str();
  desc_.task_names = taskNamePtrs_.data();
}

} // namespace rt
} // namespace loom
