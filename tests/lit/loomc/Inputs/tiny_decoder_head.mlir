#host = #loom.target<name = "host", arch = "host", workers = 8, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
module {
  loom.graph @tiny_decoder_head target(#host) (
    input %token_ids: memref<?xi32>,
    weight %embed: memref<1000x64xbf16>,
    weight %attn_norm: memref<2x64xbf16>,
    weight %w_q: memref<2x64x64xbf16>,
    weight %w_k: memref<2x32x64xbf16>,
    weight %w_v: memref<2x32x64xbf16>,
    weight %w_o: memref<2x64x64xbf16>,
    weight %ffn_norm: memref<2x64xbf16>,
    weight %w_gate: memref<2x128x64xbf16>,
    weight %w_up: memref<2x128x64xbf16>,
    weight %w_down: memref<2x64x128xbf16>,
    weight %final_norm: memref<64xbf16>,
    weight %lm_head: memref<1000x64xbf16>,
    cache %k_cache: memref<2x64x16x2x16xbf16>,
    cache %v_cache: memref<2x64x16x2x16xbf16>,
    meta %positions: memref<?xi32>,
    meta %slot_mapping: memref<?xi32>,
    meta %kv_indptr: memref<?xi32>,
    meta %kv_indices: memref<?xi32>,
    meta %kv_lens: memref<?xi32>,
    output %next_tokens: memref<?xi32>) attributes {arg_bounds = array<i64: 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 5, 64, 4, 4>, max_batch = 4 : i64} {
    %buf = loom.alloc : memref<4x64xbf16>
    loom.embedding ins(%embed, %token_ids : memref<1000x64xbf16>, memref<?xi32>) outs(%buf : memref<4x64xbf16>)
    %attn_norm_0 = loom.slice %attn_norm[0] : memref<2x64xbf16> -> memref<64xbf16>
    %w_q_0 = loom.slice %w_q[0] : memref<2x64x64xbf16> -> memref<64x64xbf16>
    %w_k_0 = loom.slice %w_k[0] : memref<2x32x64xbf16> -> memref<32x64xbf16>
    %w_v_0 = loom.slice %w_v[0] : memref<2x32x64xbf16> -> memref<32x64xbf16>
    %w_o_0 = loom.slice %w_o[0] : memref<2x64x64xbf16> -> memref<64x64xbf16>
    %ffn_norm_0 = loom.slice %ffn_norm[0] : memref<2x64xbf16> -> memref<64xbf16>
    %w_gate_0 = loom.slice %w_gate[0] : memref<2x128x64xbf16> -> memref<128x64xbf16>
    %w_up_0 = loom.slice %w_up[0] : memref<2x128x64xbf16> -> memref<128x64xbf16>
    %w_down_0 = loom.slice %w_down[0] : memref<2x64x128xbf16> -> memref<64x128xbf16>
    %k_cache_0 = loom.slice %k_cache[0] : memref<2x64x16x2x16xbf16> -> memref<64x16x2x16xbf16>
    %v_cache_0 = loom.slice %v_cache[0] : memref<2x64x16x2x16xbf16> -> memref<64x16x2x16xbf16>
    %buf_0 = loom.alloc : memref<4x64xbf16>
    loom.rmsnorm ins(%buf, %attn_norm_0 : memref<4x64xbf16>, memref<64xbf16>) outs(%buf_0 : memref<4x64xbf16>) {eps = 9.99999974E-6 : f32}
    %buf_1 = loom.alloc : memref<4x4x16xbf16>
    %buf_2 = loom.alloc : memref<4x2x16xbf16>
    %buf_3 = loom.alloc : memref<4x2x16xbf16>
    loom.linear ins(%buf_0, %w_q_0 : memref<4x64xbf16>, memref<64x64xbf16>) outs(%buf_1 : memref<4x4x16xbf16>)
    loom.linear ins(%buf_0, %w_k_0 : memref<4x64xbf16>, memref<32x64xbf16>) outs(%buf_2 : memref<4x2x16xbf16>)
    loom.linear ins(%buf_0, %w_v_0 : memref<4x64xbf16>, memref<32x64xbf16>) outs(%buf_3 : memref<4x2x16xbf16>)
    loom.rope ins(%buf_1, %positions : memref<4x4x16xbf16>, memref<?xi32>) outs(%buf_1 : memref<4x4x16xbf16>) {rotary_dim = 16 : i64, theta = 1.000000e+04 : f32}
    loom.rope ins(%buf_2, %positions : memref<4x2x16xbf16>, memref<?xi32>) outs(%buf_2 : memref<4x2x16xbf16>) {rotary_dim = 16 : i64, theta = 1.000000e+04 : f32}
    loom.kv_append ins(%buf_2, %buf_3, %slot_mapping : memref<4x2x16xbf16>, memref<4x2x16xbf16>, memref<?xi32>) outs(%k_cache_0, %v_cache_0 : memref<64x16x2x16xbf16>, memref<64x16x2x16xbf16>)
    %buf_4 = loom.alloc : memref<4x4x16xbf16>
    loom.gqa_decode ins(%buf_1, %k_cache_0, %v_cache_0, %kv_indptr, %kv_indices, %kv_lens : memref<4x4x16xbf16>, memref<64x16x2x16xbf16>, memref<64x16x2x16xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%buf_4 : memref<4x4x16xbf16>) {sm_scale = 2.500000e-01 : f32}
    %buf_5 = loom.alloc : memref<4x64xbf16>
    loom.linear ins(%buf_4, %w_o_0 : memref<4x4x16xbf16>, memref<64x64xbf16>) residual(%buf : memref<4x64xbf16>) outs(%buf_5 : memref<4x64xbf16>)
    %buf_6 = loom.alloc : memref<4x64xbf16>
    loom.rmsnorm ins(%buf_5, %ffn_norm_0 : memref<4x64xbf16>, memref<64xbf16>) outs(%buf_6 : memref<4x64xbf16>) {eps = 9.99999974E-6 : f32}
    %buf_7 = loom.alloc : memref<4x128xbf16>
    %buf_8 = loom.alloc : memref<4x128xbf16>
    loom.linear ins(%buf_6, %w_gate_0 : memref<4x64xbf16>, memref<128x64xbf16>) outs(%buf_7 : memref<4x128xbf16>)
    loom.linear ins(%buf_6, %w_up_0 : memref<4x64xbf16>, memref<128x64xbf16>) outs(%buf_8 : memref<4x128xbf16>)
    %buf_9 = loom.alloc : memref<4x128xbf16>
    loom.silu_mul ins(%buf_7, %buf_8 : memref<4x128xbf16>, memref<4x128xbf16>) outs(%buf_9 : memref<4x128xbf16>)
    %buf_10 = loom.alloc : memref<4x64xbf16>
    loom.linear ins(%buf_9, %w_down_0 : memref<4x128xbf16>, memref<64x128xbf16>) residual(%buf_5 : memref<4x64xbf16>) outs(%buf_10 : memref<4x64xbf16>)
    %attn_norm_1 = loom.slice %attn_norm[1] : memref<2x64xbf16> -> memref<64xbf16>
    %w_q_1 = loom.slice %w_q[1] : memref<2x64x64xbf16> -> memref<64x64xbf16>
    %w_k_1 = loom.slice %w_k[1] : memref<2x32x64xbf16> -> memref<32x64xbf16>
    %w_v_1 = loom.slice %w_v[1] : memref<2x32x64xbf16> -> memref<32x64xbf16>
    %w_o_1 = loom.slice %w_o[1] : memref<2x64x64xbf16> -> memref<64x64xbf16>
    %ffn_norm_1 = loom.slice %ffn_norm[1] : memref<2x64xbf16> -> memref<64xbf16>
    %w_gate_1 = loom.slice %w_gate[1] : memref<2x128x64xbf16> -> memref<128x64xbf16>
    %w_up_1 = loom.slice %w_up[1] : memref<2x128x64xbf16> -> memref<128x64xbf16>
    %w_down_1 = loom.slice %w_down[1] : memref<2x64x128xbf16> -> memref<64x128xbf16>
    %k_cache_1 = loom.slice %k_cache[1] : memref<2x64x16x2x16xbf16> -> memref<64x16x2x16xbf16>
    %v_cache_1 = loom.slice %v_cache[1] : memref<2x64x16x2x16xbf16> -> memref<64x16x2x16xbf16>
    %buf_11 = loom.alloc : memref<4x64xbf16>
    loom.rmsnorm ins(%buf_10, %attn_norm_1 : memref<4x64xbf16>, memref<64xbf16>) outs(%buf_11 : memref<4x64xbf16>) {eps = 9.99999974E-6 : f32}
    %buf_12 = loom.alloc : memref<4x4x16xbf16>
    %buf_13 = loom.alloc : memref<4x2x16xbf16>
    %buf_14 = loom.alloc : memref<4x2x16xbf16>
    loom.linear ins(%buf_11, %w_q_1 : memref<4x64xbf16>, memref<64x64xbf16>) outs(%buf_12 : memref<4x4x16xbf16>)
    loom.linear ins(%buf_11, %w_k_1 : memref<4x64xbf16>, memref<32x64xbf16>) outs(%buf_13 : memref<4x2x16xbf16>)
    loom.linear ins(%buf_11, %w_v_1 : memref<4x64xbf16>, memref<32x64xbf16>) outs(%buf_14 : memref<4x2x16xbf16>)
    loom.rope ins(%buf_12, %positions : memref<4x4x16xbf16>, memref<?xi32>) outs(%buf_12 : memref<4x4x16xbf16>) {rotary_dim = 16 : i64, theta = 1.000000e+04 : f32}
    loom.rope ins(%buf_13, %positions : memref<4x2x16xbf16>, memref<?xi32>) outs(%buf_13 : memref<4x2x16xbf16>) {rotary_dim = 16 : i64, theta = 1.000000e+04 : f32}
    loom.kv_append ins(%buf_13, %buf_14, %slot_mapping : memref<4x2x16xbf16>, memref<4x2x16xbf16>, memref<?xi32>) outs(%k_cache_1, %v_cache_1 : memref<64x16x2x16xbf16>, memref<64x16x2x16xbf16>)
    %buf_15 = loom.alloc : memref<4x4x16xbf16>
    loom.gqa_decode ins(%buf_12, %k_cache_1, %v_cache_1, %kv_indptr, %kv_indices, %kv_lens : memref<4x4x16xbf16>, memref<64x16x2x16xbf16>, memref<64x16x2x16xbf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>) outs(%buf_15 : memref<4x4x16xbf16>) {sm_scale = 2.500000e-01 : f32}
    %buf_16 = loom.alloc : memref<4x64xbf16>
    loom.linear ins(%buf_15, %w_o_1 : memref<4x4x16xbf16>, memref<64x64xbf16>) residual(%buf_10 : memref<4x64xbf16>) outs(%buf_16 : memref<4x64xbf16>)
    %buf_17 = loom.alloc : memref<4x64xbf16>
    loom.rmsnorm ins(%buf_16, %ffn_norm_1 : memref<4x64xbf16>, memref<64xbf16>) outs(%buf_17 : memref<4x64xbf16>) {eps = 9.99999974E-6 : f32}
    %buf_18 = loom.alloc : memref<4x128xbf16>
    %buf_19 = loom.alloc : memref<4x128xbf16>
    loom.linear ins(%buf_17, %w_gate_1 : memref<4x64xbf16>, memref<128x64xbf16>) outs(%buf_18 : memref<4x128xbf16>)
    loom.linear ins(%buf_17, %w_up_1 : memref<4x64xbf16>, memref<128x64xbf16>) outs(%buf_19 : memref<4x128xbf16>)
    %buf_20 = loom.alloc : memref<4x128xbf16>
    loom.silu_mul ins(%buf_18, %buf_19 : memref<4x128xbf16>, memref<4x128xbf16>) outs(%buf_20 : memref<4x128xbf16>)
    %buf_21 = loom.alloc : memref<4x64xbf16>
    loom.linear ins(%buf_20, %w_down_1 : memref<4x128xbf16>, memref<64x128xbf16>) residual(%buf_16 : memref<4x64xbf16>) outs(%buf_21 : memref<4x64xbf16>)
    %buf_22 = loom.alloc : memref<4x64xbf16>
    loom.rmsnorm ins(%buf_21, %final_norm : memref<4x64xbf16>, memref<64xbf16>) outs(%buf_22 : memref<4x64xbf16>) {eps = 9.99999974E-6 : f32}
    %buf_23 = loom.alloc : memref<4x1000xf32>
    loom.linear ins(%buf_22, %lm_head : memref<4x64xbf16>, memref<1000x64xbf16>) outs(%buf_23 : memref<4x1000xf32>)
    loom.argmax ins(%buf_23 : memref<4x1000xf32>) outs(%next_tokens : memref<?xi32>)
  }
}
