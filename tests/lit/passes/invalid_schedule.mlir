// RUN: loom-opt %s -split-input-file --loom-verify-schedule -verify-diagnostics

// A planted deadlock: each worker first waits for an event that only a task
// later in the other worker's list triggers.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @deadlock target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  // expected-error @+1 {{'loom.program' op deadlock: worker 0 waits at task 0 for event 1, which task 3 on worker 1 triggers; worker 1 waits at task 2 for event 0, which task 1 on worker 0 triggers; the cycle closes at worker 0}}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.event 1 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [1] triggers [] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(1)
    loom.task 2 op(0) phase(0) tile(2) waits [0] triggers [] cost(1)
    loom.task 3 op(0) phase(0) tile(3) waits [] triggers [1] cost(1)
    loom.worker 0 tasks [0, 1]
    loom.worker 1 tasks [2, 3]
  }
}

// -----

// An event that waits for more arrivals than tasks trigger it.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @missing_trigger target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    // expected-error @+1 {{event 0 needs 2 arrivals per launch but 1 tasks trigger it}}
    loom.event 0 needs(2)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [0] triggers [] cost(1)
    loom.worker 0 tasks [0, 1]
  }
}

// -----

#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @unknown_event target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    // expected-error @+1 {{task 0 waits on event 7, which does not exist}}
    loom.task 0 op(0) phase(0) tile(0) waits [7] triggers [] cost(1)
    loom.worker 0 tasks [0]
  }
}

// -----

#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @twice target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [] cost(1)
    loom.worker 0 tasks [0]
    // expected-error @+1 {{task 0 is on worker 0 and on worker 1}}
    loom.worker 1 tasks [0]
  }
}

// -----

#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @unassigned target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  loom.program workers(2) mode(static) {
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [] cost(1)
    // expected-error @+1 {{task 1 is on no worker}}
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [] cost(1)
    loom.worker 0 tasks [0]
  }
}

// -----

// Dynamic queue in the wrong order with one worker: the only worker takes
// task 0, which waits for task 1, still in the queue.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @dynamic_order target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64}
  // expected-error @+1 {{deadlock in the dynamic queue: all 1 workers wait: task 0 for event 0;}}
  loom.program workers(1) mode(dynamic) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [0] triggers [] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(1)
  }
}

// -----

// Tasks whose bodies wait for each other (an op with loom.counters, e.g. a
// one-phase mla_decode) on one worker: the first would wait for the second
// forever.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @co_running_one_worker target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.counters = array<i64: 0, 1>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(0)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [] cost(1)
    // expected-error @+1 {{'loom.task' op task 1 must run at the same time as task 0 (their bodies wait for each other) but both are on worker 0}}
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [] cost(1)
    loom.worker 0 tasks [0, 1]
  }
}

// -----

// Co-running tasks on two workers, but the second sits behind a task that
// waits for the first's output.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @co_running_behind target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.counters = array<i64: 1, 1>}
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 1 : i64}
  // expected-error @+1 {{'loom.program' op deadlock: worker 0 waits at task 0 for task 1 (their bodies wait for each other) on worker 1; worker 1 waits at task 2 for event 0, which task 0 on worker 0 triggers; the cycle closes at worker 0}}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.event 1 needs(0)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [] cost(1)
    loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [] cost(1)
    loom.worker 0 tasks [0]
    loom.worker 1 tasks [2, 1]
  }
}

// -----

// More co-running tasks than workers: they can never all run at once.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @co_running_too_many target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.counters = array<i64: 0, 1>}
  loom.program workers(2) mode(dynamic) {
    loom.event 0 needs(0)
    // expected-error @+1 {{'loom.task' op task 0 is one of 3 tasks that must run at the same time, but the program has 2 workers}}
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [] cost(1)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [] cost(1)
    loom.task 2 op(0) phase(0) tile(2) waits [] triggers [] cost(1)
  }
}
