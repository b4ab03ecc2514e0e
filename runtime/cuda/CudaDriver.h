//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The CUDA backend is always built, on machines without the CUDA toolkit
// too, and must load on machines without a GPU. So it includes no CUDA
// header and links no CUDA library: the few driver types and constants it
// uses are declared here (values from cuda.h, stable driver ABI), and every
// function comes from libcuda.so.1 through dlopen/dlsym, by the versioned
// name cuda.h would have mapped it to (cuMemAlloc -> cuMemAlloc_v2).
//
// LOOM_CUDA_DRIVER names another library to load instead (the unit tests
// load a fake driver that runs "kernels" on host threads).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDADRIVER_H
#define LOOM_RUNTIME_CUDA_CUDADRIVER_H

#include "runtime/src/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {
namespace rt {
namespace cuda {

//--- Types (cuda.h) --------------------------------------------------------//
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;

//--- Constants (cuda.h) ----------------------------------------------------//
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;
constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
constexpr CUresult CUDA_ERROR_INVALID_ADDRESS_SPACE = 717;
constexpr CUresult CUDA_ERROR_INVALID_PC = 718;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
constexpr CUresult CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;

constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13; // kHz
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
constexpr int CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// cuda.h has these as macros (CU_MEMHOSTALLOC_*); other names would clash
// in a file that includes both.
constexpr unsigned kMemHostAllocPortable = 0x01;
constexpr unsigned kMemHostAllocDeviceMap = 0x02;
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;

constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
/// cuStreamWaitValue32: wait until (int32_t)(*addr - value) >= 0.
constexpr unsigned CU_STREAM_WAIT_VALUE_GEQ = 0x0;
/// cuStreamIsCapturing's answers (CUstreamCaptureStatus).
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
constexpr int CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
/// cuStreamBeginCapture's modes (CUstreamCaptureMode).
constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

/// Dynamic shared memory a kernel gets without opting in.
constexpr int kDefaultDynamicSmemLimit = 48 * 1024;

//--- The symbol table ------------------------------------------------------//
// X(member, required, signature, library names newest first). A required
// symbol that is missing fails the load and is named; an optional one is left
// null and its users say what they cannot do.
#define LOOM_CUDA_DRIVER_SYMBOLS(X)                                            \
  X(cuGetErrorName, true, (CUresult, const char **), "cuGetErrorName")         \
  X(cuGetErrorString, true, (CUresult, const char **), "cuGetErrorString")     \
  X(cuInit, true, (unsigned), "cuInit")                                        \
  X(cuDriverGetVersion, true, (int *), "cuDriverGetVersion")                   \
  X(cuDeviceGetCount, true, (int *), "cuDeviceGetCount")                       \
  X(cuDeviceGet, true, (CUdevice *, int), "cuDeviceGet")                       \
  X(cuDeviceGetName, true, (char *, int, CUdevice), "cuDeviceGetName")         \
  X(cuDeviceGetAttribute, true, (int *, int, CUdevice),                        \
    "cuDeviceGetAttribute")                                                    \
  X(cuDevicePrimaryCtxRetain, true, (CUcontext *, CUdevice),                   \
    "cuDevicePrimaryCtxRetain")                                                \
  X(cuDevicePrimaryCtxRelease, true, (CUdevice),                               \
    "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease")               \
  X(cuCtxSetCurrent, true, (CUcontext), "cuCtxSetCurrent")                     \
  X(cuMemAlloc, true, (CUdeviceptr *, size_t), "cuMemAlloc_v2")                \
  X(cuMemFree, true, (CUdeviceptr), "cuMemFree_v2")                            \
  X(cuMemHostAlloc, true, (void **, size_t, unsigned), "cuMemHostAlloc")       \
  X(cuMemFreeHost, true, (void *), "cuMemFreeHost")                            \
  X(cuMemHostGetDevicePointer, true, (CUdeviceptr *, void *, unsigned),        \
    "cuMemHostGetDevicePointer_v2")                                            \
  X(cuPointerGetAttribute, false, (void *, int, CUdeviceptr),                  \
    "cuPointerGetAttribute")                                                   \
  X(cuMemcpyAsync, true, (CUdeviceptr, CUdeviceptr, size_t, CUstream),         \
    "cuMemcpyAsync")                                                           \
  X(cuMemcpyHtoDAsync, true, (CUdeviceptr, const void *, size_t, CUstream),    \
    "cuMemcpyHtoDAsync_v2")                                                    \
  X(cuMemcpyDtoHAsync, true, (void *, CUdeviceptr, size_t, CUstream),          \
    "cuMemcpyDtoHAsync_v2")                                                    \
  X(cuMemcpyDtoDAsync, true, (CUdeviceptr, CUdeviceptr, size_t, CUstream),     \
    "cuMemcpyDtoDAsync_v2")                                                    \
  X(cuMemsetD8Async, true, (CUdeviceptr, unsigned char, size_t, CUstream),     \
    "cuMemsetD8Async")                                                         \
  X(cuModuleLoadData, true, (CUmodule *, const void *), "cuModuleLoadData")    \
  X(cuModuleUnload, true, (CUmodule), "cuModuleUnload")                        \
  X(cuModuleGetFunction, true, (CUfunction *, CUmodule, const char *),         \
    "cuModuleGetFunction")                                                     \
  X(cuFuncSetAttribute, true, (CUfunction, int, int), "cuFuncSetAttribute")    \
  X(cuFuncGetAttribute, false, (int *, int, CUfunction), "cuFuncGetAttribute") \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, true,                         \
    (int *, CUfunction, int, size_t),                                          \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor")                             \
  X(cuLaunchCooperativeKernel, true,                                           \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **),                                             \
    "cuLaunchCooperativeKernel")                                               \
  X(cuStreamCreate, true, (CUstream *, unsigned), "cuStreamCreate")            \
  X(cuStreamDestroy, true, (CUstream), "cuStreamDestroy_v2")                   \
  X(cuStreamQuery, true, (CUstream), "cuStreamQuery")                          \
  X(cuStreamWaitValue32, false, (CUstream, CUdeviceptr, uint32_t, unsigned),   \
    "cuStreamWaitValue32_v2", "cuStreamWaitValue32")                           \
  X(cuStreamSynchronize, true, (CUstream), "cuStreamSynchronize")              \
  X(cuEventCreate, true, (CUevent *, unsigned), "cuEventCreate")               \
  X(cuEventDestroy, true, (CUevent), "cuEventDestroy_v2")                      \
  X(cuEventRecord, true, (CUevent, CUstream), "cuEventRecord")                 \
  X(cuEventElapsedTime, true, (float *, CUevent, CUevent),                     \
    "cuEventElapsedTime_v2", "cuEventElapsedTime")                             \
  X(cuStreamIsCapturing, false, (CUstream, int *), "cuStreamIsCapturing")      \
  /* CUDA graphs: the runtime makes none; its GPU test captures launches. */   \
  X(cuStreamBeginCapture, false, (CUstream, int), "cuStreamBeginCapture_v2")   \
  X(cuStreamEndCapture, false, (CUstream, CUgraph *), "cuStreamEndCapture")    \
  X(cuGraphInstantiate, false, (CUgraphExec *, CUgraph, unsigned long long),   \
    "cuGraphInstantiateWithFlags")                                             \
  X(cuGraphLaunch, false, (CUgraphExec, CUstream), "cuGraphLaunch")            \
  X(cuGraphExecDestroy, false, (CUgraphExec), "cuGraphExecDestroy")            \
  X(cuGraphDestroy, false, (CUgraph), "cuGraphDestroy")

/// One loaded driver library: its function table. Loaded once per path and
/// never unloaded (contexts and modules live inside it).
struct CudaDriver {
  std::string path; // what was dlopen'ed
  int version = 0;  // cuDriverGetVersion, e.g. 13000
#define LOOM_CUDA_DRIVER_MEMBER(member, required, signature, ...)              \
  CUresult(*member) signature = nullptr;
  LOOM_CUDA_DRIVER_SYMBOLS(LOOM_CUDA_DRIVER_MEMBER)
#undef LOOM_CUDA_DRIVER_MEMBER
};

/// The environment variable naming a driver library to load instead of
/// libcuda.so.1.
constexpr const char *kCudaDriverEnv = "LOOM_CUDA_DRIVER";

/// Loads the driver (libcuda.so.1, or $LOOM_CUDA_DRIVER) and resolves its
/// symbols. Fails with LOOMRT_ERROR_BACKEND_UNAVAILABLE naming the library,
/// every path tried with dlerror's reason, or the missing required symbol.
/// Loaded drivers are cached per path; failures are not (a driver may be
/// installed later).
Status loadCudaDriver(const CudaDriver **out);

/// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)";
/// "CUDA error 12345" when the driver does not know the code.
std::string cudaErrorText(const CudaDriver &driver, CUresult result);

/// True for the errors after which the CUDA context is unusable (a kernel
/// faulted): every later call in this process fails the same way.
bool isStickyCudaError(CUresult result);

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDADRIVER_H
