// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.embedding (EmbeddingOp::verify) and loom.argmax
// (ArgmaxOp::verify), and their operand constraints.
// embedding: table [vocab, D], ids [B], y [B, D]; argmax: x [B, V], indices [B].

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<64x8xbf16, strided<[16, 1]>>, meta %ids : memref<4xi32>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.embedding' op 'table' must have the identity (row-major) layout, got 'memref<64x8xbf16, strided<[16, 1]>>'}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16, strided<[16, 1]>>, memref<4xi32>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<512xbf16>, meta %ids : memref<4xi32>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.embedding' op 'table' must have rank 2, got 'memref<512xbf16>'}}
  loom.embedding ins(%table, %ids : memref<512xbf16>, memref<4xi32>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<64x8xbf16>, meta %ids : memref<4x1xi32>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.embedding' op 'ids' must have rank 1, got 'memref<4x1xi32>'}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16>, memref<4x1xi32>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<64x8xbf16>, meta %ids : memref<4xi32>, output %y : memref<4x2x4xbf16>) {
  // expected-error @+1 {{'loom.embedding' op 'y' must have rank 2, got 'memref<4x2x4xbf16>'}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16>, memref<4xi32>) outs(%y : memref<4x2x4xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// One row per id.
loom.graph @g target(#t) (weight %table : memref<64x8xbf16>, meta %ids : memref<4xi32>, output %y : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.embedding' op dimension 0 of 'y' (2) must equal dimension 0 of 'ids' (4)}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16>, memref<4xi32>) outs(%y : memref<2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<64x8xbf16>, meta %ids : memref<4xi32>, output %y : memref<4x16xbf16>) {
  // expected-error @+1 {{'loom.embedding' op dimension 1 of 'y' (16) must equal dimension 1 of 'table' (8)}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16>, memref<4xi32>) outs(%y : memref<4x16xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %table : memref<64x8xbf16>, meta %ids : memref<4xf32>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.embedding' op operand #1 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<4xf32>'}}
  loom.embedding ins(%table, %ids : memref<64x8xbf16>, memref<4xf32>) outs(%y : memref<4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x64xf32, strided<[128, 1]>>, output %next : memref<4xi32>) {
  // expected-error @+1 {{'loom.argmax' op 'x' must have the identity (row-major) layout, got 'memref<4x64xf32, strided<[128, 1]>>'}}
  loom.argmax ins(%x : memref<4x64xf32, strided<[128, 1]>>) outs(%next : memref<4xi32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<64xf32>, output %next : memref<4xi32>) {
  // expected-error @+1 {{'loom.argmax' op 'x' must have rank 2, got 'memref<64xf32>'}}
  loom.argmax ins(%x : memref<64xf32>) outs(%next : memref<4xi32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x64xf32>, output %next : memref<4x1xi32>) {
  // expected-error @+1 {{'loom.argmax' op 'indices' must have rank 1, got 'memref<4x1xi32>'}}
  loom.argmax ins(%x : memref<4x64xf32>) outs(%next : memref<4x1xi32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// One index per row.
loom.graph @g target(#t) (input %x : memref<4x64xf32>, output %next : memref<8xi32>) {
  // expected-error @+1 {{'loom.argmax' op dimension 0 of 'indices' (8) must equal dimension 0 of 'x' (4)}}
  loom.argmax ins(%x : memref<4x64xf32>) outs(%next : memref<8xi32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x64xf32>, output %next : memref<4xf32>) {
  // expected-error @+1 {{'loom.argmax' op operand #1 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<4xf32>'}}
  loom.argmax ins(%x : memref<4x64xf32>) outs(%next : memref<4xf32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Token ids are signless.
loom.graph @g target(#t) (input %x : memref<4x64xf32>, output %next : memref<4xui32>) {
  // expected-error @+1 {{'loom.argmax' op operand #1 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<4xui32>'}}
  loom.argmax ins(%x : memref<4x64xf32>) outs(%next : memref<4xui32>)
}
