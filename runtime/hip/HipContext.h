//===- HipContext.h - One HIP device as the backend holds it ----*- C++ -*-===//
//
// The state a device and its programs share: the runtime library, the
// device's ordinal and what it is (HipDeviceInfo), and the stream memory
// calls use. Programs hold it by shared_ptr, so a program whose kernel never
// exits can keep it alive forever instead of tearing it down under a running
// kernel.
//
// HIP keeps a current device per host thread (hipSetDevice), and loomrt may
// be called from any thread, so every entry point calls makeCurrent() first.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HIP_HIPCONTEXT_H
#define LOOM_RUNTIME_HIP_HIPCONTEXT_H

#include "runtime/hip/HipChecks.h"
#include "runtime/hip/HipRuntime.h"
#include "runtime/src/DeviceProgram.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

namespace loom {
namespace rt {
namespace hip {

/// Loads the runtime and initializes it; `count` gets its number of devices
/// (0 when the runtime loads but sees no GPU: hipErrorNoDevice).
Status initHip(const HipRuntime **runtime, int *count);

class HipContext {
public:
  /// Selects device `ordinal` and reads its attributes and architecture.
  /// An ordinal out of range names the count.
  static Status open(const HipRuntime &runtime, int ordinal, int count,
                     std::shared_ptr<HipContext> *out);
  ~HipContext();
  HipContext(const HipContext &) = delete;
  HipContext &operator=(const HipContext &) = delete;

  const HipRuntime &runtime() const { return runtime_; }
  const HipDeviceInfo &info() const { return info_; }
  /// "hip device 0 (AMD Instinct MI355X, gfx950:sramecc+:xnack-, 256 CUs)".
  const std::string &description() const { return description_; }

  /// Makes the device current on the calling thread (hipSetDevice).
  Status makeCurrent() const;

  /// "<description>: <parts>: hipErrorX (text)". The code becomes
  /// LOOMRT_ERROR_OUT_OF_MEMORY for hipErrorOutOfMemory and
  /// LOOMRT_ERROR_DEVICE for a kernel fault, whatever `code` says.
  template <typename... Parts>
  Status fail(loomrt_status code, hipError_t result,
              const Parts &...parts) const {
    return makeError(codeFor(code, result), description_, ": ", parts..., ": ",
                     hipErrorText(runtime_, result));
  }
  static loomrt_status codeFor(loomrt_status code, hipError_t result);

  /// Runs `enqueue(stream)` on the memory stream and waits for it. The
  /// stream is non-blocking, so memory calls do not wait for a persistent
  /// kernel in flight (as on the host backend).
  template <typename Enqueue> hipError_t onMemoryStream(Enqueue &&enqueue) {
    std::lock_guard<std::mutex> lock(memoryMu_);
    hipError_t r = enqueue(memoryStream_);
    if (r != hipSuccess)
      return r;
    return runtime_.hipStreamSynchronize(memoryStream_);
  }

  /// onMemoryStream, waiting at most `limit`: `finished` is false (and the
  /// work stays queued, to finish later) when it did not finish in time.
  template <typename Enqueue>
  hipError_t onMemoryStreamWithin(std::chrono::milliseconds limit,
                                  Enqueue &&enqueue, bool *finished) {
    *finished = false;
    std::lock_guard<std::mutex> lock(memoryMu_);
    hipError_t r = enqueue(memoryStream_);
    if (r != hipSuccess)
      return r;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while ((r = runtime_.hipStreamQuery(memoryStream_)) == hipErrorNotReady) {
      if (std::chrono::steady_clock::now() >= deadline)
        return hipSuccess;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    *finished = r == hipSuccess;
    return r;
  }

  /// What loomrt_malloc handed out on this device: a stray free is an
  /// error, and a launch checks that each binding fits its allocation.
  DeviceAllocations &allocations() { return allocations_; }
  const DeviceAllocations &allocations() const { return allocations_; }

  /// Set when a kernel did not exit after its abort flag: freeing memory
  /// would wait for it forever, so nothing is freed any more.
  void markWedged(const std::string &why);
  bool wedged() const { return wedged_.load(std::memory_order_acquire); }
  std::string wedgedReason() const;

private:
  HipContext(const HipRuntime &runtime, HipDeviceInfo info)
      : runtime_(runtime), info_(std::move(info)),
        description_(describeDevice(info_)) {}

  const HipRuntime &runtime_;
  const HipDeviceInfo info_;
  const std::string description_;
  std::mutex memoryMu_;
  hipStream_t memoryStream_ = nullptr;
  DeviceAllocations allocations_;
  std::atomic<bool> wedged_{false};
  mutable std::mutex wedgedMu_;
  std::string wedgedReason_;
};

} // namespace hip
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HIP_HIPCONTEXT_H
