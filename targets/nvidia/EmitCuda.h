//===- EmitCuda.h - Scheduled loom.graph to a persistent CUDA kernel -*- C++ -*-===//
#ifndef LOOM_TARGETS_NVIDIA_EMITCUDA_H
#define LOOM_TARGETS_NVIDIA_EMITCUDA_H

#include "ir/LoomOps.h"
#include "targets/common/DeviceEmitter.h"

#include <string>

namespace mlir::loom {

/// The launch fields of LoomDeviceProgram (targets/common/DeviceEmitter.h).
using CudaKernelInfo = DeviceKernelInfo;

/// Emits the CUDA translation unit of a scheduled graph: the task table in
/// device memory, one tile function per (layer op, phase) calling the bodies
/// in kernels/nvidia, and the persistent kernel (one block per worker).
LogicalResult emitCudaKernel(GraphOp graph, std::string &source,
                             CudaKernelInfo &info);

/// Emits the host side of the artifact: the task table for the runtime and
/// `loom_device_program()` (kernels/common/DeviceAbi.h), with the code
/// object at `cubinPath` embedded into the library.
LogicalResult emitCudaHostLibrary(GraphOp graph, const CudaKernelInfo &info,
                                  const std::string &cubinPath,
                                  std::string &source);

} // namespace mlir::loom

#endif // LOOM_TARGETS_NVIDIA_EMITCUDA_H
