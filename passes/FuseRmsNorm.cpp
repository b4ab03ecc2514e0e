//===- FuseRmsNorm.cpp - loom-fuse-rmsnorm: norms into their linears -------===//
//
// An rmsnorm whose rows only linears read costs a task per row block, a
// dependency hop between the norm and its readers, and the normalised rows'
// round trip through memory, for work each linear tile can do on the rows
// it loads anyway. This pass gives those linears the norm (`norm`,
// `norm_eps`) and the rmsnorm's input as their x, then drops the rmsnorm.
//
// It fuses only when nothing can tell: the normalised rows live in an
// intermediate (loom.alloc) that nothing else reads or views, the norm
// works on whole rows (x of rank 2, so the norm's rows are the linears'
// rows), and no op between the rmsnorm and its last reader writes the
// rows or the scale.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMFUSERMSNORM
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The buffer a value views, through loom.slice.
Value rootOf(Value v) {
  while (auto slice = v.getDefiningOp<SliceOp>())
    v = slice.getSource();
  return v;
}

/// Whether `op` may write any view of `root`.
bool writesRoot(Operation *op, Value root) {
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return false;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  for (const auto &effect : effects)
    if (isa<MemoryEffects::Write>(effect.getEffect()) && effect.getValue() &&
        rootOf(effect.getValue()) == root)
      return true;
  return false;
}

/// The linears that read `norm`'s rows, in block order, when it can fold
/// into them; empty otherwise.
SmallVector<LinearOp> fusableReaders(RmsNormOp norm) {
  Value y = norm.getY();
  if (y == norm.getX() || !y.getDefiningOp<AllocOp>() ||
      cast<MemRefType>(norm.getX().getType()).getRank() != 2 ||
      getElementTypeOrSelf(norm.getWeight().getType()) !=
          getElementTypeOrSelf(norm.getX().getType()))
    return {};
  SmallVector<LinearOp> readers;
  for (Operation *user : y.getUsers()) {
    if (user == norm.getOperation())
      continue;
    auto linear = dyn_cast<LinearOp>(user);
    if (!linear || linear.getX() != y || linear.getNorm() ||
        linear.getResidual() == y || linear.getY() == y ||
        linear->getBlock() != norm->getBlock() ||
        !norm->isBeforeInBlock(linear))
      return {};
    readers.push_back(linear);
  }
  if (readers.empty())
    return {};
  llvm::sort(readers, [](LinearOp a, LinearOp b) {
    return a->isBeforeInBlock(b);
  });
  // The linears will read x and the scale where the rmsnorm did: nothing in
  // between may change them.
  Value xRoot = rootOf(norm.getX()), wRoot = rootOf(norm.getWeight());
  for (Operation *op = norm->getNextNode(); op != readers.back().getOperation();
       op = op->getNextNode())
    if (writesRoot(op, xRoot) || writesRoot(op, wRoot))
      return {};
  return readers;
}

struct FuseRmsNormPass
    : public mlir::loom::impl::LoomFuseRmsNormBase<FuseRmsNormPass> {
  void runOnOperation() override {
    SmallVector<RmsNormOp> norms;
    getOperation().walk([&](RmsNormOp norm) { norms.push_back(norm); });
    for (RmsNormOp norm : norms) {
      SmallVector<LinearOp> readers = fusableReaders(norm);
      if (readers.empty())
        continue;
      for (LinearOp linear : readers) {
        linear.getXMutable().assign(norm.getX());
        linear.getNormMutable().assign(norm.getWeight());
        linear.setNormEpsAttr(norm.getEpsAttr());
      }
      Operation *alloc = norm.getY().getDefiningOp();
      norm.erase();
      if (alloc->use_empty())
        alloc->erase();
    }
  }
};

} // namespace
