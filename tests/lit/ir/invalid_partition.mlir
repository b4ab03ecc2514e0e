// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of #loom.partition.

// An empty phase list does not parse (the verifier's "at least one phase"
// guards attributes built in C++).
func.func @f() attributes {
  // expected-error @+2 {{expected integer value}}
  // expected-error @+1 {{failed to parse Loom_PartitionAttr parameter 'tasks'}}
  p = #loom.partition<tasks = [], params = [1], cost_ns = [], scratch_bytes = 0>} {
  return
}

// -----

func.func @f() attributes {
  // expected-error @+1 {{a partition needs one cost per phase: 2 phases, 1 costs}}
  p = #loom.partition<tasks = [4, 2], params = [1], cost_ns = [10], scratch_bytes = 0>} {
  return
}

// -----

func.func @f() attributes {
  // expected-error @+1 {{every phase needs at least one task, got 0}}
  p = #loom.partition<tasks = [0], params = [1], cost_ns = [10], scratch_bytes = 0>} {
  return
}

// -----

func.func @f() attributes {
  // expected-error @+1 {{task costs must not be negative, got -3}}
  p = #loom.partition<tasks = [1], params = [1], cost_ns = [-3], scratch_bytes = 0>} {
  return
}

// -----

func.func @f() attributes {
  // expected-error @+1 {{'scratch_bytes' must not be negative, got -1}}
  p = #loom.partition<tasks = [1], params = [1], cost_ns = [3], scratch_bytes = -1>} {
  return
}
