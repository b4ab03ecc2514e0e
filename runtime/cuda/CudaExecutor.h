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
// A launch on the caller's stream (loomrt_launch_on_stream) is the same
// cooperative launch with epoch 0: the kernel numbers it from its control
// words, and its bindings travel in its parameters (a kernel with
// LOOM_DEVICE_INLINE_BINDINGS; the runtime's own launches pass them that way
// too, and pass epoch 0 once the program launched on a stream). Nothing
// waits for it or watches it: the device's own timeout (timeout_cycles)
// ends a stuck wait, and checkStreamLaunches reads the control words and
// the records once the caller has synchronized.
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
  /// Needs a kernel that takes its bindings by value.
  Status streamLaunchSupport() const override;
  Status beginStreamLaunches(uint64_t completed, void *stream) override;
  Status launchOnStream(const LaunchParams &params, void *stream,
                        bool *captured) override;
  Status checkStreamLaunches(uint64_t atLeast, StreamCheck *out) override;
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

  /// The refusals every launch shares (a kernel that never stopped holds
  /// the SMs), then the context made current.
  Status readyToLaunch() const;
  /// The arguments of a launch numbered `epoch` (0: by the device).
  LoomKernelArgs kernelArgs(uint64_t epoch) const;
  /// A launch's bindings against the allocations (bindingChecker_), named
  /// by epoch_.
  Status checkBindings(const LoomBinding *bindings);
  /// No worker record, abort flag down: before a launch the host waits for,
  /// and whenever the counters start over.
  void clearStatus();
  /// The cooperative launch on `stream`, the bindings by value when the
  /// kernel takes them (the driver copies them during the call).
  CUresult enqueue(CUstream stream, LoomKernelArgs *args,
                   const LoomBinding *bindings);
  /// What a refused cooperative launch of `what` means.
  Status launchError(CUresult r, const std::string &what) const;
  /// Whether `stream` is being captured into a CUDA graph (false when the
  /// driver cannot say).
  bool capturing(void *stream) const;
  /// The control words (DeviceAbi.h), read on the memory stream.
  Status readControl(std::vector<unsigned long long> *words) const;
  /// After a failed stream launch: counters, queue and control words
  /// zeroed, records and flag cleared; launches restart at 1.
  Status resetCounters();
  /// Where the control words start, as a device address.
  CUdeviceptr controlAddress() const;

  /// How the shared watchdog (DeviceWatchdog.h) polls this launch's
  /// stream; busy() keeps cuStreamQuery's last answer in streamResult_.
  WatchHooks hooks();
  Status outcome(const LaunchWatch &w, const WatchHooks &hooks);
  void raiseAbort();
  /// The event counters now, for a report; empty if they cannot be read
  /// (after a fault). The memory stream does not wait for the kernel.
  std::vector<uint64_t> readCounts() const;

  /// "kernel 'k' of program 'p' launch 3" (epoch_ 0: "... launch on a
  /// stream").
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
  // A kernel without LOOM_DEVICE_INLINE_BINDINGS reads the bindings here,
  // copied before each launch; 0 for one that takes them by value.
  CUdeviceptr bindings_ = 0;
  const bool inlineBindings_;
  // The kernel's second parameter: max(1, num_buffers) bindings.
  std::vector<LoomBinding> byValue_;
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
