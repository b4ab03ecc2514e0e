//===- DeviceProgram.h - A GPU artifact, before any vendor call -*- C++ -*-===//
//
// Shared by the GPU backends (runtime/cuda, runtime/hip): what every one of
// them does with a device program before asking its driver anything.
//
//  * DeviceArtifact: a GPU artifact is a host shared library exporting
//    LOOM_DEVICE_PROGRAM_SYMBOL (kernels/common/DeviceAbi.h): the task table,
//    the code object and how to launch it. The library stays loaded while a
//    program made from it lives, so everything it points to stays valid.
//  * createDeviceTable: the checked ProgramTable of an artifact.
//  * checkCoResidency: a persistent kernel whose worker blocks are not all
//    resident deadlocks (the waiting blocks hold the SMs/CUs the producers
//    need), so it is refused with both numbers.
//  * deviceTimeoutCycles: LoomKernelArgs::timeout_cycles.
//  (What loomrt_malloc handed out and the check before a launch that every
//  binding holds its dims are every backend's: Allocations.h, Binding.h.)
//
// Messages start with the backend's kind ("hip program 'x.so' ..."), so a
// user who loaded a file on the wrong kind of device sees which.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_DEVICEPROGRAM_H
#define LOOM_RUNTIME_SRC_DEVICEPROGRAM_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/src/Binding.h"
#include "runtime/src/Error.h"
#include "runtime/src/ProgramTable.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom {
namespace rt {

class DeviceArtifact {
public:
  /// Opens `path`, finds the symbol, and checks the device and program ABI
  /// versions and the launch fields. `kind` ("cuda", "hip") starts every
  /// message; every message names the path.
  static Status open(const char *kind, const std::string &path,
                     std::shared_ptr<const DeviceArtifact> *out);
  /// Checks an already loaded descriptor (what open() checks after dlsym).
  static Status check(const char *kind, const std::string &path,
                      const LoomDeviceProgram &d);
  ~DeviceArtifact();
  DeviceArtifact(const DeviceArtifact &) = delete;
  DeviceArtifact &operator=(const DeviceArtifact &) = delete;

  const std::string &path() const { return path_; }
  const LoomDeviceProgram &program() const { return *program_; }

private:
  DeviceArtifact(std::string path, void *handle, const LoomDeviceProgram *p)
      : path_(std::move(path)), handle_(handle), program_(p) {}
  std::string path_;
  void *handle_;
  const LoomDeviceProgram *program_;
};

/// Copies and checks the artifact's task table (ProgramTable::create, with
/// the artifact's path as origin), static or dynamic mode. The copy's
/// run_task is a stand-in nothing calls (the bodies run inside the kernel).
Status createDeviceTable(const DeviceArtifact &artifact, uint32_t flags,
                         std::shared_ptr<const ProgramTable> *out);

/// What a worker block of a program asks for.
struct DeviceBlockShape {
  int32_t numWorkers = 0;
  int32_t threadsPerBlock = 0;
  int32_t dynamicSmemBytes = 0;
};

/// All num_workers blocks must be resident at once: `blocksPerUnit` (the
/// occupancy calculator's answer) * `units` >= num_workers. `device`
/// describes the device, `unit` is "SM" or "CU". `registers` (< 0: unknown)
/// only helps the message explain a low occupancy. LOOMRT_ERROR_RESOURCES:
///   program 'p' needs 9 co-resident worker blocks (128 threads and 0 bytes
///   of dynamic shared memory each), but <device> holds only 2 per CU x 4
///   CUs = 8 at once; a persistent kernel with blocks waiting to start
///   deadlocks, so it is not launched (schedule it for at most 8 workers, or
///   use fewer threads or less shared memory)
Status checkCoResidency(const std::string &program,
                        const DeviceBlockShape &shape, int blocksPerUnit,
                        int registers, const std::string &device, int units,
                        const char *unit);

/// LoomKernelArgs::timeout_cycles for a watchdog of `watchdogMs`: twice the
/// watchdog at `clockKHz`, the rate of the clock the kernel's waits read
/// (unknown, <= 0: 4 GHz is assumed). The host watchdog (which looks at
/// progress across all workers) fires first whenever someone synchronizes;
/// the device's own per-wait limit is the backstop when nobody does. A
/// slower actual clock only makes the backstop later.
uint64_t deviceTimeoutCycles(uint32_t watchdogMs, int clockKHz);

/// Counters a program allocates: its events, then dynamic mode's queue
/// counter (args.events[num_events]), then the control words (args.control,
/// kernels/common/DeviceAbi.h: a header and one per worker), all zeroed
/// once at load. Launch e waits for e * needs and takes tickets from (e - 1) *
/// (num_tasks + num_workers), so nothing is reset between launches.
inline size_t deviceCounterCount(const ProgramTable &table) {
  return static_cast<size_t>(table.numEvents()) + 1 + LOOM_CONTROL_WORKERS +
         static_cast<size_t>(table.numWorkers());
}

/// Where the control words start among those counters.
inline size_t controlCounterOffset(const ProgramTable &table) {
  return static_cast<size_t>(table.numEvents()) + 1;
}


} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_DEVICEPROGRAM_H
