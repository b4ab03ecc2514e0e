//===- HostDevice.h - The host (CPU threads) device -------------*- C++ -*-===//
//
// Memory is ordinary aligned host memory; programs are shared libraries (or
// in-process descriptors) run by an Executor's threads. There is one host
// device, ordinal 0.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_HOSTDEVICE_H
#define LOOM_RUNTIME_HOST_HOSTDEVICE_H

#include "runtime/src/Allocations.h"
#include "runtime/src/Backend.h"


namespace loom {
namespace rt {

class HostDevice final : public Device {
public:
  /// Frees what is still allocated.
  ~HostDevice() override;

  const char *kind() const override { return "host"; }
  int ordinal() const override { return 0; }

  Status allocate(size_t bytes, void **out) override;
  Status release(void *ptr) override;
  Status copy(void *dst, const void *src, size_t bytes) override;
  Status fill(void *dst, int value, size_t bytes) override;
  bool findAllocation(const void *ptr, uintptr_t *base,
                      size_t *bytes) const override {
    return allocations_.find(reinterpret_cast<uintptr_t>(ptr), base, bytes);
  }

  Status loadProgram(const std::string &path, uint32_t flags,
                     std::unique_ptr<Program> *out) override;
  Status programFromDesc(const LoomProgramDesc &desc, uint32_t flags,
                         std::unique_ptr<Program> *out) override;

private:
  Status makeProgram(const LoomProgramDesc &desc, const std::string &origin,
                     uint32_t flags, std::shared_ptr<const void> library,
                     LoomGetMetaFaultFn metaFault,
                     std::unique_ptr<Program> *out);

  DeviceAllocations allocations_;
};

Status createHostDevice(int ordinal, std::unique_ptr<Device> *out);
Status countHostDevices(int *count);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_HOSTDEVICE_H
