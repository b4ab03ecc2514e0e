// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.alloc and loom.slice.

//===----------------------------------------------------------------------===//
// loom.alloc
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8x64xbf16>, output %c : memref<8x64xbf16>) {
  // expected-error @+1 {{'loom.alloc' op 'buffer' must have the identity (row-major) layout, got 'memref<8x64xbf16, strided<[128, 1]>>'}}
  %t = loom.alloc : memref<8x64xbf16, strided<[128, 1]>>
  loom.add ins(%a, %a : memref<8x64xbf16>, memref<8x64xbf16>) outs(%c : memref<8x64xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8x64xbf16>, output %c : memref<8x64xbf16>) {
  // expected-error @+1 {{'loom.alloc' op 'buffer' must have the identity (row-major) layout}}
  %t = loom.alloc : memref<8x64xbf16, affine_map<(d0, d1) -> (d1, d0)>>
  loom.add ins(%a, %a : memref<8x64xbf16>, memref<8x64xbf16>) outs(%c : memref<8x64xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Intermediates are statically shaped (ODS constraint).
loom.graph @g target(#t) (input %a : memref<8x64xbf16>, output %c : memref<8x64xbf16>) {
  // expected-error @+1 {{'loom.alloc' op result #0 must be statically shaped memref of any type values, but got 'memref<?x64xbf16>'}}
  %t = loom.alloc : memref<?x64xbf16>
  loom.add ins(%a, %a : memref<8x64xbf16>, memref<8x64xbf16>) outs(%c : memref<8x64xbf16>)
}

// -----

//===----------------------------------------------------------------------===//
// loom.slice
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Non-identity source (the graph would reject the argument too; the op's own
// verifier runs first).
loom.graph @g target(#t) (weight %w : memref<2x8xbf16, strided<[16, 1]>>) {
  // expected-error @+1 {{'loom.slice' op 'source' must have the identity (row-major) layout, got 'memref<2x8xbf16, strided<[16, 1]>>'}}
  %w1 = loom.slice %w[1] : memref<2x8xbf16, strided<[16, 1]>> -> memref<8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The view of an entry is dense: its offset lives in the op, not in the type.
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op 'result' must have the identity (row-major) layout, got 'memref<8xbf16, strided<[1], offset: 8>>'}}
  %w1 = loom.slice %w[1] : memref<2x8xbf16> -> memref<8xbf16, strided<[1], offset: 8>>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op 'result' must have rank 1, got 'memref<2x8xbf16>'}}
  %w1 = loom.slice %w[1] : memref<2x8xbf16> -> memref<2x8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op 'result' must have rank 1, got 'memref<bf16>'}}
  %w1 = loom.slice %w[1] : memref<2x8xbf16> -> memref<bf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op dimension 2 of 'source' (8) must equal dimension 1 of 'result' (16)}}
  %w1 = loom.slice %w[1] : memref<2x4x8xbf16> -> memref<4x16xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op 'source' and 'result' must have the same element type, got 'bf16' and 'f32'}}
  %w1 = loom.slice %w[1] : memref<2x8xbf16> -> memref<8xf32>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op index 2 is out of range for a leading dimension of 2}}
  %w2 = loom.slice %w[2] : memref<2x8xbf16> -> memref<8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<2x8xbf16>) {
  // expected-error @+1 {{'loom.slice' op index -1 is out of range for a leading dimension of 2}}
  %w1 = loom.slice %w[-1] : memref<2x8xbf16> -> memref<8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A dynamic leading dimension admits any index >= 0, but not a negative one.
loom.graph @g target(#t) (cache %w : memref<?x8xbf16>) {
  %w7 = loom.slice %w[7] : memref<?x8xbf16> -> memref<8xbf16>
  // expected-error @+1 {{'loom.slice' op index -1 is out of range}}
  %w1 = loom.slice %w[-1] : memref<?x8xbf16> -> memref<8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (weight %w : memref<bf16>) {
  // expected-error @+1 {{'loom.slice' op 'source' must have rank at least 1, got 'memref<bf16>'}}
  %w0 = loom.slice %w[0] : memref<bf16> -> memref<bf16>
}
