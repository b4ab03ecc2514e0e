//===- CudaDevice.cpp - An NVIDIA GPU through the driver API --------------===//

#include "runtime/cuda/CudaDevice.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/Program.h"

#include <cstring>

namespace loom {
namespace rt {
namespace cuda {

namespace {

CUdeviceptr toDevice(const void *ptr) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
}

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

} // namespace

Status countCudaDevices(int *count) {
  const CudaDriver *driver = nullptr;
  return initCuda(&driver, count);
}

Status createCudaDevice(int ordinal, std::unique_ptr<Device> *out) {
  const CudaDriver *driver = nullptr;
  int count = 0;
  if (Status s = initCuda(&driver, &count); !s.ok())
    return s;
  std::shared_ptr<CudaContext> context;
  if (Status s = CudaContext::open(*driver, ordinal, count, &context); !s.ok())
    return s;
  out->reset(new CudaDevice(std::move(context)));
  return Status();
}

CudaDevice::~CudaDevice() {
  // cuMemFree waits for the device; under a wedged kernel it never returns.
  if (ctx_->wedged() || !ctx_->makeCurrent().ok())
    return;
  for (uintptr_t ptr : ctx_->allocations().live())
    (void)ctx_->driver().cuMemFree(static_cast<CUdeviceptr>(ptr));
}

Status CudaDevice::usable() const {
  if (ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, ctx_->description(),
                     " refuses memory calls: they would wait forever for a "
                     "kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  return ctx_->makeCurrent();
}

Status CudaDevice::allocate(size_t bytes, void **out) {
  if (Status s = usable(); !s.ok())
    return s;
  // cuMemAlloc aligns to at least 256 bytes, as the API promises.
  CUdeviceptr ptr = 0;
  if (CUresult r = ctx_->driver().cuMemAlloc(&ptr, bytes); r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, "cannot allocate ", bytes,
                      " bytes");
  ctx_->allocations().track(static_cast<uintptr_t>(ptr), bytes);
  *out = reinterpret_cast<void *>(ptr);
  return Status();
}

Status CudaDevice::release(void *ptr) {
  if (Status s = usable(); !s.ok())
    return s;
  CUdeviceptr dptr = toDevice(ptr);
  if (!ctx_->allocations().untrack(static_cast<uintptr_t>(dptr)))
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, ctx_->description(), ": ",
                     ptr, " was not allocated by this device (or was freed)");
  if (CUresult r = ctx_->driver().cuMemFree(dptr); r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot free ", ptr);
  return Status();
}

Status CudaDevice::copy(void *dst, const void *src, size_t bytes) {
  return copyKind(dst, src, bytes, LOOMRT_COPY_DEFAULT);
}

Status CudaDevice::copyKind(void *dst, const void *src, size_t bytes,
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
  const CudaDriver &d = ctx_->driver();
  CUresult r = ctx_->onMemoryStream([&](CUstream stream) {
    switch (kind) {
    case LOOMRT_COPY_HOST_TO_DEVICE:
      return d.cuMemcpyHtoDAsync(toDevice(dst), src, bytes, stream);
    case LOOMRT_COPY_DEVICE_TO_HOST:
      return d.cuMemcpyDtoHAsync(dst, toDevice(src), bytes, stream);
    case LOOMRT_COPY_DEVICE_TO_DEVICE:
      return d.cuMemcpyDtoDAsync(toDevice(dst), toDevice(src), bytes, stream);
    default:
      return d.cuMemcpyAsync(toDevice(dst), toDevice(src), bytes, stream);
    }
  });
  if (r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot copy ", bytes,
                      " bytes from ", src, " to ", dst, " (",
                      copyKindName(kind), ")");
  return Status();
}

Status CudaDevice::fill(void *dst, int value, size_t bytes) {
  if (Status s = usable(); !s.ok())
    return s;
  const CudaDriver &d = ctx_->driver();
  CUresult r = ctx_->onMemoryStream([&](CUstream stream) {
    return d.cuMemsetD8Async(toDevice(dst), static_cast<unsigned char>(value),
                             bytes, stream);
  });
  if (r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_INVALID_ARGUMENT, r, "cannot set ", bytes,
                      " bytes at ", dst, " (device memory only)");
  return Status();
}

Status CudaDevice::loadProgram(const std::string &path, uint32_t flags,
                               std::unique_ptr<Program> *out) {
  if (Status s = usable(); !s.ok())
    return s;
  std::shared_ptr<const DeviceArtifact> artifact;
  if (Status s = DeviceArtifact::open("cuda", path, &artifact); !s.ok())
    return s;
  const LoomDeviceProgram &p = artifact->program();
  const CudaDeviceInfo &info = ctx_->info();
  if (Status s = checkArch(
          path, p.arch, classifyCode(p.code_object, p.code_object_size), info);
      !s.ok())
    return s;
  std::shared_ptr<const ProgramTable> table;
  if (Status s = createDeviceTable(*artifact, flags, &table); !s.ok())
    return s;
  BlockShape shape{table->numWorkers(), p.threads_per_block,
                   p.dynamic_smem_bytes};
  if (Status s = checkBlockShape(table->name(), shape, info); !s.ok())
    return s;
  std::unique_ptr<Executable> executable;
  if (Status s =
          CudaExecutor::create(ctx_, table, std::move(artifact), &executable);
      !s.ok())
    return s;
  return Program::create(std::move(table), std::move(executable), out);
}

Status CudaDevice::programFromDesc(const LoomProgramDesc &, uint32_t,
                                   std::unique_ptr<Program> *) {
  return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, ctx_->description(),
                   ": loomrt_program_from_desc takes a host task table (bodies "
                   "in run_task); a cuda program is a device artifact: use "
                   "loomrt_program_load");
}

} // namespace cuda
} // namespace rt
} // namespace loom
