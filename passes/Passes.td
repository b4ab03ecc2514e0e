//===- Passes.td - Loom's compilation passes -----------------*- tablegen -*-===//
#ifndef LOOM_PASSES_TD
#define LOOM_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomFuseRmsNorm : Pass<"loom-fuse-rmsnorm", "ModuleOp"> {
  let summary = "Fold an rmsnorm read only by linears into those linears";
  let description = [{
    An rmsnorm over rows (`x` of rank 2) whose output is an intermediate
    read only by `loom.linear`s as their `x` goes away: the linears take
    the rmsnorm's input as `x` and its scale as `norm` (with `norm_eps`),
    and normalise the rows as they load them. Skipped when anything else
    reads the normalised rows or when an op between the rmsnorm and its
    last reader writes the rows or the scale. In the per-target pipelines
    only when asked (`fuse-rmsnorm=true`, `loomc --fuse-rmsnorm`).
  }];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomPartition : Pass<"loom-partition", "ModuleOp"> {
  let summary = "Tile every layer op into tasks, sized by the target's cost model";
  let description = [{
    Gives each layer op a `loom.op_id` and a `#loom.partition` chosen from
    the graph's `#loom.target` (workers, bandwidth, peak rate): rows, N tiles
    and K splits, KV splits, work slots. passes/TaskModel.h lists the tiling
    of every op.
  }];
  let dependentDialects = ["::mlir::loom::LoomDialect"];
}

def LoomPlanMemory : Pass<"loom-plan-memory", "ModuleOp"> {
  let summary = "Place intermediates and task scratch in one workspace arena";
  let description = [{
    Every `loom.alloc` and every op's scratch gets a byte offset in one
    arena; buffers whose live ranges (in op order) do not overlap share
    space. The graph gets `loom.workspace_bytes`. Runs before
    loom-derive-events, so reuse of arena bytes becomes ordinary
    read/write dependencies there.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256",
           "byte alignment of every placement">,
    Option<"reuse", "reuse", "bool", "true",
           "share arena bytes between buffers whose live ranges are disjoint">
  ];
}

def LoomDeriveEvents : Pass<"loom-derive-events", "ModuleOp"> {
  let summary = "Build the task table with events derived from read/write regions";
  let description = [{
    Creates the graph's `loom.program`: one `loom.task` per tile, and the
    events that order them, derived from the byte ranges each task reads
    and writes (read-after-write, write-after-read, write-after-write) in
    the buffers' root storage (graph arguments, the workspace arena).
    A consumer that needs every task of a producer phase waits on one event
    for the phase; one that needs part of it waits on an event for exactly
    those tasks. Events count arrivals per launch (monotonic counters).
  }];
}

def LoomSchedule : Pass<"loom-schedule", "ModuleOp"> {
  let summary = "Order tasks into one list per worker (or one global queue)";
  let description = [{
    Static mode: list scheduling on the cost model, highest critical path
    first, each ready task to the worker that frees up first; each worker's
    list is in start-time order, which is a topological order, so the
    schedule cannot deadlock with co-resident workers. Dynamic mode: the
    task ops are reordered by the same priority into the queue order.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"static\"",
           "static (per-worker lists) or dynamic (one global work queue)">
  ];
}

def LoomVerifySchedule : Pass<"loom-verify-schedule", "ModuleOp"> {
  let summary = "Prove every wait can be satisfied with co-resident workers";
  let description = [{
    Checks that every event gets exactly the triggers it waits for, that
    every task runs exactly once, and, by simulating all workers walking
    their lists, that no worker can wait forever. A deadlock is reported
    with the cycle of workers, tasks and events that causes it.
  }];
}

#endif // LOOM_PASSES_TD
