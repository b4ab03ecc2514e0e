// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.rope (RopeOp::verify) and its operand constraints.
// x, y: [T, H, D]; positions: [T].

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32, strided<[2]>>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'positions' must have the identity (row-major) layout, got 'memref<4xi32, strided<[2]>>'}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32, strided<[2]>>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x16xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'x' must have rank 3, got 'memref<4x16xbf16>'}}
  loom.rope ins(%x, %pos : memref<4x16xbf16>, memref<4xi32>) outs(%y : memref<4x16xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4x1xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'positions' must have rank 1, got 'memref<4x1xi32>'}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4x1xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'y' must have the shape of 'x': 'memref<4x16xbf16>' vs 'memref<4x2x8xbf16>'}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x16xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x4x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op dimension 1 of 'x' (2) must equal dimension 1 of 'y' (4)}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x4x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<3xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op dimension 0 of 'positions' (3) must equal dimension 0 of 'x' (4)}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<3xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x7xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x7xbf16>) {
  // expected-error @+1 {{'loom.rope' op head dimension must be even, got 7}}
  loom.rope ins(%x, %pos : memref<4x2x7xbf16>, memref<4xi32>) outs(%y : memref<4x2x7xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 6 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'rotary_dim' must be even and in (0, 8], got 0}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 0 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'rotary_dim' must be even and in (0, 8], got -2}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = -2 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'rotary_dim' must be even and in (0, 8], got 5}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 5 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'rotary_dim' must be even and in (0, 8], got 16}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 16 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// With a dynamic head dimension only the parity and sign of rotary_dim are checked.
loom.graph @g target(#t) (input %x : memref<4x2x?xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x?xbf16>) {
  loom.rope ins(%x, %pos : memref<4x2x?xbf16>, memref<4xi32>) outs(%y : memref<4x2x?xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 4096 : i64}
  // expected-error @+1 {{'loom.rope' op 'rotary_dim' must be even and in (0, }}
  loom.rope ins(%x, %pos : memref<4x2x?xbf16>, memref<4xi32>) outs(%y : memref<4x2x?xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 7 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op 'theta' must be positive, got 0.000000e+00}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 0.0 : f32, rotary_dim = 8 : i64}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, input %pos : memref<4xf32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op operand #1 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<4xf32>'}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xf32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64}
}

// -----

// Llama 3.1 scaling: only one of the four.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op Llama 3.1 scaling needs all of 'scaling_factor' (>= 1), 'low_freq_factor' > 0, 'high_freq_factor' above it and 'original_max_position' > 0, or none}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64, scaling_factor = 8.0 : f32}
}

// -----

// Llama 3.1 scaling: high not above low.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op Llama 3.1 scaling needs all of 'scaling_factor' (>= 1), 'low_freq_factor' > 0, 'high_freq_factor' above it and 'original_max_position' > 0, or none}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64, scaling_factor = 8.0 : f32, low_freq_factor = 4.0 : f32, high_freq_factor = 1.0 : f32, original_max_position = 8192 : i64}
}

// -----

// Llama 3.1 scaling: factor below 1.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x2x8xbf16>, meta %pos : memref<4xi32>, output %y : memref<4x2x8xbf16>) {
  // expected-error @+1 {{'loom.rope' op Llama 3.1 scaling needs all of 'scaling_factor' (>= 1), 'low_freq_factor' > 0, 'high_freq_factor' above it and 'original_max_position' > 0, or none}}
  loom.rope ins(%x, %pos : memref<4x2x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x8xbf16>) {theta = 1.0e+04 : f32, rotary_dim = 8 : i64, scaling_factor = 0.5 : f32, low_freq_factor = 1.0 : f32, high_freq_factor = 4.0 : f32, original_max_position = 8192 : i64}
}
