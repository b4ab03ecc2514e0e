"""An fp64 numpy reference of MLA paged decode, written from the op's
definition (configs/README.md, tools/oracle/MlaOracle.cpp's conventions),
and the inputs of a test launch.

  s[t]  = sm_scale * (q_nope . ckv[row(t)] + q_pe . kpe[row(t)])
  o     = softmax(s) @ ckv[rows]             (v = ckv)
  lse   = log2(sum_t exp(s[t]))              (base 2; -inf for an empty request)

row(t) of request b is page kv_indices[kv_indptr[b] + t // P] at slot t % P,
for t < kv_lens[b].
"""

import math

import numpy as np


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (uint16), rounding to nearest even; NaN stays NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def from_bf16(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def page_table(lens, page_size, max_pages, rng):
    """kv_indptr, kv_indices (distinct pages in random order), kv_lens: int32."""
    pages = [(n + page_size - 1) // page_size for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    assert indptr[-1] <= max_pages
    indices = rng.permutation(max_pages)[: indptr[-1]].astype(np.int32)
    return indptr, indices, np.asarray(lens, dtype=np.int32)


def mla_decode(q_nope, q_pe, ckv, kpe, indptr, indices, lens, sm_scale):
    """(o [B, H, Dc], lse [B, H]) in float64."""
    B, H, Dc = q_nope.shape
    P, Dp = ckv.shape[1], kpe.shape[2]
    o = np.zeros((B, H, Dc))
    lse = np.full((B, H), -np.inf)
    for b in range(B):
        n = int(lens[b])
        if n == 0:
            continue
        t = np.arange(n)
        page = indices[indptr[b] + t // P]
        k_c = ckv[page, t % P].astype(np.float64)  # [n, Dc]
        k_p = kpe[page, t % P].astype(np.float64)  # [n, Dp]
        s = sm_scale * (q_nope[b].astype(np.float64) @ k_c.T + q_pe[b].astype(np.float64) @ k_p.T)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        o[b] = (p @ k_c) / p.sum(axis=1, keepdims=True)
        lse[b] = (m[:, 0] + np.log(p.sum(axis=1))) / math.log(2.0)
    return o, lse


def scaled_error(got, ref, atol, rtol):
    """max |got - ref| / (atol + rtol |ref|); inf where got is not finite."""
    got = np.asarray(got, dtype=np.float64)
    err = np.abs(got - ref) / (atol + rtol * np.abs(ref))
    err[~np.isfinite(got)] = np.inf
    return float(err.max()) if err.size else 0.0
