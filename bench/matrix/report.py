"""matrix.json, matrix.md and the PNG plots, from the rows a run wrote.

Input (one folder): rows-<family>.jsonl (context.py writes a row as soon as
it is done, so a family stopped by its time limit still reports what it
ran), env-<family>.json (machine, versions, copy bandwidth, baselines,
timing), and optionally warm.json (FlashInfer JIT), targets.json
(bench-prepare: which artifacts compiled for b200/mi350x) and model.json
(loom-model --json: schema loom-model/1). The JSON schema is README.md's.
No torch; matplotlib only for the plots (skipped, and said, without it).
"""

from __future__ import annotations

import glob
import json
import math
import os
import time
from typing import Dict, List, Optional

from .workloads import FAMILIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCHEMA = "loom-bench-matrix/1"
# Per family: the baselines in table order, and the one the roofline plot shows.
BASELINES = {
    "mla_decode": ["flashinfer_kernel", "flashinfer_with_plan", "flash_mla"],
    "kda_prefill": ["fla_vllm", "fla_fused", "flash_kda"],
    "decoder": ["per_op_graph"],
}
SHORT = {"flashinfer_kernel": "FlashInfer kernel-only", "flashinfer_with_plan": "FlashInfer with plan",
         "flash_mla": "FlashMLA", "fla_vllm": "fla (vLLM path)", "fla_fused": "fla (gate in kernel)",
         "flash_kda": "FlashKDA", "per_op_graph": "per-op CUDA graph"}
TITLES = {"mla_decode": "MLA paged decode", "kda_prefill": "KDA prefill", "decoder": "Decoder layers"}
MODEL_TARGETS = ("b200", "mi350x")


