//===- CudaExecutor.h - Running a program as one CUDA kernel ----*- C++ -*-===//
//
// The CUDA backend's Executable. At load: the code object becomes a module,
// the kernel is checked to fit num_workers co-resident blocks, and the
// program's memory is allocated once: event counters (zeroed once, never
// again: epochs make resets unnecessary), the device copy of the bindings,
// the workspace, and one pinned, host-mapped block holding each worker's
// LoomWorkerStatus and the abort flag, which the host reads and writes while
// the kernel runs.
//
// A launch is one cooperative launch of num_workers blocks on the program's
// own stream, between two timing events. Synchronize polls the stream and
// runs the watchdog on the mapped status records (CudaWatchdog.h); to stop
// a stuck launch it raises the abort flag, which the kernel's waits check.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H
#define LOOM_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/cuda/CudaArtifact.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/src/Backend.h"
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
                       std::shared_ptr<const CudaArtifact> artifact,
                       std::unique_ptr<Executable> *out);

  /// Waits for the launch in flight, then frees the program's module, memory
  /// and stream. A kernel that did not exit after its abort flag is left
  /// running with everything it uses (freeing would block forever).
  ~CudaExecutor() override;

  Status launch(const LaunchParams &params) override;
  Status synchronize() override;
  bool inFlight() const override { return inFlight_; }
  uint64_t lastLaunchNs() const override { return lastLaunchNs_; }
  /// Read from the device; UINT64_MAX if the read fails.
  uint64_t eventCount(int32_t event) const override;

private:
  using Clock = std::chrono::steady_clock;

  CudaExecutor(std::shared_ptr<CudaContext> context,
               std::shared_ptr<const ProgramTable> table,
               std::shared_ptr<const CudaArtifact> artifact);
  Status load();
  /// Each binding must be device-usable memory and, when loomrt_malloc made
  /// it, fit its allocation: a kernel reading past it corrupts silently, and
  /// a host pointer faults the whole context.
  Status checkBindings(const LoomBinding *bindings);
  Status loadKernel();
  Status allocate();
  void release();

  /// What the watchdog saw while the kernel ran.
  struct Watch {
    CUresult result = CUDA_SUCCESS; // cuStreamQuery's last answer
    bool aborted = false;           // the abort flag was raised
    bool stillRunning = false;      // ... and the kernel did not exit
    std::string stallReport;        // set when the watchdog raised it
  };
  Watch watch();
  Status outcome(const Watch &w);
  void raiseAbort();
  /// The event counters now, for a report; empty if they cannot be read
  /// (after a fault). The memory stream does not wait for the kernel.
  std::vector<uint64_t> readCounts() const;

  /// "kernel 'k' of program 'p' launch 3".
  std::string what() const;

  std::shared_ptr<CudaContext> ctx_;
  std::shared_ptr<const ProgramTable> table_;
  std::shared_ptr<const CudaArtifact> artifact_;
  const int32_t numWorkers_;

  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr;
  CUevent end_ = nullptr;
  CUdeviceptr events_ = 0;
  CUdeviceptr bindings_ = 0;
  CUdeviceptr workspace_ = 0;
  // Pinned, mapped: status records | abort flag | staging for the bindings.
  void *host_ = nullptr;
  CUdeviceptr hostDevice_ = 0;
  volatile LoomWorkerStatus *status_ = nullptr;
  volatile int32_t *abort_ = nullptr;
  LoomBinding *staging_ = nullptr;
  size_t abortOffset_ = 0;

  // The bindings checkBindings last passed, and the allocation generation
  // then: launches with the same bindings skip the driver queries.
  std::vector<LoomBinding> checked_;
  uint64_t checkedGeneration_ = 0;

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
