"""Bytes a kernel must move once and the FLOPs it must do, per workload.

The formulas are bench/model's (bench/model/Cost.cpp), restated here so the
GPU machine (which has no loom-model) can compute achieved GB/s, TFLOP/s and
the roofline fraction of every row: KV/weights/inputs/outputs/state/meta
read or written once; workspace intermediates are not counted. No torch.
"""

from __future__ import annotations

from typing import Dict

from .workloads import Workload

I32, F32 = 4, 4
BF16 = 2


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def mla_cost(w: Workload, shape: dict) -> Dict[str, int]:
    dc, dp, H, P = shape["head_dim_ckv"], shape["head_dim_kpe"], w.num_heads, w.page_size
    B, tokens = w.batch, w.total
    pages = sum(_ceil_div(x, P) for x in w.lengths)
    b = {
        "kv_read": tokens * (dc + dp) * BF16,
        "inputs": B * H * (dc + dp) * BF16,
        "outputs": B * H * dc * BF16 + B * H * F32,
        "meta": (B + 1) * I32 + pages * I32 + B * I32,
    }
    return {"bytes": sum(b.values()), "flops": tokens * H * (2 * (dc + dp) + 2 * dc), "parts": b}


def kda_chunk_flops(c: int, dk: int, dv: int) -> int:
    """Matrix FLOPs of one chunk of the chunked (WY) form, as bench/model counts them."""
    return (2 * c * c * dk + 2 * c * c * dk + c * c * c // 3 + 2 * c * c * dk + 2 * c * c * dv
            + 2 * c * dk * dv + 2 * c * dk * dv + 2 * c * c * dv + 2 * c * dk * dv)


def kda_cost(w: Workload, shape: dict, with_state: bool) -> Dict[str, int]:
    H, dk, dv, C = w.num_heads, shape["head_dim_k"], shape["head_dim_v"], shape["chunk_size"]
    T, N = w.total, w.batch
    state = N * H * dk * dv * F32
    b = {
        "inputs": T * H * (3 * dk + dv + 1) * BF16,
        "weights": H * F32 + H * dk * F32,
        "meta": (N + 1) * I32,
        "outputs": T * H * dv * BF16,
        "state_read": state if with_state else 0,
        "state_write": state,
    }
    flops = 0
    for n in w.lengths:
        for start in range(0, n, C):
            flops += kda_chunk_flops(min(C, n - start), dk, dv)
    return {"bytes": sum(b.values()), "flops": H * flops, "parts": b}


def decoder_cost(w: Workload, shape: dict) -> Dict[str, int]:
    L, B, ctx = w.layers, w.batch, w.context
    hid, hq, hkv, hd, ffn = (shape["hidden"], shape["num_q_heads"], shape["num_kv_heads"],
                             shape["head_dim"], shape["ffn"])
    linear = hq * hd * hid + 2 * hkv * hd * hid + hid * hq * hd + 3 * ffn * hid
    norms = 2 * hid + (2 * hd if shape["qk_norm"] else 0)
    kv_row = hkv * hd * BF16 * 2
    b = {
        "weights": L * (linear + norms) * BF16,
        "kv_read": L * B * ctx * kv_row,
        "kv_write": L * B * kv_row,
        "meta": B * I32 * 2 + (B + 1) * I32 + B * _ceil_div(ctx, shape["page_size"]) * I32 + B * I32,
        "inputs": B * hid * BF16,
        "outputs": B * hid * BF16,
    }
    flops = L * (2 * B * linear + 4 * B * hq * hd * ctx)
    return {"bytes": sum(b.values()), "flops": flops, "parts": b}


def cost(w: Workload, shape: dict, with_state: bool = False) -> Dict[str, int]:
    if w.family == "mla_decode":
        return mla_cost(w, shape)
    if w.family == "kda_prefill":
        return kda_cost(w, shape, with_state)
    return decoder_cost(w, shape)