def geomean(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _read_json(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_rows(folder: str) -> List[dict]:
    rows = []
    for fam in FAMILIES:
        path = os.path.join(folder, f"rows-{fam}.jsonl")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except ValueError:  # a process killed mid-write: the rest is intact
                        pass
    return rows


def family_summary(family: str, rows: List[dict]) -> dict:
    rs = [r for r in rows if r["family"] == family]
    out = {"rows": len(rs)}
    for st in ("pass", "fail", "error", "skipped"):
        out[st] = sum(r["status"] == st for r in rs)
    gm, n = {}, {}
    for b in BASELINES[family]:
        # Rows where Loom passed its check and the baseline agrees with the
        # reference (within AGREE_FACTOR x Loom's bounds; see context.py).
        sp = [r["baselines"][b]["speedup"] for r in rs
              if r["status"] == "pass" and b in r["baselines"]
              and r["baselines"][b].get("agrees", r["baselines"][b].get("ok"))
              and r["baselines"][b].get("speedup")]
        gm[b], n[b] = geomean(sp), len(sp)
    out["geomean_speedup"] = gm
    out["geomean_rows"] = n
    fr = [r["loom"]["roofline_fraction"] for r in rs
          if r["status"] == "pass" and r.get("loom") and r["loom"].get("roofline_fraction")]
    out["loom_roofline_fraction_geomean"] = geomean(fr)
    out["loom_as_issued"] = _as_issued_summary(rs)
    return out


def _as_issued_summary(rs: List[dict]) -> Optional[dict]:
    """Loom's time as issued (the host's submission inside) against its
    primary, queued time (context.finish_loom), over the passing rows that
    have both; None when none does (a run on the host, or rows of a runtime
    that could not queue)."""
    rs = [r for r in rs if r["status"] == "pass" and (r.get("loom") or {}).get("launch") == "queued"
          and isinstance(((r["loom"].get("as_issued") or {}).get("time_us")), (int, float))]
    if not rs:
        return None
    return {"rows": len(rs),
            "time_ratio_geomean": geomean([r["loom"]["as_issued"]["time_us"] / r["loom"]["time_us"] for r in rs])}


def _model_index(model: Optional[dict]) -> Dict[str, dict]:
    if not model or not isinstance(model.get("workloads"), dict):
        return {}
    return model["workloads"]


def build(folder: str, model_path: Optional[str] = None, targets_path: Optional[str] = None) -> dict:
    rows = read_rows(folder)
    envs = {}
    for path in sorted(glob.glob(os.path.join(folder, "env-*.json"))):
        env = _read_json(path)
        if env:
            envs[os.path.basename(path)[4:-5]] = env
    first = next(iter(envs.values()), {})
    model = _read_json(model_path) if model_path else None
    targets = _read_json(targets_path) if targets_path else None
    mindex = _model_index(model)
    for r in rows:
        m = mindex.get(r.get("workload_key", ""))
        if m and isinstance(m.get("estimate"), dict):
            r["model_us"] = {t: m["estimate"][t].get("time_us") for t in m["estimate"]}
    families = sorted({r["family"] for r in rows}, key=FAMILIES.index)
    doc = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "date": first.get("date") or time.strftime("%Y-%m-%d"),
        "machine": first.get("machine", {}),
        "software": first.get("software", {}),
        "commit": first.get("commit", ""),
        "copy_gbps": {f: e.get("copy", {}).get("gbps") for f, e in envs.items()},
        "timing": first.get("timing", {}),
        # Each family's env names only its own baselines: all of them here.
        "baselines": {n: b for e in envs.values() for n, b in (e.get("baselines") or {}).items()},
        "warm": _read_json(os.path.join(folder, "warm.json")),
        # A Loom variant's run (scripts/bench-matrix --variant): its name and
        # the nvcc flags its artifacts were built with; null for the default.
        "variant": _read_json(os.path.join(folder, "variant.json")),
        "fla_configs": _read_json(os.path.join(folder, "fla-configs.json")),
        "families": {f: family_summary(f, rows) for f in families},
        "targets": _targets(rows, targets, model),
        "rows": rows,
    }
    return doc


def _fla_configs_line(fc: dict) -> str:
    if fc.get("error"):
        return f"fla configs: not recorded ({fc['error']})."
    src = (f"its tuned configs ({os.path.relpath(fc['dir'], ROOT) if fc.get('dir') else '?'}, "
           f"FLA_CACHE_MODE={fc.get('mode')})" if fc.get("mode") not in (None, "disabled")
           else "no tuned configs (fla autotuned on each head count's first call)")
    tuned = ", ".join(fc.get("tuned_in_run") or []) or "none"
    return (f"fla ran with {src}: {fc.get('from_files', 0)} of its {fc.get('keys', 0)} autotune keys "
            f"from the files; kernels that autotuned in the run: {tuned}.")


def _targets(rows, targets: Optional[dict], model: Optional[dict]) -> dict:
    out = {"h200": {"status": "measured", "rows": len(rows)}}
    for t in MODEL_TARGETS:
        built = (targets or {}).get(t)
        entry = {"status": "compiled, not run" if built else "not compiled in this run",
                 "artifacts": built or {}}
        if model and t in (model.get("chips") or {}):
            entry["model"] = {"label": model.get("label", "model, not measured"),
                              "chip": model["chips"][t],
                              "rows_with_estimate": sum(1 for r in rows if (r.get("model_us") or {}).get(t))}
        else:
            entry["model"] = None
            entry["model_note"] = ("no loom-model output (bench-prepare runs build/bin/loom-model "
                                   "--json when it is built)")
        out[t] = entry
    return out


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

def _f(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:.0f}"
    return str(x)


def _us(x) -> str:
    if not x:
        return "–"
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _check_cell(c: Optional[dict]) -> str:
    if not c:
        return "–"
    if c.get("ok"):
        return "ok"
    bad = [f"{n} {_f(m['value'])}" for n, m in (c.get("metrics") or {}).items() if not m.get("ok")]
    return "**FAIL** " + ", ".join(bad or [c.get("note", "")])


def markdown(doc: dict) -> str:
    m, sw = doc.get("machine", {}), doc.get("software", {})
    L = [f"# Loom benchmark matrix — {m.get('gpu', '?')}, {doc['date']}", ""]
    L.append(f"GPU {m.get('gpu', '?')} ({m.get('sm_count', '?')} SMs, L2 {_f((m.get('l2_bytes') or 0) / 2**20)} MiB), "
             f"driver {m.get('driver', '?')}; torch {sw.get('torch', '?')} (CUDA {sw.get('cuda', '?')}), "
             f"triton {sw.get('triton', '?')}, Python {sw.get('python', '?')}; loomrt {sw.get('loomrt', '?')}; "
             f"commit {doc.get('commit') or '?'}.")
    v = doc.get("variant")
    if v:
        L.append(f"**Loom variant `{v.get('name', '?')}`**: its artifacts built with nvcc flags "
                 f"`{v.get('nvcc_flags', '')}` (scripts/bench-prepare, LOOM_BENCH_VARIANTS); compare it "
                 "with a default run by `python3 -m bench.matrix compare DEFAULT_RUN THIS_RUN`.")
    cb = {f: g for f, g in (doc.get("copy_gbps") or {}).items() if g}
    if cb:
        L.append("Measured device-to-device copy bandwidth in this run (read + write, the roofline): "
                 + ", ".join(f"{f} {g:.0f} GB/s" for f, g in cb.items()) + ".")
    t = doc.get("timing", {})
    if t:
        L.append(f"Timing: {t.get('method', '')}; warm-up {t.get('warmup')}, {t.get('min_reps')}–"
                 f"{t.get('max_reps')} timed calls per measurement. Speedup = baseline time / Loom time "
                 "(> 1: Loom is faster), from the same run on the same input tensors. Geometric means "
                 "over the rows where Loom passed its output check and the baseline agrees with the reference "
                 "(every metric within 2x Loom's bound; a baseline past Loom's own bound shows as 'check FAILED').")
        gapped = sorted({f"{r['key']} ({name})" for r in doc.get("rows", [])
                         for name, b in (r.get("baselines") or {}).items() if b.get("host_gaps")})
        if gapped:
            L.append(f"Kernel-only baseline timings that could not be queued ahead of the GPU, so host "
                     f"time is in them ({len(gapped)}): " + ", ".join(gapped[:12])
                     + (" …" if len(gapped) > 12 else "") + ".")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| family | rows | pass | fail | error | skipped | geomean speedup (rows) | Loom roofline fraction (geomean) |")
    L.append("|---|--:|--:|--:|--:|--:|---|--:|")
    for f, s in doc["families"].items():
        gm = "; ".join(f"vs {SHORT[b]} {_f(s['geomean_speedup'][b])}× ({s['geomean_rows'][b]})"
                       for b in BASELINES[f])
        fr = s.get("loom_roofline_fraction_geomean")
        L.append(f"| {TITLES[f]} | {s['rows']} | {s['pass']} | {s['fail']} | {s['error']} | {s['skipped']} | "
                 f"{gm} | {_f(100 * fr) + ' %' if fr else '–'} |")
    issued = {f: s["loom_as_issued"] for f, s in doc["families"].items() if s.get("loom_as_issued")}
    if issued:
        L.append("")
        L.append("Loom's times are queued launches (the host's submission left out, as the kernel-only "
                 "baselines' queueing leaves theirs out); FlashInfer with plan is compared with Loom as "
                 "issued (`loom.as_issued` in matrix.json), which took "
                 + "; ".join(f"{_f(q['time_ratio_geomean'])}x its queued time in {TITLES[f]} ({q['rows']} rows)"
                             for f, q in issued.items()) + ".")
    L.append("")
    L.append("## Baselines")
    L.append("")
    L.append("| baseline | package | version | status |")
    L.append("|---|---|---|---|")
    for name, b in (doc.get("baselines") or {}).items():
        st = "imported" if b.get("available") else f"not available: {b.get('why', '')}"
        L.append(f"| {name} | {b.get('package', '')} | {b.get('version') or '–'} | {st} |")
    warm = doc.get("warm")
    if warm:
        L.append("")
        L.append(f"FlashInfer JIT warm-up: {'ok' if warm.get('ok') else 'FAILED: ' + warm.get('why', '')[:300]} "
                 f"in {warm.get('seconds')} s ({len(warm.get('modules', []))} modules).")
    fc = doc.get("fla_configs")
    if fc:
        L.append("")
        L.append(_fla_configs_line(fc))
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | status | notes |")
    L.append("|---|---|---|")
    for tname, tinfo in doc.get("targets", {}).items():
        if tname == "h200":
            L.append(f"| h200 | measured | {tinfo['rows']} rows below |")
            continue
        arts = tinfo.get("artifacts") or {}
        ok = sum(1 for a in arts.values() if a.get("ok"))
        note = f"{ok}/{len(arts)} artifacts built" if arts else ""
        emits = sorted({a.get("emit", "") for a in arts.values() if a.get("ok")})
        if emits:
            note += f" (--emit={','.join(emits)})"
        if tinfo.get("model"):
            note += f"; model estimate for {tinfo['model']['rows_with_estimate']} rows (model, not measured)"
        else:
            note += "; " + tinfo.get("model_note", "")
        L.append(f"| {tname} | {tinfo['status']} | {note.strip('; ')} |")
    for f in doc["families"]:
        L += ["", f"## {TITLES[f]}", ""]
        rows = [r for r in doc["rows"] if r["family"] == f]
        bl = BASELINES[f]
        has_model = any(r.get("model_us") for r in rows)
        head = ["workload", "spec", "batch", "tokens", "Loom µs"]
        for b in bl:
            head += [f"{SHORT[b]} µs", "×"]
        head += ["Loom GB/s", "Loom TFLOP/s", "roofline", "Loom check", "baseline checks"]
        if has_model:
            head += [f"model µs {t}" for t in MODEL_TARGETS]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "|".join("---" if i < 2 or h.endswith("check") or h.endswith("checks") else "--:"
                                for i, h in enumerate(head)) + "|")
        for r in rows:
            lo = r.get("loom") or {}
            cells = [r["name"], r.get("spec") or "–", str(r["batch"]), str(r["tokens"]), _us(lo.get("time_us"))]
            bchecks = []
            for b in bl:
                x = r["baselines"].get(b)
                if not x:
                    cells += ["–", "–"]
                    continue
                if x.get("time_us"):
                    cells += [_us(x["time_us"]), _f(x.get("speedup"))]
                else:
                    cells += ["n/a", "–"]
                if x.get("error"):
                    bchecks.append(f"{SHORT[b]}: {x['error'][:80]}")
                elif x.get("check") and not x["check"].get("ok"):
                    bchecks.append(f"{SHORT[b]}: {_check_cell(x['check'])}")
            fr = lo.get("roofline_fraction")
            loom_check = _check_cell(lo.get("check")) if lo else f"**{r['status'].upper()}** {r.get('why', '')[:120]}"
            if r["status"] == "skipped":
                loom_check = f"skipped: {r.get('why', '')}"
            cells += [_f(lo.get("gbps"), 4), _f(lo.get("tflops")), _f(100 * fr) + " %" if fr else "–",
                      loom_check, "; ".join(bchecks) or "ok"]
            if has_model:
                cells += [_f((r.get("model_us") or {}).get(t)) for t in MODEL_TARGETS]
            L.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    L.append("")
    return "\n".join(L)


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------

