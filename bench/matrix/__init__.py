"""The cross-vendor benchmark matrix (README.md): Loom against FlashInfer,
fla/FlashKDA and FlashMLA, and a per-op CUDA-graph decoder, on the same
tensors in the same run. Modules that need torch import it lazily, so the
workload, spec, cost and report code runs (and is tested) without it."""
