"""Independent references (DESIGN.md "Reference math"), in torch on the GPU.

Each is the definition evaluated in fp64 (MLA, KDA) or fp32 (decoder: the
fp32 reference of the layer stack) on the bf16 inputs, written for clarity,
not speed, and sharing no code with Loom or the baselines. Every
implementation of a row (Loom and each baseline) is compared with the same
reference, so a mismatch says which one is off. torch only, imported here.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import torch

LN2 = math.log(2.0)


# ---------------------------------------------------------------------------
# MLA paged decode (absorbed), base-2 LSE
# ---------------------------------------------------------------------------

def mla_decode(q_nope, q_pe, ckv, kpe, indptr, indices, lens, sm_scale: float,
               dtype=torch.float64) -> Tuple[torch.Tensor, torch.Tensor]:
    """o [B,H,Dc] and lse [B,H] (base 2; empty requests: 0 and -inf).
    `indptr`, `lens` are host sequences; `indices` a device int tensor."""
    B, H, Dc = q_nope.shape
    dev = q_nope.device
    o = torch.zeros(B, H, Dc, dtype=dtype, device=dev)
    lse = torch.full((B, H), -math.inf, dtype=dtype, device=dev)
    P = ckv.shape[1]
    for b in range(B):
        n = int(lens[b])
        if n == 0:
            continue
        pages = indices[int(indptr[b]):int(indptr[b + 1])].long()
        kc = ckv[pages].reshape(-1, Dc)[:n].to(dtype)
        kp = kpe[pages].reshape(-1, kpe.shape[-1])[:n].to(dtype)
        s = sm_scale * (q_nope[b].to(dtype) @ kc.T + q_pe[b].to(dtype) @ kp.T)  # [H, n]
        m = s.max(dim=1, keepdim=True).values
        p = torch.exp(s - m)
        denom = p.sum(dim=1, keepdim=True)
        o[b] = (p @ kc) / denom
        lse[b] = (m + torch.log(denom)).squeeze(1) / LN2
        del kc, kp, s, p
    return o, lse


# ---------------------------------------------------------------------------
# KDA prefill
# ---------------------------------------------------------------------------

def kda_gate(g_raw, a_log, dt_bias, gate: str, lower_bound: float, dtype=torch.float64):
    """Per-channel log decay [T,H,K] (DESIGN.md "KDA")."""
    x = g_raw.to(dtype) + dt_bias.to(dtype)[None]
    a = torch.exp(a_log.to(dtype))[None, :, None]
    if gate == "bounded":
        return lower_bound * torch.sigmoid(a * x)
    return -a * torch.nn.functional.softplus(x)


def _l2norm(x):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def kda_prefill(q, k, v, g_raw, beta_raw, a_log, dt_bias, cu: Sequence[int],
                initial_state: Optional[torch.Tensor], gate: str, lower_bound: float,
                scale: float, qk_l2norm: bool = True, chunk: int = 64,
                dtype=torch.float64, max_batch_heads: int = 128):
    """o [T,H,V] (dtype) and final state [N,H,K,V] (dtype), exact chunked form.

    Within a chunk, with G the inclusive prefix sum of the log decay and
    u_i = beta_i (v_i - (D_i S_{i-1})^T k_i) the delta-rule update, the state is
    S_i = diag(e^{G_i}) S_0 + sum_{j<=i} diag(e^{G_i - G_j}) k_j u_j^T, so
    (I + diag(beta) A) U = diag(beta) (V - (e^G * K) S_0) with
    A_ij = sum_c k_ic k_jc e^{G_ic - G_jc} (j < i), and
    o_i = scale ((e^{G_i} * q_i)^T S_0 + sum_{j<=i} (q_i . e^{G_i - G_j} k_j) u_j).
    Every exponent is <= 0 (G only decreases), so nothing overflows at any
    decay; the pairwise factors are formed explicitly, [C, C, K] per head.
    Sequences are padded to whole chunks with k = v = q = 0, g = 0, beta = 0,
    which leaves the state unchanged.
    """
    T, H, K = q.shape
    V = v.shape[-1]
    N = len(cu) - 1
    dev = q.device
    lens = [int(cu[n + 1]) - int(cu[n]) for n in range(N)]
    nck = max(1, max((x + chunk - 1) // chunk for x in lens)) if lens else 1
    Lp = nck * chunk

    qf, kf = q.to(dtype), k.to(dtype)
    if qk_l2norm:
        qf, kf = _l2norm(qf), _l2norm(kf)
    g = kda_gate(g_raw, a_log, dt_bias, gate, lower_bound, dtype)
    beta = torch.sigmoid(beta_raw.to(dtype))

    def pad(x, width):  # [T, H, width] -> [N, Lp, H, width]
        out = torch.zeros(N, Lp, H, width, dtype=dtype, device=dev)
        for n in range(N):
            out[n, :lens[n]] = x[int(cu[n]):int(cu[n + 1])]
        return out

    Qp, Kp, Vp, Gp = pad(qf, K), pad(kf, K), pad(v.to(dtype), V), pad(g, K)
    Bp = pad(beta[..., None], 1)[..., 0]
    del qf, kf, g, beta  # fp64 copies of T x H x K: gigabytes at T = 131072
    # -> [N*H, nck, C, width]
    re = lambda x: x.permute(0, 2, 1, 3).reshape(N * H, nck, chunk, x.shape[-1])
    Qp, Kp, Vp, Gp = re(Qp), re(Kp), re(Vp), re(Gp)
    Bp = Bp.permute(0, 2, 1).reshape(N * H, nck, chunk)
    S = (initial_state.to(dtype).reshape(N * H, K, V).clone() if initial_state is not None
         else torch.zeros(N * H, K, V, dtype=dtype, device=dev))
    O = torch.zeros(N * H, nck, chunk, V, dtype=dtype, device=dev)

    idx = torch.arange(chunk, device=dev)
    incl = (idx[None, :] <= idx[:, None])          # [i, j]: j <= i
    strict = (idx[None, :] < idx[:, None])
    eye = torch.eye(chunk, dtype=dtype, device=dev)
    for b0 in range(0, N * H, max_batch_heads):
        b1 = min(N * H, b0 + max_batch_heads)
        s = S[b0:b1]
        for c in range(nck):
            Qc, Kc, Vc = Qp[b0:b1, c], Kp[b0:b1, c], Vp[b0:b1, c]
            Gc = torch.cumsum(Gp[b0:b1, c], dim=1)                     # [b, C, K]
            Bc = Bp[b0:b1, c]                                          # [b, C]
            D = Gc[:, :, None, :] - Gc[:, None, :, :]                  # G_i - G_j
            E = torch.exp(torch.where(incl[None, :, :, None], D, torch.full_like(D, -math.inf)))
            A = (Kc[:, :, None, :] * Kc[:, None, :, :] * E).sum(-1) * strict
            Bqk = (Qc[:, :, None, :] * Kc[:, None, :, :] * E).sum(-1)  # j <= i via E
            del D, E
            Gam = torch.exp(Gc)
            rhs = Bc[..., None] * (Vc - (Gam * Kc) @ s)
            M = eye + Bc[..., None] * A
            U = torch.linalg.solve_triangular(M, rhs, upper=False, unitriangular=True)
            O[b0:b1, c] = scale * ((Gam * Qc) @ s + Bqk @ U)
            GL = Gc[:, -1, :]                                          # [b, K]
            s = torch.exp(GL)[..., None] * s + (torch.exp(GL[:, None, :] - Gc) * Kc).transpose(1, 2) @ U
        S[b0:b1] = s
    O = O.reshape(N, H, Lp, V).permute(0, 2, 1, 3)                     # [N, Lp, H, V]
    o = torch.empty(T, H, V, dtype=dtype, device=dev)
    for n in range(N):
        o[int(cu[n]):int(cu[n + 1])] = O[n, :lens[n]]
    return o, S.reshape(N, H, K, V)


def kda_recurrent(q, k, v, g_raw, beta_raw, a_log, dt_bias, cu, initial_state, gate,
                  lower_bound, scale, qk_l2norm=True, dtype=torch.float64):
    """The token-by-token recurrence of DESIGN.md, for tests of kda_prefill."""
    T, H, K = q.shape
    V = v.shape[-1]
    N = len(cu) - 1
    qf, kf = q.to(dtype), k.to(dtype)
    if qk_l2norm:
        qf, kf = _l2norm(qf), _l2norm(kf)
    g = kda_gate(g_raw, a_log, dt_bias, gate, lower_bound, dtype)
    beta = torch.sigmoid(beta_raw.to(dtype))
    o = torch.zeros(T, H, V, dtype=dtype, device=q.device)
    finals = []
    for n in range(N):
        S = (initial_state[n].to(dtype).clone() if initial_state is not None
             else torch.zeros(H, K, V, dtype=dtype, device=q.device))
        for t in range(int(cu[n]), int(cu[n + 1])):
            S = torch.exp(g[t])[..., None] * S
            kv = torch.einsum("hk,hkv->hv", kf[t], S)
            S = S + beta[t][:, None, None] * kf[t][:, :, None] * (v[t].to(dtype) - kv)[:, None, :]
            o[t] = torch.einsum("hkv,hk->hv", S, scale * qf[t])
        finals.append(S)
    return o, torch.stack(finals)


# ---------------------------------------------------------------------------
# Decoder layer stack (Llama / Qwen3), fp32
# ---------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope_inv_freq(D: int, theta: float, scaling=None, device=None):
    """The D / 2 inverse frequencies theta^(-2i/D) in fp64; with a spec's
    `rope_scaling` (Llama 3.1's "llama3" rule: wavelengths below
    original / high_freq_factor kept, above original / low_freq_factor
    divided by factor, a linear blend between)."""
    i = torch.arange(D // 2, dtype=torch.float64, device=device)
    inv = torch.pow(torch.tensor(theta, dtype=torch.float64, device=device), -2.0 * i / D)
    if not scaling:
        return inv
    factor = float(scaling["factor"])
    low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
    orig = float(scaling["original_max_position_embeddings"])
    wavelen = 2 * math.pi / inv
    smooth = (orig / wavelen - low) / (high - low)
    blended = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(wavelen < orig / high, inv,
                       torch.where(wavelen > orig / low, inv / factor, blended))


def rope_neox(x, positions, theta: float, scaling=None):
    """x [B, heads, D]; rotates the halves (NeoX). Angles in fp64."""
    D = x.shape[-1]
    half = D // 2
    f = positions.to(torch.float64)[:, None] * rope_inv_freq(D, theta, scaling, x.device)[None]
    cos, sin = torch.cos(f).to(x.dtype)[:, None, :], torch.sin(f).to(x.dtype)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def decoder_stack(x, weights: dict, k_cache, v_cache, shape: dict, layers: int,
                  indptr, indices, lens, positions, dtype=torch.float32):
    """hidden_out [B, hid], and the new K (after RoPE) and V rows of every
    layer [L, B, Hkv, hd]. Older tokens are read from the caches; the new
    token's K and V are this reference's own (the kernels' writes to the new
    slot are never read here). `indptr`, `lens` host; `indices` device."""
    B, hid = x.shape
    hq, hkv, hd = shape["num_q_heads"], shape["num_kv_heads"], shape["head_dim"]
    eps, theta = shape["rms_eps"], shape["rope_theta"]
    P = k_cache.shape[2]
    group = hq // hkv
    cur = x.to(dtype)
    new_k, new_v = [], []
    W = lambda name, l: weights[name][l].to(dtype)
    for l in range(layers):
        h = rmsnorm(cur, W("attn_norm", l), eps)
        q = (h @ W("w_q", l).T).view(B, hq, hd)
        k = (h @ W("w_k", l).T).view(B, hkv, hd)
        v = (h @ W("w_v", l).T).view(B, hkv, hd)
        if shape["qk_norm"]:
            q = rmsnorm(q, W("q_norm", l), eps)
            k = rmsnorm(k, W("k_norm", l), eps)
        q = rope_neox(q, positions, theta, shape.get("rope_scaling"))
        k = rope_neox(k, positions, theta, shape.get("rope_scaling"))
        new_k.append(k)
        new_v.append(v)
        attn = torch.empty(B, hq, hd, dtype=dtype, device=x.device)
        for b in range(B):
            n = int(lens[b])
            pages = indices[int(indptr[b]):int(indptr[b + 1])].long()
            kk = k_cache[l, pages].reshape(-1, hkv, hd)[:n].to(dtype).clone()
            vv = v_cache[l, pages].reshape(-1, hkv, hd)[:n].to(dtype).clone()
            kk[n - 1], vv[n - 1] = k[b], v[b]
            kk = kk.repeat_interleave(group, dim=1)                  # [n, hq, hd]
            vv = vv.repeat_interleave(group, dim=1)
            s = torch.einsum("hd,nhd->hn", q[b], kk) / math.sqrt(hd)
            p = torch.softmax(s, dim=-1)
            attn[b] = torch.einsum("hn,nhd->hd", p, vv)
        x1 = cur + attn.reshape(B, hq * hd) @ W("w_o", l).T
        h2 = rmsnorm(x1, W("ffn_norm", l), eps)
        gate = h2 @ W("w_gate", l).T
        up = h2 @ W("w_up", l).T
        act = gate / (1 + torch.exp(-gate)) * up
        cur = x1 + act @ W("w_down", l).T
    return cur, torch.stack(new_k), torch.stack(new_v)
