//===- EmitHost.h - Scheduled loom.graph to a host C++ program ---*- C++ -*-===//
#ifndef LOOM_TARGETS_HOST_EMITHOST_H
#define LOOM_TARGETS_HOST_EMITHOST_H

#include "ir/LoomOps.h"

#include <string>

namespace mlir::loom {

/// Emits the C++ translation unit of the host program of a scheduled graph
/// (after the Loom pipeline): the task table as data, one function per
/// (layer op, phase) that runs a tile through the bodies in kernels/host,
/// and `loom_host_program()` (kernels/common/ProgramAbi.h). Fails with a
/// diagnostic on the graph if it is not scheduled. `trustMeta`: the bodies
/// leave out their checks of the meta values (LOOM_TRUST_META,
/// kernels/common/MetaGuard.h).
LogicalResult emitHostProgram(GraphOp graph, std::string &source,
                              bool trustMeta = false);

} // namespace mlir::loom

#endif // LOOM_TARGETS_HOST_EMITHOST_H
