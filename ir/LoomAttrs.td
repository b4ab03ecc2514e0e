//===- LoomAttrs.td - Attributes and enums of the loom dialect -*- tablegen -*-===//
#ifndef LOOM_ATTRS_TD
#define LOOM_ATTRS_TD

include "ir/LoomDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Loom_Role : I32EnumAttr<"Role", "what a graph argument is to the step", [
    I32EnumAttrCase<"Input", 0, "input">,
    I32EnumAttrCase<"Weight", 1, "weight">,
    I32EnumAttrCase<"Cache", 2, "cache">,
    I32EnumAttrCase<"Output", 3, "output">,
    I32EnumAttrCase<"Meta", 4, "meta">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::loom";
}
def Loom_RoleAttr : EnumAttr<Loom_Dialect, Loom_Role, "role"> {
  let summary = "Role of a graph argument";
  let description = [{
    `input`: activations read by the step; `weight`: parameters, read only;
    `cache`: persistent state read and written in place (paged KV caches);
    `output`: written by the step; `meta`: runtime integers read on the
    device (batch lengths, page tables, cu_seqlens, positions).
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Loom_Gate : I32EnumAttr<"Gate", "KDA forget-gate parameterisation", [
    I32EnumAttrCase<"Unbounded", 0, "unbounded">,
    I32EnumAttrCase<"Bounded", 1, "bounded">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::loom";
}
def Loom_GateAttr : EnumAttr<Loom_Dialect, Loom_Gate, "gate"> {
  let summary = "KDA gate: unbounded softplus or bounded sigmoid";
  let description = [{
    `unbounded`: g = -exp(A_log[h]) * softplus(g_raw + dt_bias) (Kimi-Linear).
    `bounded`: g = lower_bound * sigmoid(exp(A_log[h]) * (g_raw + dt_bias)),
    with lower_bound in [-5, 0).
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// #loom.target
//===----------------------------------------------------------------------===//

def Loom_TargetAttr : AttrDef<Loom_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "The chip a graph is compiled for, with the cost model's inputs";
  let description = [{
    Every chip fact the passes use. `loomc --target=NAME` fills it from the
    chip table (targets/chips); a hand-written one may describe a variant
    (fewer SMs, another clock) as long as its `arch` is one Loom emits for.

    Example:
    ```mlir
    #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32,
                 smem_per_block = 232448, regs_per_worker = 65536,
                 hbm_gbps = 4800, bf16_tflops = 989>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"user-facing chip name">:$name,
    StringRefParameter<"code-object architecture (sm_90a, sm_100a, gfx950, host)">:$arch,
    "int64_t":$workers,
    "int64_t":$lanes,
    "int64_t":$smem_per_block,
    "int64_t":$regs_per_worker,
    "int64_t":$hbm_gbps,
    "int64_t":$bf16_tflops
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// #loom.partition
//===----------------------------------------------------------------------===//

def Loom_PartitionAttr : AttrDef<Loom_Dialect, "Partition"> {
  let mnemonic = "partition";
  let summary = "How `loom-partition` tiled a layer op";
  let description = [{
    `tasks[p]`: the number of tasks of phase p (most ops have one phase;
    split-KV attention, split-K linears and KDA have two). `params`: the
    op's tiling parameters (e.g. a linear's N tile and K splits; the
    meaning per op is documented in passes/TaskModel.h). `cost_ns[p]`: the
    cost model's estimate for one task of phase p. `scratch_bytes`: workspace
    the op's tasks need between phases (partials), placed by
    `loom-plan-memory`.

    ```mlir
    #loom.partition<tasks = [128], params = [32, 1], cost_ns = [1750], scratch_bytes = 0>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$tasks,
                        ArrayRefParameter<"int64_t">:$params,
                        ArrayRefParameter<"int64_t">:$cost_ns,
                        "int64_t":$scratch_bytes);
  let assemblyFormat = [{
    `<` `tasks` `=` `[` $tasks `]` `,` `params` `=` `[` $params `]` `,`
    `cost_ns` `=` `[` $cost_ns `]` `,` `scratch_bytes` `=` $scratch_bytes `>`
  }];
  let genVerifyDecl = 1;
}

#endif // LOOM_ATTRS_TD
