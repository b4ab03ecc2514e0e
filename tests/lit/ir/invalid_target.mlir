// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of the #loom.target verifier (TargetAttr::verify). Each case
// starts from the valid h200 target and breaks one parameter.

// expected-error @+1 {{target name must not be empty}}
#t = #loom.target<name = "", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{unknown target arch 'sm_80'; Loom emits for sm_90a, sm_100a, gfx950 and host}}
#t = #loom.target<name = "a100", arch = "sm_80", workers = 108, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 2000, bf16_tflops = 312>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// The architecture name is matched exactly.
// expected-error @+1 {{unknown target arch 'sm_90'}}
#t = #loom.target<name = "h200", arch = "sm_90", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'workers' must be in [1, 4096], got 0}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 0, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'workers' must be in [1, 4096], got -4}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = -4, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'lanes' must be 1, 32 or 64, got 16}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 16, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'lanes' must be 1, 32 or 64, got 0}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 0, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'smem_per_block' must be positive, got 0}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 0, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'regs_per_worker' must not be negative, got -1}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = -1, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'hbm_gbps' must be positive, got 0}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 0, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// expected-error @+1 {{target 'bf16_tflops' must be positive, got -989}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = -989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// The target written inline in the graph, not through an alias.
// expected-error @+1 {{target 'workers' must be in [1, 4096], got 0}}
loom.graph @g target(#loom.target<name = "h200", arch = "sm_90a", workers = 0, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// More workers than the compiler's cap (kMaxWorkers, ir/LoomDialect.h).
// expected-error @+1 {{target 'workers' must be in [1, 4096], got 100000000}}
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 100000000, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}
