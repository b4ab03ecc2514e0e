// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of the elementwise ops loom.silu_mul (SiluMulOp::verify) and
// loom.add (AddOp::verify), and their operand constraints: all three buffers
// have one shape.

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16, strided<[16, 1]>>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op 'up' must have the identity (row-major) layout, got 'memref<4x8xbf16, strided<[16, 1]>>'}}
  loom.silu_mul ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16, strided<[16, 1]>>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<32xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op 'up' must have the shape of 'gate': 'memref<32xbf16>' vs 'memref<4x8xbf16>'}}
  loom.silu_mul ins(%a, %b : memref<4x8xbf16>, memref<32xbf16>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x16xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op dimension 1 of 'gate' (8) must equal dimension 1 of 'up' (16)}}
  loom.silu_mul ins(%a, %b : memref<4x8xbf16>, memref<4x16xbf16>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<4x2x4xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op 'y' must have the shape of 'gate': 'memref<4x2x4xbf16>' vs 'memref<4x8xbf16>'}}
  loom.silu_mul ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<4x2x4xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op dimension 0 of 'gate' (4) must equal dimension 0 of 'y' (2)}}
  loom.silu_mul ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xi32>, input %b : memref<4x8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.silu_mul' op operand #0 must be memref of bfloat16 type or 16-bit float or 32-bit float values, but got 'memref<4x8xi32>'}}
  loom.silu_mul ins(%a, %b : memref<4x8xi32>, memref<4x8xbf16>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<4x8xbf16, strided<[8, 1], offset: 8>>) {
  // expected-error @+1 {{'loom.add' op 'y' must have the identity (row-major) layout, got 'memref<4x8xbf16, strided<[8, 1], offset: 8>>'}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<4x8xbf16, strided<[8, 1], offset: 8>>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.add' op 'b' must have the shape of 'a': 'memref<8xbf16>' vs 'memref<4x8xbf16>'}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// No broadcasting.
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<1x8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.add' op dimension 0 of 'a' (4) must equal dimension 0 of 'b' (1)}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<1x8xbf16>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<32xbf16>) {
  // expected-error @+1 {{'loom.add' op 'y' must have the shape of 'a': 'memref<32xbf16>' vs 'memref<4x8xbf16>'}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<32xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<4x4xbf16>) {
  // expected-error @+1 {{'loom.add' op dimension 1 of 'a' (8) must equal dimension 1 of 'y' (4)}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<4x4xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<4x8xbf16>, input %b : memref<4x8xbf16>, output %y : memref<4x8xi64>) {
  // expected-error @+1 {{'loom.add' op operand #2 must be memref of bfloat16 type or 16-bit float or 32-bit float values, but got 'memref<4x8xi64>'}}
  loom.add ins(%a, %b : memref<4x8xbf16>, memref<4x8xbf16>) outs(%y : memref<4x8xi64>)
}
