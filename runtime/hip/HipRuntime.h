//===- HipRuntime.h - The HIP runtime API, loaded at run time ---*- C++ -*-===//
//
// The HIP backend is always built, on machines without ROCm too, and must
// load on machines without an AMD GPU. So it includes no HIP header and links
// no HIP library: the few types and constants it uses are declared here
// (values from ROCm 6.x/7.x hip_runtime_api.h and driver_types.h), and every
// function comes from libamdhip64 through dlopen/dlsym.
//
// ABI notes (ROCm >= 6.0):
//  * hipGetDeviceProperties is a macro for hipGetDevicePropertiesR0600 and
//    hipDeviceProp_t for hipDeviceProp_tR0600 since ROCm 6.0; ROCm 7 keeps
//    both. The backend calls hipGetDevicePropertiesR0600 by that name, reads
//    only `name` and `gcnArchName` from it ("gfx950:sramecc+:xnack-"), and
//    cross-checks the struct against hipDeviceGetAttribute (CU count), so a
//    layout that does not match is an error, not garbage.
//  * Numbers come from hipDeviceGetAttribute; the attribute enumerators are
//    stable since ROCm 6.0 (the CUDA-compatible ones are alphabetical from
//    0, the AMD-specific ones start at 10000).
//  * hipHostMalloc is the pinned allocator of ROCm 6 and 7 (hipExtHostAlloc
//    is taken when it is missing), freed by hipHostFree (or hipFreeHost).
//
// LOOM_HIP_RUNTIME names another library to load instead (the unit tests
// load a fake runtime that runs "kernels" on host threads).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HIP_HIPRUNTIME_H
#define LOOM_RUNTIME_HIP_HIPRUNTIME_H

