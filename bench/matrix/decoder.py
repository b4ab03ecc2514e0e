"""Decoder-layer stacks: Loom's one persistent kernel against the same layers
as separate kernels replayed from a CUDA graph (how vLLM runs decode).

Weights are drawn once per model (U(-a, a), a = sqrt(3 / fan_in); norm
weights U(0.8, 1.2)) and bound into Loom as they are; the baseline reads the
same values with the QKV and gate/up projections concatenated, as vLLM
stores them. Per workload: a fresh scattered page table (page size 16), the
context's older tokens random in every layer's K and V caches (the caches
are the same tensors for both), NaN in the new token's slot and in the
unused tail of each last page, and a fresh hidden state.

The baseline, per layer: fused add+RMSNorm (FlashInfer), QKV linear
(cuBLAS via torch), per-head q/k RMSNorm for Qwen3 (FlashInfer), RoPE on the
NeoX halves (FlashInfer apply_rope_pos_ids_inplace; with the spec's Llama
3.1 `rope_scaling`, apply_llama31_rope_pos_ids_inplace), K/V written to the
paged cache (index_copy_), FlashInfer BatchDecodeWithPagedKVCacheWrapper
(planned once per step, outside the graph, as vLLM does), O linear, fused
add+RMSNorm, gate/up linear, SiLU*mul (FlashInfer), down linear; the final
residual add. Where a FlashInfer op did not build, its torch equivalent is
used and the row says so.

Checks against the fp32 reference (refs.decoder_stack): the new K and V rows
of layer 0 (relative error <= 1e-2) and hidden_out. For 1-2 layers
hidden_out must be within 1e-2; for deep stacks bf16 storage drifts about
0.25 % per layer on random weights (README, DESIGN.md), so hidden_out must
be within max(1e-2, 1.5 x the more accurate of Loom and the baseline).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from typing import Iterator, List

import numpy as np
import torch
import torch.nn.functional as F

from . import checks, refs
from .context import Context, log, log_row
from .specs import artifact_for
from .workloads import Workload, make_page_table

_LABEL = ("per-op baseline in one CUDA graph: cuBLAS linears (torch), FlashInfer batch decode "
          "(paged KV), fused add+RMSNorm, RoPE, SiLU*mul")
DEEP_FACTOR = 1.5
SHALLOW_LAYERS = 2


def _groups(workloads: List[Workload]):
    """By model (weights shared), then by artifact."""
    g = OrderedDict()
    for w in workloads:
        a = artifact_for(w)
        g.setdefault(a.spec.name, OrderedDict()).setdefault(a.key, (a, []))[1].append(w)
    return g


class _Model:
    """Weights [L, ...] of the full spec, caches, and the baseline's fused copies."""

    def __init__(self, spec, device, gen, fused: bool, layers: int):
        s = spec.shape
        self.shape = s
        L, hid, hq, hkv, hd, ffn = (layers, s["hidden"], s["num_q_heads"], s["num_kv_heads"],
                                    s["head_dim"], s["ffn"])
        self.L = L
        defs = [("attn_norm", (hid,), 0), ("w_q", (hq * hd, hid), hid), ("w_k", (hkv * hd, hid), hid),
                ("w_v", (hkv * hd, hid), hid), ("w_o", (hid, hq * hd), hq * hd)]
        if s["qk_norm"]:
            defs += [("q_norm", (hd,), 0), ("k_norm", (hd,), 0)]
        defs += [("ffn_norm", (hid,), 0), ("w_gate", (ffn, hid), hid), ("w_up", (ffn, hid), hid),
                 ("w_down", (hid, ffn), ffn)]
        self.w = {}
        for name, dims, fan_in in defs:
            t = torch.empty(L, *dims, dtype=torch.bfloat16, device=device)
            for l in range(L):  # a layer at a time keeps the fp32 temporary small
                r = torch.rand(*dims, generator=gen, device=device)
                if fan_in == 0:
                    t[l] = (0.8 + 0.4 * r).to(torch.bfloat16)
                else:
                    a = math.sqrt(3.0 / fan_in)
                    t[l] = (a * (2 * r - 1)).to(torch.bfloat16)
            self.w[name] = t
        P = s["page_size"]
        self.k_cache = torch.empty(L, s["max_pages"], P, hkv, hd, dtype=torch.bfloat16, device=device)
        self.v_cache = torch.empty_like(self.k_cache)
        self.wqkv = self.wgu = None
        if fused:
            self.wqkv = torch.cat([self.w["w_q"], self.w["w_k"], self.w["w_v"]], dim=1)
            self.wgu = torch.cat([self.w["w_gate"], self.w["w_up"]], dim=1)


