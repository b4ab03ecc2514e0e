//===- HipChecks.h - What a HIP program needs from its device ---*- C++ -*-===//
//
// The decisions made before anything is launched, kept free of runtime calls
// so the unit tests can feed them any device: does the artifact's
// architecture run on this device, does a worker block fit, do all the
// worker blocks fit at once, and how long may a wait spin on the device.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HIP_HIPCHECKS_H
#define LOOM_RUNTIME_HIP_HIPCHECKS_H

#include "runtime/src/DeviceProgram.h"
#include "runtime/src/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom {
namespace rt {
namespace hip {

/// What the backend asks the runtime about a device once, at creation.
struct HipDeviceInfo {
  int ordinal = 0;
  std::string name;        // "AMD Instinct MI355X"
  std::string gcnArchName; // "gfx950:sramecc+:xnack-"
  int cuCount = 0;
  bool cooperativeLaunch = false;
  bool unifiedAddressing = false;
  bool canMapHostMemory = false;
  int maxThreadsPerBlock = 0;
  int maxSharedPerBlock = 0;   // bytes of LDS one block may use
  int clockKHz = 0;            // peak shader clock
  int clockInstructionKHz = 0; // the counter clock64() reads
};

/// "hip device 0 (AMD Instinct MI355X, gfx950:sramecc+:xnack-, 256 CUs)".
std::string describeDevice(const HipDeviceInfo &info);

/// An AMD GPU target: "gfx950", "gfx942:sramecc+:xnack-", "gfx9-4-generic".
struct GfxTarget {
  std::string processor;                              // "gfx942"
  std::vector<std::pair<std::string, bool>> features; // {"xnack", false}
  bool generic() const;                               // "gfx9-4-generic"
};
/// False for anything that is not "gfx<id>[:<feature>(+|-)]...".
bool parseGfxTarget(const char *text, GfxTarget *out);

/// Whether code built for `arch` runs on a device whose gcnArchName is
/// `deviceArch`. The processors must be equal; target features (":sramecc+",
/// ":xnack-") are ignored unless both sides state the same feature, in
/// which case they must agree (code built for xnack+ does not run with
/// xnack off). A generic target ("gfx9-4-generic") is left to the code
/// object loader. Messages name the artifact, both architectures and the
/// device.
Status checkArch(const std::string &artifact, const char *arch,
                 const HipDeviceInfo &info);

/// Threads and dynamic shared memory (LDS) of one block against the
/// device's limits (LOOMRT_ERROR_RESOURCES).
Status checkBlockShape(const std::string &program,
                       const DeviceBlockShape &shape,
                       const HipDeviceInfo &info);

/// All num_workers blocks must be resident at once: `blocksPerCu` (from
/// hipModuleOccupancyMaxActiveBlocksPerMultiprocessor) * CUs >= num_workers.
/// The refusal gives both numbers (see checkCoResidency in DeviceProgram.h).
Status checkCoResidency(const std::string &program,
                        const DeviceBlockShape &shape, int blocksPerCu,
                        int registers, const HipDeviceInfo &info);

/// LoomKernelArgs::timeout_cycles: the kernel's waits count clock64()
/// (s_memtime) ticks, whose rate is hipDeviceAttributeClockInstructionRate;
/// the shader clock stands in when the runtime does not say.
uint64_t timeoutCycles(uint32_t watchdogMs, const HipDeviceInfo &info);

} // namespace hip
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HIP_HIPCHECKS_H
