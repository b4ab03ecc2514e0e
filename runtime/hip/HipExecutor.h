//===- HipExecutor.h - Running a program as one HIP kernel ------*- C++ -*-===//
//
// The HIP backend's Executable, the same design as the CUDA backend's. At
// load: the code object becomes a module (hipModuleLoadData), the kernel
// (hipModuleGetFunction) is checked to fit num_workers co-resident blocks
// (hipModuleOccupancyMaxActiveBlocksPerMultiprocessor x CUs), and the
// program's memory is allocated once: event counters and dynamic mode's
// queue counter (zeroed once, never again: epochs make resets unnecessary),
// the device copy of the bindings,
// the workspace, and one pinned, host-mapped, coherent block holding each
// worker's LoomWorkerStatus and the abort flag, which the host reads and
// writes while the kernel runs.
//
// A launch is one hipModuleLaunchCooperativeKernel of num_workers blocks on
// the program's own stream, between two timing events. Synchronize polls
// the stream (hipStreamQuery) and runs the watchdog on the mapped status
// records (runtime/src/DeviceWatchdog.h); to stop a stuck launch it raises
// the abort flag, which the kernel's waits check.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HIP_HIPEXECUTOR_H
#define LOOM_RUNTIME_HIP_HIPEXECUTOR_H

#include "runtime/hip/HipContext.h"
#include "runtime/src/Backend.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/DeviceWatchdog.h"
#include "runtime/src/ProgramTable.h"

#include <memory>
#include <vector>

namespace loom {
namespace rt {
namespace hip {

class HipExecutor final : public Executable {
public:
  static Status create(std::shared_ptr<HipContext> context,
                       std::shared_ptr<const ProgramTable> table,
                       std::shared_ptr<const DeviceArtifact> artifact,
                       std::unique_ptr<Executable> *out);

  /// Waits for the launch in flight, then frees the program's module, memory
  /// and stream. A kernel that did not exit after its abort flag is left
  /// running with everything it uses (freeing would block forever).
  ~HipExecutor() override;

  /// Needs hipStreamWaitValue32 on mapped host memory: checked once by
  /// queueing a wait that is already satisfied.
  Status prepareQueuedLaunch() override;
  /// Not yet: the AMD kernels take no bindings by value.
  Status streamLaunchSupport() const override;
  Status launch(const LaunchParams &params) override;
  Status synchronize() override;
  bool inFlight() const override { return inFlight_; }
  uint64_t lastLaunchNs() const override { return lastLaunchNs_; }
  /// Read from the device; UINT64_MAX if the read fails.
  uint64_t eventCount(int32_t event) const override;

private:
  HipExecutor(std::shared_ptr<HipContext> context,
              std::shared_ptr<const ProgramTable> table,
              std::shared_ptr<const DeviceArtifact> artifact);
  Status load();
  Status loadKernel();
  Status allocate();
  void release();
  void raiseAbort();
  /// The event counters now, for a report; empty if they cannot be read
  /// (after a fault) or not within 100 ms (the copy may be queued behind the
  /// kernel).
  std::vector<uint64_t> readCounts() const;
  /// "" when the HIP runtime knows `ptr` as memory a kernel may use.
  std::string unknownPointer(const void *ptr) const;
  WatchHooks hooks();
  Status outcome(const LaunchWatch &w, const WatchHooks &hooks);

  /// "kernel 'k' (gfx950) of program 'p' launch 3".
  std::string what() const;

  std::shared_ptr<HipContext> ctx_;
  std::shared_ptr<const ProgramTable> table_;
  std::shared_ptr<const DeviceArtifact> artifact_;
  const int32_t numWorkers_;

  hipModule_t module_ = nullptr;
  hipFunction_t function_ = nullptr;
  hipStream_t stream_ = nullptr;
  hipEvent_t start_ = nullptr;
  hipEvent_t end_ = nullptr;
  void *events_ = nullptr;
  void *bindings_ = nullptr;
  void *workspace_ = nullptr;
  // Pinned, mapped, coherent: status records | abort flag | launch gate |
  // staging for the bindings | a copy of the counters for reports.
  void *host_ = nullptr;
  void *hostDevice_ = nullptr;
  volatile LoomWorkerStatus *status_ = nullptr;
  volatile int32_t *abort_ = nullptr;
  LoomBinding *staging_ = nullptr;
  uint64_t *countsHost_ = nullptr; // where readCounts copies the counters
  size_t abortOffset_ = 0;
  // Queued launches wait for *gate_ >= their number; launch() opens it.
  volatile uint32_t *gate_ = nullptr;
  size_t gateOffset_ = 0;
  uint32_t gatesOpened_ = 0;
  DeviceBindingChecker bindingChecker_;

  bool inFlight_ = false;
  bool timed_ = false; // both timing events of the launch were recorded
  bool wedged_ = false;
  hipError_t streamResult_ = hipSuccess; // hipStreamQuery's last answer
  uint64_t epoch_ = 0;
  uint32_t watchdogMs_ = LOOMRT_DEFAULT_WATCHDOG_MS;
  uint64_t timeoutCycles_ = 0;
  uint64_t lastLaunchNs_ = 0;
};

} // namespace hip
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HIP_HIPEXECUTOR_H
