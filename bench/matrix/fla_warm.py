"""fla's Triton kernels compiled before the KDA rows, many at once.

fla autotunes each kernel of chunk_kda per head count, gate and state
(they are compile-time constants of its kernels), and Triton compiles every
candidate config of an autotuner one after the other on one core. On
2026-11-30 the first row of each head count took about 90 s of compiling,
so only 9 of the 34 KDA rows fitted the family's time.

Here one process per Loom program group (head count x gate; see
specs.kda_groups) runs both fla calls once on each of its workloads' shapes,
the groups in parallel (a process per core), which fills Triton's compile
cache (TRITON_CACHE_DIR). These processes run with FLA_CACHE_RESULTS=0:
their autotuning choices, made while the other processes share the GPU, are
not kept. The timed run autotunes again on a quiet GPU and loads each
candidate from the cache instead of compiling it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import List

from .context import log
from .specs import kda_groups
from .workloads import Workload


# A group with more workloads is split (round-robin by size) over processes:
# a shape can add compiles of its own, which then run side by side.
MAX_PER_PROCESS = 5


def plan(workloads: List[Workload]) -> List[dict]:
    """One entry per process: {"name", "gate", "keys"}, most work first."""
    out = []
    for art, gate, ws in kda_groups(workloads):
        ws = sorted(ws, key=lambda w: w.total)
        parts = -(-len(ws) // MAX_PER_PROCESS)
        for i in range(parts):
            mine = ws[i::parts]
            out.append({"name": f"{art.key}-{gate}" + (f"-{i + 1}" if parts > 1 else ""), "gate": gate,
                        "keys": [w.key for w in mine], "work": sum(w.total * w.num_heads for w in mine)})
    return sorted(out, key=lambda g: -g["work"])


def run_all(workloads: List[Workload], log_dir: str, jobs: int, limit_s: float) -> dict:
    """Runs every group's process (at most `jobs` at once) until done or
    `limit_s`; what is not compiled by then compiles in the timed run."""
    t0 = time.monotonic()
    todo = plan(workloads)
    os.makedirs(log_dir, exist_ok=True)
    env = dict(os.environ, FLA_CACHE_RESULTS="0")
    running, done = [], []
    summary = {"groups": len(todo), "jobs": jobs, "ok": 0, "failed": [], "unfinished": [],
               "seconds": 0.0}
    while todo or running:
        while todo and len(running) < jobs:
            g = todo.pop(0)
            name = g["name"]
            f = open(os.path.join(log_dir, f"warm-fla-{name}.log"), "w")
            cmd = [sys.executable, "-m", "bench.matrix", "warm-fla-group", "--gate", g["gate"],
                   "--subset", ",".join(g["keys"])]
            running.append((name, subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env),
                            f, time.monotonic()))
        for item in list(running):
            name, p, f, started = item
            if p.poll() is None:
                continue
            running.remove(item)
            f.close()
            took = time.monotonic() - started
            if p.returncode == 0:
                summary["ok"] += 1
            else:
                summary["failed"].append(f"{name} (exit {p.returncode}, logs/warm-fla-{name}.log)")
            done.append(f"{name} {took:.0f} s")
        if time.monotonic() - t0 > limit_s:
            for name, p, f, _ in running:
                p.kill()
                p.wait()
                f.close()
                summary["unfinished"].append(name)
            summary["unfinished"] += [f"{g['name']} (not started)" for g in todo]
            break
        time.sleep(0.5)
    summary["seconds"] = round(time.monotonic() - t0, 1)
    summary["took"] = done
    return summary


def run_group(workloads: List[Workload], gate: str) -> None:
    """Both fla calls once per workload, smallest first (this process's part
    of run_all); the inputs are random, only the shapes matter."""
    import torch
    from .kda import fla_calls, gate_args, make_inputs
    from .specs import artifact_for
    for w in sorted(workloads, key=lambda w: w.total):
        t = time.perf_counter()
        shape = artifact_for(w, gate).spec.shape
        gen = torch.Generator(device="cuda").manual_seed(1)
        x = make_inputs("cuda", w, shape, gen)
        lb, scale = gate_args(shape, gate)
        out = {}
        with torch.inference_mode():
            for fn in fla_calls(x, gate, lb, scale, out).values():
                fn()
                torch.cuda.synchronize()
                out.clear()
        del x
        torch.cuda.empty_cache()
        log(f"warm-fla {w.key}/{gate}: {time.perf_counter() - t:.1f} s")
