// RUN: loom-opt %s -split-input-file -verify-diagnostics

// Every check of #loom.partition.

func.func @f() attributes {
  // expected-error @+1 {{a partition needs at least one phase}}
  p = #loom.partition<tasks = [], params = [], cost_ns = [], scratch_bytes = 0>} {
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
