// RUN: loom-opt %s -split-input-file --loom-partition --loom-plan-memory --loom-derive-events | FileCheck %s

// A chain: each linear tile needs every row of the norm (one event for the
// whole phase); each add tile needs both linear tiles' columns of its rows.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @chain
// CHECK:      loom.program workers(2) mode(static) {
// CHECK-NEXT:   loom.event 0 needs(2)
// CHECK-NEXT:   loom.event 1 needs(2)
// CHECK-NEXT:   loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(520)
// CHECK-NEXT:   loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(520)
// CHECK-NEXT:   loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [1] cost(868)
// CHECK-NEXT:   loom.task 3 op(1) phase(0) tile(1) waits [0] triggers [1] cost(868)
// CHECK-NEXT:   loom.task 4 op(2) phase(0) tile(0) waits [1] triggers [] cost(561)
// CHECK-NEXT:   loom.task 5 op(2) phase(0) tile(1) waits [1] triggers [] cost(561)
// CHECK-NEXT: }
loom.graph @chain target(#tiny) (input %x : memref<4x64xbf16>, weight %g : memref<64xbf16>,
    weight %w : memref<128x64xbf16>, input %r : memref<4x128xbf16>, output %y : memref<4x128xbf16>) {
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  %t = loom.alloc : memref<4x128xbf16>
  loom.linear ins(%h, %w : memref<4x64xbf16>, memref<128x64xbf16>) outs(%t : memref<4x128xbf16>)
  loom.add ins(%t, %r : memref<4x128xbf16>, memref<4x128xbf16>) outs(%y : memref<4x128xbf16>)
}

// -----

// Row-wise ops: each task waits only for the producer task of its own rows
// (one event each), not for the whole phase.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @rows
// CHECK:      loom.event 0 needs(1)
// CHECK-NEXT: loom.event 1 needs(1)
// CHECK-NEXT: loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 1 op(0) phase(0) tile(1) waits [] triggers [1] cost
// CHECK-NEXT: loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [] cost
// CHECK-NEXT: loom.task 3 op(1) phase(0) tile(1) waits [1] triggers [] cost
loom.graph @rows target(#tiny) (input %x : memref<4x64xbf16>, weight %g : memref<64xbf16>, output %y : memref<4x64xbf16>) {
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.rmsnorm ins(%h, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%y : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
}

// -----

// Write-after-read: the second op overwrites cache rows that the first op
// reads. Readers are tracked per phase, so each writer waits for the whole
// reading phase (a safe over-approximation that keeps the maps small).
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @war
// CHECK:      loom.event 0 needs(2)
// CHECK-NEXT: loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [] cost
// CHECK-NEXT: loom.task 3 op(1) phase(0) tile(1) waits [0] triggers [] cost
loom.graph @war target(#tiny) (cache %c : memref<4x64xbf16>, weight %g : memref<64xbf16>, output %y : memref<4x64xbf16>) {
  loom.rmsnorm ins(%c, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%y : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.rmsnorm ins(%y, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%c : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
}

// -----

// Split phases: the merge of (request, KV head) waits on an event for all
// splits of the whole KV phase (its scratch is shared).
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @split_kv
// CHECK: loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost
// CHECK: loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost
// CHECK: loom.task 2 op(0) phase(1) tile(0) waits [0] triggers [] cost
loom.graph @split_kv target(#tiny) (input %q : memref<1x2x16xbf16>, cache %kc : memref<8x4x1x16xbf16>,
    cache %vc : memref<8x4x1x16xbf16>, meta %indptr : memref<?xi32>, meta %indices : memref<?xi32>,
    meta %lens : memref<?xi32>, output %o : memref<1x2x16xbf16>) {
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<1x2x16xbf16>, memref<8x4x1x16xbf16>, memref<8x4x1x16xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<1x2x16xbf16>) {sm_scale = 0.25 : f32}
}

// -----

// A split task's request comes from the runtime kv_lens (GqaSplits.h), so
// every split waits for all of q (both rmsnorm tiles, one per request), not
// only the rows of "its" request; every merge waits for all splits.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @split_kv_any_request
// CHECK:      loom.event 0 needs(2)
// CHECK-NEXT: loom.event 1 needs(2)
// CHECK-NEXT: loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [1] cost
// CHECK-NEXT: loom.task 3 op(1) phase(0) tile(1) waits [0] triggers [1] cost
// CHECK-NEXT: loom.task 4 op(1) phase(1) tile(0) waits [1] triggers [] cost
// CHECK-NEXT: loom.task 5 op(1) phase(1) tile(1) waits [1] triggers [] cost
loom.graph @split_kv_any_request target(#tiny) (input %x : memref<2x2x16xbf16>, weight %g : memref<16xbf16>,
    cache %kc : memref<8x4x1x16xbf16>, cache %vc : memref<8x4x1x16xbf16>, meta %indptr : memref<?xi32>,
    meta %indices : memref<?xi32>, meta %lens : memref<?xi32>, output %o : memref<2x2x16xbf16>) {
  %q = loom.alloc : memref<2x2x16xbf16>
  loom.rmsnorm ins(%x, %g : memref<2x2x16xbf16>, memref<16xbf16>) outs(%q : memref<2x2x16xbf16>) {eps = 1.0e-05 : f32}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<2x2x16xbf16>, memref<8x4x1x16xbf16>, memref<8x4x1x16xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<2x2x16xbf16>) {sm_scale = 0.25 : f32}
}

// -----

// One phase (an NVIDIA target): the last split of a (request, KV head) pair
// to arrive merges it, counting arrivals on the op's own counters (events
// with needs(0), one per pair, that no task waits on or triggers); the
// output's reader waits for every split.
#tiny_nv = #loom.target<name = "tiny", arch = "sm_90a", workers = 2, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @split_kv_one_phase
// CHECK:      loom.gqa_decode {{.*}}loom.counters = array<i64: 1, 1>{{.*}}loom.partition = #loom.partition<tasks = [2], params = [2]
// CHECK:      loom.event 0 needs(2)
// CHECK-NEXT: loom.event 1 needs(0)
// CHECK-NEXT: loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost
// CHECK-NEXT: loom.task 2 op(1) phase(0) tile(0) waits [0] triggers [] cost
loom.graph @split_kv_one_phase target(#tiny_nv) (input %q : memref<1x2x16xbf16>, cache %kc : memref<8x4x1x16xbf16>,
    cache %vc : memref<8x4x1x16xbf16>, meta %indptr : memref<?xi32>, meta %indices : memref<?xi32>,
    meta %lens : memref<?xi32>, output %y : memref<1x2x16xbf16>) {
  %o = loom.alloc : memref<1x2x16xbf16>
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<1x2x16xbf16>, memref<8x4x1x16xbf16>, memref<8x4x1x16xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<1x2x16xbf16>) {sm_scale = 0.25 : f32}
  loom.add ins(%o, %o : memref<1x2x16xbf16>, memref<1x2x16xbf16>) outs(%y : memref<1x2x16xbf16>)
}
