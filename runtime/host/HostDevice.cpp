//===- HostDevice.cpp - The host (CPU threads) device ---------------------===//

#include "runtime/host/HostDevice.h"

#include "runtime/host/AbandonedWorkers.h"
#include "runtime/host/Executor.h"
#include "runtime/host/HostLibrary.h"
#include "runtime/src/Program.h"

#include <cstdlib>
#include <cstring>

namespace loom {
namespace rt {

namespace {
/// What GPU allocators give; keeps vector loads in task bodies aligned.
constexpr size_t kAlignment = 256;
} // namespace

Status createHostDevice(int ordinal, std::unique_ptr<Device> *out) {
  if (ordinal != 0)
    return makeError(LOOMRT_ERROR_UNKNOWN_DEVICE, "host device ordinal ",
                     ordinal, " out of range (there is one host device, 0)");
  out->reset(new HostDevice());
  return Status();
}

Status countHostDevices(int *count) {
  *count = 1;
  return Status();
}

HostDevice::~HostDevice() {
  for (uintptr_t base : allocations_.live())
    AbandonedWorkers::get().free(reinterpret_cast<void *>(base));
}

Status HostDevice::allocate(size_t bytes, void **out) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *ptr = nullptr;
  if (rounded < bytes || posix_memalign(&ptr, kAlignment, rounded) != 0)
    return makeError(LOOMRT_ERROR_OUT_OF_MEMORY,
                     "host device: cannot allocate ", bytes, " bytes");
  allocations_.track(reinterpret_cast<uintptr_t>(ptr), bytes);
  *out = ptr;
  return Status();
}

Status HostDevice::release(void *ptr) {
  if (!allocations_.untrack(reinterpret_cast<uintptr_t>(ptr)))
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "host device: ", ptr,
                     " was not allocated by this device (or was freed)");
  // A worker abandoned inside a body may still read it.
  AbandonedWorkers::get().free(ptr);
  return Status();
}

Status HostDevice::copy(void *dst, const void *src, size_t bytes) {
  std::memmove(dst, src, bytes);
  return Status();
}

Status HostDevice::fill(void *dst, int value, size_t bytes) {
  std::memset(dst, value, bytes);
  return Status();
}

Status HostDevice::loadProgram(const std::string &path, uint32_t flags,
                               std::unique_ptr<Program> *out) {
  std::shared_ptr<const HostLibrary> library;
  if (Status s = HostLibrary::open(path, &library); !s.ok())
    return s;
  const LoomProgramDesc &desc = library->desc();
  LoomGetMetaFaultFn metaFault = library->metaFault();
  return makeProgram(desc, path, flags, std::move(library), metaFault, out);
}

Status HostDevice::programFromDesc(const LoomProgramDesc &desc, uint32_t flags,
                                   std::unique_ptr<Program> *out) {
  return makeProgram(desc, "in-process descriptor", flags, nullptr, nullptr,
                     out);
}

Status HostDevice::makeProgram(const LoomProgramDesc &desc,
                               const std::string &origin, uint32_t flags,
                               std::shared_ptr<const void> library,
                               LoomGetMetaFaultFn metaFault,
                               std::unique_ptr<Program> *out) {
  std::shared_ptr<const ProgramTable> table;
  if (Status s = ProgramTable::create(desc, origin, flags, &table); !s.ok())
    return s;
  std::unique_ptr<Executable> executable;
  if (Status s = Executor::create(table, std::move(library), metaFault,
                                 &allocations_,
                                 describe(), &executable);
      !s.ok())
    return s;
  return Program::create(std::move(table), std::move(executable), out);
}

} // namespace rt
} // namespace loom
