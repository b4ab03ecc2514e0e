"""KDA prefill: Loom against fla's chunk_kda (vLLM's Kimi-Linear path) and
FlashKDA, on the same tensors, for both gates of every workload.

Inputs per row (fresh, seeded): q, k, v, g_raw ~ N(0, 1) bf16 [T, H, 128];
beta_raw [T, H] bf16; a_log [H] and dt_bias [H, 128] fp32 in the ranges of
Kimi-Linear's initialisation, by head (h % 3): 0: A = e^a_log in [1, 16],
dt_bias in [-5, -2], beta_raw ~ N(0, 1.5); 1: as 0 with beta_raw ~ N(0, 4)
(beta near 0 and 1); 2: slow decay, a_log in [-3, -2], dt_bias in [-6, -4].
The initial state is N(0, 1) where the workload asks for one, else zero
(the specs take a state; every implementation gets the same one).

Gate semantics (ir/LoomOps.td kda_prefill, kernels/host/KdaBodies.h):
  unbounded: g = -exp(a_log[h]) * softplus(g_raw + dt_bias[h])
  bounded:   g = lower_bound * sigmoid(exp(a_log[h]) * (g_raw + dt_bias[h]))
fla computes the same two functions in fused_kda_gate (lower_bound=None /
-5) and inside chunk_kda (use_gate_in_kernel, safe_gate for the bounded
one); FlashKDA only has the bounded one.

Baselines:
  fla_vllm   vLLM's path: g = fused_kda_gate(g_raw, A_log, dt_bias),
             beta = sigmoid(beta_raw) in fp32, chunk_kda(..., q/k L2 norm in
             kernel, cu_seqlens), all three kernels timed;
  fla_fused  chunk_kda with the gate and sigmoid inside (use_gate_in_kernel,
             use_beta_sigmoid_in_kernel), one call;
  flash_kda  flash_kda.fwd (bounded gate; its state is [N, H, V, K]: given
             the transposed initial state, its final state is transposed back
             for the check).
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Iterator, List

import torch

from . import checks, fla_tune, refs
from .context import Context, log, log_row
from .specs import kda_groups
from .workloads import Workload

_LABELS = {
    "fla_vllm": "fla chunk_kda, gate by fused_kda_gate + sigmoid(beta) first (vLLM Kimi-Linear path)",
    "fla_fused": "fla chunk_kda with the gate and sigmoid inside (use_gate_in_kernel)",
    "flash_kda": "FlashKDA (tokenspeed-flashkda) flash_kda.fwd, bounded gate",
}


def run(ctx: Context, workloads: List[Workload]) -> Iterator[dict]:
    dev = ctx.device
    fla_ok = ctx.baselines.get("fla", {}).get("available") and dev == "cuda"
    fk_ok = ctx.baselines.get("flash_kda", {}).get("available") and dev == "cuda"
    for art, gate, ws in kda_groups(workloads, ctx.gates):
        prog = None
        try:
            if ctx.out_of_time(5):
                raise TimeoutError("family time limit reached")
            prog = ctx.load(art)
        except Exception as e:  # noqa: BLE001
            yield from ctx.fail_group(ws, art, e, gate)
            continue
        for w in ws:
            row = ctx.new_row(w, art, gate)
            started = time.perf_counter()
            if ctx.skip_if_late(row, 2):
                yield ctx.close_row(row, started)
                continue
            ctx.run_guarded(row, "workload",
                            lambda: _run_one(ctx, row, w, art.spec.shape, gate, prog, fla_ok, fk_ok))
            prog = ctx.reload_if_failed(row, prog, art)
            ctx.close_row(row, started)
            log_row(row)
            yield row
            if dev == "cuda":
                torch.cuda.empty_cache()
        prog.close()
    if fla_ok:
        _record_fla_configs(ctx)


def _record_fla_configs(ctx) -> None:
    """fla-configs.json: whether fla's tuned configs (fla_tune.py) answered
    its autotune keys or it tuned in this run (the report says which)."""
    try:
        cov = fla_tune.coverage()
    except Exception as e:  # noqa: BLE001 - a report detail, not a row
        cov = {"error": f"{type(e).__name__}: {e}"[:300]}
    log(f"fla configs: {cov}")
    with open(os.path.join(ctx.out_dir, "fla-configs.json"), "w") as f:
        json.dump(cov, f, indent=1)


def make_inputs(dev: str, w: Workload, shape, gen) -> dict:
    """The row's tensors (module docstring), drawn from `gen`."""
    T, H, N = w.total, w.num_heads, w.batch
    K, V = shape["head_dim_k"], shape["head_dim_v"]
    bf = torch.bfloat16
    x = {}
    for name, width in (("q", K), ("k", K), ("v", V), ("g", K)):
        x[name] = torch.randn(T, H, width, generator=gen, device=dev).to(bf)
    regime = torch.arange(H, device=dev) % 3
    sd = torch.where(regime == 1, 4.0, 1.5)
    x["beta"] = (torch.randn(T, H, generator=gen, device=dev) * sd[None]).to(bf)
    u = lambda *s: torch.rand(*s, generator=gen, device=dev)
    a_fast = 0.01 + u(H) * (math.log(16.0) - 0.01)
    x["a_log"] = torch.where(regime == 2, -3.0 + u(H), a_fast).float().contiguous()
    lo = torch.where(regime == 2, -6.0, -5.0)[:, None]
    hi = torch.where(regime == 2, -4.0, -2.0)[:, None]
    x["dt_bias"] = (lo + (hi - lo) * u(H, K)).float().contiguous()
    cu = [0]
    for n in w.lengths:
        cu.append(cu[-1] + n)
    x["cu"] = cu
    x["cu_seqlens"] = torch.tensor(cu, dtype=torch.int32, device=dev)
    if w.initial_state:
        x["initial_state"] = torch.randn(N, H, K, V, generator=gen, device=dev)
    elif shape["initial_state"]:
        x["initial_state"] = torch.zeros(N, H, K, V, device=dev)
    else:
        x["initial_state"] = None
    return x