#include "runtime/src/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom {
namespace rt {
namespace hip {

//--- Types (hip_runtime_api.h) ---------------------------------------------//
using hipError_t = int;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
using hipModule_t = ihipModule_t *;
using hipFunction_t = ihipModuleSymbol_t *;
using hipStream_t = ihipStream_t *;
using hipEvent_t = ihipEvent_t *;

/// hipDeviceProp_tR0600, field for field (ROCm 6.0 to 7.x). Only `name`,
/// `multiProcessorCount` and `gcnArchName` are read.
struct HipDeviceProp {
  char name[256];
  char uuid[16];
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  size_t texturePitchAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int maxTexture1D;
  int maxTexture1DMipmap;
  int maxTexture1DLinear;
  int maxTexture2D[2];
  int maxTexture2DMipmap[2];
  int maxTexture2DLinear[3];
  int maxTexture2DGather[2];
  int maxTexture3D[3];
  int maxTexture3DAlt[3];
  int maxTextureCubemap;
  int maxTexture1DLayered[2];
  int maxTexture2DLayered[3];
  int maxTextureCubemapLayered[2];
  int maxSurface1D;
  int maxSurface2D[2];
  int maxSurface3D[3];
  int maxSurface1DLayered[2];
  int maxSurface2DLayered[3];
  int maxSurfaceCubemap;
  int maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
  int tccDriver;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor;
  int streamPrioritiesSupported;
  int globalL1CacheSupported;
  int localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  int multiGpuBoardGroupID;
  int hostNativeAtomicSupported;
  int singleToDoublePrecisionPerfRatio;
  int pageableMemoryAccess;
  int concurrentManagedAccess;
  int computePreemptionSupported;
  int canUseHostPointerForRegisteredMem;
  int cooperativeLaunch;
  int cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables;
  int directManagedMemAccessFromHost;
  int maxBlocksPerMultiProcessor;
  int accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported;
  int sparseHipArraySupported;
  int hostRegisterReadOnlySupported;
  int timelineSemaphoreInteropSupported;
  int memoryPoolsSupported;
  int gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingHipArraySupported;
  int ipcEventSupported;
  int clusterLaunch;
  int unifiedFunctionPointers;
  int reserved[63];
  int hipReserved[32];
  char gcnArchName[256];
  size_t maxSharedMemoryPerMultiProcessor;
  int clockInstructionRate;
  unsigned int arch; // hipDeviceArch_t: 17 one-bit fields
  unsigned int *hdpMemFlushCntl;
  unsigned int *hdpRegFlushCntl;
  int cooperativeMultiDeviceUnmatchedFunc;
  int cooperativeMultiDeviceUnmatchedGridDim;
  int cooperativeMultiDeviceUnmatchedBlockDim;
  int cooperativeMultiDeviceUnmatchedSharedMem;
  int isLargeBar;
  int asicRevision;
};
// The layout ROCm 6/7 compile: sizeof 1472, gcnArchName at 1160 (LP64).
static_assert(sizeof(void *) != 8 || sizeof(HipDeviceProp) == 1472,
              "hipDeviceProp_tR0600 is 1472 bytes");
static_assert(sizeof(void *) != 8 ||
                  offsetof(HipDeviceProp, gcnArchName) == 1160,
              "hipDeviceProp_tR0600::gcnArchName is at byte 1160");

/// hipPointerAttribute_t (ROCm 6/7). Only `type` is read; the call gets a
/// larger buffer in case a later runtime's struct grew.
struct HipPointerAttributes {
  int type; // hipMemoryType
  int device;
  void *devicePointer;
  void *hostPointer;
  int isManaged;
  unsigned allocationFlags;
};

//--- Constants -------------------------------------------------------------//
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorInvalidValue = 1;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNotInitialized = 3;
constexpr hipError_t hipErrorInvalidDeviceFunction = 98;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorInvalidImage = 200;
constexpr hipError_t hipErrorNoBinaryForGpu = 209;
constexpr hipError_t hipErrorInvalidKernelFile = 218;
constexpr hipError_t hipErrorInvalidHandle = 400;
constexpr hipError_t hipErrorNotFound = 500;
constexpr hipError_t hipErrorNotReady = 600;
constexpr hipError_t hipErrorIllegalAddress = 700;
constexpr hipError_t hipErrorLaunchOutOfResources = 701;
constexpr hipError_t hipErrorLaunchTimeOut = 702;
constexpr hipError_t hipErrorAssert = 710;
constexpr hipError_t hipErrorLaunchFailure = 719;
constexpr hipError_t hipErrorCooperativeLaunchTooLarge = 720;
constexpr hipError_t hipErrorNotSupported = 801;

// hipDeviceAttribute_t.
constexpr int hipDeviceAttributeCanMapHostMemory = 3;
constexpr int hipDeviceAttributeClockRate = 5; // kHz
constexpr int hipDeviceAttributeCooperativeLaunch = 10;
constexpr int hipDeviceAttributeMaxThreadsPerBlock = 56;
constexpr int hipDeviceAttributeMultiprocessorCount = 63; // CUs
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
constexpr int hipDeviceAttributeSharedMemPerBlockOptin = 75;
constexpr int hipDeviceAttributeUnifiedAddressing = 85;
/// kHz of the counter clock()/clock64() read on the device (s_memtime).
constexpr int hipDeviceAttributeClockInstructionRate = 10000;

// hipMemoryType (ROCm >= 6.0: the CUDA 11 values; unregistered host memory
// is a success with type 0, not an error).
constexpr int hipMemoryTypeUnregistered = 0;

// hipFunction_attribute.
constexpr int HIP_FUNC_ATTRIBUTE_NUM_REGS = 4;

// hipMemcpyKind.
constexpr int hipMemcpyHostToHost = 0;
constexpr int hipMemcpyHostToDevice = 1;
constexpr int hipMemcpyDeviceToHost = 2;
constexpr int hipMemcpyDeviceToDevice = 3;
constexpr int hipMemcpyDefault = 4;

// hipHostMalloc flags. Coherent (fine-grained) memory is what lets the host
// read the workers' status, and the kernel see the abort flag, while the
// kernel runs.
constexpr unsigned hipHostMallocPortable = 0x1;
constexpr unsigned hipHostMallocMapped = 0x2;
constexpr unsigned hipHostMallocCoherent = 0x40000000;

constexpr unsigned hipStreamNonBlocking = 0x1;
constexpr unsigned hipEventDefault = 0x0;
/// hipStreamWaitValue32: wait until (*ptr & mask) >= value.
constexpr unsigned hipStreamWaitValueGte = 0x0;

//--- The symbol table ------------------------------------------------------//
// X(member, required, return type, signature, library names in order of
// preference). A required symbol that is missing fails the load and is
// named; an optional one is left null and its users do without.
#define LOOM_HIP_RUNTIME_SYMBOLS(X)                                            \
  X(hipGetErrorName, true, const char *, (hipError_t), "hipGetErrorName")      \
  X(hipGetErrorString, true, const char *, (hipError_t), "hipGetErrorString")  \
  X(hipInit, true, hipError_t, (unsigned), "hipInit")                          \
  X(hipRuntimeGetVersion, false, hipError_t, (int *), "hipRuntimeGetVersion")  \
  X(hipGetDeviceCount, true, hipError_t, (int *), "hipGetDeviceCount")         \
  X(hipSetDevice, true, hipError_t, (int), "hipSetDevice")                     \
  X(hipDeviceGetAttribute, true, hipError_t, (int *, int, int),                \
    "hipDeviceGetAttribute")                                                   \
  X(hipGetDevicePropertiesR0600, true, hipError_t, (HipDeviceProp *, int),     \
    "hipGetDevicePropertiesR0600")                                             \
  X(hipMalloc, true, hipError_t, (void **, size_t), "hipMalloc")               \
  X(hipFree, true, hipError_t, (void *), "hipFree")                            \
  X(hipHostMalloc, true, hipError_t, (void **, size_t, unsigned),              \
    "hipHostMalloc", "hipExtHostAlloc")                                        \
  X(hipHostFree, true, hipError_t, (void *), "hipHostFree", "hipFreeHost")     \
  X(hipHostGetDevicePointer, true, hipError_t, (void **, void *, unsigned),    \
    "hipHostGetDevicePointer")                                                 \
  X(hipPointerGetAttributes, false, hipError_t,                                \
    (HipPointerAttributes *, const void *), "hipPointerGetAttributes")         \
  X(hipMemcpyAsync, true, hipError_t,                                          \
    (void *, const void *, size_t, int, hipStream_t), "hipMemcpyAsync")        \
  X(hipMemsetAsync, true, hipError_t, (void *, int, size_t, hipStream_t),      \
    "hipMemsetAsync")                                                          \
  X(hipModuleLoadData, true, hipError_t, (hipModule_t *, const void *),        \
    "hipModuleLoadData")                                                       \
  X(hipModuleUnload, true, hipError_t, (hipModule_t), "hipModuleUnload")       \
  X(hipModuleGetFunction, true, hipError_t,                                    \
    (hipFunction_t *, hipModule_t, const char *), "hipModuleGetFunction")      \
  X(hipFuncGetAttribute, false, hipError_t, (int *, int, hipFunction_t),       \
    "hipFuncGetAttribute")                                                     \
  X(hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, true, hipError_t,      \
    (int *, hipFunction_t, int, size_t),                                       \
    "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor")                      \
  X(hipModuleLaunchCooperativeKernel, true, hipError_t,                        \
    (hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned,          \
     unsigned, unsigned, hipStream_t, void **),                                \
    "hipModuleLaunchCooperativeKernel")                                        \
  X(hipStreamCreateWithFlags, true, hipError_t, (hipStream_t *, unsigned),     \
    "hipStreamCreateWithFlags")                                                \
  X(hipStreamDestroy, true, hipError_t, (hipStream_t), "hipStreamDestroy")     \
  X(hipStreamQuery, true, hipError_t, (hipStream_t), "hipStreamQuery")         \
  X(hipStreamWaitValue32, false, hipError_t,                                   \
    (hipStream_t, void *, uint32_t, unsigned, uint32_t),                       \
    "hipStreamWaitValue32")                                                    \
  X(hipStreamSynchronize, true, hipError_t, (hipStream_t),                     \
    "hipStreamSynchronize")                                                    \
  X(hipEventCreateWithFlags, true, hipError_t, (hipEvent_t *, unsigned),       \
    "hipEventCreateWithFlags")                                                 \
  X(hipEventDestroy, true, hipError_t, (hipEvent_t), "hipEventDestroy")        \
  X(hipEventRecord, true, hipError_t, (hipEvent_t, hipStream_t),               \
    "hipEventRecord")                                                          \
  X(hipEventElapsedTime, true, hipError_t, (float *, hipEvent_t, hipEvent_t),  \
    "hipEventElapsedTime")

/// One loaded HIP runtime library: its function table. Loaded once per path
/// and never unloaded (modules and streams live inside it).
struct HipRuntime {
  std::string path; // what was dlopen'ed
  int version = 0;  // hipRuntimeGetVersion (e.g. 70051831), 0 if unknown
#define LOOM_HIP_RUNTIME_MEMBER(member, required, ret, signature, ...)         \
  ret(*member) signature = nullptr;
  LOOM_HIP_RUNTIME_SYMBOLS(LOOM_HIP_RUNTIME_MEMBER)
#undef LOOM_HIP_RUNTIME_MEMBER
};

/// The environment variable naming a HIP runtime library to load instead
/// of the default candidates.
constexpr const char *kHipRuntimeEnv = "LOOM_HIP_RUNTIME";

/// Where libamdhip64 is looked for, in order: the loader's search first (the
/// library the rest of the process would get), then the versioned sonames
/// of ROCm 7 and 6, then the default ROCm prefix (often not on the loader's
/// path).
const std::vector<std::string> &hipRuntimeCandidates();

/// Loads the HIP runtime ($LOOM_HIP_RUNTIME, or the first of
/// hipRuntimeCandidates() that loads) and resolves its symbols. Fails with
/// LOOMRT_ERROR_BACKEND_UNAVAILABLE naming every path tried with dlerror's
/// reason, or the missing required symbol:
///   hip: cannot load libamdhip64 (libamdhip64.so: cannot open shared object
///   file: No such file or directory; libamdhip64.so.7: ...)
/// Loaded runtimes are cached per path; failures are not (ROCm may be
/// installed later).
Status loadHipRuntime(const HipRuntime **out);

/// "hipErrorIllegalAddress (an illegal memory access was encountered)";
/// "HIP error 12345" when the runtime does not know the code.
std::string hipErrorText(const HipRuntime &runtime, hipError_t result);

/// True for the errors after which the device is unusable in this process
/// (a kernel faulted): every later call fails the same way.
bool isStickyHipError(hipError_t result);

} // namespace hip
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HIP_HIPRUNTIME_H
