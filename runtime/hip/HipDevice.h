//===- HipDevice.h - An AMD GPU through the HIP runtime ---------*- C++ -*-===//
//
// Memory is hipMalloc'd device memory; copies and fills run on the context's
// memory stream (hipMemcpyAsync/hipMemsetAsync, then hipStreamSynchronize)
// and return when done, without waiting for a kernel in flight. Programs are
// GPU artifacts (DeviceArtifact) run by a HipExecutor.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HIP_HIPDEVICE_H
#define LOOM_RUNTIME_HIP_HIPDEVICE_H

#include "runtime/hip/HipContext.h"
#include "runtime/src/Backend.h"

namespace loom {
namespace rt {
namespace hip {

class HipDevice final : public Device {
public:
  explicit HipDevice(std::shared_ptr<HipContext> context)
      : ctx_(std::move(context)) {}
  /// Frees what is still allocated, unless a kernel is wedged on the device.
  ~HipDevice() override;

  const char *kind() const override { return "hip"; }
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
  /// Current device on this thread, and no wedged kernel to block on.
  Status usable() const;

  // Allocations are tracked (in the context) so a stray free is an error,
  // not a runtime error or another allocation's memory.
  std::shared_ptr<HipContext> ctx_;
};

Status createHipDevice(int ordinal, std::unique_ptr<Device> *out);
/// 0 when the runtime loads but sees no GPU; an error (count 0) when it
/// does not load.
Status countHipDevices(int *count);

} // namespace hip
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HIP_HIPDEVICE_H
