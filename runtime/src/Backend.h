//===- Backend.h - What a backend provides to the runtime core --*- C++ -*-===//
//
// The core (C API, task-table checks, bindings, epochs, failure state) is the
// same for every device; a backend supplies two objects:
//
//  * Device: memory, and turning a program file (or an in-process
//    descriptor) into a Program. Host: dlopen a shared library. CUDA
//    (runtime/cuda): dlopen an artifact, load its code object as a module.
//  * Executable: one loaded program on that device. It owns the event
//    counters and the workers, starts a launch of a given epoch, and waits
//    for it with a watchdog.
//
// Backends are listed in Registry.cpp; that file is the only place that
// knows which ones are built.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_BACKEND_H
#define LOOM_RUNTIME_SRC_BACKEND_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/src/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom {
namespace rt {

class Program;

/// What one launch needs. Pointers are valid for the duration of the
/// launch() call only: the executable copies what it keeps.
struct LaunchParams {
  const LoomBinding *bindings = nullptr; // one per buffer, in buffer order
  uint64_t epoch = 0;                    // 1 for the first launch
  uint32_t watchdogMs = LOOMRT_DEFAULT_WATCHDOG_MS;
  // Queue the launch behind a gate opened once all of it is queued
  // (loomrt_program_set_queued_launch); only after prepareQueuedLaunch()
  // succeeded.
  bool queued = false;
  // The kernel takes its number from its control words (LoomKernelArgs
  // epoch 0; kernels/common/DeviceAbi.h), which the core knows to hold
  // `epoch` - 1: once a program launched on a stream, all its launches are
  // numbered there (Program.h). `epoch` still names the launch in reports.
  bool numberedOnDevice = false;
};

/// What Executable::checkStreamLaunches found.
struct StreamCheck {
  uint64_t completed = 0; // launches the device has completed in all
  bool reset = false;     // a launch failed; the counters start over
};

class Executable {
public:
  virtual ~Executable() = default;

  /// Starts epoch `params.epoch` (numbered by the kernel when
  /// `params.numberedOnDevice`). The core calls it only when no launch is
  /// in flight and no earlier launch failed.
  virtual Status launch(const LaunchParams &params) = 0;

  /// Waits for the launch in flight; returns its failure (watchdog report,
  /// failed task). Success when nothing is in flight.
  virtual Status synchronize() = 0;

  virtual bool inFlight() const = 0;

  /// Whether launches can be queued behind a gate (LaunchParams::queued),
  /// with whatever that needs set up. LOOMRT_ERROR_UNSUPPORTED, saying why,
  /// where they cannot. The core calls it only when no launch is in flight.
  virtual Status prepareQueuedLaunch() = 0;

  //--- Launches on the caller's stream (loomrt_launch_on_stream) --------//
  // Queued, never waited for here: the kernel numbers them itself (epoch 0,
  // the control words of kernels/common/DeviceAbi.h) and takes its bindings
  // by value, so the caller may queue several or capture them in a CUDA
  // graph. The caller synchronizes its stream; then the core asks
  // checkStreamLaunches() how they went. The core calls these only when no
  // launch of its own is in flight and (but for streamLaunchSupport) only
  // after streamLaunchSupport() succeeded.

  /// Whether this program can be launched on a stream:
  /// LOOMRT_ERROR_UNSUPPORTED, naming the program and saying why, if not.
  virtual Status streamLaunchSupport() const = 0;

  /// Before the first stream launch of a program that has made `completed`
  /// launches of the core's own (numbered by the host, which touch no
  /// control word): makes that every worker's launch count on the device,
  /// and clears what those launches left (status records, abort flag).
  /// Synchronous; `stream` is the caller's (refused while it is being
  /// captured: the store must not be part of the capture).
  virtual Status beginStreamLaunches(uint64_t completed, void *stream) {
    (void)completed;
    (void)stream;
    return streamLaunchSupport();
  }

  /// Queues one launch numbered on the device on `stream` (the caller's
  /// CUstream / hipStream_t; null: the legacy default stream), with
  /// `params.bindings` copied into the launch. `params.epoch` is unused.
  /// `*captured`: the stream is being captured into a graph, so the launch
  /// runs only when (and as often as) the graph does.
  virtual Status launchOnStream(const LaunchParams &params, void *stream,
                                bool *captured) {
    (void)params;
    (void)stream;
    *captured = false;
    return streamLaunchSupport();
  }

  /// After the caller synchronized the stream: how many launches the device
  /// has completed in all (`out->completed`), or the failure of one, after
  /// which the event counters, the queue, the control words, the status
  /// records and the abort flag are reset (`out->reset`: the next launch is
  /// launch 1 again). LOOMRT_ERROR_NOT_READY when the workers disagree or
  /// have not completed `atLeast` launches: the stream was not synchronized.
  virtual Status checkStreamLaunches(uint64_t atLeast, StreamCheck *out) {
    (void)atLeast;
    (void)out;
    return streamLaunchSupport();
  }

  /// Wall time of the last completed launch, in nanoseconds.
  virtual uint64_t lastLaunchNs() const = 0;

  /// The current value of event counter `event` (checked by the caller).
  virtual uint64_t eventCount(int32_t event) const = 0;

  /// Whether launches record per-task timings (LoomTaskTiming,
  /// kernels/common/DeviceAbi.h). Backends that cannot say no.
  virtual bool profiled() const { return false; }

  /// The raw records of the last completed launch: num_tasks task records,
  /// then num_workers worker records, in ticks of the backend's timer;
  /// `*nsPerTick` converts. Called only when profiled() and no launch is in
  /// flight; the core checks and converts them (Program::profile).
  virtual Status readProfile(std::vector<LoomTaskTiming> *records,
                             double *nsPerTick) const {
    (void)records;
    (void)nsPerTick;
    return Status(LOOMRT_ERROR_INTERNAL, "this backend records no timings");
  }
};

class Device {
public:
  virtual ~Device() = default;

  /// "host", "cuda", "hip".
  virtual const char *kind() const = 0;
  virtual int ordinal() const = 0;
  /// One line for logs and messages; GPU backends add the model.
  virtual std::string describe() const {
    return std::string(kind()) + " device " + std::to_string(ordinal());
  }

  /// At least 256-byte aligned; bytes > 0.
  virtual Status allocate(size_t bytes, void **out) = 0;
  /// Fails for a pointer this device did not allocate.
  virtual Status release(void *ptr) = 0;
  virtual Status copy(void *dst, const void *src, size_t bytes) = 0;
  /// A copy in a given direction. Backends whose device memory is host
  /// memory need not care which.
  virtual Status copyKind(void *dst, const void *src, size_t bytes,
                          loomrt_copy_kind kind) {
    (void)kind;
    return copy(dst, src, bytes);
  }
  virtual Status fill(void *dst, int value, size_t bytes) = 0;
  /// The allocation of this device's (allocate) that holds `ptr`: its base
  /// and size; false for memory it did not allocate.
  virtual bool findAllocation(const void *ptr, uintptr_t *base,
                              size_t *bytes) const = 0;

  virtual Status loadProgram(const std::string &path, uint32_t flags,
                             std::unique_ptr<Program> *out) = 0;
  virtual Status programFromDesc(const LoomProgramDesc &desc, uint32_t flags,
                                 std::unique_ptr<Program> *out) = 0;
};

/// Creates a device of `kind`; the errors name the kind (unknown kind, or a
/// backend that is not built).
Status createDevice(const char *kind, int ordinal,
                    std::unique_ptr<Device> *out);
Status countDevices(const char *kind, int *count);

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_BACKEND_H
