// RUN: loom-opt %s -split-input-file --loom-verify-schedule | FileCheck %s

// A schedule whose worker order agrees with the dependencies passes.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @ok
loom.graph @ok target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.event 1 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [0] triggers [1] cost(1)
    loom.task 2 op(0) phase(0) tile(2) waits [1] triggers [] cost(1)
    loom.worker 0 tasks [0, 2]
    loom.worker 1 tasks [1]
  }
}

// -----

// Dynamic mode: the queue order is a topological order.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @ok_dynamic
loom.graph @ok_dynamic target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(1) mode(dynamic) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [0] triggers [] cost(1)
  }
}
