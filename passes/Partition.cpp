//===- Partition.cpp - loom-partition: layer ops to tile tasks -------------===//
#include "passes/Passes.h"
#include "passes/TaskModel.h"

#include "mlir/IR/Builders.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPARTITION
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct PartitionPass : public mlir::loom::impl::LoomPartitionBase<PartitionPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](GraphOp graph) {
      GraphBounds bounds = GraphBounds::of(graph);
      int64_t nextId = 0, tasks = 0;
      for (Operation &op : graph.getBodyBlock()) {
        if (!isLayerOp(&op))
          continue;
        PartitionAttr partition = choosePartition(&op, graph.getTarget(), bounds);
        if (!partition) {
          op.emitOpError("has no tiling rule for target '")
              << graph.getTarget().getName() << "'";
          return signalPassFailure();
        }
        // Past the cap the later passes would only exhaust memory.
        int64_t own = 0;
        for (int64_t phase : partition.getTasks())
          own += phase;
        tasks += own;
        if (tasks > kMaxTasks) {
          op.emitOpError("makes the graph's tasks more than the compiler's "
                         "cap of ")
              << kMaxTasks << " (this op alone has " << own << ")";
          return signalPassFailure();
        }
        op.setAttr(kOpIdAttr, b.getI64IntegerAttr(nextId++));
        op.setAttr(kPartitionAttr, partition);
      }
    });
  }
};
} // namespace
