"""What a family run shares: the device, the Loom runtime, the timer, the
baselines that imported, the time limit, logging, and the row records.

A row is one workload (KDA: one workload and gate) on one chip: Loom's time
and check, each baseline's time, check and speedup, the bytes and FLOPs
(cost.py) and what they make of the times. report.py reads rows only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from typing import Dict, Optional

from . import cost as costmod
from .specs import KDA_GATES, Artifact

# Baselines timed with their host work (FlashInfer's plan() + run() per
# call): compared with Loom's time as issued, never its queued time.
HOST_TIMED = {"flashinfer_with_plan"}
from .workloads import Workload


def log(msg: str) -> None:
    print(f"[matrix {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def row_seed(base: int, key: str) -> int:
    """A per-row seed from the run's seed and the row key (printed with the row)."""
    return (base * 1_000_003 + int(hashlib.sha1(key.encode()).hexdigest()[:8], 16)) % (2 ** 31)


def short_error(e: BaseException, limit: int = 600) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= limit else text[:limit] + " ..."



# See finish_baseline: how far past Loom's bound a baseline may be and still
# count as computing the same function.
AGREE_FACTOR = 2.0

class Context:
    def __init__(self, *, device: str, loom_kind: str, target: str, artifacts_dir: str,
                 out_dir: str, seed: int, timer, copy_gbps: float, baselines: Dict[str, dict],
                 time_limit_s: Optional[float] = None, smoke: bool = False,
                 watchdog_ms: int = 60000, gates=KDA_GATES):
        self.device, self.loom_kind, self.target = device, loom_kind, target
        self.artifacts_dir, self.out_dir, self.seed = artifacts_dir, out_dir, seed
        self.timer, self.copy_gbps, self.baselines = timer, copy_gbps, baselines
        self.smoke, self.watchdog_ms = smoke, watchdog_ms
        self.gates = gates  # KDA: the gates to run
        self.deadline = time.monotonic() + time_limit_s if time_limit_s else None
        self._rt = None
        self._loom_device = None

    # -- Loom ---------------------------------------------------------------
    def loom_device(self):
        if self._loom_device is None:
            from .loomrt import Runtime
            self._rt = Runtime()
            self._loom_device = self._rt.device(self.loom_kind, 0)
            log(f"loomrt {self._rt.version()} from {self._rt.path}: {self._loom_device.describe()}")
        return self._loom_device

    def load(self, art: Artifact):
        path = art.so_path(self.artifacts_dir, self.target)
        if not os.path.exists(path):
            raise FileNotFoundError(f"artifact {path} missing: run scripts/bench-prepare "
                                    f"(loomc {art.spec.path} --target={self.target} --emit=artifact "
                                    f"-o {os.path.dirname(path)} {' '.join(art.args)})")
        t = time.perf_counter()
        prog = self.loom_device().load(path, watchdog_ms=self.watchdog_ms)
        log(f"loaded {os.path.relpath(path)} in {time.perf_counter() - t:.2f} s "
            f"(workspace {prog.workspace_bytes() / 2**30:.2f} GiB)")
        return prog

    def reload_if_failed(self, row: dict, prog, art: Artifact):
        """A program whose launch failed refuses further launches (loomrt.h):
        load it again for the next rows. A device fault leaves the context
        unusable; the reload then fails and the next rows say so."""
        if not row.pop("_loom_failed", False):
            return prog
        try:
            prog.close()
        except Exception:  # noqa: BLE001 - it failed already; its error is in the row
            pass
        log(f"  reloading {art.key} after the failed launch")
        try:
            return self.load(art)
        except Exception as e:  # noqa: BLE001
            log(f"  reload of {art.key} failed: {short_error(e)}")
            return _Unloaded(f"reload after a failed launch failed: {short_error(e)}")

    # -- time limit ---------------------------------------------------------
    def time_left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self, reserve_s: float = 0.0) -> bool:
        return self.time_left() <= reserve_s

    # -- rows -----------------------------------------------------------------
    def new_row(self, w: Workload, art: Optional[Artifact], gate: Optional[str] = None) -> dict:
        key = w.key + (f"/{gate}" if gate else "")
        shape = dict(art.spec.shape) if art else {}
        with_state = bool(w.initial_state)
        c = costmod.cost(w, shape, with_state) if art else {"bytes": 0, "flops": 0, "parts": {}}
        return {
            "family": w.family, "key": key, "workload_key": w.key, "name": w.name + (f" {gate}" if gate else ""),
            "gate": gate, "source": w.source, "spec": art.spec.name if art else None,
            "spec_path": art.spec.path if art else None, "artifact": art.key if art else None,
            "batch": w.batch, "tokens": w.total,
            "lengths": w.lengths if len(w.lengths) <= 256 else None,
            "bytes": c["bytes"], "flops": c["flops"], "bytes_parts": c["parts"],
            "status": "error", "why": "", "seed": row_seed(self.seed, key),
            "loom": None, "baselines": {}, "inputs": {}, "elapsed_s": 0.0,
        }

    def finish_loom(self, row: dict, timing: dict, check: dict) -> None:
        """Loom's row entry. Its primary time is the queued launch's when the
        runtime could queue it (no host time, as the kernel-only baselines
        are timed), with the time as issued kept under `as_issued`; else the
        time as issued (`launch` says which)."""
        timing = dict(timing)
        if timing.pop("program_failed", False):  # after its timing: reload it
            row["_loom_failed"] = True
        queued = timing.pop("queued", None)
        if queued and "time_us" in queued:
            primary = dict(queued, launch="queued", as_issued=timing)
        else:
            primary = dict(timing, launch="as issued")
            if queued:
                primary["queued"] = queued  # why it could not be queued
        row["loom"] = dict(primary, **self.derived(row, primary["time_us"]), check=check)

    def fail_group(self, ws, art, e: Exception, gate=None):
        """Rows for every workload of a group whose setup (program load, shared
        inputs) raised: skipped past the time limit (TimeoutError), else error."""
        for w in ws:
            row = self.new_row(w, art, gate)
            row["status"] = "skipped" if isinstance(e, TimeoutError) else "error"
            row["why"] = f"{type(e).__name__}: {e}"
            yield self.close_row(row, time.perf_counter())

    def skip_if_late(self, row: dict, margin_s: float) -> bool:
        """Marks the row skipped when fewer than margin_s seconds are left."""
        if not self.out_of_time(margin_s):
            return False
        row["status"], row["why"] = "skipped", "family time limit reached"
        return True

    def finish_baseline(self, row: dict, name: str, label: str, timing: Optional[dict],
                        check: Optional[dict], error: Optional[str] = None, impl: str = "") -> None:
        b = {"label": label, "impl": impl}
        if timing:
            b.update(timing)
            b.update(self.derived(row, timing["time_us"]))
        if check is not None:
            b["check"] = check
            b["ok"] = bool(check.get("ok"))
            # A baseline is held to Loom's bounds ("ok"), but its speedup
            # counts in the geometric means when it computes the same
            # function: every metric within AGREE_FACTOR x the bound (bf16
            # baselines such as fla land near the 5e-3 KDA bound).
            b["agrees"] = all(m.get("value") is not None and m["value"] <= AGREE_FACTOR * m["bound"]
                              for m in check.get("metrics", {}).values())
        if error:
            b["error"] = error
            b["ok"] = False
            b["agrees"] = False
        row["baselines"][name] = b

    def derived(self, row: dict, time_us: float) -> dict:
        if not time_us or time_us <= 0:
            return {}
        out = {"gbps": row["bytes"] / (time_us * 1e-6) / 1e9,
               "tflops": row["flops"] / (time_us * 1e-6) / 1e12}
        if self.copy_gbps:
            roof_us = row["bytes"] / (self.copy_gbps * 1e9) * 1e6
            out["roofline_us"] = roof_us
            out["roofline_fraction"] = roof_us / time_us
        return out

    def close_row(self, row: dict, started: float) -> dict:
        """Status, speedups; written to rows-<family>.jsonl at once."""
        row["elapsed_s"] = round(time.perf_counter() - started, 3)
        loom = row.get("loom") or {}
        if row["status"] != "skipped":
            if not loom or "time_us" not in loom:
                row["status"] = "error"
            elif loom.get("check", {}).get("ok"):
                row["status"] = "pass"
            else:
                row["status"] = "fail"
                row["why"] = row["why"] or "Loom's output does not match the reference: " + \
                    _summary(loom.get("check", {}))
        # Baselines timed with their host work compare with Loom as issued.
        lt = loom.get("time_us")
        issued = (loom.get("as_issued") or {}).get("time_us") or lt
        for name, b in row["baselines"].items():
            t = issued if name in HOST_TIMED else lt
            if t and b.get("time_us"):
                b["speedup"] = b["time_us"] / t
        self.write_row(row)
        return row

    def write_row(self, row: dict) -> None:
        os.makedirs(self.out_dir, exist_ok=True)
        with open(os.path.join(self.out_dir, f"rows-{row['family']}.jsonl"), "a") as f:
            f.write(json.dumps(row, default=_jsonable) + "\n")

    @contextmanager
    def phase(self, row: dict, name: str):
        """Adds the wall time of the block to row["phase_s"][name]: where a
        row's time goes (JIT, autotuning, the reference, timing)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            phases = row.setdefault("phase_s", {})
            phases[name] = round(phases.get(name, 0.0) + time.perf_counter() - t, 3)

    def run_guarded(self, row: dict, what: str, fn):
        """Runs fn(); an exception becomes the row's error (Loom) and is logged."""
        try:
            with self.phase(row, what):
                return fn()
        except Exception as e:  # noqa: BLE001 - a failed row, reported, not a crash
            row["why"] = (row["why"] + "; " if row["why"] else "") + f"{what}: {short_error(e)}"
            if what == "Loom":
                row["_loom_failed"] = True
            log(f"  {row['key']}: {what} failed: {short_error(e)}")
            if os.environ.get("LOOM_BENCH_TRACEBACK"):
                traceback.print_exc(file=sys.stdout)
            return None