def _run_one(ctx, row, w: Workload, shape, gate, prog, fla_ok, fk_ok):
    dev = ctx.device
    T, H, N = w.total, w.num_heads, w.batch
    K, V = shape["head_dim_k"], shape["head_dim_v"]
    lb, scale = gate_args(shape, gate)
    gen = torch.Generator(device=dev).manual_seed(row["seed"])
    x = make_inputs(dev, w, shape, gen)
    row["inputs"] = {"sequences": N, "initial_state": "random" if w.initial_state else
                     ("zero" if x["initial_state"] is not None else "none")}

    with ctx.phase(row, "reference"):
        ref_o, ref_s = refs.kda_prefill(x["q"], x["k"], x["v"], x["g"], x["beta"], x["a_log"],
                                        x["dt_bias"], x["cu"], x["initial_state"], gate,
                                        lb if lb is not None else -5.0, scale,
                                        qk_l2norm=bool(shape["qk_l2norm"]), chunk=64)

    o = torch.full((T, H, V), float("nan"), dtype=torch.bfloat16, device=dev)
    fs = torch.full((N, H, K, V), float("nan"), dtype=torch.float32, device=dev)

    def loom():
        for name in ("q", "k", "v", "g", "beta"):
            prog.bind(name, x[name].data_ptr(), list(x[name].shape))
        prog.bind("a_log", x["a_log"].data_ptr())
        prog.bind("dt_bias", x["dt_bias"].data_ptr())
        prog.bind("cu_seqlens", x["cu_seqlens"].data_ptr(), [N + 1])
        if x["initial_state"] is not None:
            prog.bind("initial_state", x["initial_state"].data_ptr(), [N, H, K, V])
        prog.bind("o", o.data_ptr(), [T, H, V])
        prog.bind("final_state", fs.data_ptr(), [N, H, K, V])
        if dev == "cuda":
            torch.cuda.synchronize()
        with ctx.phase(row, "Loom first launch"):
            prog.run()
        check = checks.kda(o, fs, ref_o, ref_s, x["cu"])
        timing = ctx.timer.time_loom(prog)
        ctx.finish_loom(row, timing, check)
    ctx.run_guarded(row, "Loom", loom)

    if fla_ok:
        _fla(ctx, row, x, gate, lb, scale, ref_o, ref_s)
    else:
        for name in ("fla_vllm", "fla_fused"):
            ctx.finish_baseline(row, name, _LABELS[name], None, None,
                                error="not run: " + (ctx.baselines.get("fla", {}).get("why") or "no GPU"))
    if gate == "bounded":
        if fk_ok:
            _flash_kda(ctx, row, x, lb, scale, ref_o, ref_s, T, H, N, K, V)
        else:
            ctx.finish_baseline(row, "flash_kda", _LABELS["flash_kda"], None, None,
                                error="not run: " + (ctx.baselines.get("flash_kda", {}).get("why") or "no GPU"))


