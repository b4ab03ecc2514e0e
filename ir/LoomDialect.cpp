//===- LoomDialect.cpp - Dialect registration ------------------------------===//
#include "ir/LoomDialect.h"
#include "ir/LoomOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::loom;

#include "ir/LoomDialect.cpp.inc"

namespace {
/// Prints each target once at the top of a module (`#h200 = #loom.target<...>`)
/// and by its chip name where it is used.
struct LoomOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (auto target = dyn_cast<TargetAttr>(attr)) {
      os << target.getName();
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void LoomDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/LoomOps.cpp.inc"
      >();
  registerAttributes();
  addInterfaces<LoomOpAsmInterface>();
}
