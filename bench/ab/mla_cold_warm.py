"""Cold and warm queued launch times of several builds of one MLA decode
program (page size 1), each checked against a float64 reference first.

    python3 bench/ab/mla_cold_warm.py --builds DIR1 DIR2 ... --rows 0 1 15 x8,100 \
        [--spec deepseek_v3_tp8] [--sm-scale S] [--reps 50] [--rounds 3]

DIRi/<spec>.h200.so are the builds (e.g. loomc --emit=artifact with other
LOOM_NVCC_FLAGS); a row is a line number of
bench/workloads/mla_decode_trace47.jsonl, or x followed by the kv_lens.
Cold: the L2 flushed (a read of 240 MiB) before each launch, as in the
matrix; warm: back to back. Each row is measured build after build,
`rounds` times (slow drift of the GPU hits all builds alike). One line per
build and row: the medians in us over the rounds (each round's median of
`reps` launches), whether o and lse matched the reference (bf16
tolerances), and each round's cold median.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from bench.matrix import loomrt  # noqa: E402
from bench.matrix.workloads import make_page_table  # noqa: E402


def lengths(row, trace):
    return [int(x) for x in row[1:].split(",")] if row.startswith("x") else trace[int(row)]["kv_lens"]


def check(o, lse, qn, qp, ckv, kpe, table, lens, scale, dc):
    q = torch.cat([qn, qp], -1).double()
    for b, n in enumerate(lens):
        if n == 0:
            continue
        rows = torch.from_numpy(table.indices[table.indptr[b]:table.indptr[b + 1]].astype(np.int64)).cuda()[:n]
        k = torch.cat([ckv[rows], kpe[rows]], -1).double()
        s = (q[b] @ k.T) * scale
        if (o[b].double() - torch.softmax(s, -1) @ k[:, :dc]).abs().max().item() > 0.02:
            return False
        if (lse[b].double() - torch.logsumexp(s, -1) / np.log(2)).abs().max().item() > 0.01:
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", nargs="+", required=True)
    ap.add_argument("--rows", nargs="+", required=True)
    ap.add_argument("--spec", default="deepseek_v3_tp8")
    ap.add_argument("--sm-scale", type=float, default=0.1352338)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    trace = [json.loads(line) for line in open(os.path.join(root, "bench/workloads/mla_decode_trace47.jsonl"))]
    dev = loomrt.Runtime().device("cuda")
    scratch = torch.ones((240 << 20) // 4, device="cuda")
    print(f"{'build':24s} {'row':10s} {'cold_us':>8s} {'warm_us':>8s} check")
    # Every build's program, then each row measured build after build,
    # `rounds` times, so slow drift of the GPU hits all builds alike.
    progs = {}
    for build in a.builds:
        prog = dev.load(os.path.join(build, f"{a.spec}.h200.so"))
        _, H, Dc = prog.buffers["q_nope"].dims
        Dp = prog.buffers["q_pe"].dims[2]
        pool = prog.buffers["ckv_cache"].dims[0]
        progs[build] = prog
    ckv = torch.randn(pool, Dc, device="cuda").to(torch.bfloat16)
    kpe = torch.randn(pool, Dp, device="cuda").to(torch.bfloat16)
    for row in a.rows:
        lens = lengths(row, trace)
        B = len(lens)
        table = make_page_table(lens, 1, pool, 0.98, np.random.default_rng(1))
        qn = (0.5 * torch.randn(B, H, Dc, device="cuda")).to(torch.bfloat16)
        qp = (0.5 * torch.randn(B, H, Dp, device="cuda")).to(torch.bfloat16)
        meta = {n: torch.from_numpy(x).cuda() for n, x in
                (("kv_indptr", table.indptr), ("kv_indices", table.indices), ("kv_lens", table.lens))}
        cold = {b: [] for b in a.builds}
        warm = {b: [] for b in a.builds}
        ok = {}
        for rnd in range(a.rounds):
            for build in a.builds:
                prog = progs[build]
                o = torch.full((B, H, Dc), float("nan"), dtype=torch.bfloat16, device="cuda")
                lse = torch.full((B, H), float("nan"), device="cuda")
                for n, x in (("q_nope", qn), ("q_pe", qp), ("o", o), ("lse", lse), *meta.items()):
                    prog.bind(n, x.data_ptr(), list(x.shape))
                prog.bind("ckv_cache", ckv.data_ptr())
                prog.bind("kpe_cache", kpe.data_ptr())
                torch.cuda.synchronize()
                if rnd == 0:
                    prog.run()
                    ok[build] = check(o, lse, qn, qp, ckv, kpe, table, lens, a.sm_scale, Dc)
                prog.set_queued_launch(True)
                for _ in range(20):
                    prog.run()
                c = []
                for _ in range(a.reps):
                    scratch.sum()
                    torch.cuda.synchronize()
                    c.append(prog.run() / 1e3)
                cold[build].append(statistics.median(c))
                warm[build].append(statistics.median([prog.run() / 1e3 for _ in range(a.reps)]))
                prog.set_queued_launch(False)
        name = row if len(row) <= 10 else row[:9] + "…"
        for build in a.builds:
            print(f"{os.path.basename(build.rstrip('/')):24s} {name:10s} {statistics.median(cold[build]):8.2f} "
                  f"{statistics.median(warm[build]):8.2f} {'ok' if ok[build] else 'FAIL'}"
                  f"  cold rounds {' '.join(f'{x:.2f}' for x in cold[build])}", flush=True)
    for prog in progs.values():
        prog.close()

if __name__ == "__main__":
    main()
