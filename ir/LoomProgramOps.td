//===- LoomProgramOps.td - Task-level ops: tasks, events, workers -*- tablegen -*-===//
//
// What the passes produce beside the layer ops: the task table of one
// persistent kernel. `loom-partition` tiles every layer op (#loom.partition),
// `loom-plan-memory` places intermediates in the workspace arena,
// `loom-derive-events` builds the `loom.program` (tasks and events from
// read/write regions), `loom-schedule` orders tasks into `loom.worker` lists,
// and `loom-verify-schedule` proves the result cannot deadlock.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_PROGRAM_OPS_TD
#define LOOM_PROGRAM_OPS_TD

def Loom_ScheduleMode : I32EnumAttr<"ScheduleMode", "how workers get tasks", [
    I32EnumAttrCase<"Static", 0, "static">,
    I32EnumAttrCase<"Dynamic", 1, "dynamic">]> {
  let cppNamespace = "::mlir::loom";
}

def Loom_ProgramOp : Loom_Op<"program", [
    HasParent<"GraphOp">, NoTerminator, SingleBlock]> {
  let summary = "The task table of a graph's persistent kernel";
  let description = [{
    Holds `loom.event`, `loom.task` and (once scheduled) `loom.worker` ops.
    `workers` is the number of co-resident workers (one per SM / CU / host
    thread). In `dynamic` mode there are no worker lists: workers take tasks
    from one atomic counter in the order of the `loom.task` ops.

    ```mlir
    loom.program workers(132) mode(static) {
      loom.event 0 needs(16)
      loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(900)
      loom.worker 0 tasks [0]
    }
    ```
  }];
  let arguments = (ins I64Attr:$workers, Loom_ScheduleMode:$mode);
  let regions = (region SizedRegion<1>:$body);
  // The table as a whole: every id, count and reference in range (which
  // needs the events, the tasks and the graph's ops together).
  let hasVerifier = 1;
  let assemblyFormat = "`workers` `(` $workers `)` `mode` `(` $mode `)` attr-dict-with-keyword $body";
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Loom_EventOp : Loom_Op<"event", [HasParent<"ProgramOp">]> {
  let summary = "A counter that `needs` triggers per launch";
  let description = [{
    Launch number e (1, 2, ...) waits until the counter reaches e * needs;
    the counter only grows, so nothing is reset between launches. An event
    with `needs(0)` is a counter a layer op's bodies keep themselves (the
    op's `loom.counters = [first, count]`, set by loom-derive-events): no
    task waits on or triggers it, and the runtime resets it with the others.
  }];
  let arguments = (ins I64Attr:$id, I64Attr:$needs);
  let assemblyFormat = "$id `needs` `(` $needs `)` attr-dict";
}

def Loom_TaskOp : Loom_Op<"task", [HasParent<"ProgramOp">]> {
  let summary = "One tile of one layer op";
  let description = [{
    Tile `tile` of phase `phase` of the layer op whose `loom.op_id` is `op`.
    It waits for every event in `waits`, runs its body, then triggers every
    event in `triggers`. `cost` is the cost model's estimate in nanoseconds.
  }];
  let arguments = (ins I64Attr:$id, I64Attr:$op, I64Attr:$phase, I64Attr:$tile,
                       DenseI64ArrayAttr:$waits, DenseI64ArrayAttr:$triggers,
                       I64Attr:$cost);
  let assemblyFormat = [{
    $id `op` `(` $op `)` `phase` `(` $phase `)` `tile` `(` $tile `)`
    `waits` $waits `triggers` $triggers `cost` `(` $cost `)` attr-dict
  }];
}

def Loom_WorkerOp : Loom_Op<"worker", [HasParent<"ProgramOp">]> {
  let summary = "The ordered task list of one worker (static mode)";
  let arguments = (ins I64Attr:$id, DenseI64ArrayAttr:$tasks);
  let assemblyFormat = "$id `tasks` $tasks attr-dict";
}

#endif // LOOM_PROGRAM_OPS_TD
