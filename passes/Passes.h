//===- Passes.h - Loom's compilation passes ----------------------*- C++ -*-===//
#ifndef LOOM_PASSES_PASSES_H
#define LOOM_PASSES_PASSES_H

#include "ir/LoomOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::loom {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Options shared by the per-target pipelines.
struct PipelineOptions {
  std::string scheduleMode = "static";
  bool fuseRmsNorm = false; ///< run loom-fuse-rmsnorm first
};

/// [fuse-rmsnorm,] partition, plan-memory, derive-events, schedule,
/// verify-schedule.
void buildLoomPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers `loom-pipeline-nvidia`, `loom-pipeline-amd`, `loom-pipeline-host`.
void registerLoomPipelines();

} // namespace mlir::loom

#endif // LOOM_PASSES_PASSES_H
