//===- CudaChecks.h - What a CUDA program needs from its device -*- C++ -*-===//
//
// The decisions made before anything is launched, kept free of driver calls
// so the unit tests can feed them any device: does the artifact's
// architecture run on this device, does a worker block fit, do all the
// worker blocks fit at once (a persistent kernel whose blocks are not all
// resident deadlocks: the waiting blocks hold the SMs the producers need).
// How long a wait may spin on the device is deviceTimeoutCycles
// (DeviceProgram.h).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDACHECKS_H
#define LOOM_RUNTIME_CUDA_CUDACHECKS_H

#include "runtime/src/DeviceProgram.h"
#include "runtime/src/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {
namespace rt {
namespace cuda {

/// What the backend asks the driver about a device once, at creation.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0;
  int ccMinor = 0;
  int smCount = 0;
  bool cooperativeLaunch = false;
  bool unifiedAddressing = false;
  bool canMapHostMemory = false;
  int maxThreadsPerBlock = 0;
  int maxSmemPerBlockOptin = 0; // bytes of dynamic shared memory, opted in
  int clockKHz = 0;             // the SM clock the driver reports
};

/// "cuda device 0 (NVIDIA H200, compute capability 9.0, 132 SMs)".
std::string describeDevice(const CudaDeviceInfo &info);

/// How the code object is encoded; decides how strictly the arch must match.
enum class CodeKind { Cubin, Fatbin, Ptx, Unknown };
CodeKind classifyCode(const void *data, size_t size);

/// Whether code built for `arch` ("sm_90a", "sm_100f", "sm_90") runs on the
/// device. `a` targets run on exactly their compute capability, `f` on their
/// family (same major, minor at least theirs), plain cubins likewise, and
/// plain PTX on anything at least as new. Messages name the artifact, both
/// architectures and the rule.
Status checkArch(const std::string &artifact, const char *arch, CodeKind kind,
                 const CudaDeviceInfo &info);

/// What a worker block of a program asks for.
using BlockShape = DeviceBlockShape;

/// Threads and dynamic shared memory of one block against the device's
/// limits (LOOMRT_ERROR_RESOURCES).
Status checkBlockShape(const std::string &program, const BlockShape &shape,
                       const CudaDeviceInfo &info);

/// All num_workers blocks must be resident at once: `blocksPerSm` (from the
/// occupancy calculator) * SMs >= num_workers. `registers` (< 0: unknown)
/// only helps the message explain a low occupancy. The shared
/// rt::checkCoResidency (DeviceProgram.h) with this device's SMs.
Status checkCoResidency(const std::string &program, const BlockShape &shape,
                        int blocksPerSm, int registers,
                        const CudaDeviceInfo &info);

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDACHECKS_H
