"""Which compiled Loom program runs which workload.

A workload runs on the first spec (shipped `configs/` first, then the
bench-only `bench/configs/`) whose compile-time shape matches it and whose
`arg_bounds` (max batch, pages, tokens, sequences) cover it. bench-prepare
compiles exactly the artifacts this module lists (`python3 -m bench.matrix
specs`), so the two cannot drift apart. No torch here.
"""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Dict, List, Optional, Sequence

import yaml

from .workloads import Workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC_DIRS = ["configs", "bench/configs"]  # search order: shipped specs first


def add_spec_dirs(dirs) -> None:
    """Searched before the default ones (tests, dry runs with small specs)."""
    for d in reversed(list(dirs or [])):
        if d not in SPEC_DIRS:
            SPEC_DIRS.insert(0, d)

# Defaults of configs/README.md for the keys the matrix reads.
_DEFAULTS = {
    "mla_decode": {"head_dim_ckv": 512, "head_dim_kpe": 64, "dtype": "bf16"},
    "kda_prefill": {"head_dim_k": 128, "head_dim_v": 128, "chunk_size": 64, "qk_l2norm": True,
                    "initial_state": False, "scale": None, "lower_bound": None, "dtype": "bf16"},
    "decoder": {"rms_eps": 1e-5, "rope_theta": 10000.0, "qk_norm": False, "page_size": 16,
                "head": False, "dtype": "bf16"},
}


@dataclasses.dataclass
class Spec:
    name: str
    family: str
    path: str            # relative to the repository root
    shape: dict          # the family section with defaults filled in

    def __getitem__(self, key):
        return self.shape[key]


@dataclasses.dataclass
class Artifact:
    """One compiled program: `loomc <spec> --target=T --emit=artifact -o <dir>/<key> <args>`."""
    key: str
    spec: Spec
    args: List[str]
    layers: int = 0       # decoder: layers compiled (0: not a decoder)

    def so_path(self, artifacts_dir: str, target: str = "h200") -> str:
        return os.path.join(artifacts_dir, self.key, f"{self.spec.name}.{target}.so")


class NoSpecError(LookupError):
    pass


def load_spec(path: str) -> Spec:
    full = path if os.path.isabs(path) else os.path.join(ROOT, path)
    with open(full) as f:
        doc = yaml.safe_load(f)
    family = next((f for f in _DEFAULTS if f in doc), None)
    if family is None:
        raise ValueError(f"{path}: no family section")
    shape = dict(_DEFAULTS[family])
    shape.update(doc[family])
    # YAML 1.1 (PyYAML) reads "1e-6" as a string; the spec loader takes it as a number.
    for key in ("sm_scale", "rms_eps", "rope_theta", "lower_bound", "scale"):
        if shape.get(key) is not None:
            shape[key] = float(shape[key])
    return Spec(name=doc["name"], family=family, path=os.path.relpath(full, ROOT), shape=shape)


def all_specs(family: str) -> List[Spec]:
    out = []
    for d in SPEC_DIRS:
        for path in sorted(glob.glob(os.path.join(ROOT, d, family, "*.yaml"))):  # d may be absolute
            out.append(load_spec(path))
    return out


def _pages(lengths: Sequence[int], page_size: int) -> int:
    return sum((x + page_size - 1) // page_size for x in lengths)


def _mla_fits(s: Spec, w: Workload) -> bool:
    return (s["num_heads"] == w.num_heads and s["page_size"] == w.page_size
            and s["dtype"] == "bf16" and w.batch <= s["max_batch"]
            and _pages(w.lengths, w.page_size) <= s["max_pages"])


def _kda_fits(s: Spec, w: Workload, gate: str) -> bool:
    return (s["num_heads"] == w.num_heads and s["gate"] == gate and s["dtype"] == "bf16"
            and s["head_dim_k"] == 128 and s["head_dim_v"] == 128 and s["qk_l2norm"]
            and w.total <= s["max_tokens"] and w.batch <= s["max_seqs"]
            and (s["initial_state"] or not w.initial_state))


def _decoder_fits(s: Spec, w: Workload) -> bool:
    return (s.name == w.model and not s["head"] and s["dtype"] == "bf16"
            and w.layers <= s["layers"] and w.batch <= s["max_batch"]
            and _pages(w.lengths, s["page_size"]) <= s["max_pages"])


def artifact_for(w: Workload, gate: Optional[str] = None,
                 specs: Optional[Dict[str, List[Spec]]] = None) -> Artifact:
    """The artifact that runs workload `w` (KDA: with `gate`)."""
    cands = (specs or {}).get(w.family) or all_specs(w.family)
    for s in cands:
        if w.family == "mla_decode" and _mla_fits(s, w):
            return Artifact(key=s.name, spec=s, args=[])
        if w.family == "kda_prefill" and _kda_fits(s, w, gate):
            return Artifact(key=s.name, spec=s, args=[])
        if w.family == "decoder" and _decoder_fits(s, w):
            if w.layers == s["layers"]:
                return Artifact(key=s.name, spec=s, args=[], layers=w.layers)
            return Artifact(key=f"{s.name}_L{w.layers}", spec=s,
                            args=[f"--layers={w.layers}"], layers=w.layers)
    what = f" with the {gate} gate" if gate else ""
    raise NoSpecError(f"no spec in {' or '.join(SPEC_DIRS)} fits {w.key}{what} "
                      f"({w.source}): add one under bench/configs/{w.family}/")


KDA_GATES = ("unbounded", "bounded")


def kda_groups(workloads: Sequence[Workload], gates: Sequence[str] = KDA_GATES) -> List[tuple]:
    """[(artifact, gate, workloads)]: the KDA rows that share one Loom
    program, each gate's in workload order."""
    g: Dict[str, tuple] = {}
    for gate in gates:
        for w in workloads:
            a = artifact_for(w, gate)
            g.setdefault(a.key, (a, gate, []))[2].append(w)
    return list(g.values())


def artifacts_needed(by_family: Dict[str, List[Workload]]) -> List[Artifact]:
    """Every artifact the workloads need, each once, in a stable order."""
    specs = {f: all_specs(f) for f in by_family}
    seen: Dict[str, Artifact] = {}
    for family, ws in by_family.items():
        for w in ws:
            for gate in (KDA_GATES if family == "kda_prefill" else (None,)):
                a = artifact_for(w, gate, specs)
                seen.setdefault(a.key, a)
    return list(seen.values())
