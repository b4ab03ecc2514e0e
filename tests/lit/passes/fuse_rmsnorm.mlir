// RUN: loom-opt %s -split-input-file --loom-fuse-rmsnorm | FileCheck %s

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>

// An rmsnorm read only by linears (a layer's Q, K and V) folds into all of
// them; its output buffer goes away.
// CHECK-LABEL: loom.graph @qkv
// CHECK-NOT:   loom.rmsnorm
// CHECK-NOT:   loom.alloc
// CHECK:       loom.linear ins(%x, %wq : memref<4x64xbf16>, memref<64x64xbf16>) norm(%g : memref<64xbf16>) outs(%q : memref<4x64xbf16>) {norm_eps = 9.99999974E-6 : f32}
// CHECK:       loom.linear ins(%x, %wk : memref<4x64xbf16>, memref<16x64xbf16>) norm(%g : memref<64xbf16>) outs(%k : memref<4x16xbf16>) {norm_eps = 9.99999974E-6 : f32}
// CHECK:       loom.linear ins(%x, %wv : memref<4x64xbf16>, memref<16x64xbf16>) norm(%g : memref<64xbf16>) outs(%v : memref<4x16xbf16>) {norm_eps = 9.99999974E-6 : f32}
loom.graph @qkv target(#t) (input %x : memref<4x64xbf16>, weight %g : memref<64xbf16>, weight %wq : memref<64x64xbf16>, weight %wk : memref<16x64xbf16>, weight %wv : memref<16x64xbf16>, output %q : memref<4x64xbf16>, output %k : memref<4x16xbf16>, output %v : memref<4x16xbf16>) {
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.linear ins(%h, %wq : memref<4x64xbf16>, memref<64x64xbf16>) outs(%q : memref<4x64xbf16>)
  loom.linear ins(%h, %wk : memref<4x64xbf16>, memref<16x64xbf16>) outs(%k : memref<4x16xbf16>)
  loom.linear ins(%h, %wv : memref<4x64xbf16>, memref<16x64xbf16>) outs(%v : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>

// Normalised rows another op reads (here an add) must exist: no fusion.
// CHECK-LABEL: loom.graph @other_reader
// CHECK:       loom.rmsnorm
// CHECK:       loom.linear ins(%buf, %w :
// CHECK-NOT:   norm(
loom.graph @other_reader target(#t) (input %x : memref<4x64xbf16>, weight %g : memref<64xbf16>, weight %w : memref<64x64xbf16>, output %y : memref<4x64xbf16>, output %z : memref<4x64xbf16>) {
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.linear ins(%h, %w : memref<4x64xbf16>, memref<64x64xbf16>) outs(%y : memref<4x64xbf16>)
  loom.add ins(%h, %x : memref<4x64xbf16>, memref<4x64xbf16>) outs(%z : memref<4x64xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>

// x changes between the rmsnorm and its second reader: the second linear
// must see the rows as they were, so nothing fuses.
// CHECK-LABEL: loom.graph @x_rewritten
// CHECK:       loom.rmsnorm
// CHECK-NOT:   norm(
loom.graph @x_rewritten target(#t) (input %a : memref<4x64xbf16>, weight %g : memref<64xbf16>, weight %w : memref<64x64xbf16>, output %y : memref<4x64xbf16>, output %z : memref<4x64xbf16>) {
  %x = loom.alloc : memref<4x64xbf16>
  loom.add ins(%a, %a : memref<4x64xbf16>, memref<4x64xbf16>) outs(%x : memref<4x64xbf16>)
  %h = loom.alloc : memref<4x64xbf16>
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%h : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.linear ins(%h, %w : memref<4x64xbf16>, memref<64x64xbf16>) outs(%y : memref<4x64xbf16>)
  loom.add ins(%y, %y : memref<4x64xbf16>, memref<4x64xbf16>) outs(%x : memref<4x64xbf16>)
  loom.linear ins(%h, %w : memref<4x64xbf16>, memref<64x64xbf16>) outs(%z : memref<4x64xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>

// In place, or over heads (Qwen3's q/k norm, rank 3): the rows must be
// stored, so these stay.
// CHECK-LABEL: loom.graph @kept
// CHECK-COUNT-2: loom.rmsnorm
loom.graph @kept target(#t) (input %a : memref<4x64xbf16>, input %b : memref<4x4x16xbf16>, weight %g : memref<64xbf16>, weight %g16 : memref<16xbf16>, weight %w : memref<64x64xbf16>, output %y : memref<4x64xbf16>, output %z : memref<4x64xbf16>) {
  %x = loom.alloc : memref<4x64xbf16>
  loom.add ins(%a, %a : memref<4x64xbf16>, memref<4x64xbf16>) outs(%x : memref<4x64xbf16>)
  loom.rmsnorm ins(%x, %g : memref<4x64xbf16>, memref<64xbf16>) outs(%x : memref<4x64xbf16>) {eps = 1.0e-05 : f32}
  loom.linear ins(%x, %w : memref<4x64xbf16>, memref<64x64xbf16>) outs(%y : memref<4x64xbf16>)
  %h = loom.alloc : memref<4x4x16xbf16>
  loom.rmsnorm ins(%b, %g16 : memref<4x4x16xbf16>, memref<16xbf16>) outs(%h : memref<4x4x16xbf16>) {eps = 1.0e-05 : f32}
  loom.linear ins(%h, %w : memref<4x4x16xbf16>, memref<64x64xbf16>) outs(%z : memref<4x64xbf16>)
}
