"""Tests of the benchmark matrix that run without a GPU (python3 -m bench.matrix.tests)."""
