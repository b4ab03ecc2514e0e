"""The baselines: which import here, their versions, and FlashInfer's JIT warm-up.

Each probe returns {"available", "package", "version", "why"}; a baseline that
does not import is reported as such in the matrix (never silently dropped).

  flashinfer  flashinfer-python: BatchMLAPagedAttentionWrapper (MLA), batch
              decode + RMSNorm + RoPE + SiLU*mul (decoder). JIT-compiles its
              kernels with nvcc on first use (FLASHINFER_WORKSPACE_BASE).
  fla         fla-core: chunk_kda and fused_kda_gate (Triton), as vLLM's
              Kimi-Linear prefill runs them. Its FlashKDA backend is switched
              off (FLA_FLASH_KDA=0) so "fla" is always the Triton path.
  flash_mla   FlashMLA (PyPI sgl-flash-mla): the SM90 dense bf16 decode kernel
              (legacy op namespace), page size 64 only.
  flash_kda   FlashKDA (PyPI tokenspeed-flashkda): bounded gate only; the
              probe makes one small call, since the wheel's extension can
              import and still refuse every call.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import time
from typing import Dict

PACKAGES = {"flashinfer": "flashinfer-python", "fla": "fla-core",
            "flash_mla": "sgl-flash-mla", "flash_kda": "tokenspeed-flashkda"}

# fla must not hand chunk_kda to FlashKDA behind our back.
os.environ.setdefault("FLA_FLASH_KDA", "0")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def probe(name: str) -> dict:
    info = {"available": False, "package": PACKAGES[name], "version": _version(PACKAGES[name]), "why": ""}
    try:
        if name == "flashinfer":
            import flashinfer  # noqa: F401
            from flashinfer import BatchMLAPagedAttentionWrapper, BatchDecodeWithPagedKVCacheWrapper  # noqa: F401
        elif name == "fla":
            from fla.ops.kda import chunk_kda  # noqa: F401
            from fla.ops.kda.gate import fused_kda_gate  # noqa: F401
        elif name == "flash_mla":
            import flash_mla
            if not flash_mla.has_legacy():
                raise ImportError("this FlashMLA build has no SM90 (legacy) kernels: "
                                  + str(getattr(flash_mla._loader, "_LEGACY_UNAVAILABLE", "")))
        elif name == "flash_kda":
            _flash_kda_smoke()
        info["available"] = True
    except Exception as e:  # noqa: BLE001 - reported in the matrix
        info["why"] = f"{type(e).__name__}: {e}"[:400]
        if not info["version"]:
            info["why"] = f"{PACKAGES[name]} is not installed (no wheel carried, or pip refused it); " + info["why"]
    return info


def _flash_kda_smoke() -> None:
    """One 64-token call: on the H200 (torch 2.11) the wheel's extension
    refused every CUDA tensor ("all tensors must be on CUDA", 2026-12-01),
    so an import alone does not say the baseline can run."""
    import torch
    import flash_kda
    T, H, D = 64, 1, 128
    bf = torch.bfloat16
    q, k, v, g = (torch.randn(1, T, H, D, device="cuda", dtype=bf) for _ in range(4))
    beta = torch.zeros(1, T, H, device="cuda", dtype=bf)
    out = torch.empty(1, T, H, D, device="cuda", dtype=bf)
    a_log, dt_bias = torch.zeros(H, device="cuda"), torch.zeros(H, D, device="cuda")
    try:
        flash_kda.fwd(q, k, v, g, beta, D ** -0.5, out, a_log, dt_bias, -5.0)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        raise RuntimeError(f"flash_kda.fwd fails a 64-token call under torch {torch.__version__}: "
                           f"{str(e).splitlines()[0]}") from None


def probe_all(names=tuple(PACKAGES)) -> Dict[str, dict]:
    return {n: probe(n) for n in names}


def flashinfer_jit_specs(families) -> list:
    """The JIT modules the matrix's FlashInfer calls load, as FlashInfer names
    them for bf16 on this GPU (MLA: the backend its wrapper picks)."""
    import torch
    from flashinfer.jit import gen_batch_mla_module, gen_batch_decode_module, gen_act_and_mul_module
    from flashinfer.jit.norm import gen_norm_module
    from flashinfer.jit.rope import gen_rope_module
    from flashinfer.utils import determine_mla_backend
    bf16, i32 = torch.bfloat16, torch.int32
    specs = []
    if "mla_decode" in families:
        backend = determine_mla_backend(torch.device("cuda"))
        specs.append(gen_batch_mla_module(backend, bf16, bf16, bf16, i32, 512, 64, False))
    if "decoder" in families:
        specs.append(gen_batch_decode_module(bf16, bf16, bf16, i32, 128, 128, 0, False, False))
        specs += [gen_norm_module(), gen_rope_module(), gen_act_and_mul_module("silu")]
    return specs


def warm_flashinfer(families) -> dict:
    """Builds the FlashInfer modules the families need, all at once (the
    first call of each op would otherwise build them one by one). Each in
    its own folder's ninja run, as its first call runs it: ninja rebuilds an
    output its folder's .ninja_log has no line for, so FlashInfer's one
    combined ninja run (build_jit_specs, log in the parent folder) left the
    first calls rebuilding everything (18 s MLA, 55 s decoder ops on the
    H200, 2026-12-01)."""
    from concurrent.futures import ThreadPoolExecutor
    t = time.perf_counter()
    out = {"families": sorted(families), "modules": [], "ok": False, "seconds": 0.0, "why": ""}
    try:
        specs = flashinfer_jit_specs(families)
        out["modules"] = [s.name for s in specs]
        with ThreadPoolExecutor(max_workers=len(specs) or 1) as pool:
            list(pool.map(lambda spec: spec.build(verbose=False), specs))
        out["ok"] = True
    except Exception as e:  # noqa: BLE001
        out["why"] = f"{type(e).__name__}: {e}"[-3000:]
    out["seconds"] = round(time.perf_counter() - t, 1)
    return out
