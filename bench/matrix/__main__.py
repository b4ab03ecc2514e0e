"""python3 -m bench.matrix — the cross-vendor benchmark matrix (README.md).

  python3 -m bench.matrix --family mla|kda|decoder|all [--subset N|names] --out DIR
      runs the families (each with its own time limit) and writes the report
  python3 -m bench.matrix run --family F ...     one family's rows only (scripts/bench-matrix)
  python3 -m bench.matrix report --out DIR       matrix.json / .md / .png from the rows in DIR
  python3 -m bench.matrix warm --family F --out DIR   FlashInfer JIT modules, in parallel
  python3 -m bench.matrix specs                  the artifacts to compile (for bench-prepare)
  python3 -m bench.matrix compare OLD NEW [--save PREFIX]
                                                 two runs within noise? (compare.py; exit 1 if not)
  python3 -m bench.matrix tune-fla --out DIR [--subset ...] [--gate G] [--deadline S]
                                                 fla's autotuned configs for KDA (fla_tune.py)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from . import specs as specsmod
from .workloads import FAMILIES, FAMILY_ALIASES, load_all

ROOT = specsmod.ROOT
DEFAULT_LIMITS = {"kda_prefill": 200.0, "mla_decode": 120.0, "decoder": 130.0}


def _families(arg: str):
    if arg == "all":
        return list(FAMILIES)
    out = []
    for a in arg.split(","):
        f = FAMILY_ALIASES.get(a.strip(), a.strip())
        if f not in FAMILIES:
            raise SystemExit(f"bench.matrix: error: unknown family '{a}' (mla, kda, decoder or all)")
        out.append(f)
    return out


def _common(p):
    p.add_argument("--family", default="all", help="mla, kda, decoder, all, or a comma list")
    p.add_argument("--out", default=None, help="output folder (default bench/results/<gpu>/<date>)")
    p.add_argument("--workloads", default=None, help="workload folder (default bench/workloads)")
    p.add_argument("--spec-dir", action="append", default=[],
                   help="also search this folder (with mla_decode/, kda_prefill/, decoder/) for specs, first")


def _gate_arg(p, help_text: str) -> None:
    p.add_argument("--gate", default="both", choices=("both",) + specsmod.KDA_GATES, help=help_text)


def _gates(arg: str) -> tuple:
    return specsmod.KDA_GATES if arg == "both" else (arg,)


def _run_args(p):
    p.add_argument("--subset", default=None, help="N (first N per family) or comma-separated names/keys")
    p.add_argument("--smoke", action="store_true", help="one small workload per family, few repetitions")
    _gate_arg(p, "KDA: only this gate's rows (e.g. a bounded program first in its process)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: dry run of the harness against Loom's host backend (no baselines)")
    p.add_argument("--target", default=None, help="artifact target (default h200; host with --device cpu)")
    p.add_argument("--artifacts", default=os.path.join(ROOT, ".bench-jit", "artifacts"),
                   help="the compiled programs (default: .bench/artifacts.tar.xz unpacked into "
                        ".bench-jit/artifacts, done here when that folder is missing)")
    p.add_argument("--seed", type=int, default=None, help="default: fresh, printed")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds per family (default: kda 200, mla 120, decoder 130; 0 = none)")
    p.add_argument("--wait-warm", default=None, help="wait for this warm.json before using FlashInfer")
    p.add_argument("--model-json", default=os.path.join(ROOT, ".bench", "model.json"))
    p.add_argument("--targets-json", default=os.path.join(ROOT, ".bench", "targets.json"))


def _default_out(device: str) -> str:
    gpu = "h200"
    if device == "cuda":
        try:
            import torch
            name = torch.cuda.get_device_name(0).lower()
            gpu = next((g for g in ("h200", "h100", "b200") if g in name), name.split()[-1])
        except Exception:  # noqa: BLE001
            pass
    else:
        gpu = "host"
    return os.path.join(ROOT, "bench", "results", gpu, time.strftime("%Y-%m-%d"))


def cmd_run(a, write_report: bool) -> int:
    from .runner import run_family
    from . import baselines as bl
    from .report import write
    fams = _families(a.family)
    target = a.target or ("h200" if a.device == "cuda" else "host")
    out = a.out or _default_out(a.device)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2 ** 31)
    packed = os.path.join(ROOT, ".bench", "artifacts.tar.xz")
    if not os.path.isdir(a.artifacts) and os.path.exists(packed):
        import tarfile
        os.makedirs(a.artifacts)
        tarfile.open(packed).extractall(a.artifacts)
        print(f"[matrix] unpacked {packed} into {a.artifacts}", flush=True)
    print(f"[matrix] seed {seed} (repeat with --seed {seed}); out {out}", flush=True)
    if write_report and a.device == "cuda" and not a.wait_warm:
        need = [f for f in fams if f in ("mla_decode", "decoder")]
        if need and bl.probe("flashinfer")["available"]:
            w = bl.warm_flashinfer(need)
            os.makedirs(out, exist_ok=True)
            json.dump(w, open(os.path.join(out, "warm.json"), "w"), indent=1)
            print(f"[matrix] FlashInfer warm-up: {'ok' if w['ok'] else 'FAILED ' + w['why'][-500:]} "
                  f"in {w['seconds']} s", flush=True)
    for f in fams:
        limit = a.time_limit if a.time_limit is not None else DEFAULT_LIMITS[f]
        run_family(f, out=out, subset=a.subset, smoke=a.smoke, device=a.device, target=target,
                   loom_kind="cuda" if a.device == "cuda" else "host", artifacts=a.artifacts,
                   seed=seed, time_limit=limit or None, wait_warm=a.wait_warm,
                   workloads_dir=a.workloads, gates=_gates(a.gate))
    if write_report:
        doc = write(out, a.model_json, a.targets_json)
        print(f"[matrix] wrote {out}/matrix.json, matrix.md" +
              (", " + ", ".join(os.path.basename(p) for p in doc["_plots"]) if doc["_plots"]
               else " (no plots: matplotlib missing)"), flush=True)
        _print_summary(doc)
    return 0


def _print_summary(doc) -> None:
    from .report import BASELINES, SHORT, TITLES
    print("\n%-18s %5s %5s %5s %5s %5s  %s" % ("family", "rows", "pass", "fail", "err", "skip",
                                                "geomean speedup (rows)"))
    for f, s in doc["families"].items():
        gm = ", ".join(f"{SHORT[b]} {s['geomean_speedup'][b]:.3g}x ({s['geomean_rows'][b]})"
                       if s["geomean_speedup"][b] else f"{SHORT[b]} - (0)" for b in BASELINES[f])
        print("%-18s %5d %5d %5d %5d %5d  %s" % (TITLES[f], s["rows"], s["pass"], s["fail"], s["error"],
                                                  s["skipped"], gm))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        from . import compare
        p = argparse.ArgumentParser(prog="python3 -m bench.matrix compare", description=compare.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("old", help="matrix.json or its folder (e.g. the committed run)")
        p.add_argument("new", help="matrix.json or its folder (e.g. a fresh run)")
        p.add_argument("--save", default=None, help="also write PREFIX.md and PREFIX.json")
        a = p.parse_args(argv[1:])
        return compare.main(a.old, a.new, a.save)
    sub = argv[0] if argv and argv[0] in ("run", "report", "warm", "specs", "tune-fla") else None
    if sub:
        argv = argv[1:]
    p = argparse.ArgumentParser(prog="python3 -m bench.matrix" + (f" {sub}" if sub else ""),
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p)
    if sub in (None, "run"):
        _run_args(p)
    if sub == "tune-fla":
        p.add_argument("--subset", default=None, help="N (first N) or comma-separated KDA names/keys")
        p.add_argument("--deadline", type=float, default=None,
                       help="seconds: start no group with fewer than 90 s left")
        _gate_arg(p, "only this gate's groups")
    if sub == "report":
        p.add_argument("--model-json", default=os.path.join(ROOT, ".bench", "model.json"))
        p.add_argument("--targets-json", default=os.path.join(ROOT, ".bench", "targets.json"))
    a = p.parse_args(argv)
    specsmod.add_spec_dirs(a.spec_dir)
    wl = {"workloads_dir": a.workloads} if a.workloads else {}
    if sub == "specs":
        by = load_all(**wl)
        fams = _families(a.family)
        for art in specsmod.artifacts_needed({f: by[f] for f in fams}):
            print("\t".join([art.key, art.spec.path, " ".join(art.args)]))
        return 0
    if sub == "tune-fla":
        from . import fla_tune
        from .workloads import select
        if not a.out:
            raise SystemExit("bench.matrix tune-fla: error: --out DIR is required")
        ws = select(load_all(**wl)["kda_prefill"], a.subset)
        return fla_tune.tune(ws, a.out, a.deadline, gates=_gates(a.gate))
    if sub == "warm":
        from . import baselines as bl
        os.makedirs(a.out, exist_ok=True)
        fams = [f for f in _families(a.family) if f in ("mla_decode", "decoder")]
        info = bl.probe("flashinfer")
        w = bl.warm_flashinfer(fams) if info["available"] else {
            "ok": False, "why": info["why"], "modules": [], "seconds": 0.0, "families": fams}
        tmp = os.path.join(a.out, "warm.json.tmp")
        json.dump(w, open(tmp, "w"), indent=1)
        os.replace(tmp, os.path.join(a.out, "warm.json"))
        print(f"[matrix] FlashInfer warm-up: {'ok' if w['ok'] else 'FAILED: ' + w['why'][-2000:]} "
              f"in {w['seconds']} s: {', '.join(w['modules'])}", flush=True)
        return 0
    if sub == "report":
        from .report import write
        out = a.out or _default_out("cuda")
        doc = write(out, a.model_json, a.targets_json)
        print(f"[matrix] wrote {out}/matrix.json, matrix.md" +
              ("".join(", " + os.path.basename(x) for x in doc["_plots"]) or " (no plots: matplotlib missing)"))
        _print_summary(doc)
        return 0
    return cmd_run(a, write_report=(sub is None))


if __name__ == "__main__":
    sys.exit(main())
