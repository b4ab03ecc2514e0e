// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.rmsnorm (RmsNormOp::verify) and its operand constraints.

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16, strided<[16, 1]>>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'x' must have the identity (row-major) layout, got 'memref<4x8xbf16, strided<[16, 1]>>'}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16, strided<[16, 1]>>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<bf16>, weight %w : memref<8xbf16>, output %y : memref<bf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'x' must have rank at least 1, got 'memref<bf16>'}}
  loom.rmsnorm ins(%x, %w : memref<bf16>, memref<8xbf16>) outs(%y : memref<bf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<1x8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'weight' must have rank 1, got 'memref<1x8xbf16>'}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<1x8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op dimension 0 of 'weight' (16) must equal dimension 1 of 'x' (8)}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<16xbf16>) outs(%y : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Per-head norm ([T, H, D]): the weight matches the last dimension.
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, weight %w : memref<2xbf16>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op dimension 0 of 'weight' (2) must equal dimension 2 of 'x' (8)}}
  loom.rmsnorm ins(%x, %w : memref<4x2x8xbf16>, memref<2xbf16>) outs(%y : memref<4x2x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<32xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'y' must have the shape of 'x': 'memref<32xbf16>' vs 'memref<4x8xbf16>'}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<32xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op dimension 0 of 'x' (4) must equal dimension 0 of 'y' (2)}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<2x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'eps' must be positive, got 0.000000e+00}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 0.0 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'eps' must be positive, got -1.000000e-06}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = -1.0e-06 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op 'eps' must be positive, got nan}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 0x7FC00000 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xi32>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op operand #0 must be memref of bfloat16 type or 16-bit float or 32-bit float values, but got 'memref<4x8xi32>'}}
  loom.rmsnorm ins(%x, %w : memref<4x8xi32>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op requires attribute 'eps'}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>)
}
