//===- EmitCuda.cpp - Scheduled loom.graph to a persistent CUDA kernel -----===//
//
// The device side: the schedule as `__device__` arrays, one tile function
// per (layer op, phase) (targets/common/TileEmitter, calling the bodies in
// kernels/nvidia/sm90), a switch from task id to tile function, and the
// kernel, which hands all of it to the persistent loop
// (kernels/nvidia/Interpreter.cuh). The host side: the same task table for
// the runtime, and the cubin, embedded with .incbin. The structure is
// targets/common/DeviceEmitter's; this file is CUDA's spelling of it.
//
//===----------------------------------------------------------------------===//
#include "targets/nvidia/EmitCuda.h"

using namespace mlir;
using namespace mlir::loom;

LogicalResult mlir::loom::emitCudaKernel(GraphOp graph, std::string &source,
                                         CudaKernelInfo &info) {
  DeviceSpelling spelling;
  spelling.includes = {"kernels/nvidia/Interpreter.cuh",
                       "kernels/nvidia/sm90/DecoderBodies.cuh",
                       "kernels/nvidia/sm90/KdaBodies.cuh",
                       "kernels/nvidia/sm90/MlaBodies.cuh"};
  // Separate functions (not inlined into one switch): each body keeps its
  // own register allocation pressure out of the others'. A kernel of one
  // function inlines it (a cold MLA launch is faster with its calls
  // inlined: bench/results/h200/2026-12-02-e/ab-cold-warm.txt).
  spelling.tiles = {"loom::sm90::", "__device__ __noinline__", ", char *smem",
                    ", smem", "<kThreads>", /*bodiesReturnStatus=*/true};
  spelling.singleTileQualifier = "__device__ __forceinline__";
  spelling.tiles.bindingType = "LoomTaskBinding";
  // One-phase MLA keeps per-request counters among the events.
  spelling.tiles.passEvents = true;
  // Linear tasks issue their first weight stages before waiting on x.
  spelling.tiles.preload = true;
  spelling.preloadWrapper = "loom::nvidia::taskPreload";
  // The weight ring's mbarriers live for the whole launch.
  spelling.linearInit = "loom::sm90::linearRingInit<kThreads>()";
  spelling.runTaskQualifier = "__device__";
  spelling.kernelBounds = "__launch_bounds__(kThreads, 1)";
  spelling.persistentLoop = "loom::nvidia::loomPersistentLoop";
  spelling.profiledLoop = "loom::nvidia::loomProfiledLoop";
  spelling.bodiesFolder = "kernels/nvidia/sm90";
  spelling.records = true;
  // Launches carry their bindings: loomrt_launch_on_stream and CUDA graphs.
  spelling.inlineBindings = true;
  // Off unless asked for: on the H200 every budget tried made the decoder
  // and the engine benchmark's stream slower (bench/engine/README.md).
  spelling.prefetchBudget = std::max<int64_t>(0, info.prefetchBudget);
  return emitDeviceKernel(graph, spelling, source, info);
}

LogicalResult mlir::loom::emitCudaHostLibrary(GraphOp graph,
                                              const CudaKernelInfo &info,
                                              const std::string &cubinPath,
                                              std::string &source) {
  return emitDeviceHostLibrary(graph, info, "cubin", cubinPath, source);
}
