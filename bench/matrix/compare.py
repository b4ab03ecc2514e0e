"""Do two runs of the matrix agree within noise? (python3 -m bench.matrix
compare OLD NEW; each a matrix.json or the folder holding it.)

Per row present in both runs, per implementation (Loom and each baseline),
the ratio of the medians new/old is within noise when it lies within
max(FLOOR, SPREAD x the larger relative p10-p90 spread of the two runs):
the spread measures a run's own repeat-to-repeat noise, the floor covers
what varies between machines and runs that one run cannot see (clocks,
placement of pages, which SMs a launch lands on).

The runs agree when, per family, the geometric-mean speedups against each
baseline differ by at most GEOMEAN_TOL and at least ROW_SHARE of the timed
rows of each implementation are within noise, and no row that passed its
check in one run failed it in the other.
"""

from __future__ import annotations

import json
import math
import os
from typing import Dict, Optional

FLOOR = 0.10
SPREAD = 2.0
GEOMEAN_TOL = 0.05
ROW_SHARE = 0.90


def load(path: str) -> dict:
    if os.path.isdir(path):
        path = os.path.join(path, "matrix.json")
    with open(path) as f:
        return json.load(f)


def _timings(row: dict) -> Dict[str, dict]:
    out = {}
    if (row.get("loom") or {}).get("time_us"):
        out["loom"] = row["loom"]
    for name, b in (row.get("baselines") or {}).items():
        if b.get("time_us"):
            out[name] = b
    return out


def _spread(t: dict) -> float:
    med = t.get("time_us") or 0.0
    if med <= 0 or t.get("p10_us") is None or t.get("p90_us") is None:
        return 0.0
    return (t["p90_us"] - t["p10_us"]) / med


def compare(old: dict, new: dict) -> dict:
    """{"agree", "families": {f: {...}}, "rows_outside": [...], "status_changes": [...]}."""
    old_rows = {r["key"]: r for r in old.get("rows", [])}
    fams: Dict[str, dict] = {}
    outside, changes = [], []
    for r in new.get("rows", []):
        o = old_rows.get(r["key"])
        if o is None:
            continue
        f = fams.setdefault(r["family"], {"rows": 0, "impl": {}, "speedups": {}, "timed_in_one_run_only": 0})
        f["rows"] += 1
        if (o["status"] == "pass") != (r["status"] == "pass"):
            changes.append(f"{r['key']}: {o['status']} -> {r['status']}")
        a, b = _timings(o), _timings(r)
        for base in set(a) & set(b) - {"loom"}:
            x, y = a[base].get("speedup"), b[base].get("speedup")
            if x and y and a[base].get("agrees") and b[base].get("agrees"):
                f["speedups"].setdefault(base, []).append((x, y))
        f["timed_in_one_run_only"] += len(set(a) ^ set(b))
        for impl in sorted(set(a) & set(b)):
            ratio = b[impl]["time_us"] / a[impl]["time_us"]
            tol = max(FLOOR, SPREAD * max(_spread(a[impl]), _spread(b[impl])))
            s = f["impl"].setdefault(impl, {"timed": 0, "within": 0, "log_ratios": []})
            s["timed"] += 1
            s["log_ratios"].append(math.log(ratio))
            if abs(math.log(ratio)) <= math.log1p(tol):
                s["within"] += 1
            else:
                outside.append({"key": r["key"], "impl": impl, "old_us": a[impl]["time_us"],
                                "new_us": b[impl]["time_us"], "ratio": ratio, "tolerance": tol})
    agree = not changes
    for name, f in fams.items():
        for impl, s in f["impl"].items():
            lr = s.pop("log_ratios")
            s["geomean_ratio"] = math.exp(sum(lr) / len(lr))
            s["share_within"] = s["within"] / s["timed"]
            agree &= s["share_within"] >= ROW_SHARE
        f["geomean_speedup"] = {}
        for base, pairs in f.pop("speedups").items():
            go = math.exp(sum(math.log(x) for x, _ in pairs) / len(pairs))
            gn = math.exp(sum(math.log(y) for _, y in pairs) / len(pairs))
            f["geomean_speedup"][base] = {"rows": len(pairs), "old": go, "new": gn, "change": gn / go - 1.0}
            agree &= abs(gn / go - 1.0) <= GEOMEAN_TOL
    return {"agree": bool(agree and fams), "families": fams, "rows_outside": outside,
            "status_changes": changes,
            "rule": f"row within max({FLOOR:.0%}, {SPREAD:g} x p10-p90 spread); per family and implementation "
                    f">= {ROW_SHARE:.0%} of rows within, geomean speedups within {GEOMEAN_TOL:.0%}, "
                    f"no pass/fail change"}


def markdown(res: dict, old_name: str, new_name: str) -> str:
    L = [f"# {new_name} against {old_name}", "",
         f"**{'Within noise' if res['agree'] else 'NOT within noise'}** ({res['rule']}).", "",
         "| family | rows in both | implementation | rows within noise | geomean time ratio new/old |",
         "|---|--:|---|--:|--:|"]
    for name, f in res["families"].items():
        for impl, s in f["impl"].items():
            L.append(f"| {name} | {f['rows']} | {impl} | {s['within']}/{s['timed']} | "
                     f"{s['geomean_ratio']:.3f} |")
    L += ["", "| family | baseline | rows both count | geomean speedup old | new | change |",
          "|---|---|--:|--:|--:|--:|"]
    for name, f in res["families"].items():
        for base, g in f["geomean_speedup"].items():
            L.append(f"| {name} | {base} | {g['rows']} | {g['old']:.3f} | {g['new']:.3f} | "
                     f"{100 * g['change']:+.1f} % |")
    one = {n: f["timed_in_one_run_only"] for n, f in res["families"].items()}
    if any(one.values()):
        L += ["", "Timed in one run only (not compared): " +
              ", ".join(f"{n} {k}" for n, k in one.items() if k) + " implementation rows."]
    if res["status_changes"]:
        L += ["", "Check status changed: " + "; ".join(res["status_changes"])]
    if res["rows_outside"]:
        L += ["", "Rows outside their noise band:", "", "| row | implementation | old µs | new µs | ratio | band |",
              "|---|---|--:|--:|--:|--:|"]
        for o in sorted(res["rows_outside"], key=lambda o: -abs(math.log(o["ratio"]))):
            L.append(f"| {o['key']} | {o['impl']} | {o['old_us']:.1f} | {o['new_us']:.1f} | "
                     f"{o['ratio']:.3f} | ±{100 * o['tolerance']:.0f} % |")
    return "\n".join(L) + "\n"


def main(old_path: str, new_path: str, out: Optional[str]) -> int:
    res = compare(load(old_path), load(new_path))
    text = markdown(res, old_path, new_path)
    print(text)
    if out:
        with open(out + ".md", "w") as f:
            f.write(text)
        with open(out + ".json", "w") as f:
            json.dump(res, f, indent=1)
    return 0 if res["agree"] else 1
