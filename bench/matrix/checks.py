"""Output checks against the references (tolerances of DESIGN.md and tools/check).

A check is a dict {"ok": bool, "metrics": {name: {"value", "bound", "ok"}}, "note"}.
A non-finite value anywhere fails (its metric becomes inf). Tolerances are
the project's: MLA o max |d|/(1e-2 + 1e-2|ref|) <= 1 and lse (fp32, base 2)
max |d|/(1e-3 + 1e-4|ref|) <= 1, empty requests exactly 0 / -inf; KDA
relative RMS <= 5e-3 on o and the final state, also per sequence and per
512-token window; decoder relative error <= 1e-2 (see decoder.py for the
deep stacks). torch, imported lazily by the callers' modules.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

MLA_O = (1e-2, 1e-2)       # atol, rtol
MLA_LSE = (1e-3, 1e-4)
KDA_REL_RMS = 5e-3
KDA_WINDOW = 512
DECODER_REL = 1e-2


class Check:
    def __init__(self):
        self.metrics: Dict[str, dict] = {}
        self.notes: List[str] = []

    def add(self, name: str, value: float, bound: float, note: str = "") -> None:
        value = float(value)
        ok = math.isfinite(value) and value <= bound
        self.metrics[name] = {"value": value if math.isfinite(value) else str(value), "bound": bound, "ok": ok}
        if note:
            self.notes.append(f"{name}: {note}")

    @property
    def ok(self) -> bool:
        return bool(self.metrics) and all(m["ok"] for m in self.metrics.values())

    def as_dict(self) -> dict:
        return {"ok": self.ok, "metrics": self.metrics, "note": "; ".join(self.notes)}

    def summary(self) -> str:
        parts = []
        for name, m in self.metrics.items():
            v = m["value"]
            vs = f"{v:.3g}" if isinstance(v, float) else v
            parts.append(f"{name} {vs}{'' if m['ok'] else ' > ' + format(m['bound'], '.3g')}")
        return ", ".join(parts)


def failed(why: str) -> dict:
    return {"ok": False, "metrics": {}, "note": why}


def _nonfinite(t) -> int:
    import torch
    return int((~torch.isfinite(t)).sum().item())


def rel_rms(got, ref) -> float:
    """||got - ref|| / ||ref|| in fp64; inf if got has a non-finite element."""
    import torch
    g, r = got.double(), ref.double()
    if _nonfinite(g):
        return math.inf
    den = torch.linalg.vector_norm(r).item()
    num = torch.linalg.vector_norm(g - r).item()
    return num / den if den > 0 else (0.0 if num == 0 else math.inf)


def max_scaled(got, ref, atol: float, rtol: float) -> Tuple[float, int]:
    """max |got - ref| / (atol + rtol |ref|), and its flat index; inf on non-finite."""
    import torch
    g, r = got.double().flatten(), ref.double().flatten()
    bad = ~torch.isfinite(g)
    if bad.any():
        return math.inf, int(torch.nonzero(bad)[0].item())
    e = (g - r).abs() / (atol + rtol * r.abs())
    i = int(torch.argmax(e).item())
    return float(e[i].item()), i


def worst_ranges(got, ref, ranges: Sequence[Tuple[int, int]]) -> Tuple[float, int]:
    """Worst relative RMS over row ranges [a, b) of the leading dimension."""
    worst, at = 0.0, -1
    for i, (a, b) in enumerate(ranges):
        if b <= a:
            continue
        e = rel_rms(got[a:b], ref[a:b])
        if at < 0 or not (e <= worst):
            worst, at = e, i
    return worst, at


def mla(o, lse, ref_o, ref_lse, lens: Sequence[int], lse_base_e: bool = False) -> dict:
    """o [B,H,Dc] (bf16), lse [B,H] (fp32, base 2 unless lse_base_e)."""
    import torch
    c = Check()
    nonempty = torch.tensor([int(x) > 0 for x in lens], device=o.device)
    e, i = max_scaled(o[nonempty], ref_o[nonempty], *MLA_O)
    c.add("o", e, 1.0)
    if lse is not None:
        l = lse.double() / math.log(2.0) if lse_base_e else lse.double()
        e, _ = max_scaled(l[nonempty], ref_lse[nonempty], *MLA_LSE)
        c.add("lse", e, 1.0)
    if not bool(nonempty.all()):
        empty = ~nonempty
        bad = int((o[empty] != 0).sum().item())
        if lse is not None:
            bad += int((~(torch.isinf(lse[empty]) & (lse[empty] < 0))).sum().item())
        c.add("empty requests", bad, 0, "o must be 0 and lse -inf")
    return c.as_dict()


def kda(o, state, ref_o, ref_state, cu: Sequence[int]) -> dict:
    """o [T,H,V], state [N,H,K,V] against the fp64 reference."""
    c = Check()
    c.add("o", rel_rms(o, ref_o), KDA_REL_RMS)
    T = o.shape[0]
    seqs = [(int(cu[n]), int(cu[n + 1])) for n in range(len(cu) - 1)]
    win, at = worst_ranges(o, ref_o, [(a, min(T, a + KDA_WINDOW)) for a in range(0, T, KDA_WINDOW)])
    c.add("o per 512-token window", win, KDA_REL_RMS,
          f"worst window at token {at * KDA_WINDOW}" if win > KDA_REL_RMS else "")
    per, at = worst_ranges(o, ref_o, seqs)
    c.add("o per sequence", per, KDA_REL_RMS, f"worst: sequence {at}" if per > KDA_REL_RMS else "")
    if state is not None:
        c.add("final_state", rel_rms(state, ref_state), KDA_REL_RMS)
        per, at = worst_ranges(state, ref_state, [(n, n + 1) for n in range(len(seqs))])
        c.add("final_state per sequence", per, KDA_REL_RMS,
              f"worst: sequence {at}" if per > KDA_REL_RMS else "")
    return c.as_dict()


def decoder(hidden, ref_hidden, new_k0, ref_k0, new_v0, ref_v0, hidden_bound: float,
            bound_note: str = "") -> dict:
    """hidden_out and the new K/V rows of the first layer (before drift)."""
    c = Check()
    c.add("hidden_out", rel_rms(hidden, ref_hidden), hidden_bound, bound_note)
    c.add("k_cache new rows, layer 0", rel_rms(new_k0, ref_k0), DECODER_REL)
    c.add("v_cache new rows, layer 0", rel_rms(new_v0, ref_v0), DECODER_REL)
    return c.as_dict()
