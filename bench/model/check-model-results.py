#!/usr/bin/env python3
"""ctest model.results_current: the committed bench/results/model/<chip>.md are
exactly what loom-model writes now. When this fails, the model, the chip table,
a spec or a workload changed: run `ninja -C build loom-model-results` and
commit the new tables.

usage: check-model-results.py LOOM_MODEL RESULTS_DIR OUT_DIR CHIP...
"""
import difflib
import os
import subprocess
import sys


def main():
    model, results, out, *chips = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    stale = []
    for chip in chips:
        fresh = os.path.join(out, f"{chip}.md")
        subprocess.run([model, "--chip", chip, "--md", fresh], check=True)
        committed = os.path.join(results, f"{chip}.md")
        if not os.path.exists(committed):
            stale.append(chip)
            print(f"FAIL: {committed} does not exist")
            continue
        with open(committed) as a, open(fresh) as b:
            old, new = a.readlines(), b.readlines()
        if old != new:
            stale.append(chip)
            print(f"FAIL: {committed} differs from what loom-model writes now:")
            sys.stdout.writelines(list(difflib.unified_diff(old, new, committed, fresh))[:40])
    if stale:
        sys.exit("stale: " + ", ".join(stale) +
                 " (regenerate with `ninja -C build loom-model-results`)")
    print("ok: " + ", ".join(chips))


if __name__ == "__main__":
    main()
