"""The whole harness (workloads, inputs, Loom through loomrt.py, references,
checks, rows, report) on the host backend with torch on the CPU and the
test-only specs and workloads in tests/data; no baselines. Skipped without
torch (CI); needs LOOMC and LOOMRT_LIB like host_loomrt.py."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from bench.matrix import specs as S

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover
    torch = None

DATA = os.path.join(S.ROOT, "bench", "matrix", "tests", "data")


@unittest.skipIf(torch is None, "torch is not installed here")
class DryRun(unittest.TestCase):
    def test_all_families_pass_on_the_host(self):
        loomc = os.environ.get("LOOMC") or os.path.join(S.ROOT, "build", "bin", "loomc")
        base = [sys.executable, "-m", "bench.matrix"]
        common = ["--workloads", os.path.join(DATA, "workloads"), "--spec-dir", os.path.join(DATA, "configs")]
        with tempfile.TemporaryDirectory() as d:
            arts, out = os.path.join(d, "artifacts"), os.path.join(d, "out")
            listing = subprocess.run(base + ["specs"] + common, cwd=S.ROOT, check=True, capture_output=True,
                                     text=True).stdout
            for line in listing.splitlines():
                key, spec, args = (line.split("\t") + [""])[:3]
                subprocess.run([loomc, spec, "--target=host", "--emit=artifact", "-o",
                                os.path.join(arts, key)] + args.split(), cwd=S.ROOT, check=True,
                               capture_output=True)
            r = subprocess.run(base + common + ["--device", "cpu", "--artifacts", arts, "--out", out,
                                                "--seed", "5"], cwd=S.ROOT, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
            doc = json.load(open(os.path.join(out, "matrix.json")))
            self.assertEqual(len(doc["rows"]), 4 + 6 + 3)
            bad = [(x["key"], x["why"]) for x in doc["rows"] if x["status"] != "pass"]
            self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