class _Unloaded:
    """Stands for a program that could not be loaded again: every use raises."""

    def __init__(self, why: str):
        self.why = why

    def close(self) -> None:
        pass

    def __getattr__(self, name):
        raise RuntimeError(f"Loom program unavailable: {self.why}")


def _summary(check: dict) -> str:
    parts = []
    for name, m in (check.get("metrics") or {}).items():
        if not m.get("ok"):
            v = m["value"]
            parts.append(f"{name} {v:.3g} > {m['bound']:.3g}" if isinstance(v, float) else f"{name} {v}")
    return ", ".join(parts) or check.get("note", "")


def _jsonable(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


# A row slower than this shows where its time went in the log line.
SLOW_ROW_S = 5.0


def log_row(row: dict) -> None:
    """One line per finished row."""
    loom = row.get("loom") or {}
    parts = [f"{row['status'].upper():5s} {row['key']}"]
    if loom.get("time_us"):
        parts.append(f"loom {loom['time_us']:.1f} us")
        if "roofline_fraction" in loom:
            parts.append(f"{100 * loom['roofline_fraction']:.1f}% of roofline")
    for name, b in row["baselines"].items():
        if b.get("time_us"):
            ok = "" if b.get("ok", True) else " (check FAILED)"
            parts.append(f"{name} {b['time_us']:.1f} us x{b.get('speedup', 0):.2f}{ok}")
        elif b.get("error"):
            parts.append(f"{name} error")
    if row["status"] != "pass" and row.get("why"):
        parts.append(f"-- {row['why']}")
    if row.get("elapsed_s", 0) >= SLOW_ROW_S:
        parts.append(f"{row['elapsed_s']:.0f} s: " + ", ".join(
            f"{k} {v:.1f}" for k, v in row.get("phase_s", {}).items() if k != "workload"))
    log("  " + " | ".join(parts))
