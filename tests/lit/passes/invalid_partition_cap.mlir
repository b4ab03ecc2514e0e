// RUN: loom-opt %s -split-input-file --loom-partition -verify-diagnostics

// A graph whose ops would make more tasks than the compiler's cap
// (kMaxTasks, ir/LoomDialect.h: 2^20) is an error of the op that crosses it,
// not an exhausted memory in the passes after loom-partition. Here one
// linear of 2^30 output columns: 2^21 tiles of 512 columns.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %x : memref<4x16xbf16>, weight %w : memref<1073741824x16xbf16>, output %y : memref<4x1073741824xbf16>) {
  // expected-error @+1 {{'loom.linear' op makes the graph's tasks more than the compiler's cap of 1048576 (this op alone has 2097152)}}
  loom.linear ins(%x, %w : memref<4x16xbf16>, memref<1073741824x16xbf16>) outs(%y : memref<4x1073741824xbf16>)
}
