"""Interleaved A/B of several builds of the same programs with loom-run
--bench (device time per launch, queued launches, inputs rotated), for
changes whose effect is smaller than the run-to-run drift of separate calls.

    python3 bench/ab/loom_run_ab.py --builds DIR1 DIR2 ... --reps 3 \
        --row 'llama3_8b|--kv-lens 1024 --bench 40' \
        --row 'kimi_linear_48b|--seq-lens 8192 --bench 40' [--loom-run PATH] [--specs DIR]

A row is `spec|loom-run arguments`: DIRi/<spec>.h200.so runs with
SPECS/<spec>.yaml (the .args file next to the artifact, if any, is added,
e.g. --layers). Each repetition runs every build once, in turn, so slow
drift of the GPU hits all builds alike. The first run of each build and
row is checked against the fp64 oracle unless --check=none is among the
row's arguments. Prints one line per row and build: the median over the
repetitions of loom-run's median device time, its spread, and the ratio
to the first build.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(loom_run, spec_yaml, so, args, checked):
    cmd = [loom_run, spec_yaml, so, "--device", "cuda", "--timing=queued",
           "--rotate", "2", "--launches", "1"] + args
    if not checked and "--check=none" not in args:
        cmd.append("--check=none")
    out = subprocess.run(cmd, capture_output=True, text=True)
    result = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not result:
        sys.exit(f"loom-run failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    bench = json.loads(result[-1][len("RESULT "):]).get("bench") or {}
    return bench["device_ms"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", nargs="+", required=True)
    ap.add_argument("--row", action="append", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--loom-run", default=".gpu/bin/loom-run")
    ap.add_argument("--specs", default=".gpu/specs")
    a = ap.parse_args()
    print(f"{'row':40s} {'build':28s} {'median_ms':>10s} {'min..max':>17s} {'ratio':>7s}")
    for row in a.row:
        spec, _, rest = row.partition("|")
        args = rest.split()
        times = {b: [] for b in a.builds}
        for rep in range(a.reps):
            for b in a.builds:
                so = os.path.join(b, f"{spec}.h200.so")
                extra = []
                if os.path.exists(so[:-3] + ".args"):
                    extra = open(so[:-3] + ".args").read().split()
                times[b].append(run(a.loom_run, os.path.join(a.specs, spec + ".yaml"), so,
                                    args + extra, checked=rep == 0))
        base = statistics.median(times[a.builds[0]])
        for b in a.builds:
            t = times[b]
            m = statistics.median(t)
            print(f"{row[:40]:40s} {os.path.basename(b.rstrip('/'))[:28]:28s} {m:10.4f} "
                  f"{min(t):8.4f}..{max(t):8.4f} {m / base:7.4f}", flush=True)


if __name__ == "__main__":
    main()
