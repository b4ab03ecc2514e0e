// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.kda_prefill (KdaPrefillOp::verify) and its operand and
// attribute constraints.
// q, k, g: [T, H, K]; v, o: [T, H, V]; beta: [T, H]; a_log: [H];
// dt_bias: [H, K]; cu_seqlens: [N + 1]; states: [N, H, K, V] f32.

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16, strided<[16, 4, 1]>>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'g' must have the identity (row-major) layout, got 'memref<8x2x4xbf16, strided<[16, 4, 1]>>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16, strided<[16, 4, 1]>>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The optional initial state is checked too.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    input %s0 : memref<2x2x4x8xf32, strided<[64, 32, 8, 1], offset: 64>>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'initial_state' must have the identity (row-major) layout, got 'memref<2x2x4x8xf32, strided<[64, 32, 8, 1], offset: 64>>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   initial_state(%s0 : memref<2x2x4x8xf32, strided<[64, 32, 8, 1], offset: 64>>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x8xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'q' must have rank 3, got 'memref<8x8xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x8xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x16xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'v' must have rank 3, got 'memref<8x16xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x16xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2x1xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'beta' must have rank 2, got 'memref<8x2x1xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2x1xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2x1xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'a_log' must have rank 1, got 'memref<2x1xf32>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2x1xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// dt_bias is per head and key dimension.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'dt_bias' must have rank 2, got 'memref<2xf32>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3x1xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'cu_seqlens' must have rank 1, got 'memref<3x1xi32>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3x1xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<4x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'final_state' must have rank 4, got 'memref<4x4x8xf32>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<4x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x8xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'k' must have the shape of 'q': 'memref<8x8xbf16>' vs 'memref<8x2x4xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x8xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x8xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 2 of 'q' (4) must equal dimension 2 of 'k' (8)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'g' must have the shape of 'q': 'memref<8x2xbf16>' vs 'memref<8x2x4xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<4x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'q' (8) must equal dimension 0 of 'g' (4)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<4x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x16xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'o' must have the shape of 'v': 'memref<8x16xbf16>' vs 'memref<8x2x8xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x16xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x4xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 2 of 'v' (8) must equal dimension 2 of 'o' (4)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x4xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<4x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<4x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'v' (4) must equal dimension 0 of 'q' (8)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<4x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<4x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x1x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x1x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 1 of 'v' (1) must equal dimension 1 of 'q' (2)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x1x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x1x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<4x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'beta' (4) must equal dimension 0 of 'q' (8)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<4x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// beta is per token and head, not per key dimension.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x4xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 1 of 'beta' (4) must equal dimension 1 of 'q' (2)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x4xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<4xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'a_log' (4) must equal dimension 1 of 'q' (2)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<4xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<4x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'dt_bias' (4) must equal dimension 1 of 'q' (2)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<4x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x8xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 1 of 'dt_bias' (8) must equal dimension 2 of 'q' (4)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x8xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x4x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 1 of 'final_state' (4) must equal dimension 1 of 'q' (2)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x4x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The state is K x V, not V x K.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x8x4xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 2 of 'final_state' (8) must equal dimension 2 of 'q' (4)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x8x4xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x4xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 3 of 'final_state' (4) must equal dimension 2 of 'v' (8)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x4xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// cu_seqlens has one more entry than there are sequences (states).
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<2xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'cu_seqlens' has 2 entries but one entry per sequence plus one needs 3}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<2xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    input %s0 : memref<2x2x4xf32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'initial_state' must have the shape of 'final_state': 'memref<2x2x4xf32>' vs 'memref<2x2x4x8xf32>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   initial_state(%s0 : memref<2x2x4xf32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    input %s0 : memref<1x2x4x8xf32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op dimension 0 of 'final_state' (2) must equal dimension 0 of 'initial_state' (1)}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   initial_state(%s0 : memref<1x2x4x8xf32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op gate 'bounded' needs a 'lower_bound'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<bounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'lower_bound' is only meaningful with gate 'bounded'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, lower_bound = -1.0 : f32, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'lower_bound' must be in [-5, 0), got -6.000000e+00}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<bounded>, lower_bound = -6.0 : f32, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The upper end is open.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'lower_bound' must be in [-5, 0), got 0.000000e+00}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<bounded>, lower_bound = 0.0 : f32, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'lower_bound' must be in [-5, 0), got 5.000000e-01}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<bounded>, lower_bound = 0.5 : f32, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'chunk_size' must be 16 or 64, got 32}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 32 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'chunk_size' must be 16 or 64, got 0}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 0 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'scale' must be positive, got 0.000000e+00}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.0 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xf32>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op 'scale' must be positive, got -5.000000e-01}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xf32>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = -0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The decay rates are fp32.
loom.graph @g target(#t) (
    input %q : memref<8x2x4xbf16>,
    input %k : memref<8x2x4xbf16>,
    input %v : memref<8x2x8xbf16>,
    input %g : memref<8x2x4xbf16>,
    input %beta : memref<8x2xbf16>,
    weight %a_log : memref<2xbf16>,
    weight %dt_bias : memref<2x4xf32>,
    meta %cu : memref<3xi32>,
    output %o : memref<8x2x8xbf16>,
    output %sT : memref<2x2x4x8xf32>) {
  // expected-error @+1 {{'loom.kda_prefill' op operand #5 must be memref of 32-bit float values, but got 'memref<2xbf16>'}}
  loom.kda_prefill ins(%q, %k, %v, %g, %beta, %a_log, %dt_bias, %cu :
                       memref<8x2x4xbf16>, memref<8x2x4xbf16>, memref<8x2x8xbf16>, memref<8x2x4xbf16>,
                       memref<8x2xbf16>, memref<2xbf16>, memref<2x4xf32>, memref<3xi32>)
                   outs(%o, %sT : memref<8x2x8xbf16>, memref<2x2x4x8xf32>)
                   {gate = #loom.gate<unbounded>, scale = 0.5 : f32, chunk_size = 64 : i64, qk_l2norm = true}
}
