//===- Executor.h - Running a program on host threads -----------*- C++ -*-===//
//
// The host backend's Executable: num_workers persistent threads, created at
// load (so a machine that cannot give them fails at load, by name) and
// parked on a condition variable between launches. Exactly num_workers
// threads run a launch, so all workers are co-resident by construction.
// Every launch records per-task timing (Worker.cpp): the cost is three
// steady_clock reads per task, nothing next to a host task body.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_EXECUTOR_H
#define LOOM_RUNTIME_HOST_EXECUTOR_H

#include "runtime/src/Backend.h"
#include "runtime/src/Binding.h"
#include "runtime/src/ProgramTable.h"

#include <memory>
#include <pthread.h>
#include <vector>

namespace loom {
namespace rt {

struct LaunchState;

class Executor final : public Executable {
public:
  /// `library` keeps the code of table->desc().run_task loaded (null for
  /// in-process descriptors); `metaFault` names a meta value a task
  /// refused (null: the code alone).
  /// `allocations` and `device`: the device's record and description (it
  /// outlives its programs); each launch's bindings are checked against it.
  static Status create(std::shared_ptr<const ProgramTable> table,
                       std::shared_ptr<const void> library,
                       LoomGetMetaFaultFn metaFault,
                       const DeviceAllocations *allocations,
                       std::string device, std::unique_ptr<Executable> *out);

  /// Waits for the launch in flight, then stops the workers. A worker stuck
  /// inside a task body is abandoned, not waited for.
  ~Executor() override;

  /// Unsupported: there is no queue; the workers start when launch() wakes
  /// them.
  Status prepareQueuedLaunch() override;
  /// The host device has no stream to queue on.
  Status streamLaunchSupport() const override;
  Status launch(const LaunchParams &params) override;
  Status synchronize() override;
  bool inFlight() const override;
  uint64_t lastLaunchNs() const override;
  uint64_t eventCount(int32_t event) const override;
  /// Host workers always time their tasks (three steady_clock reads each).
  bool profiled() const override { return true; }
  Status readProfile(std::vector<LoomTaskTiming> *records,
                     double *nsPerTick) const override;

private:
  explicit Executor(std::shared_ptr<LaunchState> state);
  Status startWorkers();
  void stopWorkers();

  std::shared_ptr<LaunchState> state_;
  std::vector<pthread_t> threads_;
  const DeviceAllocations *allocations_ = nullptr;
  std::string device_;
  DeviceBindingChecker bindingChecker_;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_EXECUTOR_H
