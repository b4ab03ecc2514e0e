"""fla's tuned configs: its own autotuner's choices, saved once per GPU so a
matrix run does not spend a minute per KDA head count re-tuning fla.

fla reads `<kernel name>.json` files from FLA_CONFIG_DIR when FLA_CACHE_MODE
is set (fla/ops/utils/cache.py): {"autotune_entries": {md5 of the key:
{"autotune_key": [...], "config": {"kwargs", "num_warps", "num_stages",
"num_ctas", "maxnreg"}}}}, the key being Triton's autotune key (the values of
the kernel's key arguments, then the dtypes of its tensor arguments). In
"strict" mode an exact key match is used and anything else autotunes as
before, so a missing or stale file costs time, never correctness.

`python3 -m bench.matrix tune-fla --out DIR` (scripts/bench-matrix
--tune-fla on the GPU) fills them: per KDA head count and gate, fla's two
baseline calls once on the workload nearest 8192 tokens (the batch size
vLLM's chunked prefill schedules by default), which is where fla's autotuner
measures and chooses, then once on every other workload of the group (so a
kernel that only they reach is tuned too), writing the files after each
workload. The matrix then reports how many of fla's autotune keys came from the
files and which kernels still tuned in the run (`coverage`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict, Iterator, List, Optional

from .context import log
from .specs import KDA_GATES, kda_groups

# vLLM's default max_num_batched_tokens for chunked prefill: the batch size
# its first prefill (where fla autotunes) usually has.
TUNE_TOKENS = 8192
DEFAULT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fla-configs")


def _autotuners() -> Iterator:
    """Every Triton autotuner object fla's loaded modules define, once each."""
    from triton.runtime.autotuner import Autotuner
    seen = set()
    for name, mod in list(sys.modules.items()):
        if not (name == "fla" or name.startswith("fla.")) or mod is None:
            continue
        for value in list(vars(mod).values()):
            # @triton.heuristics wraps the autotuner: follow .fn down.
            obj, depth = value, 0
            while obj is not None and not isinstance(obj, Autotuner) and depth < 4:
                try:
                    obj = getattr(obj, "fn", None)
                except Exception:  # noqa: BLE001 - lazy module attributes may raise anything
                    obj = None
                depth += 1
            if isinstance(obj, Autotuner) and id(obj) not in seen:
                seen.add(id(obj))
                yield obj


def _kernel_name(tuner) -> str:
    """The name fla files the kernel's configs under (CachedAutotuner's)."""
    name = getattr(tuner, "kernel_name", None)
    if name:
        return name
    fn = tuner.fn
    return getattr(fn, "__name__", None) or fn.fn.__name__


def _key_hash(key) -> str:
    from fla.ops.utils.cache import AutotuneKey
    return AutotuneKey.key_hash(list(key))


def _config_json(cfg) -> dict:
    return {"kwargs": dict(cfg.kwargs), "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
            "num_ctas": getattr(cfg, "num_ctas", 1), "maxnreg": getattr(cfg, "maxnreg", None)}


def loadable(tuner) -> bool:
    """fla only reads its files for its own autotuner class."""
    from fla.ops.utils.cache import CachedAutotuner
    return isinstance(tuner, CachedAutotuner)


def export(out_dir: str, meta: dict) -> Dict[str, int]:
    """Merges every tuned key of fla's loaded autotuners into out_dir's
    `<kernel>.json` files; returns {kernel: entries in its file}. Kernels
    fla cannot load configs for are listed in _not_loadable.json."""
    os.makedirs(out_dir, exist_ok=True)
    counts, plain = {}, {}
    for tuner in _autotuners():
        if not tuner.cache:
            continue
        name = _kernel_name(tuner)
        if not loadable(tuner):
            plain[name] = len(tuner.cache)
            continue
        path = os.path.join(out_dir, f"{name}.json")
        doc = json.load(open(path)) if os.path.exists(path) else {"kernel_name": name, "autotune_entries": {}}
        doc.update({k: v for k, v in meta.items() if k != "tuned_on"})
        for key, cfg in tuner.cache.items():
            entry = {"autotune_key": list(key), "config": _config_json(cfg)}
            if "tuned_on" in meta:
                entry["tuned_on"] = meta["tuned_on"]
            doc["autotune_entries"].setdefault(_key_hash(key), entry)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
        counts[name] = len(doc["autotune_entries"])
    if plain:
        with open(os.path.join(out_dir, "_not_loadable.json"), "w") as f:
            json.dump(plain, f, indent=1, sort_keys=True)
    return counts


