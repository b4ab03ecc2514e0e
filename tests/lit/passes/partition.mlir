// RUN: loom-opt %s -split-input-file --loom-partition | FileCheck %s

// Rows, N tiles and elements are split so each phase has about one task per
// worker; the target (2 workers) sizes the tiles.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @chain
// CHECK: loom.rmsnorm {{.*}} {eps = {{.*}}, loom.op_id = 0 : i64, loom.partition = #loom.partition<tasks = [2], params = [2], cost_ns = [520], scratch_bytes = 0>}
// CHECK: loom.linear {{.*}} {loom.op_id = 1 : i64, loom.partition = #loom.partition<tasks = [2], params = [64, 1], cost_ns = [868], scratch_bytes = 0>}
// CHECK: loom.add {{.*}} {loom.op_id = 2 : i64, loom.partition = #loom.partition<tasks = [2], params = [256], cost_ns = [561], scratch_bytes = 0>}
loom.graph @chain target(#tiny) (input %x : memref<4x64xbf16>, weight %g : memref<64xbf16>,
    weight %w : memref<128x64xbf16>, input %r : memref<4x128xbf16>, output %y : memref<4x128xbf16>) {
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  %t = loom.alloc : memref<4x128xbf16>
  loom.linear ins(%h, %w : memref<4x64xbf16>, memref<128x64xbf16>) outs(%t : memref<4x128xbf16>)
  loom.add ins(%t, %r : memref<4x128xbf16>, memref<4x128xbf16>) outs(%y : memref<4x128xbf16>)
}

// -----

// A linear with too few N tiles for the chip also splits K and reduces:
// N = 64 is 4 tiles of 16 on 132 workers, so K = 4096 is cut 16 ways
// (no split under 256 columns).
#h200 = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// CHECK-LABEL: loom.graph @split_k
// CHECK: loom.linear {{.*}} loom.partition = #loom.partition<tasks = [64, 4], params = [16, 16], cost_ns = [{{[0-9]+}}, {{[0-9]+}}], scratch_bytes = 4096>
loom.graph @split_k target(#h200) (input %x : memref<1x4096xbf16>, weight %w : memref<64x4096xbf16>, output %y : memref<1x64xbf16>) {
  loom.linear ins(%x, %w : memref<1x4096xbf16>, memref<64x4096xbf16>) outs(%y : memref<1x64xbf16>)
}

// -----

// Linears that read the same x (a layer's Q, K and V) are ready together:
// they share the workers by weight bytes (88, 22 and 22 of 132), each in
// tiles of 48 rows (4096 / 88 and 1024 / 22 rounded up to 16), so K and V
// are not split although alone each would be.
#h200 = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// CHECK-LABEL: loom.graph @siblings
// CHECK: loom.linear {{.*}} loom.partition = #loom.partition<tasks = [86], params = [48, 1]
// CHECK: loom.linear {{.*}} loom.partition = #loom.partition<tasks = [22], params = [48, 1]
// CHECK: loom.linear {{.*}} loom.partition = #loom.partition<tasks = [22], params = [48, 1]
// CHECK: loom.linear {{.*}} loom.partition = #loom.partition<tasks = [64, 4], params = [16, 16]
loom.graph @siblings target(#h200) (input %x : memref<1x4096xbf16>, weight %wq : memref<4096x4096xbf16>,
    weight %wk : memref<1024x4096xbf16>, weight %wv : memref<1024x4096xbf16>, weight %wo : memref<64x4096xbf16>,
    output %q : memref<1x4096xbf16>, output %k : memref<1x1024xbf16>, output %v : memref<1x1024xbf16>,
    output %o : memref<1x64xbf16>) {
  loom.linear ins(%x, %wq : memref<1x4096xbf16>, memref<4096x4096xbf16>) outs(%q : memref<1x4096xbf16>)
  loom.linear ins(%x, %wk : memref<1x4096xbf16>, memref<1024x4096xbf16>) outs(%k : memref<1x1024xbf16>)
  loom.linear ins(%x, %wv : memref<1x4096xbf16>, memref<1024x4096xbf16>) outs(%v : memref<1x1024xbf16>)
  loom.linear ins(%q, %wo : memref<1x4096xbf16>, memref<64x4096xbf16>) outs(%o : memref<1x64xbf16>)
}

