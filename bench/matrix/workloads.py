"""The benchmark workloads of bench/workloads/, read into plain objects.

Needs PyYAML and numpy, not torch: the unit tests run it on machines without
a GPU. Keys follow bench/model (loom-model's JSON) so a row of the matrix and
its model estimate can be matched:

  mla_decode/trace/<index>/<uuid>    the 47 trace workloads (index from 0)
  mla_decode/<tier>/<index>          the tiers of mla_decode_tiers.yaml
  kda_prefill/<name>                 kda_prefill.yaml (a matrix row adds the gate)
  decoder/<model>/layers=L/batch=B/context=C

Length generators (mla_decode_tiers.yaml) are deterministic, as loom-model
reads them: `uniform:N`; `lognormal:MEDIAN:SIGMA:CLIP` and `normal:MEAN:STD`
take request i at the normal quantile (i + 0.5) / batch, rounded half up,
at least 1 (lognormal also at most CLIP). KDA's `uniform:COUNTxLEN` is COUNT
sequences of LEN tokens.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import yaml

FAMILIES = ("mla_decode", "kda_prefill", "decoder")
# Command-line short names of the families.
FAMILY_ALIASES = {"mla": "mla_decode", "kda": "kda_prefill", "decoder": "decoder"}

WORKLOADS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "workloads")


class WorkloadError(ValueError):
    """A workload file that cannot be read; the message names file and line."""


@dataclasses.dataclass
class Workload:
    family: str                 # one of FAMILIES
    key: str                    # as loom-model names it (see the top)
    name: str                   # short, for tables
    set: str                    # "trace", a tier name, "kda_prefill", "decoder"
    index: int                  # position in its set
    lengths: List[int]          # per request (MLA: kv tokens; KDA: sequence; decoder: context)
    source: str                 # "file:line"
    num_heads: int = 0          # MLA and KDA
    page_size: int = 0          # MLA
    contig: Optional[float] = None  # MLA trace: fraction of consecutive page ids
    initial_state: bool = False     # KDA
    model: str = ""             # decoder: the spec name in configs/decoder
    layers: int = 0             # decoder
    context: int = 0            # decoder: kv tokens per request, the new one included

    @property
    def batch(self) -> int:
        return len(self.lengths)

    @property
    def total(self) -> int:
        return int(sum(self.lengths))


# --------------------------------------------------------------------------
# Length generators
# --------------------------------------------------------------------------

def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def normal_quantile(p: float) -> float:
    """Phi^-1(p) by bisection on erfc, as loom-model computes it."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if 0.5 * math.erfc(-mid / math.sqrt(2.0)) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def expand_request_lengths(generator: str, batch: int) -> List[int]:
    """uniform:N, lognormal:MEDIAN:SIGMA:CLIP or normal:MEAN:STD for `batch` requests."""
    parts = generator.split(":")
    kind = parts[0]
    if batch < 1:
        raise ValueError("a generated length list needs batch >= 1")
    try:
        if kind == "uniform" and len(parts) == 2:
            n = int(parts[1])
            if n >= 0:
                return [n] * batch
        elif kind == "lognormal" and len(parts) == 4:
            median, sigma, clip = float(parts[1]), float(parts[2]), int(parts[3])
            if median > 0 and sigma >= 0 and clip >= 1:
                out = []
                for i in range(batch):
                    q = normal_quantile((i + 0.5) / batch)
                    out.append(min(max(_round_half_up(median * math.exp(sigma * q)), 1), clip))
                return out
        elif kind == "normal" and len(parts) == 3:
            mean, std = float(parts[1]), float(parts[2])
            if std >= 0:
                return [max(_round_half_up(mean + std * normal_quantile((i + 0.5) / batch)), 1)
                        for i in range(batch)]
    except ValueError:
        pass
    raise ValueError(f"bad length generator '{generator}' (expected uniform:N, "
                     "lognormal:MEDIAN:SIGMA:CLIP or normal:MEAN:STD)")


def expand_sequence_lengths(generator: str) -> List[int]:
    """KDA's uniform:COUNTxLEN."""
    kind, _, rest = generator.partition(":")
    count, x, length = rest.partition("x")
    try:
        if kind == "uniform" and x and int(count) >= 1 and int(length) >= 1:
            return [int(length)] * int(count)
    except ValueError:
        pass
    raise ValueError(f"bad sequence-length generator '{generator}' (expected uniform:COUNTxLEN)")


# --------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------

class _LineLoader(yaml.SafeLoader):
    """Keeps the line of every mapping as '__line__' (1-based)."""


