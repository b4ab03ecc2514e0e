// RUN: loom-opt %s --loom-partition --loom-plan-memory | FileCheck %s
// RUN: loom-opt %s --loom-partition --loom-plan-memory=reuse=false | FileCheck %s --check-prefix=NOREUSE

// %a dies after the second op, so %c (born in the third) takes its bytes;
// %b is live across both and keeps its own.
#tiny = #loom.target<name = "tiny", arch = "host", workers = 2, lanes = 1, smem_per_block = 1048576, regs_per_worker = 0, hbm_gbps = 50, bf16_tflops = 1>
// CHECK-LABEL: loom.graph @reuse
// CHECK:       attributes {loom.workspace_bytes = 2048 : i64}
// CHECK:       %[[A:.*]] = loom.alloc {loom.offset = 0 : i64} : memref<4x128xbf16>
// CHECK:       %[[B:.*]] = loom.alloc {loom.offset = 1024 : i64} : memref<4x128xbf16>
// CHECK:       %[[C:.*]] = loom.alloc {loom.offset = 0 : i64} : memref<4x128xbf16>
// NOREUSE-LABEL: loom.graph @reuse
// NOREUSE:       attributes {loom.workspace_bytes = 3072 : i64}
// NOREUSE:       loom.alloc {loom.offset = {{0|1024|2048}} : i64}
loom.graph @reuse target(#tiny) (input %x : memref<4x128xbf16>, output %y : memref<4x128xbf16>) {
  %a = loom.alloc : memref<4x128xbf16>
  %b = loom.alloc : memref<4x128xbf16>
  %c = loom.alloc : memref<4x128xbf16>
  loom.add ins(%x, %x : memref<4x128xbf16>, memref<4x128xbf16>) outs(%a : memref<4x128xbf16>)
  loom.add ins(%a, %x : memref<4x128xbf16>, memref<4x128xbf16>) outs(%b : memref<4x128xbf16>)
  loom.add ins(%b, %x : memref<4x128xbf16>, memref<4x128xbf16>) outs(%c : memref<4x128xbf16>)
  loom.add ins(%c, %b : memref<4x128xbf16>, memref<4x128xbf16>) outs(%y : memref<4x128xbf16>)
}
