//===- DeviceEmitter.h - The persistent GPU kernel, any vendor ---*- C++ -*-===//
//
// A GPU artifact is the same program on every vendor: the schedule as
// device arrays, one tile function per (layer op, phase) (TileEmitter), a
// switch from task id to tile function, a kernel that hands all of it to the
// vendor's persistent loop, and a host library that embeds the code object
// and exports `loom_device_program` (kernels/common/DeviceAbi.h). Only the
// spelling differs per vendor, which `DeviceSpelling` carries; EmitCuda and
// EmitHip are a spelling each.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_COMMON_DEVICEEMITTER_H
#define LOOM_TARGETS_COMMON_DEVICEEMITTER_H

#include "ir/LoomOps.h"
#include "targets/common/TileEmitter.h"

#include <string>
#include <vector>

namespace mlir::loom {

/// What the runtime needs besides the code object: LoomDeviceProgram's
/// launch fields.
struct DeviceKernelInfo {
  std::string kernelName = "loom_kernel";
  int threadsPerBlock = 256;
  int dynamicSmemBytes = 0;
  std::string bodies; ///< which task bodies the kernel uses, for reports
  /// loomc --profile: emit the spelling's profiledLoop and set
  /// LOOM_DEVICE_PROFILED (kernels/common/DeviceAbi.h).
  bool profile = false;
  /// Shared tile functions (TileDialect::shareFunctions) even where the
  /// vendor's spelling does not ask for them (loomc --share-tile-functions).
  bool shareTileFunctions = false;
  /// Records mode: bytes of coming weights each worker prefetches into L2
  /// (loomc --l2-prefetch). On return: the budget the kernel got (0 when no
  /// task has weights to prefetch).
  int64_t prefetchBudget = 0;
  /// loomc --trust-meta: the bodies leave out their checks of the meta
  /// values (LOOM_TRUST_META, kernels/common/MetaGuard.h).
  bool trustMeta = false;
  /// On return: the kernel takes its bindings by value, a second parameter
  /// (LOOM_DEVICE_INLINE_BINDINGS, kernels/common/DeviceAbi.h).
  bool inlineBindings = false;
};

/// How one vendor spells the device program.
struct DeviceSpelling {
  std::vector<std::string> includes; ///< after DeviceAbi.h; "<x>" verbatim
  TileDialect tiles;
  /// The tile function's qualifier when the kernel has only one (empty:
  /// tiles.qualifier): a lone function inlined into the worker loop costs
  /// no call and no stack copy of its operands.
  std::string singleTileQualifier;
  /// Qualifiers of `runTask` (the switch over tile functions).
  std::string runTaskQualifier;
  /// Attributes between `__global__ void` and the kernel's name.
  std::string kernelBounds;
  /// The persistent loop template, e.g. "loom::nvidia::loomPersistentLoop".
  std::string persistentLoop;
  /// The same loop recording per-task timing (DeviceAbi.h, LoomTaskTiming),
  /// for --profile; empty: the vendor has none yet (--profile is refused).
  std::string profiledLoop;
  /// Wraps the preload lambda for the loop (tiles.preload), e.g.
  /// "loom::nvidia::taskPreload".
  std::string preloadWrapper;
  /// A statement the kernel runs before its loop when the graph has a
  /// linear op (e.g. the weight ring's launch-long barriers); empty: none.
  std::string linearInit;
  /// Where the bodies live, for DeviceKernelInfo::bodies.
  std::string bodiesFolder;
  /// Extra lines after `constexpr int kThreads` (e.g. static_asserts).
  std::string preamble;
  /// The loop takes each worker's schedule as packed records
  /// (kernels/common/WorkerRecords.h) and a loomc-made EngineSchedule
  /// (kernels/nvidia/Interpreter.cuh) instead of the task-table arrays.
  bool records = false;
  /// Records mode: bytes of the coming tasks' weights a worker keeps
  /// prefetching into L2 ahead of the task in hand; 0: no prefetch ranges.
  int64_t prefetchBudget = 0;
  /// The kernel takes the bindings by value as a second, __grid_constant__
  /// parameter whenever they fit (LOOM_INLINE_BINDINGS_FIT), so a launch can
  /// be queued on a stream or captured in a CUDA graph. The vendor's loop
  /// must read them through `args.bindings`, which the kernel points there.
  bool inlineBindings = false;
};

/// Static shared memory / LDS the dynamic size leaves to the loop's and the
/// bodies' own `__shared__` variables.
constexpr int kStaticSmemReserve = 4096;

/// Emits the device translation unit of a scheduled graph and fills `info`
/// (dynamic shared memory: the #loom.target's smem_per_block less
/// kStaticSmemReserve).
LogicalResult emitDeviceKernel(GraphOp graph, const DeviceSpelling &spelling,
                               std::string &source, DeviceKernelInfo &info);

/// Emits the host side of the artifact: the task table for the runtime and
/// `loom_device_program()`, with the code object at `codeObjectPath`
/// embedded (.incbin) between the symbols loom_<kind>_begin / _end.
LogicalResult emitDeviceHostLibrary(GraphOp graph, const DeviceKernelInfo &info,
                                    llvm::StringRef codeObjectKind,
                                    const std::string &codeObjectPath,
                                    std::string &source);

} // namespace mlir::loom

#endif // LOOM_TARGETS_COMMON_DEVICEEMITTER_H
