// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.mla_decode (MlaDecodeOp::verify, with the page-table
// checks it shares with loom.gqa_decode) and its operand constraints.
// q_nope, o: [B, H, D_ckv]; q_pe: [B, H, D_kpe]; ckv_cache: [pages, P, D_ckv];
// kpe_cache: [pages, P, D_kpe]; kv_indptr: [B + 1]; kv_indices: [N];
// kv_lens: [B]; lse: [B, H] f32.

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{'loom.mla_decode' op 'lse' must have the identity (row-major) layout, got 'memref<2x4xf32, strided<[8, 1]>>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32, strided<[8, 1]>>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x64xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'q_nope' must have rank 3, got 'memref<2x64xbf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x64xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x32xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'q_pe' must have rank 3, got 'memref<2x32xbf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x32xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A GQA-style cache with a KV-head dimension.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x1x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'ckv_cache' must have rank 3, got 'memref<16x4x1x16xbf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x1x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x1x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'kpe_cache' must have rank 3, got 'memref<16x4x1x8xbf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x1x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x64xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'o' must have rank 3, got 'memref<2x64xbf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x64xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<8xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'lse' must have rank 2, got 'memref<8xf32>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<8xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<3x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 0 of 'q_pe' (3) must equal dimension 0 of 'q_nope' (2)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<3x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x2x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 1 of 'q_pe' (2) must equal dimension 1 of 'q_nope' (4)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x2x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page counts of the caches differ.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<8x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 0 of 'ckv_cache' (16) must equal dimension 0 of 'kpe_cache' (8)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<8x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Page sizes of the caches differ.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x8x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 1 of 'ckv_cache' (4) must equal dimension 1 of 'kpe_cache' (8)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x8x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Latent width of q_nope and ckv_cache differ.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x32xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 2 of 'ckv_cache' (32) must equal dimension 2 of 'q_nope' (16)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x32xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Rope width of q_pe and kpe_cache differ.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x4xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 2 of 'kpe_cache' (4) must equal dimension 2 of 'q_pe' (8)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x4xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'q_nope' and 'ckv_cache' must have the same element type, got 'bf16' and 'f16'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xf32>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'q_pe' and 'kpe_cache' must have the same element type, got 'bf16' and 'f32'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xf32>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// o has q_nope's shape.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x8xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 2 of 'q_nope' (16) must equal dimension 2 of 'o' (8)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x8xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x8x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 1 of 'q_nope' (4) must equal dimension 1 of 'o' (8)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x8x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<1x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 0 of 'lse' (1) must equal dimension 0 of 'q_nope' (2)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<1x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x1xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 1 of 'lse' (1) must equal dimension 1 of 'q_nope' (4)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x1xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3x1xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'kv_indptr' must have rank 1, got 'memref<3x1xi32>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3x1xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<4x4xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'kv_indices' must have rank 1, got 'memref<4x4xi32>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<4x4xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2x1xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'kv_lens' must have rank 1, got 'memref<2x1xi32>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2x1xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// kv_indptr has one more entry than there are requests.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<4xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'kv_indptr' has 4 entries but one entry per request plus one needs 3}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<4xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<1xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op dimension 0 of 'kv_lens' (1) must equal dimension 0 of 'q_nope' (2)}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<1xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op 'sm_scale' must be positive, got 0.000000e+00}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.0 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The log-sum-exp is fp32.
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf16>) {
  // expected-error @+1 {{'loom.mla_decode' op operand #8 must be memref of 32-bit float values, but got 'memref<2x4xf16>'}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf16>) {sm_scale = 0.25 : f32}
}

// -----

// Shapes past what the bodies run (kernels/common/BodyLimits.h): 512 heads.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x512x16xbf16>,
    input %qp : memref<2x512x8xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x512x16xbf16>,
    output %lse : memref<2x512xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op the number of heads (dimension 1 of 'q_nope', 512) must be at most 256, the largest the bodies run}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x512x16xbf16>, memref<2x512x8xbf16>, memref<16x4x16xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x512x16xbf16>, memref<2x512xf32>) {sm_scale = 0.25 : f32}
}

// -----

// A 2048-wide latent.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x2048xbf16>,
    input %qp : memref<2x4x8xbf16>,
    cache %ckv : memref<16x4x2048xbf16>,
    cache %kpe : memref<16x4x8xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x2048xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op head_dim_ckv (dimension 2 of 'q_nope', 2048) must be at most 1024, the largest the bodies run}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x2048xbf16>, memref<2x4x8xbf16>, memref<16x4x2048xbf16>, memref<16x4x8xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x2048xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}

// -----

// A 512-wide rope part.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %qn : memref<2x4x16xbf16>,
    input %qp : memref<2x4x512xbf16>,
    cache %ckv : memref<16x4x16xbf16>,
    cache %kpe : memref<16x4x512xbf16>,
    meta %indptr : memref<3xi32>,
    meta %indices : memref<16xi32>,
    meta %lens : memref<2xi32>,
    output %o : memref<2x4x16xbf16>,
    output %lse : memref<2x4xf32>) {
  // expected-error @+1 {{'loom.mla_decode' op head_dim_kpe (dimension 2 of 'q_pe', 512) must be at most 256, the largest the bodies run}}
  loom.mla_decode ins(%qn, %qp, %ckv, %kpe, %indptr, %indices, %lens :
                      memref<2x4x16xbf16>, memref<2x4x512xbf16>, memref<16x4x16xbf16>, memref<16x4x512xbf16>,
                      memref<3xi32>, memref<16xi32>, memref<2xi32>)
                  outs(%o, %lse : memref<2x4x16xbf16>, memref<2x4xf32>) {sm_scale = 0.25 : f32}
}
