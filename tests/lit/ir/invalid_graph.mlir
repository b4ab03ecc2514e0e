// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of loom.graph: its custom parser (GraphOp::parse) and its region
// verifier (GraphOp::verifyRegions). Cases the custom syntax cannot express
// (names or roles that disagree with the block arguments, names that are not
// SSA names) use the generic op form.

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{expected an argument role (input, weight, cache, output, meta), got 'state'}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, state %s : memref<8xbf16>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Roles are lower case.
// expected-error @+1 {{expected an argument role (input, weight, cache, output, meta), got 'Input'}}
loom.graph @g target(#t) (Input %a : memref<8xbf16>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// An argument without a role.
// expected-error @+1 {{expected valid keyword}}
loom.graph @g target(#t) (%a : memref<8xbf16>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The target must be a #loom.target.
// expected-error @+1 {{invalid kind of attribute specified}}
loom.graph @g target("h200") (input %a : memref<8xbf16>) {
}

// -----

//===----------------------------------------------------------------------===//
// Argument names and roles against the block arguments (generic form)
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op has 2 arguments but 1 names and 2 roles}}
"loom.graph"() <{arg_names = ["a"], arg_roles = [#loom.role<input>, #loom.role<cache>], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>, %arg1: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op has 2 arguments but 2 names and 3 roles}}
"loom.graph"() <{arg_names = ["a", "s"], arg_roles = [#loom.role<input>, #loom.role<cache>, #loom.role<cache>], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>, %arg1: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A name may not be any string ...
// expected-error @+1 {{'loom.graph' op argument #1 name 'my buffer' is not an identifier}}
"loom.graph"() <{arg_names = ["a", "my buffer"], arg_roles = [#loom.role<input>, #loom.role<cache>], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>, %arg1: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument #0 name '' is not an identifier}}
"loom.graph"() <{arg_names = [""], arg_roles = [#loom.role<cache>], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument name 'a' is used twice}}
"loom.graph"() <{arg_names = ["a", "a"], arg_roles = [#loom.role<input>, #loom.role<cache>], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>, %arg1: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// The roles must be #loom.role attributes (ODS constraint).
// expected-error @+1 {{'loom.graph' op attribute 'arg_roles' failed to satisfy constraint: argument roles}}
"loom.graph"() <{arg_names = ["a"], arg_roles = ["input"], sym_name = "g", target = #t}> ({
^bb0(%arg0: memref<8xbf16>):
  "loom.return"() : () -> ()
}) : () -> ()

// -----

//===----------------------------------------------------------------------===//
// Argument names and types (custom form)
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A numbered SSA name is not a buffer name.
// expected-error @+1 {{'loom.graph' op argument #0 name '0' is not an identifier}}
loom.graph @g target(#t) (input %0 : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%0, %0 : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// In the custom form a repeated name is already a repeated SSA name.
// expected-error @+2 {{region entry argument '%a' is already in use}}
// expected-note @+1 {{previously referenced here}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %a : memref<8xbf16>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'n' must be a memref, got 'i32'}}
loom.graph @g target(#t) (input %n : i32, input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'x' must be a memref, got 'tensor<8xbf16>'}}
loom.graph @g target(#t) (input %x : tensor<8xbf16>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A padded row stride.
// expected-error @+1 {{'loom.graph' op argument 'x' must have the identity (row-major) layout}}
loom.graph @g target(#t) (input %x : memref<8x64xbf16, strided<[128, 1]>>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// A column-major buffer.
// expected-error @+1 {{'loom.graph' op argument 'w' must have the identity (row-major) layout}}
loom.graph @g target(#t) (weight %w : memref<8x64xbf16, affine_map<(d0, d1) -> (d1, d0)>>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op meta argument 'lens' must hold integers, got 'f32'}}
loom.graph @g target(#t) (meta %lens : memref<8xf32>) {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op meta argument 'pos' must hold integers, got 'index'}}
loom.graph @g target(#t) (meta %pos : memref<8xindex>) {
}

// -----

//===----------------------------------------------------------------------===//
// Body
//===----------------------------------------------------------------------===//

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  // expected-error @+1 {{'arith.constant' op is not a loom op; a graph holds loom ops only}}
  %c = arith.constant 0 : index
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  // expected-error @+1 {{'memref.copy' op is not a loom op; a graph holds loom ops only}}
  memref.copy %a, %b : memref<8xbf16> to memref<8xbf16>
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, input %b : memref<8xbf16>) {
  // expected-error @+1 {{'loom.add' op writes 'b', an input buffer; only output and cache arguments and loom.alloc buffers may be written}}
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// In place on an input.
loom.graph @g target(#t) (input %x : memref<4x8xbf16>, weight %w : memref<8xbf16>, output %y : memref<4x8xbf16>) {
  // expected-error @+1 {{'loom.rmsnorm' op writes 'x', an input buffer}}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%x : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
  loom.rmsnorm ins(%x, %w : memref<4x8xbf16>, memref<8xbf16>) outs(%y : memref<4x8xbf16>) {eps = 1.0e-05 : f32}
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Writing one layer's weight through a loom.slice view.
loom.graph @g target(#t) (input %a : memref<8xbf16>, weight %w : memref<2x8xbf16>) {
  %w1 = loom.slice %w[1] : memref<2x8xbf16> -> memref<8xbf16>
  // expected-error @+1 {{'loom.add' op writes 'w', a weight buffer; only output and cache arguments and loom.alloc buffers may be written}}
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%w1 : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Through two views.
loom.graph @g target(#t) (input %a : memref<8xbf16>, weight %w : memref<3x2x8xbf16>) {
  %w2 = loom.slice %w[2] : memref<3x2x8xbf16> -> memref<2x8xbf16>
  %w21 = loom.slice %w2[1] : memref<2x8xbf16> -> memref<8xbf16>
  // expected-error @+1 {{'loom.add' op writes 'w', a weight buffer}}
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%w21 : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %logits : memref<4x32xf32>, meta %next : memref<4xi32>) {
  // expected-error @+1 {{'loom.argmax' op writes 'next', a meta buffer; only output and cache arguments and loom.alloc buffers may be written}}
  loom.argmax ins(%logits : memref<4x32xf32>) outs(%next : memref<4xi32>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op output 'c' is never written}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>, output %c : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// Reading an output does not write it.
// expected-error @+1 {{'loom.graph' op output 'y' is never written}}
loom.graph @g target(#t) (output %y : memref<8xbf16>) {
  %t = loom.alloc : memref<8xbf16>
  loom.add ins(%y, %y : memref<8xbf16>, memref<8xbf16>) outs(%t : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op has 2 arguments but 1 entries in 'arg_bounds'}}
loom.graph @g target(#t) (input %a : memref<?xbf16>, output %b : memref<?xbf16>) attributes {arg_bounds = array<i64: 8>} {
  loom.add ins(%a, %a : memref<?xbf16>, memref<?xbf16>) outs(%b : memref<?xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'b' has bound 0; a dynamic leading dimension needs a positive bound, a static one 0}}
loom.graph @g target(#t) (input %a : memref<?xbf16>, output %b : memref<?xbf16>) attributes {arg_bounds = array<i64: 8, 0>} {
  loom.add ins(%a, %a : memref<?xbf16>, memref<?xbf16>) outs(%b : memref<?xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'a' has bound 4; a dynamic leading dimension needs a positive bound, a static one 0}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) attributes {arg_bounds = array<i64: 4, 0>} {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

// Buffers past the compiler's cap (kMaxBufferBytes, ir/LoomDialect.h: 1 TiB):
// an argument, one with a dynamic leading dimension at its bound, an alloc,
// and one whose size overflows 64 bits.
#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'c' ('memref<2147483647x4096xbf16>') holds 17592186036224 bytes, more than the 1099511627776 (1 TiB) a buffer may hold}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, cache %c : memref<2147483647x4096xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'a' ('memref<?x1073741824xbf16>') holds 2199023255552 bytes, more than the 1099511627776 (1 TiB) a buffer may hold}}
loom.graph @g target(#t) (input %a : memref<?x1073741824xbf16>, output %b : memref<8xbf16>) attributes {arg_bounds = array<i64: 1024, 0>} {
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
loom.graph @g target(#t) (input %a : memref<8xbf16>, output %b : memref<8xbf16>) {
  // expected-error @+1 {{'loom.alloc' op its buffer ('memref<1099511627776xf32>') holds 4398046511104 bytes, more than the 1099511627776 (1 TiB) a buffer may hold}}
  %h = loom.alloc : memref<1099511627776xf32>
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}

// -----

#t = #loom.target<name = "h200", arch = "sm_90a", workers = 132, lanes = 32, smem_per_block = 232448, regs_per_worker = 65536, hbm_gbps = 4800, bf16_tflops = 989>
// expected-error @+1 {{'loom.graph' op argument 'w' ('memref<4294967296x4294967296xbf16>') holds more bytes than 64 bits count, more than the 1099511627776 (1 TiB) a buffer may hold}}
loom.graph @g target(#t) (input %a : memref<8xbf16>, weight %w : memref<4294967296x4294967296xbf16>, output %b : memref<8xbf16>) {
  loom.add ins(%a, %a : memref<8xbf16>, memref<8xbf16>) outs(%b : memref<8xbf16>)
}
