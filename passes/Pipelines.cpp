//===- Pipelines.cpp - The per-target pass pipelines -----------------------===//
//
// The passes read every chip fact from the graph's #loom.target, so the three
// vendor families share one pipeline today; they are registered separately
// because their emitters and options diverge.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::loom;

void mlir::loom::buildLoomPipeline(OpPassManager &pm,
                                   const PipelineOptions &options) {
  if (options.fuseRmsNorm)
    pm.addPass(createLoomFuseRmsNorm());
  pm.addPass(createLoomPartition());
  pm.addPass(createLoomPlanMemory());
  pm.addPass(createLoomDeriveEvents());
  LoomScheduleOptions schedule;
  schedule.mode = options.scheduleMode;
  pm.addPass(createLoomSchedule(schedule));
  pm.addPass(createLoomVerifySchedule());
}

namespace {
struct CliPipelineOptions : public PassPipelineOptions<CliPipelineOptions> {
  Option<std::string> mode{*this, "mode",
                           llvm::cl::desc("static or dynamic scheduling"),
                           llvm::cl::init("static")};
  Option<bool> fuseRmsNorm{
      *this, "fuse-rmsnorm",
      llvm::cl::desc("fold rmsnorms read only by linears into them first"),
      llvm::cl::init(false)};
};
} // namespace

void mlir::loom::registerLoomPipelines() {
  for (const char *family : {"nvidia", "amd", "host"}) {
    PassPipelineRegistration<CliPipelineOptions>(
        std::string("loom-pipeline-") + family,
        std::string("The Loom pipeline for ") + family +
            " targets: [fuse-rmsnorm,] partition, plan-memory, derive-events, schedule, "
            "verify-schedule",
        [](OpPassManager &pm, const CliPipelineOptions &cli) {
          PipelineOptions options;
          options.scheduleMode = cli.mode;
          options.fuseRmsNorm = cli.fuseRmsNorm;
          buildLoomPipeline(pm, options);
        });
  }
}
