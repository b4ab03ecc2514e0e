//===- CudaExecutor.h - Running a program as one CUDA kernel ----*- C++ -*-===//
//
// The CUDA backend's Executable. At load: the code object becomes a module,
// the kernel is checked to fit num_workers co-resident blocks, and the
// program's memory is allocated once: event counters (zeroed once, never
// again: epochs make resets unnecessary), the device copy of the bindings,
// the workspace, the timing records of a profiled artifact, and one pinned,
// host-mapped block holding each worker's LoomWorkerStatus and the abort
// flag, which the host reads and writes while the kernel runs.
//
// A launch is one cooperative launch of num_workers blocks on the program's
// own stream, between two timing events. Synchronize polls the stream and
// runs the shared watchdog (runtime/src/DeviceWatchdog.h) on the mapped
// status records; to stop a stuck launch it raises the abort flag, which the
// kernel's waits check.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H
#define LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/cuda/CudaContext.h"
#include "runtime/src/Backend.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/DeviceWatchdog.h"
#include "runtime/src/ProgramTable.h"

#include <chrono>
#include <memory>
#include <vector>

namespace loom {
namespace rt {
namespace cuda {

class CudaExecutor final : public Executable {
public:
  static Status create(std::shared_ptr<CudaContext> context,
                       std::shared_ptr<const ProgramTable> table,
                       std::shared_ptr<const DeviceArtifact> artifact,
                       std::unique_ptr<Executable> *out);

  /// Waits for the launch in flight, then frees the program's module, memory
  /// and stream. A kernel that did not exit after its abort flag is left
  /// running with everything it uses (freeing would block forever).
  ~CudaExecutor() override;

  /// Needs cuStreamWaitValue32 on mapped host memory: checked once by
  /// queueing a wait that is already satisfied.
  Status prepareQueuedLaunch() override;
  Status launch(const LaunchParams &params) override;
  Status synchronize() override;
  bool inFlight() const override { return inFlight_; }
  uint64_t lastLaunchNs() const override { return lastLaunchNs_; }
  /// Read from the device; UINT64_MAX if the read fails.
  uint64_t eventCount(int32_t event) const override;
  /// An artifact built with `loomc --profile` (LOOM_DEVICE_PROFILED).
  bool profiled() const override { return profile_ != 0; }
  /// Copies the records (%globaltimer ns) back from the device.
  Status readProfile(std::vector<LoomTaskTiming> *records,
                     double *nsPerTick) const override;

private:
  CudaExecutor(std::shared_ptr<CudaContext> context,
               std::shared_ptr<const ProgramTable> table,
               std::shared_ptr<const DeviceArtifact> artifact);
  Status load();
  /// For the binding check (DeviceBindingChecker): "" when the driver knows
  /// `ptr` (or cannot be asked), else the driver's error.
  std::string unknownPointer(const void *ptr) const;
  Status loadKernel();
  Status allocate();
  void release();

  /// How the shared watchdog (DeviceWatchdog.h) polls this launch's
  /// stream; busy() keeps cuStreamQuery's last answer in streamResult_.
  WatchHooks hooks();
  Status outcome(const LaunchWatch &w, const WatchHooks &hooks);
  void raiseAbort();
  /// The event counters now, for a report; empty if they cannot be read
  /// (after a fault). The memory stream does not wait for the kernel.
  std::vector<uint64_t> readCounts() const;

  /// "kernel 'k' of program 'p' launch 3".
  std::string what() const;

  std::shared_ptr<CudaContext> ctx_;
  std::shared_ptr<const ProgramTable> table_;
  std::shared_ptr<const DeviceArtifact> artifact_;
  const int32_t numWorkers_;

  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr;
  CUevent end_ = nullptr;
  CUdeviceptr events_ = 0;
  CUdeviceptr bindings_ = 0;
  CUdeviceptr workspace_ = 0;
  // Profiled artifacts: num_tasks + num_workers LoomTaskTiming records the
  // kernel rewrites every launch; 0 otherwise.
  CUdeviceptr profile_ = 0;
  // Pinned, mapped: status records | abort flag | launch gate | staging for
  // the bindings.
  void *host_ = nullptr;
  CUdeviceptr hostDevice_ = 0;
  volatile LoomWorkerStatus *status_ = nullptr;
  volatile int32_t *abort_ = nullptr;
  LoomBinding *staging_ = nullptr;
  size_t abortOffset_ = 0;
  // Queued launches wait for *gate_ >= their number; launch() opens it.
  volatile uint32_t *gate_ = nullptr;
  size_t gateOffset_ = 0;
  uint32_t gatesOpened_ = 0;

  // Each binding must be device-usable memory and, when loomrt_malloc made
  // it, fit its allocation; bindings that passed skip the driver queries.
  DeviceBindingChecker bindingChecker_;

  CUresult streamResult_ = CUDA_SUCCESS; // cuStreamQuery's last answer
  bool inFlight_ = false;
  bool timed_ = false; // both timing events of the launch were recorded
  bool wedged_ = false;
  uint64_t epoch_ = 0;
  uint32_t watchdogMs_ = LOOMRT_DEFAULT_WATCHDOG_MS;
  uint64_t timeoutCycles_ = 0;
  uint64_t lastLaunchNs_ = 0;
};

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H