// -----

// Split-KV decode attention: one phase of split tasks (mapped to request,
// KV head and tokens at run time) and a merge per (request, KV head); MLA
// balances tokens over one slot per worker, and on NVIDIA the slots merge
// their split requests themselves (one phase, params [132, 0]); KDA has a
// chunk-parallel phase and a serial state scan.
#h200 = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// CHECK-LABEL: loom.graph @attention
// CHECK: loom.gqa_decode {{.*}} loom.partition = #loom.partition<tasks = [128], params = [16]
// CHECK: loom.mla_decode {{.*}} loom.partition = #loom.partition<tasks = [132], params = [132, 0]
loom.graph @attention target(#h200) (input %q : memref<1x32x128xbf16>, cache %kc : memref<64x16x8x128xbf16>,
    cache %vc : memref<64x16x8x128xbf16>, meta %indptr : memref<?xi32>, meta %indices : memref<?xi32>,
    meta %lens : memref<?xi32>, output %o : memref<1x32x128xbf16>,
    input %qn : memref<?x16x512xbf16>, input %qp : memref<?x16x64xbf16>, cache %ckv : memref<256x64x512xbf16>,
    cache %kpe : memref<256x64x64xbf16>, output %mo : memref<?x16x512xbf16>, output %lse : memref<?x16xf32>)
    attributes {max_batch = 8 : i64} {
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<1x32x128xbf16>, memref<64x16x8x128xbf16>, memref<64x16x8x128xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<1x32x128xbf16>) {sm_scale = 0.088 : f32}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens : memref<?x16x512xbf16>, memref<?x16x64xbf16>, memref<256x64x512xbf16>, memref<256x64x64xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%mo, %lse : memref<?x16x512xbf16>, memref<?x16xf32>) {sm_scale = 0.135 : f32}
}

// -----

// GQA at Llama-3-8B's shape: N = max_batch x hkv x splits split tasks with
// splits = ceil(workers / (max_batch x hkv)) (at most 16), so N >= workers;
// the bodies spread the runtime batch over all N. 32 x 8 = 256 >= 132: one
// split each; 4 x 8 = 32: ceil(132 / 32) = 5, N = 160. On an NVIDIA target
// there is no merge phase: the last split of a pair merges it.
#h200 = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// CHECK-LABEL: loom.graph @gqa_llama
// CHECK: loom.gqa_decode {{.*}} loom.partition = #loom.partition<tasks = [256], params = [1], cost_ns = [{{[0-9]+}}], scratch_bytes = 528384>
// CHECK: loom.gqa_decode {{.*}} loom.partition = #loom.partition<tasks = [160], params = [5], cost_ns = [{{[0-9]+}}], scratch_bytes = 330240>
loom.graph @gqa_llama target(#h200) (input %q : memref<32x32x128xbf16>, cache %kc : memref<64x16x8x128xbf16>,
    cache %vc : memref<64x16x8x128xbf16>, meta %indptr : memref<?xi32>, meta %indices : memref<?xi32>,
    meta %lens : memref<?xi32>, output %o : memref<32x32x128xbf16>,
    input %q4 : memref<4x32x128xbf16>, output %o4 : memref<4x32x128xbf16>) {
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens : memref<32x32x128xbf16>, memref<64x16x8x128xbf16>, memref<64x16x8x128xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o : memref<32x32x128xbf16>) {sm_scale = 0.088 : f32}
  loom.gqa_decode ins(%q4, %kc, %vc, %indptr, %indices, %lens : memref<4x32x128xbf16>, memref<64x16x8x128xbf16>, memref<64x16x8x128xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%o4 : memref<4x32x128xbf16>) {sm_scale = 0.088 : f32}
}
