//===- CudaDevice.h - An NVIDIA GPU through the driver API ------*- C++ -*-===//
//
// Memory is cuMemAlloc'd device memory (pointers are CUdeviceptr values);
// copies and fills run on the context's memory stream and return when done.
// Programs are GPU artifacts (DeviceArtifact, runtime/src/DeviceProgram.h)
// run by a CudaExecutor.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDADEVICE_H
#define LOOM_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/cuda/CudaContext.h"
#include "runtime/src/Backend.h"

namespace loom {
namespace rt {
namespace cuda {

class CudaDevice final : public Device {
public:
  explicit CudaDevice(std::shared_ptr<CudaContext> context)
      : ctx_(std::move(context)) {}
  /// Frees what is still allocated, unless a kernel is wedged on the device.
  ~CudaDevice() override;

  const char *kind() const override { return "cuda"; }
  int ordinal() const override { return ctx_->info().ordinal; }
  std::string describe() const override { return ctx_->description(); }

  Status allocate(size_t bytes, void **out) override;
  Status release(void *ptr) override;
  Status copy(void *dst, const void *src, size_t bytes) override;
  Status copyKind(void *dst, const void *src, size_t bytes,
                  loomrt_copy_kind kind) override;
  Status fill(void *dst, int value, size_t bytes) override;
  bool findAllocation(const void *ptr, uintptr_t *base,
                      size_t *bytes) const override {
    return ctx_->allocations().find(reinterpret_cast<uintptr_t>(ptr), base,
                                    bytes);
  }

  Status loadProgram(const std::string &path, uint32_t flags,
                     std::unique_ptr<Program> *out) override;
  Status programFromDesc(const LoomProgramDesc &desc, uint32_t flags,
                         std::unique_ptr<Program> *out) override;

private:
  /// Current context on this thread, and no wedged kernel to block on.
  Status usable() const;

  // Allocations are tracked (in the context) so a stray free is an error,
  // not a driver error or another allocation's memory.
  std::shared_ptr<CudaContext> ctx_;
};

Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out);
/// 0 when the driver loads but sees no GPU; an error (count 0) when it
/// does not load.
Status countCudaDevices(int *count);

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDADEVICE_H