def gate_args(shape, gate):
    """(lower bound or None, scale) of a spec's shape for a gate."""
    lb = float(shape["lower_bound"]) if gate == "bounded" else None
    scale = float(shape["scale"]) if shape.get("scale") else shape["head_dim_k"] ** -0.5
    return lb, scale


def fla_calls(x, gate, lb, scale, out: dict) -> dict:
    """The two fla baselines as calls writing out["o"], out["s"] (the module
    docstring says what each computes); the fla warm-up runs the same ones."""
    from fla.ops.kda import chunk_kda
    from fla.ops.kda.gate import fused_kda_gate
    q4, k4, v4 = (x[n].unsqueeze(0) for n in ("q", "k", "v"))
    g4, b4 = x["g"].unsqueeze(0), x["beta"].unsqueeze(0)
    cu64 = x["cu_seqlens"].long()
    dt_flat = x["dt_bias"].reshape(-1)
    bounded = gate == "bounded"

    def vllm():
        g = fused_kda_gate(g4, x["a_log"], dt_flat, lower_bound=lb, output_dtype=torch.float32)
        beta = b4.float().sigmoid()
        out["o"], out["s"] = chunk_kda(q4, k4, v4, g, beta, scale=scale, initial_state=x["initial_state"],
                                       output_final_state=True, use_qk_l2norm_in_kernel=True,
                                       cu_seqlens=cu64, safe_gate=bounded)

    def fused():
        out["o"], out["s"] = chunk_kda(q4, k4, v4, g4, b4, scale=scale, initial_state=x["initial_state"],
                                       output_final_state=True, use_qk_l2norm_in_kernel=True,
                                       use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                                       A_log=x["a_log"], dt_bias=dt_flat, lower_bound=lb,
                                       safe_gate=bounded, cu_seqlens=cu64)

    return {"fla_vllm": vllm, "fla_fused": fused}


def _fla(ctx, row, x, gate, lb, scale, ref_o, ref_s):
    out = {}
    for name, fn in fla_calls(x, gate, lb, scale, out).items():
        try:
            with torch.inference_mode(), ctx.phase(row, name):
                fn()
                torch.cuda.synchronize()
                check = checks.kda(out["o"][0], out["s"], ref_o, ref_s, x["cu"])
                timing = ctx.timer.time_fn(fn)
            ctx.finish_baseline(row, name, _LABELS[name], timing, check)
        except Exception as e:  # noqa: BLE001
            log(f"  {row['key']}: {name} failed: {type(e).__name__}: {e}")
            ctx.finish_baseline(row, name, _LABELS[name], None, None, error=f"{type(e).__name__}: {e}"[:600])
        out.clear()


def _flash_kda(ctx, row, x, lb, scale, ref_o, ref_s, T, H, N, K, V):
    try:
        import flash_kda
        dev = ctx.device
        o = torch.full((1, T, H, V), float("nan"), dtype=torch.bfloat16, device=dev)
        init = x["initial_state"]
        init_t = init.transpose(-1, -2).contiguous() if init is not None else None
        fs_t = torch.full((N, H, V, K), float("nan"), dtype=torch.float32, device=dev)
        q4, k4, v4, g4, b4 = (x[n].unsqueeze(0) for n in ("q", "k", "v", "g", "beta"))
        # Every tensor on the device: fwd refuses host ones (cu_seqlens is
        # kept on the host for the reference).
        cu64 = x["cu_seqlens"].long().to(dev)
        a_log, dt_bias = x["a_log"].to(dev), x["dt_bias"].to(dev)

        def run():
            flash_kda.fwd(q4, k4, v4, g4, b4, scale, o, a_log, dt_bias, lb,
                          initial_state=init_t, final_state=fs_t, cu_seqlens=cu64)

        with torch.inference_mode(), ctx.phase(row, "flash_kda"):
            run()
            torch.cuda.synchronize()
            check = checks.kda(o[0], fs_t.transpose(-1, -2), ref_o, ref_s, x["cu"])
            timing = ctx.timer.time_fn(run)
        ctx.finish_baseline(row, "flash_kda", _LABELS["flash_kda"], timing, check)
    except Exception as e:  # noqa: BLE001
        log(f"  {row['key']}: flash_kda failed: {type(e).__name__}: {e}")
        ctx.finish_baseline(row, "flash_kda", _LABELS["flash_kda"], None, None,
                            error=f"{type(e).__name__}: {e}"[:600])
