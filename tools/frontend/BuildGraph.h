//===- BuildGraph.h - Kernel spec to loom.graph ------------------*- C++ -*-===//
#ifndef LOOM_TOOLS_FRONTEND_BUILDGRAPH_H
#define LOOM_TOOLS_FRONTEND_BUILDGRAPH_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "targets/chips/ChipTable.h"
#include "tools/spec/Spec.h"

namespace loom {

/// Builds a module holding one `loom.graph` for `spec`, compiled for `chip`.
/// Runtime-sized dimensions (batch, packed tokens, sequences) are dynamic in
/// the argument types; their compile-time bounds sit on the graph as
/// `max_batch` / `max_tokens` / `max_seqs`, and intermediates are sized by
/// them. The result is verified; on failure the diagnostics have been
/// emitted and the returned module is null.
mlir::OwningOpRef<mlir::ModuleOp> buildGraph(mlir::MLIRContext &context,
                                             const spec::Spec &spec,
                                             const ChipInfo &chip);

} // namespace loom

#endif // LOOM_TOOLS_FRONTEND_BUILDGRAPH_H
