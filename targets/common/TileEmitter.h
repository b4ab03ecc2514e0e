//===- TileEmitter.h - One function per (layer op, phase) --------*- C++ -*-===//
//
// Every target runs a task the same way: compute the tile's range from the
// op's #loom.partition exactly as passes/TaskModel.cpp defines it, clamp it
// to the runtime sizes read from the bindings, and call the op's body with
// compile-time shapes. Only the spelling differs per target (namespace of
// the bodies, function qualifiers, extra arguments such as shared memory),
// which `TileDialect` carries.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TARGETS_COMMON_TILEEMITTER_H
#define LOOM_TARGETS_COMMON_TILEEMITTER_H

#include "ir/LoomOps.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::loom {

struct TileDialect {
  std::string bodies;      ///< namespace of the bodies, "loom::host::"
  std::string qualifier;   ///< "static", "static __device__ __forceinline__"
  std::string extraParams; ///< appended to every tile function's parameters
  std::string extraArgs;   ///< appended to every body call's arguments
  std::string bodyTemplate;///< e.g. "<kThreads>": explicit template args of bodies
  /// Bodies return an int32_t status (0: ok) that the tile passes on.
  bool bodiesReturnStatus = false;
};

/// Writes `static int32_t op<N>_phase<P>(int64_t tile, const LoomBinding *b,
/// char *ws <extraParams>)` for every (layer op, phase) of a scheduled graph.
LogicalResult emitTileFunctions(GraphOp graph, const TileDialect &dialect,
                                llvm::raw_ostream &os);

/// The name of the tile function of (op id, phase).
std::string tileFunctionName(int64_t opId, int64_t phase);

} // namespace mlir::loom

#endif // LOOM_TARGETS_COMMON_TILEEMITTER_H
