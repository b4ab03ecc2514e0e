// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.linear (LinearOp::verify) and its operand constraints.
// x: [M, K...], weight: [N, K], y and residual: [M, N...].

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16, strided<[1, 16]>>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'weight' must have the identity (row-major) layout, got 'memref<16x8xbf16, strided<[1, 16]>>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16, strided<[1, 16]>>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The optional residual is checked too.
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, input %r : memref<4x16xbf16, strided<[32, 1]>>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'residual' must have the identity (row-major) layout, got 'memref<4x16xbf16, strided<[32, 1]>>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) residual(%r : memref<4x16xbf16, strided<[32, 1]>>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<1x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'x' must have rank at least 2, got 'memref<8xbf16>'}}
  loom.linear ins(%x, %w : memref<8xbf16>, memref<16x8xbf16>) outs(%y : memref<1x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<2x16x8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'weight' must have rank 2, got 'memref<2x16x8xbf16>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<2x16x8xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<64xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'y' must have rank at least 2, got 'memref<64xbf16>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) outs(%y : memref<64xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xf32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'x' and 'weight' must have the same element type, got 'bf16' and 'f32'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xf32>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<2x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op dimension 0 of 'x' (4) must equal dimension 0 of 'y' (2)}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) outs(%y : memref<2x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x32xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'x' has 8 input features but 'weight' has 32 columns}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x32xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Trailing dimensions of x flatten to K: [4, 2, 8] has K = 16.
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'x' has 16 input features but 'weight' has 8 columns}}
  loom.linear ins(%x, %w : memref<4x2x8xbf16>, memref<16x8xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<4x32xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'y' has 32 output features but 'weight' has 16 rows}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) outs(%y : memref<4x32xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Trailing dimensions of y flatten to N: [4, 2, 4] has N = 8.
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<4x2x4xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'y' has 8 output features but 'weight' has 16 rows}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) outs(%y : memref<4x2x4xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, input %r : memref<64xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'residual' must have the shape of 'y': 'memref<64xbf16>' vs 'memref<4x16xbf16>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) residual(%r : memref<64xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, input %r : memref<4x2x8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'residual' must have the shape of 'y': 'memref<4x2x8xbf16>' vs 'memref<4x16xbf16>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) residual(%r : memref<4x2x8xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, input %r : memref<2x16xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op dimension 0 of 'y' (4) must equal dimension 0 of 'residual' (2)}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) residual(%r : memref<2x16xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xi8>, weight %w : memref<16x8xi8>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op operand #0 must be memref of bfloat16 type or 16-bit float or 32-bit float values, but got 'memref<4x8xi8>'}}
  loom.linear ins(%x, %w : memref<4x8xi8>, memref<16x8xi8>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, input %r : memref<4x16xi32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op operand #2 must be memref of bfloat16 type or 16-bit float or 32-bit float values, but got 'memref<4x16xi32>'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) residual(%r : memref<4x16xi32>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A norm needs its eps.
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, weight %g : memref<8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'norm' and 'norm_eps' must be given together}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) norm(%g : memref<8xbf16>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'norm' and 'norm_eps' must be given together}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) outs(%y : memref<4x16xbf16>) {norm_eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, weight %g : memref<16xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'norm' has 16 entries but 'x' has 8 input features}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) norm(%g : memref<16xbf16>) outs(%y : memref<4x16xbf16>) {norm_eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, weight %g : memref<8xf32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'x' and 'norm' must have the same element type, got 'bf16' and 'f32'}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) norm(%g : memref<8xf32>) outs(%y : memref<4x16xbf16>) {norm_eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<16x8xbf16>, weight %g : memref<8xbf16>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.linear' op 'norm_eps' must be positive, got 0}}
  loom.linear ins(%x, %w : memref<4x8xbf16>, memref<16x8xbf16>) norm(%g : memref<8xbf16>) outs(%y : memref<4x16xbf16>) {norm_eps = 0.0 : f32}
}