def run(ctx: Context, workloads: List[Workload]) -> Iterator[dict]:
    dev = ctx.device
    fi_ok = ctx.baselines.get("flashinfer", {}).get("available") and dev == "cuda"
    for spec_name, arts in _groups(workloads).items():
        model = None
        try:
            if ctx.out_of_time(20):
                raise TimeoutError("family time limit reached")
            first = next(iter(arts.values()))[0]
            gen = torch.Generator(device=dev).manual_seed(ctx.seed)
            t = time.perf_counter()
            # Only as many layers as the deepest artifact of the model runs.
            layers = max(a.layers for a, _ in arts.values())
            model = _Model(first.spec, dev, gen, fused=fi_ok, layers=layers)
            log(f"{spec_name}: weights and caches ready in {time.perf_counter() - t:.1f} s")
        except Exception as e:  # noqa: BLE001
            for art, ws in arts.values():
                yield from ctx.fail_group(ws, art, e)
            continue
        for art, ws in arts.values():
            prog = None
            try:
                if ctx.out_of_time(10):
                    raise TimeoutError("family time limit reached")
                prog = ctx.load(art)
            except Exception as e:  # noqa: BLE001
                yield from ctx.fail_group(ws, art, e)
                continue
            for w in ws:
                row = ctx.new_row(w, art)
                started = time.perf_counter()
                if ctx.skip_if_late(row, 5):
                    yield ctx.close_row(row, started)
                    continue
                ctx.run_guarded(row, "workload",
                                lambda: _run_one(ctx, row, w, art, model, prog, fi_ok))
                prog = ctx.reload_if_failed(row, prog, art)
                ctx.close_row(row, started)
                log_row(row)
                yield row
            prog.close()
        del model
        if dev == "cuda":
            torch.cuda.empty_cache()


