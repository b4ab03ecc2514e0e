"""Timing with device events, cold L2 for every timed call.

Every timed call starts with the L2 cache flushed: a *read* of a scratch
buffer of 4x the L2 size (a reduction, so no dirty lines are left to be
written back during the timed call), on the stream the call runs on. This
keeps the inputs out of L2 for every workload, also the small ones whose
inputs a rotation of a few input sets could not push out.

* Baselines, kernel-only (torch stream): the GPU is held by a spin kernel
  (torch.cuda._sleep) while the host enqueues a batch of [flush, event,
  call, event]; the spin is sized from the call's measured host enqueue
  time, so every call of the batch is queued before the GPU reaches it and
  its events time the kernels alone, not Python or launch overhead (fla's
  chunk_kda is some ten Triton launches: timed as called, a 512-token call
  measured its host, 965-1492 us against 119-136 us of kernels).
  A batch whose enqueue outran the spin (the GPU reached the end of the
  queue first, e.g. a call that synchronizes) is re-run with a longer one,
  and counted in `host_gaps` if it still does.
* Baselines with their host work (FlashInfer's plan() + run()): flush,
  event, call, event, back to back; the gap while the host plans is timed,
  which is the point.
* Loom (the runtime's own stream): flush, torch.cuda.synchronize(), launch,
  synchronize, and the runtime's device-event time of the launch
  (loomrt_program_last_launch_ns). Its events bracket the cooperative
  launch as the runtime issues it, so any host gap is charged to Loom.
  On a GPU it is measured a second time with queued launches
  (loomrt_program_set_queued_launch: the launch waits behind a gate the
  runtime opens once the kernel and both events are queued), which leaves
  the host's submission out as the kernel-only baselines' queueing does;
  that is `queued` in the result, kept apart from the primary time.

Warm-up calls first (module loads, JIT, autotuning), then a number of timed
calls chosen from the warm-up time to fit a time budget (at least
`min_reps`), median reported with p10/p90. On "cpu" (dry runs against the
host backend) the same loop uses wall clocks. torch is imported lazily.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Optional

DEFAULT_WARMUP = 2
DEFAULT_MIN_REPS = 5
DEFAULT_MAX_REPS = 50
DEFAULT_BUDGET_S = 0.4


def _torch():
    import torch
    return torch


def summarize(samples_us: List[float]) -> Dict[str, float]:
    s = sorted(samples_us)
    n = len(s)
    pick = lambda q: s[min(n - 1, max(0, int(round(q * (n - 1)))))]
    return {"time_us": statistics.median(s), "p10_us": pick(0.1), "p90_us": pick(0.9),
            "min_us": s[0], "reps": n}


class Timer:
    def __init__(self, device: str = "cuda", warmup: int = DEFAULT_WARMUP,
                 min_reps: int = DEFAULT_MIN_REPS, max_reps: int = DEFAULT_MAX_REPS,
                 budget_s: float = DEFAULT_BUDGET_S, flush_bytes: Optional[int] = None):
        self.device, self.warmup = device, warmup
        self.min_reps, self.max_reps, self.budget_s = min_reps, max_reps, budget_s
        self._scratch = None
        self.flush_bytes = 0
        if device == "cuda":
            torch = _torch()
            if flush_bytes is None:
                l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
                flush_bytes = 4 * max(int(l2), 50 << 20)
            self.flush_bytes = flush_bytes
            self._scratch = torch.ones(flush_bytes // 4, dtype=torch.float32, device="cuda")

    def describe(self) -> dict:
        return {"method": "median of per-call device-event times, L2 flushed (read of "
                          f"{self.flush_bytes >> 20} MiB) before every timed call; Loom: the "
                          "runtime's launch events; baselines: torch events around the call, "
                          "queued behind a spin kernel so that no host time is timed (kernel-only), "
                          "except FlashInfer with plan (host planning included)"
                          if self.device == "cuda" else "wall clock (cpu dry run)",
                "flush_bytes": self.flush_bytes, "warmup": self.warmup, "min_reps": self.min_reps,
                "max_reps": self.max_reps, "budget_s_per_measurement": self.budget_s}

    def flush(self) -> None:
        if self._scratch is not None:
            self._scratch.sum()

    def _reps(self, warm_s: float) -> int:
        per = max(warm_s, 1e-6)
        return int(min(self.max_reps, max(self.min_reps, self.budget_s / per)))

    def time_fn(self, fn: Callable[[], object], host_work: bool = False) -> Dict[str, float]:
        """A baseline call on the current torch stream: its kernels alone
        (queued behind a spin), or with `host_work` the host time between
        its kernels too (module docstring)."""
        t0 = time.perf_counter()
        for _ in range(self.warmup):
            fn()
        if self.device == "cuda":
            torch = _torch()
            torch.cuda.synchronize()
            warm = (time.perf_counter() - t0) / max(self.warmup, 1)
            n = self._reps(warm)
            if host_work:
                ev = self._enqueue(fn, n)
                torch.cuda.synchronize()
                return summarize([s.elapsed_time(e) * 1e3 for s, e in ev])
            return self._time_queued(fn, n)
        warm = (time.perf_counter() - t0) / max(self.warmup, 1)
        samples = []
        for _ in range(self._reps(warm)):
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1e6)
        return summarize(samples)

    def _enqueue(self, fn, n: int) -> list:
        torch = _torch()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
        for s, e in ev:
            self.flush()
            s.record()
            fn()
            e.record()
        return ev

    def _spin_cycles_per_us(self) -> float:
        """torch.cuda._sleep's cycles per microsecond on this GPU (measured once)."""
        if getattr(self, "_cycles_per_us", None) is None:
            torch = _torch()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            cycles = 20_000_000
            s.record()
            torch.cuda._sleep(cycles)
            e.record()
            e.synchronize()
            self._cycles_per_us = cycles / max(s.elapsed_time(e) * 1e3, 1.0)
        return self._cycles_per_us

    def _time_queued(self, fn, n: int) -> Dict[str, float]:
        torch = _torch()
        rate = self._spin_cycles_per_us()
        # The host's time to enqueue one timed call, measured while the GPU
        # spins (so no wait on the GPU is in it).
        torch.cuda._sleep(int(50_000 * rate))
        t = time.perf_counter()
        self._enqueue(fn, 1)
        enqueue_us = (time.perf_counter() - t) * 1e6
        torch.cuda.synchronize()
        # Batches of about 50 ms of enqueueing, each behind a spin of twice that.
        batch = max(1, min(n, int(50_000 / max(enqueue_us, 1.0))))
        samples, gapped, done, queue = [], 0, 0, True
        while done < n:
            b = min(batch, n - done)
            ev, outran = None, True
            spin_us = 2 * b * enqueue_us + 1000
            for _ in range(3 if queue else 0):
                torch.cuda._sleep(int(spin_us * rate))
                spun = torch.cuda.Event()
                spun.record()
                ev = self._enqueue(fn, b)
                outran = spun.query()  # the spin is over: the GPU may have waited on the host
                torch.cuda.synchronize()
                if not outran:
                    break
                spin_us *= 4
            if outran:  # a call that waits on the GPU cannot be queued: time the rest as called
                queue = False
                if ev is None:
                    ev = self._enqueue(fn, b)
                    torch.cuda.synchronize()
                gapped += b
            samples += [s.elapsed_time(e) * 1e3 for s, e in ev]
            done += b
        out = summarize(samples)
        out["host_enqueue_us"] = enqueue_us
        out["host_gaps"] = gapped  # timed calls that may include host time
        return out

    def time_loom(self, program) -> Dict[str, float]:
        """A Loom program (bound already): the runtime's device time per
        launch as issued, and on a GPU also queued (`queued`: its timing, or
        `error` where the runtime cannot queue or a queued launch failed).
        The second measurement never costs the first: a failure there is
        recorded, and `program_failed` asks the caller to load the program
        again (a failed launch leaves it refusing launches)."""
        out = self._time_launches(program)
        if self.device != "cuda":
            return out
        try:
            program.set_queued_launch(True)
        except Exception as e:  # noqa: BLE001 - LoomrtError says which call and why
            out["queued"] = {"error": str(e)[:300]}
            return out
        try:
            q = self._time_launches(program)
            out["queued"] = {k: q[k] for k in ("time_us", "p10_us", "p90_us", "min_us", "reps")}
        except Exception as e:  # noqa: BLE001
            out["queued"] = {"error": str(e)[:300]}
            out["program_failed"] = True
        try:
            program.set_queued_launch(False)
        except Exception:  # noqa: BLE001 - a failed program refuses it too; reloaded anyway
            out["program_failed"] = True
        return out

    def _time_launches(self, program) -> Dict[str, float]:
        sync = _torch().cuda.synchronize if self.device == "cuda" else (lambda: None)
        t0 = time.perf_counter()
        for _ in range(self.warmup):
            sync()
            program.run()
        warm = (time.perf_counter() - t0) / max(self.warmup, 1)
        samples, host = [], []
        for _ in range(self._reps(warm)):
            self.flush()
            sync()
            t = time.perf_counter()
            ns = program.run()
            host.append((time.perf_counter() - t) * 1e6)
            samples.append(ns / 1e3)
        out = summarize(samples)
        out["host_wall_us"] = statistics.median(host)
        return out


def copy_bandwidth_gbps(device: str = "cuda", nbytes: int = 2 << 30, reps: int = 20) -> Dict[str, float]:
    """Device-to-device copy bandwidth, bytes read + written per second (the
    roofline of this run). Median of `reps` copies of `nbytes`."""
    if device != "cuda":
        return {"gbps": 0.0, "bytes": 0, "reps": 0}
    torch = _torch()
    src = torch.ones(nbytes // 2, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    t = statistics.median(times)
    del src, dst
    return {"gbps": 2 * nbytes / t / 1e9, "bytes": 2 * nbytes, "reps": reps,
            "median_ms": t * 1e3}
