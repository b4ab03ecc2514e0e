// RUN: loom-opt %s -split-input-file | loom-opt -split-input-file | FileCheck %s
// RUN: loom-opt %s -split-input-file --mlir-print-op-generic | loom-opt -split-input-file | FileCheck %s

// Round trip of every op and attribute of the loom dialect, in the custom
// and in the generic form.

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32,
                  smem_per_block = 232448, regs_per_worker = 65536,
                  hbm_gbps = 4800, bf16_tflops = 989>

// CHECK: #h200 = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// CHECK-LABEL: loom.graph @roles target(#h200) (
// CHECK-NEXT:    input %x: memref<?x64xbf16>,
// CHECK-NEXT:    weight %w: memref<64xbf16>,
// CHECK-NEXT:    cache %c: memref<4x64xbf16>,
// CHECK-NEXT:    meta %n: memref<?xi32>,
// CHECK-NEXT:    output %y: memref<?x64xbf16>) attributes {max_batch = 8 : i64} {
// CHECK-NEXT:    loom.rmsnorm ins(%x, %w : memref<?x64xbf16>, memref<64xbf16>) outs(%y : memref<?x64xbf16>) {eps = 9.99999974E-6 : f32}
// CHECK-NEXT:  }
loom.graph @roles target(#t) (input %x : memref<?x64xbf16>, weight %w : memref<64xbf16>,
    cache %c : memref<4x64xbf16>, meta %n : memref<?xi32>, output %y : memref<?x64xbf16>)
    attributes {max_batch = 8 : i64} {
  loom.rmsnorm ins(%x, %w : memref<?x64xbf16>, memref<64xbf16>) outs(%y : memref<?x64xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "mi350x", arch = "gfx950", workers = 256, lanes = 64,
                  smem_per_block = 163840, regs_per_worker = 131072,
                  hbm_gbps = 8000, bf16_tflops = 2300>

// CHECK-LABEL: loom.graph @structure target(#mi350x)
// CHECK:      %[[BUF:.*]] = loom.alloc : memref<2x8xf32>
// CHECK-NEXT: %[[W1:.*]] = loom.slice %w[1] : memref<3x8xf32> -> memref<8xf32>
// CHECK-NEXT: %[[ROW:.*]] = loom.slice %[[BUF]][0] : memref<2x8xf32> -> memref<8xf32>
// CHECK-NEXT: loom.add ins(%[[W1]], %[[W1]] : memref<8xf32>, memref<8xf32>) outs(%[[ROW]] : memref<8xf32>)
// CHECK-NEXT: loom.add ins(%[[BUF]], %[[BUF]] : memref<2x8xf32>, memref<2x8xf32>) outs(%y : memref<2x8xf32>)
loom.graph @structure target(#t) (weight %w : memref<3x8xf32>, output %y : memref<2x8xf32>) {
  %buf = loom.alloc : memref<2x8xf32>
  %w1 = loom.slice %w[1] : memref<3x8xf32> -> memref<8xf32>
  %row = loom.slice %buf[0] : memref<2x8xf32> -> memref<8xf32>
  loom.add ins(%w1, %w1 : memref<8xf32>, memref<8xf32>) outs(%row : memref<8xf32>)
  loom.add ins(%buf, %buf : memref<2x8xf32>, memref<2x8xf32>) outs(%y : memref<2x8xf32>)
}

// -----

#t = #loom.target<name = "host", arch = "host", workers = 8, lanes = 1,
                  smem_per_block = 1048576, regs_per_worker = 0,
                  hbm_gbps = 50, bf16_tflops = 1>

// CHECK-LABEL: loom.graph @decoder_ops target(#host)
// CHECK:      loom.embedding ins(%table, %ids : memref<100x64xbf16>, memref<?xi32>) outs(%[[X:.*]] : memref<4x64xbf16>)
// CHECK:      loom.linear ins(%[[X]], %wq : memref<4x64xbf16>, memref<128x64xbf16>) outs(%[[Q:.*]] : memref<4x2x64xbf16>)
// CHECK:      loom.rope ins(%[[Q]], %pos : memref<4x2x64xbf16>, memref<?xi32>) outs(%[[Q]] : memref<4x2x64xbf16>) {rotary_dim = 64 : i64, theta = 5.000000e+05 : f32}
// CHECK:      loom.kv_append ins(%[[K:.*]], %[[V:.*]], %slots : memref<4x1x64xbf16>, memref<4x1x64xbf16>, memref<?xi64>) outs(%kc, %vc : memref<16x4x1x64xbf16>, memref<16x4x1x64xbf16>)
// CHECK:      loom.gqa_decode ins(%[[Q]], %kc, %vc, %indptr, %indices, %lens : memref<4x2x64xbf16>, memref<16x4x1x64xbf16>, memref<16x4x1x64xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%[[A:.*]] : memref<4x2x64xbf16>) {sm_scale = 1.250000e-01 : f32}
// CHECK:      loom.linear ins(%[[A]], %wo : memref<4x2x64xbf16>, memref<64x128xbf16>) residual(%[[X]] : memref<4x64xbf16>) outs(%[[X]] : memref<4x64xbf16>)
// CHECK:      loom.silu_mul ins(%[[G:.*]], %[[U:.*]] : memref<4x96xbf16>, memref<4x96xbf16>) outs(%[[G]] : memref<4x96xbf16>)
// CHECK:      loom.argmax ins(%[[L:.*]] : memref<4x100xf32>) outs(%next : memref<?xi32>)
loom.graph @decoder_ops target(#t) (
    input %ids : memref<?xi32>, weight %table : memref<100x64xbf16>,
    weight %wq : memref<128x64xbf16>, weight %wk : memref<64x64xbf16>,
    weight %wv : memref<64x64xbf16>, weight %wo : memref<64x128xbf16>,
    weight %wg : memref<96x64xbf16>, weight %wu : memref<96x64xbf16>,
    weight %head : memref<100x64xbf16>,
    cache %kc : memref<16x4x1x64xbf16>, cache %vc : memref<16x4x1x64xbf16>,
    meta %pos : memref<?xi32>, meta %slots : memref<?xi64>, meta %indptr : memref<?xi32>,
    meta %indices : memref<?xi32>, meta %lens : memref<?xi32>,
    output %next : memref<?xi32>) {
  %x = loom.alloc : memref<4x64xbf16>
  loom.embedding ins(%table, %ids : memref<100x64xbf16>, memref<?xi32>) outs(%x : memref<4x64xbf16>)
  %q = loom.alloc : memref<4x2x64xbf16>
  %k = loom.alloc : memref<4x1x64xbf16>
  %v = loom.alloc : memref<4x1x64xbf16>
  loom.linear ins(%x, %wq : memref<4x64xbf16>, memref<128x64xbf16>) outs(%q : memref<4x2x64xbf16>)
  loom.linear ins(%x, %wk : memref<4x64xbf16>, memref<64x64xbf16>) outs(%k : memref<4x1x64xbf16>)
  loom.linear ins(%x, %wv : memref<4x64xbf16>, memref<64x64xbf16>) outs(%v : memref<4x1x64xbf16>)
  loom.rope ins(%q, %pos : memref<4x2x64xbf16>, memref<?xi32>) outs(%q : memref<4x2x64xbf16>) {theta = 5.0e5 : f32, rotary_dim = 64 : i64}
  loom.kv_append ins(%k, %v, %slots : memref<4x1x64xbf16>, memref<4x1x64xbf16>, memref<?xi64>) outs(%kc, %vc : memref<16x4x1x64xbf16>, memref<16x4x1x64xbf16>)
  %a = loom.alloc : memref<4x2x64xbf16>
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<4x2x64xbf16>, memref<16x4x1x64xbf16>, memref<16x4x1x64xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%a : memref<4x2x64xbf16>) {sm_scale = 0.125 : f32}
  loom.linear ins(%a, %wo : memref<4x2x64xbf16>, memref<64x128xbf16>) residual(%x : memref<4x64xbf16>) outs(%x : memref<4x64xbf16>)
  %g = loom.alloc : memref<4x96xbf16>
  %u = loom.alloc : memref<4x96xbf16>
  loom.linear ins(%x, %wg : memref<4x64xbf16>, memref<96x64xbf16>) outs(%g : memref<4x96xbf16>)
  loom.linear ins(%x, %wu : memref<4x64xbf16>, memref<96x64xbf16>) outs(%u : memref<4x96xbf16>)
  loom.silu_mul ins(%g, %u : memref<4x96xbf16>, memref<4x96xbf16>) outs(%g : memref<4x96xbf16>)
  %logits = loom.alloc : memref<4x100xf32>
  loom.linear ins(%x, %head : memref<4x64xbf16>, memref<100x64xbf16>) outs(%logits : memref<4x100xf32>)
  loom.argmax ins(%logits : memref<4x100xf32>) outs(%next : memref<?xi32>)
}

// -----

#t = #loom.target<name = "b200", arch = "sm_100a", workers = 148, lanes = 32,
                  smem_per_block = 232448, regs_per_worker = 65536,
                  hbm_gbps = 8000, bf16_tflops = 2250>

// CHECK-LABEL: loom.graph @mla target(#b200)
// CHECK:      loom.mla_decode ins(%q_nope, %q_pe, %ckv, %kpe, %indptr, %indices, %lens : memref<?x16x512xbf16>, memref<?x16x64xbf16>, memref<1024x64x512xbf16>, memref<1024x64x64xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %lse : memref<?x16x512xbf16>, memref<?x16xf32>) {sm_scale = 0.135233775 : f32}
loom.graph @mla target(#t) (
    input %q_nope : memref<?x16x512xbf16>, input %q_pe : memref<?x16x64xbf16>,
    cache %ckv : memref<1024x64x512xbf16>, cache %kpe : memref<1024x64x64xbf16>,
    meta %indptr : memref<?xi32>, meta %indices : memref<?xi32>, meta %lens : memref<?xi32>,
    output %o : memref<?x16x512xbf16>, output %lse : memref<?x16xf32>) {
  loom.mla_decode ins(%q_nope, %q_pe, %ckv, %kpe, %indptr, %indices, %lens : memref<?x16x512xbf16>, memref<?x16x64xbf16>, memref<1024x64x512xbf16>, memref<1024x64x64xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o, %lse : memref<?x16x512xbf16>, memref<?x16xf32>) {sm_scale = 0.1352337747812271 : f32}
}

// -----

#t = #loom.target<name = "h100", arch = "sm_90a", workers = 132, lanes = 32,
                  smem_per_block = 232448, regs_per_worker = 65536,
                  hbm_gbps = 3350, bf16_tflops = 989>

// CHECK-LABEL: loom.graph @kda target(#h100)
// CHECK:      loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu : memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4xbf16>, memref<4xf32>, memref<4x128xf32>, memref<?xi32>) initial_state(%s0 : memref<?x4x128x128xf32>) outs(%o, %s1 : memref<?x4x128xbf16>, memref<?x4x128x128xf32>) {chunk_size = 64 : i64, gate = #loom.gate<bounded>, lower_bound = -5.000000e+00 : f32, qk_l2norm = true, scale = 0.0883883461 : f32}
// CHECK:      loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu : {{.*}}) outs(%o, %s1 : memref<?x4x128xbf16>, memref<?x4x128x128xf32>) {chunk_size = 16 : i64, gate = #loom.gate<unbounded>, qk_l2norm = false, scale = 1.000000e+00 : f32}
loom.graph @kda target(#t) (
    input %q : memref<?x4x128xbf16>, input %k : memref<?x4x128xbf16>, input %v : memref<?x4x128xbf16>,
    input %g : memref<?x4x128xbf16>, input %beta : memref<?x4xbf16>,
    weight %a_log : memref<4xf32>, weight %dt_bias : memref<4x128xf32>,
    meta %cu : memref<?xi32>, input %s0 : memref<?x4x128x128xf32>,
    output %o : memref<?x4x128xbf16>, output %s1 : memref<?x4x128x128xf32>) {
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu : memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4xbf16>, memref<4xf32>, memref<4x128xf32>, memref<?xi32>)
      initial_state(%s0 : memref<?x4x128x128xf32>)
      outs(%o, %s1 : memref<?x4x128xbf16>, memref<?x4x128x128xf32>)
      {gate = #loom.gate<bounded>, lower_bound = -5.0 : f32, scale = 0.08838834764 : f32, chunk_size = 64 : i64, qk_l2norm = true}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu : memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4x128xbf16>, memref<?x4xbf16>, memref<4xf32>, memref<4x128xf32>, memref<?xi32>)
      outs(%o, %s1 : memref<?x4x128xbf16>, memref<?x4x128x128xf32>)
      {gate = #loom.gate<unbounded>, scale = 1.0 : f32, chunk_size = 16 : i64, qk_l2norm = false}
}

// -----

// The role enum attribute on its own.
// CHECK-LABEL: func.func @role_attr
// CHECK-SAME:  loom.r = #loom.role<cache>
func.func @role_attr() attributes {loom.r = #loom.role<cache>} {
  return
}

// -----

// The task-level ops and #loom.partition, as the passes print them.
#t = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1,
                  smem_per_block = 1048576, regs_per_worker = 0,
                  hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @program
// CHECK:      loom.add {{.*}} {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
// CHECK:      loom.program workers(2) mode(static) {
// CHECK-NEXT:   loom.event 0 needs(2)
// CHECK-NEXT:   loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(500)
// CHECK-NEXT:   loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(500)
// CHECK-NEXT:   loom.task 2 op(0) phase(1) tile(0) waits [0] triggers [] cost(600)
// CHECK-NEXT:   loom.worker 0 tasks [0, 2]
// CHECK-NEXT:   loom.worker 1 tasks [1]
// CHECK-NEXT: }
// CHECK:      loom.program workers(4) mode(dynamic) {
loom.graph @program target(#t) (input %x : memref<4xbf16>, output %y : memref<4xbf16>) {
  loom.add ins(%x, %x : memref<4xbf16>, memref<4xbf16>) outs(%y : memref<4xbf16>)
      {loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2, 1], params = [256, 3], cost_ns = [500, 600], scratch_bytes = 64>}
  loom.program workers(2) mode(static) {
    loom.event 0 needs(2)
    loom.task 0 op(0) phase(0) tile(0) waits [] triggers [0] cost(500)
    loom.task 1 op(0) phase(0) tile(1) waits [] triggers [0] cost(500)
    loom.task 2 op(0) phase(1) tile(0) waits [0] triggers [] cost(600)
    loom.worker 0 tasks [0, 2]
    loom.worker 1 tasks [1]
  }
  loom.program workers(4) mode(dynamic) {
  }
}
