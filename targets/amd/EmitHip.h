//===- EmitHip.h - Scheduled loom.graph to a persistent HIP kernel -*- C++ -*-===//
#ifndef LOOM_TARGETS_AMD_EMITHIP_H
#define LOOM_TARGETS_AMD_EMITHIP_H

#include "ir/LoomOps.h"
#include "targets/common/DeviceEmitter.h"

#include <string>

namespace mlir::loom {

/// Emits the HIP translation unit of a scheduled graph for its AMD target
/// (gfx950): the task table in device memory, one tile function per
/// (layer op, phase) calling the bodies in kernels/amd/<arch>, and the
/// persistent kernel (one 256-thread workgroup per CU). Fails with a
/// diagnostic if the #loom.target does not describe a chip the AMD bodies
/// are written for (wave64, LDS for the reserve).
LogicalResult emitHipKernel(GraphOp graph, std::string &source,
                            DeviceKernelInfo &info);

/// Emits the host side of the artifact: the task table for the runtime and
/// `loom_device_program()` (kernels/common/DeviceAbi.h), with the code
/// object (hsaco) at `hsacoPath` embedded into the library: what
/// runtime/hip loads.
LogicalResult emitHipHostLibrary(GraphOp graph, const DeviceKernelInfo &info,
                                 const std::string &hsacoPath,
                                 std::string &source);

} // namespace mlir::loom

#endif // LOOM_TARGETS_AMD_EMITHIP_H
