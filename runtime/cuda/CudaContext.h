//===- CudaContext.h - One CUDA device as the backend holds it --*- C++ -*-===//
//
// The state a device and its programs share: the driver, the device's
// primary context (retained once, released when the last holder goes), what
// the device is (CudaDeviceInfo), and the stream memory calls use. Programs
// hold it by shared_ptr, so a program whose kernel never exits can keep the
// context alive forever instead of tearing it down under a running kernel.
//
// The driver keeps a current context per host thread, and loomrt may be
// called from any thread, so every entry point calls makeCurrent() first.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDACONTEXT_H
#define LOOM_RUNTIME_CUDA_CUDACONTEXT_H

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/src/DeviceProgram.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace loom {
namespace rt {
namespace cuda {

/// Loads the driver and initializes it; `count` gets its number of devices
/// (0 when the driver says there are none).
Status initCuda(const CudaDriver **driver, int *count);

class CudaContext {
public:
  /// Retains device `ordinal`'s primary context and reads its attributes.
  /// An ordinal out of range names the count.
  static Status open(const CudaDriver &driver, int ordinal, int count,
                     std::shared_ptr<CudaContext> *out);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  const CudaDriver &driver() const { return driver_; }
  const CudaDeviceInfo &info() const { return info_; }
  /// "cuda device 0 (NVIDIA H200, compute capability 9.0, 132 SMs)".
  const std::string &description() const { return description_; }

  /// Makes the primary context current on the calling thread.
  Status makeCurrent() const;

  /// "<description>: <parts>: CUDA_ERROR_X (text)". The code becomes
  /// LOOMRT_ERROR_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY and
  /// LOOMRT_ERROR_DEVICE for a kernel fault, whatever `code` says.
  template <typename... Parts>
  Status fail(loomrt_status code, CUresult result,
              const Parts &...parts) const {
    return makeError(codeFor(code, result), description_, ": ", parts..., ": ",
                     cudaErrorText(driver_, result));
  }
  static loomrt_status codeFor(loomrt_status code, CUresult result);

  /// Runs `enqueue(stream)` on the memory stream and waits for it. The
  /// stream does not synchronize with other streams, so memory calls do not
  /// wait for a persistent kernel in flight (as on the host backend).
  template <typename Enqueue> CUresult onMemoryStream(Enqueue &&enqueue) {
    std::lock_guard<std::mutex> lock(memoryMu_);
    CUresult r = enqueue(memoryStream_);
    if (r != CUDA_SUCCESS)
      return r;
    return driver_.cuStreamSynchronize(memoryStream_);
  }

  //--- What loomrt_malloc handed out ----------------------------------//
  // Kept here, not in the device, so a program can check that a binding
  // fits inside its allocation (DeviceProgram.h).
  DeviceAllocations &allocations() { return allocations_; }
  const DeviceAllocations &allocations() const { return allocations_; }

  /// Set when a kernel did not exit after its abort flag: freeing memory or
  /// the context would wait for it forever, so nothing is freed any more.
  void markWedged(const std::string &why);
  bool wedged() const { return wedged_.load(std::memory_order_acquire); }
  std::string wedgedReason() const;

private:
  CudaContext(const CudaDriver &driver, CUdevice device, CudaDeviceInfo info)
      : driver_(driver), device_(device), info_(std::move(info)),
        description_(describeDevice(info_)) {}

  const CudaDriver &driver_;
  const CUdevice device_;
  const CudaDeviceInfo info_;
  const std::string description_;
  CUcontext context_ = nullptr;
  std::mutex memoryMu_;
  CUstream memoryStream_ = nullptr;
  DeviceAllocations allocations_;
  std::atomic<bool> wedged_{false};
  mutable std::mutex wedgedMu_;
  std::string wedgedReason_;
};

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDACONTEXT_H
