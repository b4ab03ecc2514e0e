// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.kv_append (KvAppendOp::verify) and its operand constraints.
// k, v: [T, H_kv, D]; slot_mapping: [T]; caches: [pages, P, H_kv, D].

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16, strided<[128, 32, 8, 1]>>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'k_cache' must have the identity (row-major) layout, got 'memref<16x4x2x8xbf16, strided<[128, 32, 8, 1]>>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16, strided<[128, 32, 8, 1]>>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x16xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'k' must have rank 3, got 'memref<4x16xbf16>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x16xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x16xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'v' must have rank 3, got 'memref<4x16xbf16>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x16xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4x1xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'slot_mapping' must have rank 1, got 'memref<4x1xi64>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4x1xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<64x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'k_cache' must have rank 4, got 'memref<64x2x8xbf16>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<64x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<64x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'v_cache' must have rank 4, got 'memref<64x2x8xbf16>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<64x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Token counts of k and v differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<3x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 0 of 'k' (4) must equal dimension 0 of 'v' (3)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<3x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// One slot per token.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<3xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 0 of 'slot_mapping' (3) must equal dimension 0 of 'k' (4)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<3xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// KV heads of k and v differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x1x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x1x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 1 of 'k' (2) must equal dimension 1 of 'v' (1)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x1x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x1x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page counts of the caches differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<8x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 0 of 'k_cache' (16) must equal dimension 0 of 'v_cache' (8)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<8x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page sizes of the caches differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x8x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 1 of 'k_cache' (4) must equal dimension 1 of 'v_cache' (8)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x8x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// KV heads of k and k_cache differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x4x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 2 of 'k_cache' (4) must equal dimension 1 of 'k' (2)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x4x8xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Head dims of k and k_cache differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x16xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 3 of 'k_cache' (16) must equal dimension 2 of 'k' (8)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x16xbf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// KV heads of v and v_cache differ.
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x4x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 2 of 'v_cache' (4) must equal dimension 1 of 'v' (2)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x4x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Head dims of v and v_cache differ (v's head dim may differ from k's).
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x16xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x32xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op dimension 3 of 'v_cache' (32) must equal dimension 2 of 'v' (16)}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x16xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x32xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op 'k' and 'k_cache' must have the same element type, got 'bf16' and 'f16'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xf16>, memref<16x4x2x8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xi64>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xf32>) {
  // expected-error @+1 {{'loom.kv_append' op 'v' and 'v_cache' must have the same element type, got 'bf16' and 'f32'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xi64>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xf32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %k : memref<4x2x8xbf16>,
    input %v : memref<4x2x8xbf16>,
    meta %slots : memref<4xindex>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>) {
  // expected-error @+1 {{'loom.kv_append' op operand #2 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<4xindex>'}}
  loom.kv_append ins(%k, %v, %slots : memref<4x2x8xbf16>, memref<4x2x8xbf16>, memref<4xindex>)
                 outs(%kc, %vc : memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>)
}
