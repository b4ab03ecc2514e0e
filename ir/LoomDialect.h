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
/// What loom-derive-events puts on a layer op whose bodies keep their own
/// counters (taskCounters in passes/TaskModel.h): [first, count], the ids of
/// its `loom.event`s with needs(0), which no task waits on or triggers.
constexpr const char *kCountersAttr = "loom.counters";

/// The compiler's stated caps, far above any real program, so that a
/// nonsense size is a clear error instead of an overflow or an exhausted
/// memory: workers of a target (the largest chips have a few hundred SMs or
/// CUs), bytes of one buffer (1 TiB), tasks of one graph (a 32-layer 8B
/// decoder has about 65 thousand).
constexpr int64_t kMaxWorkers = 4096;
constexpr int64_t kMaxBufferBytes = int64_t(1) << 40;
constexpr int64_t kMaxTasks = int64_t(1) << 20;

/// The `#loom.target` for a row of the chip table.
TargetAttr getTargetAttr(MLIRContext *context, const ::loom::ChipInfo &chip);

} // namespace mlir::loom

#endif // LOOM_IR_LOOMDIALECT_H
