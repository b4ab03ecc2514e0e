// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.gqa_decode (GqaDecodeOp::verify, with the page-table
// checks it shares with loom.mla_decode) and its operand constraints.
// q, o: [B, H_q, D]; caches: [pages, P, H_kv, D]; kv_indptr: [B + 1];
// kv_indices: [N]; kv_lens: [B].

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16, strided<[64, 8, 1], offset: 4>>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'q' must have the identity (row-major) layout, got 'memref<2x4x8xbf16, strided<[64, 8, 1], offset: 4>>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16, strided<[64, 8, 1], offset: 4>>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x32xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'q' must have rank 3, got 'memref<2x32xbf16>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x32xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<64x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'k_cache' must have rank 4, got 'memref<64x2x8xbf16>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<64x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<64x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'v_cache' must have rank 4, got 'memref<64x2x8xbf16>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<64x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x32xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'o' must have rank 3, got 'memref<2x32xbf16>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x32xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page counts of the caches differ.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<8x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 0 of 'k_cache' (16) must equal dimension 0 of 'v_cache' (8)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<8x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page sizes of the caches differ.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x8x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 1 of 'k_cache' (4) must equal dimension 1 of 'v_cache' (8)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x8x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// KV heads of the caches differ.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x1x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 2 of 'k_cache' (2) must equal dimension 2 of 'v_cache' (1)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x1x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Head dims of q and k_cache differ.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x16xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 2 of 'q' (8) must equal dimension 3 of 'k_cache' (16)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x16xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'q' and 'k_cache' must have the same element type, got 'bf16' and 'f16'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<3x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 0 of 'o' (3) must equal dimension 0 of 'q' (2)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<3x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x2x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 1 of 'o' (2) must equal dimension 1 of 'q' (4)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x2x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The output has v_cache's head dim, which may differ from q's.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x16xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 2 of 'o' (8) must equal dimension 3 of 'v_cache' (16)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x16xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3x1xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'kv_indptr' must have rank 1, got 'memref<3x1xi32>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3x1xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<4x4xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'kv_indices' must have rank 1, got 'memref<4x4xi32>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<4x4xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2x1xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'kv_lens' must have rank 1, got 'memref<2x1xi32>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2x1xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// kv_indptr has one more entry than there are requests.
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<2xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'kv_indptr' has 2 entries but one entry per request plus one needs 3}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<2xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<3xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op dimension 0 of 'kv_lens' (3) must equal dimension 0 of 'q' (2)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<3xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x3x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x3x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op query heads (3) must be a multiple of the cache's KV heads (2)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x3x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x3x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x0x8xbf16>,
    cache %vc : memref<16x4x0x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op query heads (4) must be a multiple of the cache's KV heads (0)}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x0x8xbf16>, memref<16x4x0x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'sm_scale' must be positive, got 0.000000e+00}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.0 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op 'sm_scale' must be positive, got -3.500000e-01}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = -0.35 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<2x4x8xbf16>,
    cache %kc : memref<16x4x2x8xbf16>,
    cache %vc : memref<16x4x2x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xf32>,
    output %o : memref<2x4x8xbf16>) {
  // expected-error @+1 {{'loom.gqa_decode' op operand #5 must be memref of 32-bit signless integer or 64-bit signless integer values, but got 'memref<2xf32>'}}
  loom.gqa_decode ins(%q, %kc, %vc, %indptr, %indices, %lens :
                      memref<2x4x8xbf16>, memref<16x4x2x8xbf16>, memref<16x4x2x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xf32>)
                  outs(%o : memref<2x4x8xbf16>) {sm_scale = 0.35 : f32}
}
