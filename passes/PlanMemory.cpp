//===- PlanMemory.cpp - loom-plan-memory: one workspace arena --------------===//
//
// Intermediates (loom.alloc) and per-op scratch live from the first to the
// last layer op that touches them (op order). Placement is greedy first-fit,
// largest buffer first, against the buffers already placed whose live ranges
// overlap: the classic interval-packing heuristic, good to a few percent of
// the peak live size on layer graphs.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TaskModel.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct Placement {
  Operation *owner;   ///< the loom.alloc, or the layer op for its scratch
  int64_t bytes;
  int64_t first, last; ///< live range in layer-op positions
  int64_t offset = -1;
};

/// The buffer a value views, through loom.slice.
Value rootOf(Value v) {
  while (auto slice = v.getDefiningOp<SliceOp>())
    v = slice.getSource();
  return v;
}

struct PlanMemoryPass : public mlir::loom::impl::LoomPlanMemoryBase<PlanMemoryPass> {
  using LoomPlanMemoryBase::LoomPlanMemoryBase;

  void runOnOperation() override {
    getOperation().walk([&](GraphOp graph) {
      if (failed(plan(graph)))
        signalPassFailure();
    });
  }

  LogicalResult plan(GraphOp graph) {
    GraphBounds bounds = GraphBounds::of(graph);
    SmallVector<Placement> placements;
    DenseMap<Operation *, size_t> allocIndex;
    for (Operation &op : graph.getBodyBlock())
      if (auto alloc = dyn_cast<AllocOp>(op)) {
        allocIndex[alloc] = placements.size();
        placements.push_back({alloc, boundedBytes(alloc.getType(), bounds),
                              INT64_MAX, -1});
      }

    int64_t position = 0;
    for (Operation &op : graph.getBodyBlock()) {
      if (!isLayerOp(&op))
        continue;
      auto partition = op.getAttrOfType<PartitionAttr>(kPartitionAttr);
      if (!partition)
        return op.emitOpError("is not partitioned; run loom-partition first");
      for (Value operand : op.getOperands())
        if (Operation *def = rootOf(operand).getDefiningOp())
          if (auto it = allocIndex.find(def); it != allocIndex.end()) {
            Placement &p = placements[it->second];
            p.first = std::min(p.first, position);
            p.last = std::max(p.last, position);
          }
      if (partition.getScratchBytes() > 0)
        placements.push_back(
            {&op, partition.getScratchBytes(), position, position});
      ++position;
    }

    // Largest first; ties by position so the result is deterministic.
    SmallVector<Placement *> order;
    for (Placement &p : placements)
      if (p.last >= 0)
        order.push_back(&p);
    llvm::stable_sort(order, [](Placement *a, Placement *b) {
      return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
    });
    int64_t total = 0;
    SmallVector<Placement *> placed;
    for (Placement *p : order) {
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (Placement *q : placed)
        if (!reuse || (q->first <= p->last && p->first <= q->last))
          busy.push_back({q->offset, q->offset + q->bytes});
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + p->bytes <= begin)
          break;
        offset = std::max<int64_t>(offset, llvm::alignTo(end, alignment));
      }
      p->offset = offset;
      total = std::max(total, offset + p->bytes);
      placed.push_back(p);
    }

    Builder b(graph.getContext());
    for (Placement &p : placements) {
      // An alloc nothing uses still gets a place of its own at the end.
      if (p.last < 0) {
        p.offset = int64_t(llvm::alignTo(total, alignment));
        total = p.offset + p.bytes;
      }
      p.owner->setAttr(isa<AllocOp>(p.owner) ? kOffsetAttr : kScratchOffsetAttr,
                       b.getI64IntegerAttr(p.offset));
    }
    graph->setAttr(kWorkspaceBytesAttr,
                   b.getI64IntegerAttr(int64_t(llvm::alignTo(total, alignment))));
    return success();
  }
};
} // namespace
