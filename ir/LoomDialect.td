//===- LoomDialect.td - The loom dialect ---------------------*- tablegen -*-===//
//
// Loom describes the task graph of an LLM inference step. At the top level a
// `loom.graph` holds layer ops (rmsnorm, linear, mla_decode, ...) over named
// buffers; the passes turn it into tile tasks, events and per-worker
// schedules that become one persistent kernel per GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_DIALECT_TD
#define LOOM_DIALECT_TD

include "mlir/IR/OpBase.td"

def Loom_Dialect : Dialect {
  let name = "loom";
  let cppNamespace = "::mlir::loom";
  let summary = "Task graphs of LLM inference steps, compiled to persistent kernels";
  let description = [{
    The `loom` dialect has two levels that live side by side:

    * **Layer ops** (`loom.rmsnorm`, `loom.linear`, `loom.mla_decode`,
      `loom.kda_prefill`, ...) state *what* a step computes, in
      destination-passing style over memrefs: every op reads its `ins` and
      writes its `outs`, and those effects are declared, so dependencies can be
      derived from read/write regions instead of being set by hand.
    * **Task-level ops** (added by the partitioning and scheduling passes)
      state *how*: tile tasks with their read/write regions, the events that
      order them, and one ordered task list per worker.

    A `loom.graph` carries the `#loom.target` it is compiled for; the passes
    read every chip fact (workers, shared memory, bandwidth, peak rate) from it.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Loom_Op<string mnemonic, list<Trait> traits = []>
    : Op<Loom_Dialect, mnemonic, traits>;

#endif // LOOM_DIALECT_TD
