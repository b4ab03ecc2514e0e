"""MLA paged decode: Loom against FlashInfer (kernel-only and with plan) and
FlashMLA, on the same tensors.

Per workload: a fresh page table over the spec's page pool (the trace's
`contig` fraction of consecutive page ids, the tiers scattered), random
cache rows in the used pages, NaN in the unused tail of each request's last
page and in unused pages right after used runs, q ~ N(0, 0.5). Loom and
FlashInfer read the very same q, ckv_cache, kpe_cache, kv_indptr,
kv_indices and kv_lens tensors; FlashMLA needs q and the cache with the
latent and RoPE parts side by side ([.., 576]) and a dense block table, so
it reads a packed copy of the same values. Each output is checked against
the fp64 reference (refs.mla_decode) with the tolerances of tools/check.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Iterator, List

import numpy as np
import torch

from . import checks, refs
from .context import Context, log, log_row
from .specs import artifact_for
from .workloads import Workload, make_page_table, unused_neighbours

NAN_PAGES = 8


def _groups(workloads: List[Workload]):
    g = OrderedDict()
    for w in workloads:
        a = artifact_for(w)
        g.setdefault(a.key, (a, []))[1].append(w)
    return list(g.values())


class _Pool:
    """The cache pool of one spec: [max_pages, P, Dc] and [max_pages, P, Dp]."""

    def __init__(self, shape: dict, device: str, flash_mla: bool):
        n, P = shape["max_pages"], shape["page_size"]
        self.ckv = torch.empty(n, P, shape["head_dim_ckv"], dtype=torch.bfloat16, device=device)
        self.kpe = torch.empty(n, P, shape["head_dim_kpe"], dtype=torch.bfloat16, device=device)
        self.packed = None
        if flash_mla:
            self.packed = torch.empty(n, P, 1, shape["head_dim_ckv"] + shape["head_dim_kpe"],
                                      dtype=torch.bfloat16, device=device)


def run(ctx: Context, workloads: List[Workload]) -> Iterator[dict]:
    dev = ctx.device
    fi_ok = ctx.baselines.get("flashinfer", {}).get("available") and dev == "cuda"
    fm_ok = ctx.baselines.get("flash_mla", {}).get("available") and dev == "cuda"
    workspace = torch.zeros(128 << 20, dtype=torch.uint8, device=dev) if fi_ok else None
    for art, ws in _groups(workloads):
        shape = art.spec.shape
        pool = prog = None
        try:
            if ctx.out_of_time(5):
                raise TimeoutError("family time limit reached")
            prog = ctx.load(art)
            pool = _Pool(shape, dev, fm_ok and shape["page_size"] == 64)
        except Exception as e:  # noqa: BLE001 - every row of the group reports it
            yield from ctx.fail_group(ws, art, e)
            continue
        for w in ws:
            row = ctx.new_row(w, art)
            started = time.perf_counter()
            if ctx.skip_if_late(row, 2):
                yield ctx.close_row(row, started)
                continue
            ctx.run_guarded(row, "workload",
                            lambda: _run_one(ctx, row, w, shape, prog, pool, workspace, fi_ok, fm_ok))
            prog = ctx.reload_if_failed(row, prog, art)
            ctx.close_row(row, started)
            log_row(row)
            yield row
        prog.close()
        del pool
        if dev == "cuda":
            torch.cuda.empty_cache()


def _run_one(ctx, row, w: Workload, shape, prog, pool: _Pool, workspace, fi_ok, fm_ok):
    dev = ctx.device
    H, Dc, Dp, P = shape["num_heads"], shape["head_dim_ckv"], shape["head_dim_kpe"], shape["page_size"]
    sm_scale = float(shape["sm_scale"])
    B = w.batch
    rng = np.random.default_rng(row["seed"])
    gen = torch.Generator(device=dev).manual_seed(row["seed"])
    table = make_page_table(w.lengths, P, shape["max_pages"], w.contig or 0.0, rng)
    row["inputs"] = {"pages": table.nnz, "pool_pages": table.pool,
                     "consecutive_fraction": round(table.consecutive_fraction(), 3),
                     "contig_asked": w.contig}

    # Cache rows: used pages random, tails and a few neighbouring unused pages NaN.
    pages = torch.from_numpy(table.indices.astype(np.int64)).to(dev)
    pool.ckv[pages] = torch.randn(table.nnz, P, Dc, generator=gen, device=dev).to(torch.bfloat16)
    pool.kpe[pages] = torch.randn(table.nnz, P, Dp, generator=gen, device=dev).to(torch.bfloat16)
    last_len = table.last_page_len()
    for b in range(B):
        if table.indptr[b + 1] > table.indptr[b] and last_len[b] < P:
            page = int(table.indices[table.indptr[b + 1] - 1])
            pool.ckv[page, last_len[b]:] = float("nan")
            pool.kpe[page, last_len[b]:] = float("nan")
    nan_pages = torch.from_numpy(unused_neighbours(table, NAN_PAGES)).to(dev)
    pool.ckv[nan_pages] = float("nan")
    pool.kpe[nan_pages] = float("nan")

    q_nope = (0.5 * torch.randn(B, H, Dc, generator=gen, device=dev)).to(torch.bfloat16)
    q_pe = (0.5 * torch.randn(B, H, Dp, generator=gen, device=dev)).to(torch.bfloat16)
    kv_indptr = torch.from_numpy(table.indptr).to(dev)
    kv_indices = torch.from_numpy(table.indices).to(dev)
    kv_lens = torch.from_numpy(table.lens).to(dev)
    o = torch.full((B, H, Dc), float("nan"), dtype=torch.bfloat16, device=dev)
    lse = torch.full((B, H), float("nan"), dtype=torch.float32, device=dev)

    with ctx.phase(row, "reference"):
        ref_o, ref_lse = refs.mla_decode(q_nope, q_pe, pool.ckv, pool.kpe, table.indptr, kv_indices,
                                         table.lens, sm_scale)

    # --- Loom ---------------------------------------------------------------
    def loom():
        for name, t in (("q_nope", q_nope), ("q_pe", q_pe), ("kv_indptr", kv_indptr),
                        ("kv_indices", kv_indices), ("kv_lens", kv_lens), ("o", o), ("lse", lse)):
            prog.bind(name, t.data_ptr(), list(t.shape))
        prog.bind("ckv_cache", pool.ckv.data_ptr())
        prog.bind("kpe_cache", pool.kpe.data_ptr())
        if dev == "cuda":
            torch.cuda.synchronize()
        with ctx.phase(row, "Loom first launch"):
            prog.run()
        check = checks.mla(o, lse, ref_o, ref_lse, table.lens)
        timing = ctx.timer.time_loom(prog)
        ctx.finish_loom(row, timing, check)
    ctx.run_guarded(row, "Loom", loom)

    # --- FlashInfer ---------------------------------------------------------
    if fi_ok:
        _flashinfer(ctx, row, B, H, Dc, Dp, P, sm_scale, q_nope, q_pe, pool, kv_indptr, kv_indices,
                    kv_lens, table, workspace, ref_o, ref_lse)
    else:
        for name in ("flashinfer_kernel", "flashinfer_with_plan"):
            ctx.finish_baseline(row, name, _LABELS[name], None, None,
                                error="not run: " + (ctx.baselines.get("flashinfer", {}).get("why") or "no GPU"))
    # --- FlashMLA -----------------------------------------------------------
    if P != 64:
        pass  # FlashMLA's paged KV cache has 64-token blocks only: no row entry
    elif fm_ok:
        with ctx.phase(row, "flash_mla"):
            _flash_mla(ctx, row, B, H, Dc, P, sm_scale, q_nope, q_pe, pool, table, ref_o, ref_lse)
    else:
        ctx.finish_baseline(row, "flash_mla", _LABELS["flash_mla"], None, None,
                            error="not run: " + (ctx.baselines.get("flash_mla", {}).get("why") or "no GPU"))


_LABELS = {
    "flashinfer_kernel": "FlashInfer BatchMLAPagedAttentionWrapper, run() only (plan once, outside the timing)",
    "flashinfer_with_plan": "FlashInfer BatchMLAPagedAttentionWrapper, plan() + run() per call",
    "flash_mla": "FlashMLA dense bf16 decode (sgl-flash-mla, SM90 legacy kernel), scheduler metadata outside the timing",
}


def _flashinfer(ctx, row, B, H, Dc, Dp, P, sm_scale, q_nope, q_pe, pool, kv_indptr, kv_indices,
                kv_lens, table, workspace, ref_o, ref_lse):
    import flashinfer
    dev = ctx.device
    qo_indptr = torch.arange(B + 1, dtype=torch.int32, device=dev)
    # plan() reads the lengths on the host: hand it host copies, as a server does.
    qo_h, kv_indptr_h, kv_lens_h = qo_indptr.cpu(), kv_indptr.cpu(), kv_lens.cpu()
    wrapper = flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend="auto")
    o = torch.full((B, H, Dc), float("nan"), dtype=torch.bfloat16, device=dev)
    lse = torch.full((B, H), float("nan"), dtype=torch.float32, device=dev)

    def plan():
        wrapper.plan(qo_h, kv_indptr_h, kv_indices, kv_lens_h, H, Dc, Dp, P, False, sm_scale,
                     torch.bfloat16, torch.bfloat16)

    def run():
        wrapper.run(q_nope, q_pe, pool.ckv, pool.kpe, out=o, lse=lse, return_lse=True)

    def kernel_only():
        plan()
        run()
        torch.cuda.synchronize()
        check = checks.mla(o, lse, ref_o, ref_lse, table.lens)
        timing = ctx.timer.time_fn(run)
        impl = f"backend {getattr(wrapper, '_backend', '?')}"
        ctx.finish_baseline(row, "flashinfer_kernel", _LABELS["flashinfer_kernel"], timing, check, impl=impl)
        return check

    def with_plan():
        timing = ctx.timer.time_fn(lambda: (plan(), run()), host_work=True)
        torch.cuda.synchronize()
        check = checks.mla(o, lse, ref_o, ref_lse, table.lens)
        ctx.finish_baseline(row, "flashinfer_with_plan", _LABELS["flashinfer_with_plan"], timing, check,
                            impl=f"backend {getattr(wrapper, '_backend', '?')}")

    for name, fn in (("flashinfer_kernel", kernel_only), ("flashinfer_with_plan", with_plan)):
        try:
            with ctx.phase(row, name):
                fn()
        except Exception as e:  # noqa: BLE001
            log(f"  {row['key']}: {name} failed: {type(e).__name__}: {e}")
            ctx.finish_baseline(row, name, _LABELS[name], None, None, error=f"{type(e).__name__}: {e}"[:600])


def _flash_mla(ctx, row, B, H, Dc, P, sm_scale, q_nope, q_pe, pool, table, ref_o, ref_lse):
    try:
        from flash_mla import flash_mla_with_kvcache, get_mla_metadata
        dev = ctx.device
        torch.cat([pool.ckv, pool.kpe], dim=-1, out=pool.packed.view(pool.ckv.shape[0], P, -1))
        q = torch.cat([q_nope, q_pe], dim=-1).view(B, 1, H, -1).contiguous()
        pages = table.indptr[1:] - table.indptr[:-1]
        width = max(1, int(pages.max()))
        bt = np.zeros((B, width), dtype=np.int32)
        for b in range(B):
            bt[b, :pages[b]] = table.indices[table.indptr[b]:table.indptr[b + 1]]
        block_table = torch.from_numpy(bt).to(dev)
        seqlens = torch.from_numpy(table.lens).to(dev)
        sched, _ = get_mla_metadata()
        result = {}

        def run():
            result["o"], result["lse"] = flash_mla_with_kvcache(
                q, pool.packed, block_table, seqlens, Dc, sched, softmax_scale=sm_scale,
                causal=False, use_legacy=True)

        run()  # the first call fills the scheduler metadata (kept outside the timing)
        torch.cuda.synchronize()
        o, lse = result["o"].view(B, H, Dc), result["lse"].view(B, H)
        check = checks.mla(o, lse, ref_o, ref_lse, table.lens, lse_base_e=True)
        timing = ctx.timer.time_fn(run)
        ctx.finish_baseline(row, "flash_mla", _LABELS["flash_mla"], timing, check)
    except Exception as e:  # noqa: BLE001
        log(f"  {row['key']}: flash_mla failed: {type(e).__name__}: {e}")
        ctx.finish_baseline(row, "flash_mla", _LABELS["flash_mla"], None, None,
                            error=f"{type(e).__name__}: {e}"[:600])