def plots(doc: dict, folder: str) -> List[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    fams = list(doc["families"])
    if not fams:
        return []
    written = []
    fig, axes = plt.subplots(len(fams), 1, figsize=(14, 4 * len(fams)), squeeze=False)
    for ax, f in zip(axes[:, 0], fams):
        rows = [r for r in doc["rows"] if r["family"] == f]
        for j, b in enumerate(BASELINES[f]):
            xs = [i for i, r in enumerate(rows) if r["baselines"].get(b, {}).get("speedup")]
            ys = [rows[i]["baselines"][b]["speedup"] for i in xs]
            if xs:
                ax.scatter(xs, ys, s=18, label=SHORT[b], marker="osd^"[j % 4])
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{TITLES[f]}: speedup of Loom (baseline time / Loom time, > 1 = Loom faster)")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r["name"][:28] for r in rows], rotation=90, fontsize=6)
        ax.legend(fontsize=8)
    fig.tight_layout()
    p = os.path.join(folder, "speedup.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)

    fig, axes = plt.subplots(len(fams), 1, figsize=(14, 4 * len(fams)), squeeze=False)
    for ax, f in zip(axes[:, 0], fams):
        rows = [r for r in doc["rows"] if r["family"] == f]
        x = list(range(len(rows)))
        lo = [100 * ((r.get("loom") or {}).get("roofline_fraction") or 0) for r in rows]
        b0 = BASELINES[f][0]
        bs = [100 * (r["baselines"].get(b0, {}).get("roofline_fraction") or 0) for r in rows]
        ax.bar([i - 0.2 for i in x], lo, width=0.4, label="Loom")
        ax.bar([i + 0.2 for i in x], bs, width=0.4, label=SHORT[b0])
        ax.set_ylabel("% of roofline")
        ax.set_title(f"{TITLES[f]}: fraction of the memory roofline (bytes read once / measured copy bandwidth)")
        ax.set_xticks(x)
        ax.set_xticklabels([r["name"][:28] for r in rows], rotation=90, fontsize=6)
        ax.legend(fontsize=8)
    fig.tight_layout()
    p = os.path.join(folder, "roofline.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)
    return written


# ---------------------------------------------------------------------------
# Schema (README.md "matrix.json")
# ---------------------------------------------------------------------------

_NUM = (int, float)
_TOP = {"schema": str, "created": str, "date": str, "machine": dict, "software": dict, "commit": str,
        "copy_gbps": dict, "timing": dict, "baselines": dict, "warm": (dict, type(None)),
        "fla_configs": (dict, type(None)), "families": dict, "targets": dict, "rows": list}
_FAMILY = {"rows": int, "pass": int, "fail": int, "error": int, "skipped": int, "geomean_speedup": dict,
           "geomean_rows": dict, "loom_roofline_fraction_geomean": (float, type(None))}
_ROW = {"family": str, "key": str, "workload_key": str, "name": str, "gate": (str, type(None)),
        "source": str, "spec": (str, type(None)), "artifact": (str, type(None)), "batch": int,
        "tokens": int, "lengths": (list, type(None)), "bytes": int, "flops": int, "bytes_parts": dict,
        "status": str, "why": str, "seed": int, "loom": (dict, type(None)), "baselines": dict,
        "inputs": dict, "elapsed_s": _NUM}
_TIMING = {"time_us": _NUM, "p10_us": _NUM, "p90_us": _NUM, "min_us": _NUM, "reps": int}
_CHECK = {"ok": bool, "metrics": dict, "note": str}


def validate(doc: dict) -> List[str]:
    """Every way `doc` departs from the schema; [] when it conforms."""
    errs = []

    def need(obj, spec, where):
        if not isinstance(obj, dict):
            errs.append(f"{where}: not an object")
            return
        for k, t in spec.items():
            if k not in obj:
                errs.append(f"{where}: missing '{k}'")
            elif not isinstance(obj[k], t) or (t is int and isinstance(obj[k], bool)):
                errs.append(f"{where}.{k}: {type(obj[k]).__name__} is not {t}")

    need(doc, _TOP, "matrix")
    if errs:
        return errs
    if doc["schema"] != SCHEMA:
        errs.append(f"matrix.schema: '{doc['schema']}' is not '{SCHEMA}'")
    for f, s in doc["families"].items():
        if f not in FAMILIES:
            errs.append(f"families: unknown family '{f}'")
        need(s, _FAMILY, f"families.{f}")
    for i, r in enumerate(doc["rows"]):
        where = f"rows[{i}]"
        before = len(errs)
        need(r, _ROW, where)
        if len(errs) > before:
            continue
        if r["status"] not in ("pass", "fail", "error", "skipped"):
            errs.append(f"{where}.status: '{r['status']}'")
        if r["loom"] is not None and "time_us" in r["loom"]:
            need(r["loom"], _TIMING, f"{where}.loom")
            need(r["loom"].get("check"), _CHECK, f"{where}.loom.check")
            for k in ("as_issued", "queued"):
                q = r["loom"].get(k)
                if q is not None and "error" not in q:
                    need(q, _TIMING, f"{where}.loom.{k}")
        if r["status"] == "pass" and not (r["loom"] or {}).get("check", {}).get("ok"):
            errs.append(f"{where}: status pass without a passing Loom check")
        for name, b in r["baselines"].items():
            if name not in BASELINES.get(r["family"], []):
                errs.append(f"{where}.baselines: unknown baseline '{name}'")
            need(b, {"label": str}, f"{where}.baselines.{name}")
            if "time_us" in b:
                need(b, _TIMING, f"{where}.baselines.{name}")
            if "check" in b:
                need(b["check"], _CHECK, f"{where}.baselines.{name}.check")
            if "time_us" not in b and "error" not in b:
                errs.append(f"{where}.baselines.{name}: neither a time nor an error")
    for t in ("h200",) + MODEL_TARGETS:
        if t not in doc["targets"]:
            errs.append(f"targets: missing '{t}'")
    return errs


def write(folder: str, model_path: Optional[str] = None, targets_path: Optional[str] = None) -> dict:
    doc = build(folder, model_path, targets_path)
    problems = validate(doc)
    if problems:  # a bug here, not in the run: say so, write anyway
        print("report: matrix.json departs from its schema:\n  " + "\n  ".join(problems[:20]), flush=True)
    with open(os.path.join(folder, "matrix.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    with open(os.path.join(folder, "matrix.md"), "w") as f:
        f.write(markdown(doc))
    doc["_plots"] = plots(doc, folder)
    return doc
