// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of the loom.program verifier (ir/ProgramOp.cpp): the task
// table's numbers against the table and the graph. Whether the waits can
// be met is loom-verify-schedule's (tests/lit/passes/invalid_schedule.mlir).

// A task names a layer op the graph does not have.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @op_unknown target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    // expected-error @+1 {{'loom.task' op op(99) names no layer op of the graph (no loom.op_id of that value)}}
    loom.task 0 op(99) phase(0) tile(0) waits [] triggers [0] cost(1)
  }
}

// -----

// Negative numbers.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @tile_negative target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    // expected-error @+1 {{'loom.task' op tile must not be negative, got -1}}
    loom.task 0 op(0) phase(0) tile(-1) waits [] triggers [0] cost(1)
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @cost_negative target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    // expected-error @+1 {{'loom.task' op cost must not be negative, got -1}}
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(-1)
  }
}

// -----

// A phase and a tile the op's partition does not have (tasks = [2, 1]).
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @phase_past target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    // expected-error @+1 {{'loom.task' op phase(2) is past op 0's 2 phase(s)}}
    loom.task 0 op(0) phase(2) tile(0) waits [] triggers [0] cost(1)
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @tile_past target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    // expected-error @+1 {{'loom.task' op tile(1) is past phase 1 of op 0's 1 tile(s)}}
    loom.task 0 op(0) phase(1) tile(1) waits [] triggers [0] cost(1)
  }
}

// -----

// An event nothing needs to trigger.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @needs_zero target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    // expected-error @+1 {{'loom.event' op needs must be at least 1 (an event is triggered) unless the event is one of a layer op's loom.counters, got 0}}
    loom.event 0 needs(0)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @event_negative target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    // expected-error @+1 {{'loom.event' op id must not be negative, got -1}}
    loom.event -1 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
  }
}

// -----

// A program needs a worker.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @no_workers target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  // expected-error @+1 {{'loom.program' op workers must be at least 1, got 0}}
  loom.program workers(0) mode(static) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
  }
}

// -----

// Worker lists: ids in range, one list per worker, task ids not negative, none in dynamic mode.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @bad_worker target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    // expected-error @+1 {{'loom.worker' op id 5 is not one of the program's 2 workers}}
    loom.worker 5 tasks [0]
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @worker_twice target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    loom.worker 0 tasks [0]
    // expected-error @+1 {{'loom.worker' op worker 0 has two lists}}
    loom.worker 0 tasks []
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @worker_task_negative target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    // expected-error @+1 {{'loom.worker' op task ids must not be negative, got -3}}
    loom.worker 0 tasks [-3]
  }
}

// -----

// 
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
loom.graph @dynamic_lists target(#tiny) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>) {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(dynamic) {
    loom.event 0 needs(1)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(1)
    // expected-error @+1 {{'loom.worker' op a dynamic program has no worker lists (its workers take tasks from one queue)}}
    loom.worker 0 tasks [0]
  }
}
