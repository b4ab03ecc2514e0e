//===- ProgramTable.h - A checked, owned copy of a task table ---*- C++ -*-===//
//
// Every backend runs the same LoomProgramDesc. The runtime copies it once at
// load (so in-process descriptors may be temporaries and a program library
// may be reloaded) and checks it, so executors can index the arrays without
// bounds checks and every later message can name tasks and buffers.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_PROGRAMTABLE_H
#define LOOM_RUNTIME_SRC_PROGRAMTABLE_H

#include "runtime/src/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace loom {
namespace rt {

class ProgramTable {
public:
  /// Copies and checks `desc`. `origin` says where it came from (a path, or
  /// "in-process descriptor") in messages. `flags` are LOOMRT_PROGRAM_*.
  static Status create(const LoomProgramDesc &desc, const std::string &origin,
                       uint32_t flags,
                       std::shared_ptr<const ProgramTable> *out);

  ProgramTable(const ProgramTable &) = delete;
  ProgramTable &operator=(const ProgramTable &) = delete;

  /// The copy; its pointers point into this table.
  const LoomProgramDesc &desc() const { return desc_; }
  const std::string &name() const { return name_; }
  const std::string &origin() const { return origin_; }

  int32_t numWorkers() const { return desc_.num_workers; }
  int32_t numTasks() const { return desc_.num_tasks; }
  int32_t numEvents() const { return desc_.num_events; }
  int32_t numBuffers() const { return desc_.num_buffers; }
  bool isDynamic() const { return desc_.mode == LOOM_SCHEDULE_DYNAMIC; }

  const LoomBufferDesc &buffer(int32_t index) const { return buffers_[index]; }
  /// Index of the buffer called `name`, or -1.
  int32_t findBuffer(const char *name) const;

  /// "'linear#12[3]' (id 7)": how messages name a task.
  std::string describeTask(int32_t task) const;

  // Static mode: worker w's tasks are workerTasks()[workerBegin(w) ..
  // workerBegin(w + 1)). Dynamic mode: the queue order is workerTasks().
  int32_t workerBegin(int32_t worker) const { return workerBegin_[worker]; }
  const int32_t *workerTasks() const { return workerTasks_.data(); }

  const int32_t *waitsBegin(int32_t task) const {
    return waitEvents_.data() + taskWaitBegin_[task];
  }
  const int32_t *waitsEnd(int32_t task) const {
    return waitEvents_.data() + taskWaitBegin_[task + 1];
  }
  const int32_t *triggersBegin(int32_t task) const {
    return triggerEvents_.data() + taskTriggerBegin_[task];
  }
  const int32_t *triggersEnd(int32_t task) const {
    return triggerEvents_.data() + taskTriggerBegin_[task + 1];
  }
  int32_t eventNeeds(int32_t event) const { return eventNeeds_[event]; }

private:
  ProgramTable() = default;
  Status copyAndCheck(const LoomProgramDesc &desc, uint32_t flags);
  Status checkBuffers();
  Status checkWorkers();
  Status checkEdges(const char *what, const int32_t *begin,
                    const int32_t *events, std::vector<int32_t> &beginCopy,
                    std::vector<int32_t> &eventsCopy);
  Status checkArrivals() const;
  void fillDesc();
  /// "invalid program 'name' (origin): " + parts.
  template <typename... Parts> Status invalid(const Parts &...parts) const {
    return makeError(LOOMRT_ERROR_INVALID_PROGRAM, "invalid program ",
                     quoted(name_), " (", origin_, "): ", parts...);
  }

  LoomProgramDesc desc_{};
  std::string origin_;
  std::string name_;
  std::string target_;
  std::vector<std::string> bufferNames_;
  std::vector<LoomBufferDesc> buffers_;
  std::vector<int32_t> workerBegin_;
  std::vector<int32_t> workerTasks_;
  std::vector<int32_t> taskWaitBegin_;
  std::vector<int32_t> waitEvents_;
  std::vector<int32_t> taskTriggerBegin_;
  std::vector<int32_t> triggerEvents_;
  std::vector<int32_t> eventNeeds_;
  std::vector<std::string> taskNames_;
  std::vector<const char *> taskNamePtrs_;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_PROGRAMTABLE_H
