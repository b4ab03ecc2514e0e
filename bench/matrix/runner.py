"""Runs one family: sets up the device, timer, copy bandwidth and baselines,
writes env-<family>.json, then the family's rows (rows-<family>.jsonl)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from typing import List, Optional

from . import baselines as bl
from .context import Context, log
from .specs import KDA_GATES
from .workloads import FAMILIES, Workload, load_all, select

# One small workload per family for --smoke (every artifact they need is in
# the full set): MLA page size 1 and 64 (FlashMLA), KDA both gates, a
# one-layer Llama.
SMOKE = {"mla_decode": "trace/15,h16_ps64/0", "kda_prefill": "b1_t512_h32",
         "decoder": "decoder/llama3_8b/layers=1/batch=1/context=1024"}
FAMILY_BASELINES = {"mla_decode": ("flashinfer", "flash_mla"), "kda_prefill": ("fla", "flash_kda"),
                    "decoder": ("flashinfer",)}


def _module(family: str):
    if family == "mla_decode":
        from . import mla
        return mla
    if family == "kda_prefill":
        from . import kda
        return kda
    from . import decoder
    return decoder


def _commit(root: str) -> str:
    if os.environ.get("LOOM_BENCH_COMMIT"):
        return os.environ["LOOM_BENCH_COMMIT"]
    path = os.path.join(root, ".bench", "commit")
    if os.path.exists(path):
        return open(path).read().strip()
    try:
        return subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info(device: str) -> dict:
    info = {"host": platform.node(), "cpu_count": os.cpu_count()}
    if device != "cuda":
        info["gpu"] = "none (cpu dry run on the host backend)"
        return info
    import torch
    p = torch.cuda.get_device_properties(0)
    info.update({"gpu": p.name, "sm_count": p.multi_processor_count,
                 "memory_bytes": p.total_memory, "l2_bytes": getattr(p, "L2_cache_size", None),
                 "capability": f"{p.major}.{p.minor}"})
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True, timeout=20).stdout.strip().split("\n")[0]
    except (OSError, subprocess.SubprocessError):
        info["driver"] = ""
    return info


def software_info() -> dict:
    out = {"python": platform.python_version()}
    try:
        import torch
        out["torch"], out["cuda"] = torch.__version__, torch.version.cuda
    except ImportError:
        pass
    try:
        import triton
        out["triton"] = triton.__version__
    except ImportError:
        pass
    return out


def wait_for(path: str, limit_s: float) -> bool:
    t = time.monotonic()
    if not os.path.exists(path):
        log(f"waiting for the FlashInfer JIT warm-up ({path}) ...")
    while not os.path.exists(path):
        if time.monotonic() - t > limit_s:
            log(f"FlashInfer warm-up not done after {limit_s:.0f} s; going on (modules build on first use)")
            return False
        time.sleep(1.0)
    return True


def run_family(family: str, *, out: str, subset: Optional[str], smoke: bool, device: str,
               target: str, loom_kind: str, artifacts: str, seed: int, time_limit: Optional[float],
               wait_warm: Optional[str], wait_limit: float = 240.0,
               workloads_dir: Optional[str] = None, gates=KDA_GATES) -> List[dict]:
    from . import timing
    t0 = time.monotonic()
    os.makedirs(out, exist_ok=True)
    rows_path = os.path.join(out, f"rows-{family}.jsonl")
    if os.path.exists(rows_path):
        os.remove(rows_path)
    every = load_all(workloads_dir) if workloads_dir else load_all()
    ws: List[Workload] = select(every[family], SMOKE[family] if smoke and not subset else subset)
    log(f"{family}: {len(ws)} workload(s), seed {seed}, device {device}, target {target}, "
        f"time limit {time_limit or 'none'} s")
    if device == "cuda":
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.init()
    timer = (timing.Timer(device, warmup=1, min_reps=3, max_reps=10, budget_s=0.1) if smoke
             else timing.Timer(device))
    copy = timing.copy_bandwidth_gbps(device)
    if copy["gbps"]:
        log(f"copy bandwidth {copy['gbps']:.0f} GB/s (read + write, median of {copy['reps']})")
    if wait_warm and device == "cuda" and "flashinfer" in FAMILY_BASELINES[family]:
        wait_for(wait_warm, min(wait_limit, 0.5 * time_limit) if time_limit else wait_limit)
    probes = bl.probe_all(FAMILY_BASELINES[family]) if device == "cuda" else {
        n: {"available": False, "package": bl.PACKAGES[n], "version": "", "why": "cpu dry run"}
        for n in FAMILY_BASELINES[family]}
    for n, p in probes.items():
        log(f"baseline {n} ({p['package']} {p['version'] or '-'}): "
            f"{'ok' if p['available'] else 'NOT AVAILABLE: ' + p['why']}")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {"family": family, "date": time.strftime("%Y-%m-%d"), "machine": machine_info(device),
           "software": software_info(), "commit": _commit(root), "copy": copy,
           "timing": timer.describe(), "baselines": probes, "seed": seed, "smoke": smoke,
           "subset": subset, "target": target}
    try:
        from .loomrt import Runtime
        env["software"]["loomrt"] = Runtime().version()
    except Exception as e:  # noqa: BLE001 - the rows will say why Loom did not run
        env["software"]["loomrt"] = f"unavailable: {e}"
    with open(os.path.join(out, f"env-{family}.json"), "w") as f:
        json.dump(env, f, indent=1)
    remaining = None if time_limit is None else max(1.0, time_limit - (time.monotonic() - t0))
    ctx = Context(device=device, loom_kind=loom_kind, target=target, artifacts_dir=artifacts, out_dir=out,
                  seed=seed, timer=timer, copy_gbps=copy["gbps"], baselines=probes,
                  time_limit_s=remaining, smoke=smoke, gates=gates)
    rows = list(_module(family).run(ctx, ws))
    n_pass = sum(r["status"] == "pass" for r in rows)
    log(f"{family}: {n_pass}/{len(rows)} rows pass, {time.monotonic() - t0:.0f} s")
    return rows
