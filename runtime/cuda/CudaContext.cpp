//===- CudaContext.cpp - One CUDA device as the backend holds it ----------===//

#include "runtime/cuda/CudaContext.h"

namespace loom {
namespace rt {
namespace cuda {

Status initCuda(const CudaDriver **driverOut, int *count) {
  *count = 0;
  const CudaDriver *driver = nullptr;
  if (Status s = loadCudaDriver(&driver); !s.ok())
    return s;
  *driverOut = driver;
  // A driver without a usable GPU says so here; that is "no devices", not a
  // broken backend.
  CUresult r = driver->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    return Status();
  if (r != CUDA_SUCCESS)
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "cuda: cuInit failed (",
                     driver->path, ", driver version ", driver->version,
                     "): ", cudaErrorText(*driver, r));
  r = driver->cuDeviceGetCount(count);
  if (r != CUDA_SUCCESS)
    return makeError(
        LOOMRT_ERROR_BACKEND_UNAVAILABLE,
        "cuda: cuDeviceGetCount failed: ", cudaErrorText(*driver, r));
  return Status();
}

loomrt_status CudaContext::codeFor(loomrt_status code, CUresult result) {
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    return LOOMRT_ERROR_OUT_OF_MEMORY;
  if (isStickyCudaError(result))
    return LOOMRT_ERROR_DEVICE;
  return code;
}

Status CudaContext::open(const CudaDriver &driver, int ordinal, int count,
                         std::shared_ptr<CudaContext> *out) {
  if (ordinal < 0 || ordinal >= count)
    return makeError(LOOMRT_ERROR_UNKNOWN_DEVICE, "cuda device ordinal ",
                     ordinal, " out of range: ",
                     count == 0
                         ? std::string("the driver sees no cuda devices")
                         : "there " + std::string(count == 1 ? "is " : "are ") +
                               std::to_string(count) + " (0 to " +
                               std::to_string(count - 1) + ")");
  auto driverError = [&](const char *what, CUresult r) {
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "cuda device ", ordinal,
                     ": ", what, " failed: ", cudaErrorText(driver, r));
  };
  CUdevice device = 0;
  if (CUresult r = driver.cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return driverError("cuDeviceGet", r);

  CudaDeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  if (CUresult r = driver.cuDeviceGetName(name, sizeof(name) - 1, device);
      r != CUDA_SUCCESS)
    return driverError("cuDeviceGetName", r);
  info.name = name;
  struct {
    int attribute;
    int *value;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.ccMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.ccMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.smCount},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.maxThreadsPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSmemPerBlockOptin},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.clockKHz},
  };
  for (auto &a : attributes)
    if (CUresult r = driver.cuDeviceGetAttribute(a.value, a.attribute, device);
        r != CUDA_SUCCESS)
      return driverError("cuDeviceGetAttribute", r);
  int flag = 0;
  info.cooperativeLaunch =
      driver.cuDeviceGetAttribute(&flag, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                                  device) == CUDA_SUCCESS &&
      flag;
  info.unifiedAddressing =
      driver.cuDeviceGetAttribute(&flag, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
                                  device) == CUDA_SUCCESS &&
      flag;
  info.canMapHostMemory = driver.cuDeviceGetAttribute(
                              &flag, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                              device) == CUDA_SUCCESS &&
                          flag;

  std::shared_ptr<CudaContext> context(
      new CudaContext(driver, device, std::move(info)));
  if (CUresult r = driver.cuDevicePrimaryCtxRetain(&context->context_, device);
      r != CUDA_SUCCESS)
    return context->fail(LOOMRT_ERROR_BACKEND_UNAVAILABLE, r,
                         "cuDevicePrimaryCtxRetain");
  if (Status s = context->makeCurrent(); !s.ok())
    return s;
  if (CUresult r = driver.cuStreamCreate(&context->memoryStream_,
                                         CU_STREAM_NON_BLOCKING);
      r != CUDA_SUCCESS)
    return context->fail(LOOMRT_ERROR_RESOURCES, r,
                         "cannot create the memory stream");
  *out = std::move(context);
  return Status();
}

CudaContext::~CudaContext() {
  if (!context_)
    return;
  // Destroying the context under a kernel that never exits would block
  // forever; a wedged context is left to the process exit.
  if (wedged())
    return;
  if (driver_.cuCtxSetCurrent(context_) == CUDA_SUCCESS && memoryStream_)
    (void)driver_.cuStreamDestroy(memoryStream_);
  (void)driver_.cuDevicePrimaryCtxRelease(device_);
}

Status CudaContext::makeCurrent() const {
  if (CUresult r = driver_.cuCtxSetCurrent(context_); r != CUDA_SUCCESS)
    return fail(LOOMRT_ERROR_BACKEND_UNAVAILABLE, r,
                "cannot make its context current on this thread");
  return Status();
}

void CudaContext::markWedged(const std::string &why) {
  std::lock_guard<std::mutex> lock(wedgedMu_);
  if (!wedged_.load(std::memory_order_relaxed))
    wedgedReason_ = why;
  wedged_.store(true, std::memory_order_release);
}

std::string CudaContext::wedgedReason() const {
  std::lock_guard<std::mutex> lock(wedgedMu_);
  return wedgedReason_;
}

} // namespace cuda
} // namespace rt
} // namespace loom
