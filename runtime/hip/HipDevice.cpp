//===- HipDevice.cpp - An AMD GPU through the HIP runtime -----------------===//

#include "runtime/hip/HipDevice.h"

#include "runtime/hip/HipChecks.h"
#include "runtime/hip/HipExecutor.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/Program.h"

#include <cstring>

namespace loom {
namespace rt {
namespace hip {

namespace {

const char *copyKindName(loomrt_copy_kind kind) {
  switch (kind) {
  case LOOMRT_COPY_HOST_TO_DEVICE:
    return "host to device";
  case LOOMRT_COPY_DEVICE_TO_HOST:
    return "device to host";
  case LOOMRT_COPY_DEVICE_TO_DEVICE:
    return "device to device";
  case LOOMRT_COPY_HOST_TO_HOST:
    return "host to host";
  default:
    return "direction inferred";
  }
}

int hipCopyKind(loomrt_copy_kind kind) {
  switch (kind) {
  case LOOMRT_COPY_HOST_TO_DEVICE:
    return hipMemcpyHostToDevice;
  case LOOMRT_COPY_DEVICE_TO_HOST:
    return hipMemcpyDeviceToHost;
  case LOOMRT_COPY_DEVICE_TO_DEVICE:
    return hipMemcpyDeviceToDevice;
  case LOOMRT_COPY_HOST_TO_HOST:
    return hipMemcpyHostToHost;
  default:
    return hipMemcpyDefault;
  }
}

} // namespace

Status countHipDevices(int *count) {
  const HipRuntime *runtime = nullptr;
  return initHip(&runtime, count);
}

Status createHipDevice(int ordinal, std::unique_ptr<Device> *out) {
  const HipRuntime *runtime = nullptr;
  int count = 0;
  if (Status s = initHip(&runtime, &count); !s.ok())
    return s;
  std::shared_ptr<HipContext> context;
  if (Status s = HipContext::open(*runtime, ordinal, count, &context); !s.ok())
    return s;
  out->reset(new HipDevice(std::move(context)));
  return Status();
}

HipDevice::~HipDevice() {
  // hipFree waits for the device; under a wedged kernel it never returns.
  if (ctx_->wedged() || !ctx_->makeCurrent().ok())
    return;
  for (uintptr_t ptr : ctx_->allocations().live())
    (void)ctx_->runtime().hipFree(reinterpret_cast<void *>(ptr));
}

Status HipDevice::usable() const {
  if (ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, ctx_->description(),
                     " refuses memory calls: they would wait forever for a "
                     "kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  return ctx_->makeCurrent();
}

Status HipDevice::allocate(size_t bytes, void **out) {
  if (Status s = usable(); !s.ok())
    return s;
  // hipMalloc aligns to at least 256 bytes (pages, in practice).
  void *ptr = nullptr;
  if (hipError_t r = ctx_->runtime().hipMalloc(&ptr, bytes); r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, "cannot allocate ", bytes,
                      " bytes");
  ctx_->allocations().track(reinterpret_cast<uintptr_t>(ptr), bytes);
  *out = ptr;
  return Status();
}

Status HipDevice::release(void *ptr) {
  if (Status s = usable(); !s.ok())
    return s;
  if (!ctx_->allocations().untrack(reinterpret_cast<uintptr_t>(ptr)))
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, ctx_->description(), ": ",
                     ptr, " was not allocated by this device (or was freed)");
  if (hipError_t r = ctx_->runtime().hipFree(ptr); r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot free ", ptr);
  return Status();
}

Status HipDevice::copy(void *dst, const void *src, size_t bytes) {
  return copyKind(dst, src, bytes, LOOMRT_COPY_DEFAULT);
}

Status HipDevice::copyKind(void *dst, const void *src, size_t bytes,
                           loomrt_copy_kind kind) {
  if (kind == LOOMRT_COPY_HOST_TO_HOST) {
    std::memmove(dst, src, bytes);
    return Status();
  }
  if (Status s = usable(); !s.ok())
    return s;
  if (kind == LOOMRT_COPY_DEFAULT && !ctx_->info().unifiedAddressing)
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, ctx_->description(),
                     " has no unified addressing, so a copy's direction "
                     "cannot be inferred; use loomrt_memcpy_kind");
  const HipRuntime &rt = ctx_->runtime();
  hipError_t r = ctx_->onMemoryStream([&](hipStream_t stream) {
    return rt.hipMemcpyAsync(dst, src, bytes, hipCopyKind(kind), stream);
  });
  if (r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot copy ", bytes,
                      " bytes from ", src, " to ", dst, " (",
                      copyKindName(kind), ")");
  return Status();
}

Status HipDevice::fill(void *dst, int value, size_t bytes) {
  if (Status s = usable(); !s.ok())
    return s;
  const HipRuntime &rt = ctx_->runtime();
  hipError_t r = ctx_->onMemoryStream([&](hipStream_t stream) {
    return rt.hipMemsetAsync(dst, value & 0xFF, bytes, stream);
  });
  if (r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot set ", bytes,
                      " bytes at ", dst, " (device memory only)");
  return Status();
}

Status HipDevice::loadProgram(const std::string &path, uint32_t flags,
                              std::unique_ptr<Program> *out) {
  if (Status s = usable(); !s.ok())
    return s;
  std::shared_ptr<const DeviceArtifact> artifact;
  if (Status s = DeviceArtifact::open("hip", path, &artifact); !s.ok())
    return s;
  const LoomDeviceProgram &p = artifact->program();
  const HipDeviceInfo &info = ctx_->info();
  if (Status s = checkArch(path, p.arch, info); !s.ok())
    return s;
  // Launches here pass LoomKernelArgs alone (kernels/amd takes no bindings
  // by value): a kernel expecting more would read past its parameters.
  if (p.flags & LOOM_DEVICE_INLINE_BINDINGS)
    return makeError(LOOMRT_ERROR_INVALID_PROGRAM, "hip program ", quoted(path),
                     ": its kernel takes its bindings by value "
                     "(LOOM_DEVICE_INLINE_BINDINGS), which the HIP backend "
                     "does not pass: its kernels take LoomKernelArgs alone");
  std::shared_ptr<const ProgramTable> table;
  if (Status s = createDeviceTable(*artifact, flags, &table); !s.ok())
    return s;
  DeviceBlockShape shape{table->numWorkers(), p.threads_per_block,
                         p.dynamic_smem_bytes};
  if (Status s = checkBlockShape(table->name(), shape, info); !s.ok())
    return s;
  std::unique_ptr<Executable> executable;
  if (Status s =
          HipExecutor::create(ctx_, table, std::move(artifact), &executable);
      !s.ok())
    return s;
  return Program::create(std::move(table), std::move(executable), out);
}

Status HipDevice::programFromDesc(const LoomProgramDesc &, uint32_t,
                                  std::unique_ptr<Program> *) {
  return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, ctx_->description(),
                   ": loomrt_program_from_desc takes a host task table (bodies "
                   "in run_task); a hip program is a device artifact: use "
                   "loomrt_program_load");
}

} // namespace hip
} // namespace rt
} // namespace loom
