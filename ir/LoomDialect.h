//===- LoomDialect.h - The loom dialect and its attributes -------*- C++ -*-===//
#ifndef LOOM_IR_LOOMDIALECT_H
#define LOOM_IR_LOOMDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "ir/LoomDialect.h.inc"
#include "ir/LoomEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/LoomAttrs.h.inc"

namespace loom {
struct ChipInfo;
} // namespace loom

namespace mlir::loom {

/// The attributes loom-partition puts on every layer op: its id (what a
/// `loom.task`'s `op(...)` names) and its `#loom.partition` (tiles per phase).
constexpr const char *kOpIdAttr = "loom.op_id";
constexpr const char *kPartitionAttr = "loom.partition";

/// The `#loom.target` for a row of the chip table.
TargetAttr getTargetAttr(MLIRContext *context, const ::loom::ChipInfo &chip);

} // namespace mlir::loom

#endif // LOOM_IR_LOOMDIALECT_H
