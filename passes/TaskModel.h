//===- TaskModel.h - How each layer op splits into tasks ---------*- C++ -*-===//
//
// One place that knows, per layer op: how to tile it for a target (the cost
// model), which bytes each task reads and writes (for deriving events), and
// what workspace its phases exchange. Passes and emitters both read it, so a
// tile means the same thing everywhere.
//
// Tiling parameters (`#loom.partition` params) per op:
//   rmsnorm, rope, kv_append, embedding, argmax: [rows per task]
//   silu_mul, add:   [elements per task]
//   linear:          [N tile, K splits]; K splits > 1 adds a reduce phase
//   gqa_decode:      [KV splits S]; phase 0: (request, KV head, split),
//                    phase 1: merge per (request, KV head); one phase
//                    (NVIDIA): the last split of a pair to arrive merges
//                    it (per-pair counters)
//   mla_decode:      [work slots W, merge tasks M]; phase 0 balances the
//                    runtime tokens over W slots, phase 1 merges per request;
//                    M = 0 (NVIDIA): one phase, the slots of a split
//                    request merge it themselves (per-request counters)
//   kda_prefill:     [intra tasks, scan tasks, V blocks]; phase 0: chunk-local
//                    work balanced over the runtime chunks, phase 1: the
//                    serial state scan per (sequence, head, V block)
// Runtime sizes (batch, tokens, chunks) are bounded at compile time by the
// graph's max_batch / max_tokens / max_seqs; tasks past the runtime size do
// nothing. MLA and KDA balance their work over the runtime sizes on the
// device instead (read from the meta buffers), so a short batch still uses
// every worker.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_PASSES_TASKMODEL_H
#define LOOM_PASSES_TASKMODEL_H

#include "ir/LoomOps.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::loom {

/// Compile-time bounds of the runtime-sized dimensions of a graph.
struct GraphBounds {
  int64_t batch = 1;  ///< max_batch (decode graphs)
  int64_t tokens = 1; ///< max_tokens (prefill graphs)
  int64_t seqs = 1;   ///< max_seqs (prefill graphs)

  static GraphBounds of(GraphOp graph);
  /// The bound used for a dynamic leading dimension.
  int64_t dynamicExtent() const { return batch > 1 ? batch : tokens; }
};

/// A half-open byte range relative to a buffer's base.
struct ByteRange {
  int64_t begin;
  int64_t end;
};

/// What one task does to one buffer operand. An empty `ranges` means the
/// whole buffer (used for data-dependent accesses such as paged caches).
struct Access {
  Value buffer;
  bool write = false;
  llvm::SmallVector<ByteRange, 4> ranges;
};

/// Workspace a layer op's phases exchange, placed by loom-plan-memory; its
/// accesses are reported against this pseudo-buffer.
constexpr const char *kScratchOffsetAttr = "loom.scratch_offset";
constexpr const char *kOffsetAttr = "loom.offset";
constexpr const char *kWorkspaceBytesAttr = "loom.workspace_bytes";

/// True for the ops the passes tile (everything but structure ops).
bool isLayerOp(Operation *op);

/// Chooses the tiling of `op` for `target` with the cost model.
PartitionAttr choosePartition(Operation *op, TargetAttr target,
                              const GraphBounds &bounds);

/// Appends what task `tile` of `phase` reads and writes. Scratch accesses
/// have a null `buffer` and ranges relative to the op's scratch.
void getTaskAccesses(Operation *op, PartitionAttr partition, int64_t phase,
                     int64_t tile, const GraphBounds &bounds,
                     llvm::SmallVectorImpl<Access> &accesses);

/// Counters the op's bodies keep for themselves (events with needs(0) that
/// loom-derive-events allocates and marks with kCountersAttr): a one-phase
/// mla_decode's per-request and a one-phase gqa_decode's per-(request, KV
/// head) arrival counters; 0 for every other op.
int64_t taskCounters(Operation *op, PartitionAttr partition,
                     const GraphBounds &bounds);

/// Whether the op's tasks wait for each other on their counters (mla_decode:
/// every slot merges once all pieces are in), true unless they only count
/// arrivals (gqa_decode: the last split to arrive merges, nobody waits).
bool countersWait(Operation *op);

/// Tasks that must all be running at once, each on its own worker: those of
/// an op whose bodies wait for each other through their own counters
/// (kCountersAttr, countersWait). One list per such op, task ids in program
/// order.
llvm::SmallVector<llvm::SmallVector<int64_t>> coRunningTasks(ProgramOp program);

/// Bytes of a buffer type with dynamic dimensions at their bound.
int64_t boundedBytes(MemRefType type, const GraphBounds &bounds);

/// Bytes a task reads whatever the events say, exactly: `rows` rows of
/// `rowBytes` at `offset + r * stride` of `buffer` (a weight). The engine
/// brings them on chip ahead of the task (kernels/nvidia/Interpreter.cuh).
struct TaskLoad {
  Value buffer;
  int64_t offset;
  int64_t rowBytes;
  int64_t rows;
  int64_t stride;
};

/// Appends task `tile` of `phase`'s loads (today: a linear's weight tile).
void getTaskLoads(Operation *op, PartitionAttr partition, int64_t phase,
                  int64_t tile, const GraphBounds &bounds,
                  llvm::SmallVectorImpl<TaskLoad> &loads);

/// The task has work only when the runtime leading size (batch, or packed
/// tokens: runtimeSizeArg's dims[0]) exceeds this; 0 for tasks that always
/// have work (tiles over weights, work balanced over the runtime sizes).
int64_t firstRuntimeRow(Operation *op, PartitionAttr partition, int64_t phase,
                        int64_t tile, const GraphBounds &bounds);

/// The graph argument whose leading dimension is the runtime size the tiles
/// clamp to: the first input with a dynamic leading dimension; -1 if none.
int64_t runtimeSizeArg(GraphOp graph);

/// Where `view`'s bytes live: the graph argument it views (or kArenaRoot
/// for a loom.alloc placed by loom-plan-memory) and the offset of its first
/// byte there; nullopt for an unplaced alloc.
constexpr int64_t kArenaRoot = -1;
std::optional<std::pair<int64_t, int64_t>> locateRoot(Value view,
                                                      const GraphBounds &bounds);

} // namespace mlir::loom

#endif // LOOM_PASSES_TASKMODEL_H