def _construct_mapping(loader, node, deep=False):
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(path: str):
    try:
        with open(path) as f:
            return yaml.load(f, Loader=_LineLoader)
    except OSError as e:
        raise WorkloadError(f"{path}:1:1: error: cannot open: {e.strerror}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise WorkloadError(f"{path}:{line}:{col}: error: invalid YAML: {e}") from e


def _need(entry: dict, key: str, path: str, kind=int):
    line = entry.get("__line__", 1)
    if key not in entry:
        raise WorkloadError(f"{path}:{line}:1: error: missing key '{key}'")
    value = entry[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise WorkloadError(f"{path}:{line}:1: error: '{key}' must be an integer, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise WorkloadError(f"{path}:{line}:1: error: '{key}' must be a string, got {value!r}")
    return value


def read_mla_trace(path: str) -> List[Workload]:
    out = []
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise WorkloadError(f"{path}:{line_no}:{e.colno}: error: invalid JSON: {e.msg}") from e
            lens = d.get("kv_lens")
            if not isinstance(lens, list) or not lens or len(lens) != d.get("batch"):
                raise WorkloadError(f"{path}:{line_no}:1: error: 'kv_lens' must list 'batch' lengths")
            index = len(out)
            uuid = str(d.get("uuid", index))
            out.append(Workload(
                family="mla_decode", key=f"mla_decode/trace/{index}/{uuid}",
                name=f"trace/{index}", set="trace", index=index,
                lengths=[int(x) for x in lens], source=f"{os.path.basename(path)}:{line_no}",
                num_heads=16, page_size=1, contig=float(d.get("contig", 1.0))))
    return out


def read_mla_tiers(path: str) -> List[Workload]:
    doc = _load_yaml(path)
    out = []
    for tier in doc.get("tiers", []):
        tname = _need(tier, "name", path, str)
        heads = _need(tier, "num_heads", path)
        ps = _need(tier, "page_size", path)
        for index, entry in enumerate(tier.get("workloads", [])):
            batch = _need(entry, "batch", path)
            lens = entry.get("lengths")
            line = entry["__line__"]
            try:
                lengths = ([int(x) for x in lens] if isinstance(lens, list)
                           else expand_request_lengths(str(lens), batch))
            except ValueError as e:
                raise WorkloadError(f"{path}:{line}:1: error: {e}") from e
            if len(lengths) != batch:
                raise WorkloadError(f"{path}:{line}:1: error: {len(lengths)} lengths for batch {batch}")
            label = "" if isinstance(lens, list) else f" {lens}"
            out.append(Workload(
                family="mla_decode", key=f"mla_decode/{tname}/{index}",
                name=f"{tname}/{index}{label}", set=tname, index=index, lengths=lengths,
                source=f"{os.path.basename(path)}:{line}", num_heads=heads, page_size=ps,
                contig=1.0 if entry.get("contiguous") is True else 0.0))
    return out


def read_kda(path: str) -> List[Workload]:
    doc = _load_yaml(path)
    out = []
    for index, entry in enumerate(doc.get("workloads", [])):
        name = _need(entry, "name", path, str)
        heads = _need(entry, "heads", path)
        lens = entry.get("lengths")
        line = entry["__line__"]
        try:
            lengths = ([int(x) for x in lens] if isinstance(lens, list)
                       else expand_sequence_lengths(str(lens)))
        except ValueError as e:
            raise WorkloadError(f"{path}:{line}:1: error: {e}") from e
        out.append(Workload(
            family="kda_prefill", key=f"kda_prefill/{name}", name=name, set="kda_prefill",
            index=index, lengths=lengths, source=f"{os.path.basename(path)}:{line}",
            num_heads=heads, initial_state=bool(entry.get("initial_state", False))))
    return out


def read_decoder(path: str) -> List[Workload]:
    doc = _load_yaml(path)
    out = []
    for index, entry in enumerate(doc.get("workloads", [])):
        model = _need(entry, "model", path, str)
        layers = _need(entry, "layers", path)
        batch = _need(entry, "batch", path)
        context = _need(entry, "context", path)
        key = f"decoder/{model}/layers={layers}/batch={batch}/context={context}"
        out.append(Workload(
            family="decoder", key=key, name=f"{model} L{layers} b{batch} ctx{context}",
            set="decoder", index=index, lengths=[context] * batch,
            source=f"{os.path.basename(path)}:{entry['__line__']}",
            model=model, layers=layers, context=context))
    return out


def load_all(workloads_dir: str = WORKLOADS_DIR) -> Dict[str, List[Workload]]:
    """Every workload by family, in file order."""
    j = lambda name: os.path.join(workloads_dir, name)
    return {
        "mla_decode": read_mla_trace(j("mla_decode_trace47.jsonl")) + read_mla_tiers(j("mla_decode_tiers.yaml")),
        "kda_prefill": read_kda(j("kda_prefill.yaml")),
        "decoder": read_decoder(j("decoder.yaml")),
    }


def select(workloads: Sequence[Workload], subset: Optional[str]) -> List[Workload]:
    """`subset`: None (all), an integer N (the first N), or comma-separated
    names/keys or substrings of them ("trace/3,h128_ps64")."""
    if not subset:
        return list(workloads)
    if subset.isdigit():
        return list(workloads)[: int(subset)]
    wanted = [s.strip() for s in subset.split(",") if s.strip()]
    exact = [w for w in workloads if w.name in wanted or w.key in wanted]
    if exact:
        return exact
    return [w for w in workloads if any(s in w.key or s in w.name for s in wanted)]


# --------------------------------------------------------------------------
# Page tables
# --------------------------------------------------------------------------

@dataclasses.dataclass
class PageTable:
    indptr: np.ndarray   # int32 [B+1]
    indices: np.ndarray  # int32 [nnz]
    lens: np.ndarray     # int32 [B]
    page_size: int
    pool: int

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def last_page_len(self) -> np.ndarray:
        """Tokens in each request's last page (FlashInfer's kv_last_page_len); 0 when empty."""
        pages = self.indptr[1:] - self.indptr[:-1]
        return np.where(pages > 0, self.lens - (pages - 1) * self.page_size, 0).astype(np.int32)

    def consecutive_fraction(self) -> float:
        """Fraction of neighbouring page ids (in kv_indices order) that are consecutive."""
        if self.nnz < 2:
            return 1.0
        return float(np.mean(np.diff(self.indices.astype(np.int64)) == 1))


def make_page_table(lengths: Sequence[int], page_size: int, pool: int, contig: float,
                    rng: np.random.Generator) -> PageTable:
    """Distinct page ids for every request's pages, about `contig` of the
    neighbouring ids consecutive and the rest scattered over the pool.

    The pages are cut into runs (a run ends where the next id is not the
    previous + 1, with probability 1 - contig); the runs are then laid out over
    the pool in a random order with random gaps between them, so runs never
    overlap and a run's successor in the table lands anywhere in the pool.
    """
    lengths = [int(x) for x in lengths]
    if page_size < 1 or pool < 1:
        raise ValueError("page size and pool must be >= 1")
    if any(x < 0 for x in lengths):
        raise ValueError(f"negative length in {lengths}")
    pages = [(x + page_size - 1) // page_size for x in lengths]
    nnz = sum(pages)
    if nnz > pool:
        raise ValueError(f"{nnz} pages of {page_size} tokens needed, the pool has {pool}")
    if pool - 1 > np.iinfo(np.int32).max:
        raise ValueError("the pool does not fit int32 page ids")
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(pages)
    if nnz == 0:
        indices = np.zeros(0, dtype=np.int64)
    else:
        breaks = rng.random(nnz - 1) >= contig            # a new run starts after k
        starts = np.concatenate([[0], np.nonzero(breaks)[0] + 1])
        run_len = np.diff(np.concatenate([starts, [nnz]]))
        m = run_len.size
        order = rng.permutation(m)                         # pool order of the runs
        gaps = np.sort(rng.integers(0, pool - nnz + 1, size=m))
        placed_len = run_len[order]
        base = gaps + np.concatenate([[0], np.cumsum(placed_len)[:-1]])
        run_start = np.empty(m, dtype=np.int64)
        run_start[order] = base
        indices = np.repeat(run_start, run_len) + (np.arange(nnz) - np.repeat(starts, run_len))
    table = PageTable(indptr=indptr.astype(np.int32), indices=indices.astype(np.int32),
                      lens=np.asarray(lengths, dtype=np.int32), page_size=page_size, pool=pool)
    return table


def unused_neighbours(table: PageTable, count: int) -> np.ndarray:
    """Up to `count` unused page ids right after used runs (where a kernel that
    reads one page too far would land): they get NaN."""
    used = np.zeros(table.pool, dtype=bool)
    used[table.indices] = True
    after = table.indices.astype(np.int64) + 1
    after = after[after < table.pool]
    cand = np.unique(after[~used[after]])
    return cand[:count].astype(np.int64)