def coverage() -> dict:
    """After fla ran: how many of its autotune keys the config files
    answered and which kernels autotuned in this run (FLA_CONFIG_DIR,
    FLA_CACHE_MODE as fla read them)."""
    mode = os.environ.get("FLA_CACHE_MODE", "disabled")
    cdir = os.environ.get("FLA_CONFIG_DIR", "")
    out = {"mode": mode, "dir": cdir, "keys": 0, "from_files": 0, "tuned_in_run": []}
    for tuner in _autotuners():
        name = _kernel_name(tuner)
        path = os.path.join(cdir, f"{name}.json") if cdir else ""
        entries = (json.load(open(path)).get("autotune_entries") or {}) if path and os.path.exists(path) else {}
        for key, cfg in tuner.cache.items():
            out["keys"] += 1
            # The file's config, not just its key: fla autotunes anyway when
            # its config pruning rejects the file's choice.
            filed = entries.get(_key_hash(key), {}).get("config")
            if mode != "disabled" and loadable(tuner) and filed is not None and \
                    json.loads(json.dumps(_config_json(cfg))) == filed:
                out["from_files"] += 1
            elif name not in out["tuned_in_run"]:
                out["tuned_in_run"].append(name)
    return out


def _groups(workloads, gates=KDA_GATES) -> List[tuple]:
    """[(gate, [(artifact, workload), ...])] per head count and gate, in
    the matrix's order; the first pair is the one fla tunes on."""
    by: Dict[tuple, tuple] = {}
    for art, gate, ws in kda_groups(workloads, gates):
        for w in ws:
            by.setdefault((w.num_heads, gate), (art, gate, []))[2].append((art, w))
    out = []
    for art, gate, pairs in by.values():
        first = min(range(len(pairs)), key=lambda i: abs(pairs[i][1].total - TUNE_TOKENS))
        out.append((gate, [pairs[first]] + pairs[:first] + pairs[first + 1:]))
    return out


def tune(workloads, out_dir: str, deadline_s: Optional[float] = None, seed: int = 1,
         gates=KDA_GATES) -> int:
    """Runs fla's baselines once per workload, group by group (module
    docstring), exporting after each workload; stops starting groups when fewer than
    90 s are left of deadline_s. Returns 0 when every group was tuned. With
    FLA_CACHE_MODE=strict and FLA_CONFIG_DIR=out_dir it adds to the files:
    the keys they have are used, only the others tune."""
    import torch
    import triton
    from . import kda as kdamod
    import fla
    mode = os.environ.get("FLA_CACHE_MODE", "disabled")
    if mode not in ("disabled", "strict"):
        raise SystemExit(f"tune-fla: error: FLA_CACHE_MODE={mode}: only strict (keep the keys the files "
                         "have, tune the rest) or unset (tune every key) make fla's autotuner choose")
    t0 = time.monotonic()
    meta = {"gpu": torch.cuda.get_device_name(0), "triton_version": triton.__version__,
            "fla_version": getattr(fla, "__version__", ""), "date": time.strftime("%Y-%m-%d")}
    groups = _groups(workloads, gates)
    done = 0
    for gate, pairs in groups:
        if deadline_s and time.monotonic() - t0 > deadline_s - 90:
            log(f"tune-fla: {len(groups) - done} group(s) left at the deadline")
            break
        g0 = time.monotonic()
        for i, (art, w) in enumerate(pairs):
            shape = art.spec.shape
            lb, scale = kdamod.gate_args(shape, gate)
            gen = torch.Generator(device="cuda").manual_seed(seed)
            x = kdamod.make_inputs("cuda", w, shape, gen)
            res = {}
            for name, fn in kdamod.fla_calls(x, gate, lb, scale, res).items():
                s = time.monotonic()
                try:
                    with torch.inference_mode():
                        fn()
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001 - the matrix row will fail the same way
                    log(f"tune-fla: {w.name} {gate} {name} FAILED: {type(e).__name__}: {e}"[:400])
                if i == 0 or time.monotonic() - s > 5:
                    log(f"tune-fla: {w.name} {gate} {name}: {time.monotonic() - s:.1f} s")
            del x, res
            torch.cuda.empty_cache()
            # After each workload, so each new key names the one it was tuned on.
            try:
                counts = export(out_dir, dict(meta, tuned_on=f"{w.name} ({w.total} tokens), {gate} gate"))
            except Exception as e:  # noqa: BLE001 - keep tuning; the log has the configs
                log(f"tune-fla: export FAILED: {type(e).__name__}: {e}")
                counts = {}
        head = pairs[0][1]
        done += 1
        log(f"tune-fla: H={head.num_heads} {gate}: {len(pairs)} workload(s) in {time.monotonic() - g0:.1f} s; "
            f"{sum(counts.values())} entries in {len(counts)} files")
    for tuner in _autotuners():
        for key, cfg in tuner.cache.items():
            log(f"tune-fla: {_kernel_name(tuner)} {list(key)} -> {_config_json(cfg)}")
    return 0 if done == len(groups) else 1