def _run_one(ctx, row, w: Workload, art, m: _Model, prog, fi_ok):
    dev = ctx.device
    s = m.shape
    L, B, ctxlen = w.layers, w.batch, w.context
    hid, hq, hkv, hd, P = s["hidden"], s["num_q_heads"], s["num_kv_heads"], s["head_dim"], s["page_size"]
    rng = np.random.default_rng(row["seed"])
    gen = torch.Generator(device=dev).manual_seed(row["seed"])
    table = make_page_table(w.lengths, P, s["max_pages"], 0.0, rng)
    row["inputs"] = {"pages_per_layer": table.nnz, "pool_pages": table.pool,
                     "consecutive_fraction": round(table.consecutive_fraction(), 3)}
    pos = np.array([n - 1 for n in w.lengths], dtype=np.int32)
    new_page = table.indices[table.indptr[:-1] + pos // P].astype(np.int64)
    slots_np = (new_page * P + pos % P).astype(np.int32)

    # Caches of the layers this program runs: older tokens random, the new slot
    # and the tails of the last pages NaN.
    pages = torch.from_numpy(table.indices.astype(np.int64)).to(dev)
    kc, vc = m.k_cache[:L], m.v_cache[:L]
    for cache in (kc, vc):
        for l in range(L):
            cache[l, pages] = torch.randn(table.nnz, P, hkv, hd, generator=gen, device=dev).to(torch.bfloat16)
        flat = cache.view(L, -1, hkv, hd)
        for b in range(B):
            start = int(slots_np[b])
            end = int(new_page[b]) * P + P
            flat[:, start:end] = float("nan")
    hidden = torch.randn(B, hid, generator=gen, device=dev).to(torch.bfloat16)
    positions = torch.from_numpy(pos).to(dev)
    slot_mapping = torch.from_numpy(slots_np).to(dev)
    kv_indptr = torch.from_numpy(table.indptr).to(dev)
    kv_indices = torch.from_numpy(table.indices).to(dev)
    kv_lens = torch.from_numpy(table.lens).to(dev)
    out = torch.full((B, hid), float("nan"), dtype=torch.bfloat16, device=dev)

    with ctx.phase(row, "reference"):
        ref_h, ref_k, ref_v = refs.decoder_stack(hidden, {n: t[:L] for n, t in m.w.items()}, kc, vc, s, L,
                                                 table.indptr, kv_indices, table.lens, positions)
    slots_l = slot_mapping.long()
    new_rows = lambda cache: cache[0].view(-1, hkv, hd)[slots_l].clone()
    result = {}

    def loom():
        for name, t in m.w.items():
            prog.bind(name, t[:L].data_ptr(), [L] + list(t.shape[1:]))
        prog.bind("k_cache", kc.data_ptr())
        prog.bind("v_cache", vc.data_ptr())
        for name, t in (("hidden", hidden), ("hidden_out", out), ("positions", positions),
                        ("slot_mapping", slot_mapping), ("kv_indptr", kv_indptr),
                        ("kv_indices", kv_indices), ("kv_lens", kv_lens)):
            prog.bind(name, t.data_ptr(), list(t.shape))
        if dev == "cuda":
            torch.cuda.synchronize()
        with ctx.phase(row, "Loom first launch"):
            prog.run()
        result["loom"] = (out.clone(), new_rows(kc), new_rows(vc))
        result["loom_time"] = ctx.timer.time_loom(prog)
    ctx.run_guarded(row, "Loom", loom)

    if fi_ok:
        try:
            with ctx.phase(row, "per_op_graph"):
                # Sub-phases: where a slow first row goes (JIT loads, plan, capture).
                with ctx.phase(row, "per_op_graph fused ops"):
                    ops = _ops()
                with ctx.phase(row, "per_op_graph wrapper and plan"):
                    step, impl = _baseline_step(ops, m, L, B, hidden, positions, slot_mapping, kv_indptr,
                                                kv_indices, table)
                with ctx.phase(row, "per_op_graph capture"):
                    graph, base_out = _capture(step)
                    graph.replay()
                    torch.cuda.synchronize()
                result["base"] = (base_out.clone(), new_rows(kc), new_rows(vc))
                result["base_time"] = ctx.timer.time_fn(graph.replay)
                result["base_impl"] = impl
        except Exception as e:  # noqa: BLE001
            log(f"  {row['key']}: baseline failed: {type(e).__name__}: {e}")
            ctx.finish_baseline(row, "per_op_graph", _LABEL, None, None, error=f"{type(e).__name__}: {e}"[:600])
    else:
        ctx.finish_baseline(row, "per_op_graph", _LABEL, None, None,
                            error="not run: " + (ctx.baselines.get("flashinfer", {}).get("why") or "no GPU"))

    # Checks: 1e-2 for shallow stacks, the more accurate implementation's
    # error x 1.5 (at least 1e-2) for deep ones.
    errs = {k: checks.rel_rms(result[k][0], ref_h) for k in ("loom", "base") if k in result}
    layer0_ok = lambda k: (checks.rel_rms(result[k][1], ref_k[0]) <= checks.DECODER_REL and
                           checks.rel_rms(result[k][2], ref_v[0]) <= checks.DECODER_REL)
    if L <= SHALLOW_LAYERS:
        bound, note = checks.DECODER_REL, ""
    else:
        trusted = [e for k, e in errs.items() if layer0_ok(k) and math.isfinite(e)]
        bound = max(checks.DECODER_REL, DEEP_FACTOR * min(trusted)) if trusted else checks.DECODER_REL
        note = (f"{L} layers: bound max(1e-2, {DEEP_FACTOR} x the more accurate implementation's error "
                f"{min(trusted):.3g})" if trusted else "")
    if "loom" in result:
        c = checks.decoder(result["loom"][0], ref_h, result["loom"][1], ref_k[0], result["loom"][2], ref_v[0],
                           bound, note)
        ctx.finish_loom(row, result["loom_time"], c)
    if "base" in result:
        c = checks.decoder(result["base"][0], ref_h, result["base"][1], ref_k[0], result["base"][2], ref_v[0],
                           bound, note)
        ctx.finish_baseline(row, "per_op_graph", _LABEL, result["base_time"], c, impl=result["base_impl"])
    row["inputs"]["hidden_out_error"] = {k: (v if math.isfinite(v) else str(v)) for k, v in errs.items()}


def _capture(step):
    """Warm up on a side stream (JIT, plans), then capture one step."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step()
    return g, out


def _ops():
    """FlashInfer's fused ops where they load, else torch; and which were used."""
    import flashinfer
    used = {}

    def pick(name, fi, fallback):
        try:
            fi()
            used[name] = "flashinfer"
            return True
        except Exception as e:  # noqa: BLE001
            used[name] = f"torch ({type(e).__name__})"
            log(f"  flashinfer {name} unavailable, torch instead: {type(e).__name__}: {e}"[:300])
            return False

    x = torch.randn(2, 256, device="cuda", dtype=torch.bfloat16)
    wt = torch.ones(256, device="cuda", dtype=torch.bfloat16)
    r = x.clone()
    have_norm = pick("rmsnorm", lambda: (flashinfer.norm.rmsnorm(x, wt, 1e-5),
                                         flashinfer.norm.fused_add_rmsnorm(x.clone(), r, wt, 1e-5)), None)
    q = torch.randn(2, 4, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 2, 128, device="cuda", dtype=torch.bfloat16)
    pos = torch.zeros(2, dtype=torch.int32, device="cuda")
    have_rope = pick("rope", lambda: flashinfer.rope.apply_rope_pos_ids_inplace(q, k, pos), None)
    have_rope31 = pick("rope_llama31", lambda: flashinfer.rope.apply_llama31_rope_pos_ids_inplace(
        q, k, pos), None)
    have_act = pick("silu_and_mul", lambda: flashinfer.activation.silu_and_mul(x), None)
    return flashinfer, have_norm, (have_rope, have_rope31), have_act, used


def _torch_rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def _torch_rope(q, k, positions, theta, scaling=None):
    for t in (q, k):
        D = t.shape[-1]
        half = D // 2
        inv = refs.rope_inv_freq(D, theta, scaling, t.device).float()
        f = positions.float()[:, None] * inv[None]
        cos, sin = torch.cos(f)[:, None, :], torch.sin(f)[:, None, :]
        x1, x2 = t[..., :half].float(), t[..., half:].float()
        t.copy_(torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(t.dtype))


def _baseline_step(ops, m: _Model, L, B, hidden, positions, slot_mapping, kv_indptr, kv_indices, table):
    """ops: what _ops() returned."""
    flashinfer, have_norm, (have_rope, have_rope31), have_act, used = ops
    s = m.shape
    hid, hq, hkv, hd, P, eps = (s["hidden"], s["num_q_heads"], s["num_kv_heads"], s["head_dim"],
                                s["page_size"], float(s["rms_eps"]))
    theta = float(s["rope_theta"])
    scaling = s.get("rope_scaling")
    dev = hidden.device
    workspace = torch.zeros(128 << 20, dtype=torch.uint8, device=dev)
    indptr_buf = kv_indptr.clone()
    indices_buf = torch.empty(table.pool, dtype=torch.int32, device=dev)
    last_buf = torch.empty(B, dtype=torch.int32, device=dev)
    group = hq // hkv
    decode = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        workspace, "NHD", use_cuda_graph=True, use_tensor_cores=group > 4,
        paged_kv_indptr_buffer=indptr_buf, paged_kv_indices_buffer=indices_buf,
        paged_kv_last_page_len_buffer=last_buf)
    last = torch.from_numpy(table.last_page_len()).to(dev)
    decode.plan(kv_indptr, kv_indices, last, hq, hkv, hd, P, pos_encoding_mode="NONE",
                q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
    used["decode"] = "flashinfer BatchDecodeWithPagedKVCacheWrapper" + (" (tensor cores)" if group > 4 else "")
    kflat = [m.k_cache[l].view(-1, hkv, hd) for l in range(L)]
    vflat = [m.v_cache[l].view(-1, hkv, hd) for l in range(L)]
    slots = slot_mapping.long()
    W = m.w

    def norm(x, w):
        return flashinfer.norm.rmsnorm(x, w, eps) if have_norm else _torch_rmsnorm(x, w, eps)

    def add_norm(x, res, w):  # res += x; x = norm(res)
        if have_norm:
            flashinfer.norm.fused_add_rmsnorm(x, res, w, eps)
            return x
        res.add_(x)
        return _torch_rmsnorm(res, w, eps)

    def step():
        res = hidden.clone()
        h = norm(hidden, W["attn_norm"][0])
        d = None
        for l in range(L):
            if l > 0:
                h = add_norm(d, res, W["attn_norm"][l])
            qkv = F.linear(h, m.wqkv[l])
            q = qkv[:, :hq * hd].view(B, hq, hd)
            k = qkv[:, hq * hd:(hq + hkv) * hd].view(B, hkv, hd)
            v = qkv[:, (hq + hkv) * hd:].view(B, hkv, hd)
            if s["qk_norm"]:
                q = norm(q.contiguous(), W["q_norm"][l])
                k = norm(k.contiguous(), W["k_norm"][l])
            if scaling and have_rope31:
                flashinfer.rope.apply_llama31_rope_pos_ids_inplace(
                    q, k, positions, rope_scale=float(scaling["factor"]), rope_theta=theta,
                    low_freq_factor=float(scaling["low_freq_factor"]),
                    high_freq_factor=float(scaling["high_freq_factor"]),
                    old_context_len=int(scaling["original_max_position_embeddings"]))
            elif have_rope and not scaling:
                flashinfer.rope.apply_rope_pos_ids_inplace(q, k, positions, rope_theta=theta)
            else:
                _torch_rope(q, k, positions, theta, scaling)
            kflat[l].index_copy_(0, slots, k)
            vflat[l].index_copy_(0, slots, v)
            attn = decode.run(q, (m.k_cache[l], m.v_cache[l]))
            o = F.linear(attn.reshape(B, hq * hd), W["w_o"][l])
            h2 = add_norm(o, res, W["ffn_norm"][l])
            gu = F.linear(h2, m.wgu[l])
            if have_act:
                a = flashinfer.activation.silu_and_mul(gu)
            else:
                a = F.silu(gu[:, :s["ffn"]]) * gu[:, s["ffn"]:]
            d = F.linear(a, W["w_down"][l])
        return res + d

    impl = ", ".join(f"{k}: {v}" for k, v in used.items())
    return step, impl
