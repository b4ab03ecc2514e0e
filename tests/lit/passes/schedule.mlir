// RUN: loom-opt %s --loom-schedule | FileCheck %s
// RUN: loom-opt %s --loom-schedule=mode=dynamic | FileCheck %s --check-prefix=DYN
// RUN: not loom-opt %s --loom-schedule=mode=fastest 2>&1 | FileCheck %s --check-prefix=BAD

// Tasks 0 and 1 are independent; 2 needs both. The critical path runs
// through the expensive task 1, so it is placed first, on worker 0; task 0
// goes to the idle worker 1, which frees up first and so also takes task 2.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @diamond
// CHECK: loom.worker 0 tasks [1]
// CHECK: loom.worker 1 tasks [0, 2]
// DYN-LABEL: loom.graph @diamond
// DYN:      loom.program workers(2) mode(dynamic) {
// DYN:      loom.task 1 op
// DYN-NEXT: loom.task 0 op
// DYN-NEXT: loom.task 2 op
// DYN-NOT:  loom.worker
// BAD: loom-schedule: unknown mode 'fastest'; expected 'static' or 'dynamic'
loom.graph @diamond target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(2)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(100)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(900)
    loom.task 2 op(0) phase(1) tile(0) waits [0] triggers [] cost(100)
  }
}

// Tasks 1 and 2 must run at once (their op keeps loom.counters: their
// bodies wait for each other). Plain list scheduling would put both on
// worker 1 behind each other, the long task 0 holding worker 0; they are
// placed together instead, one per worker.
#tiny2 = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @co_running
// CHECK: loom.worker 0 tasks [0, 2]
// CHECK: loom.worker 1 tasks [1]
loom.graph @co_running target(#tiny2) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 1 : i64, loom.counters = array<i64: 0, 1>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(0)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [] cost(1000)
    loom.task 1 op(1) phase(0) tile(0) waits [] triggers [] cost(10)
    loom.task 2 op(1) phase(0) tile(1) waits [] triggers [] cost(10)
  }
}
